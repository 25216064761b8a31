/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parked zygote's state (parked, zygote.h), and what every part of the
 * proxy uses to speak and to end: its debug lines, its ready message and
 * its stand-in hello, its exit; where its own fds go; the signal handlers
 * and timers recorded at the park.  It calls no other file of the proxy.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "replica.h"
#include "sayline.h"
#include "zygote.h"

struct parked parked = { .sock = -1, .report = -1, .launcher_pidfd = -1, .exec_fd = -1 };

int zygote_send_ready(int sock, int status, int detail)
{
    uint32_t flags = (parked.python_warm ? READY_PYTHON : 0) | (parked.pip ? READY_PIP : 0) |
                     READY_PIP_REFUSED(parked.pip_refusal);
    struct zygote_ready r = { PSPAWN_MAGIC, status, detail, (int32_t)getpid(), flags,
                              status == ZYGOTE_PARKED ? zygote_objects() : 0 };
    ssize_t n;
    while ((n = send(sock, &r, sizeof r, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof r ? 0 : -1;
}

void zygote_rearm_itimers(void)
{
    for (int which = ITIMER_REAL; which <= ITIMER_PROF; which++)
        if (parked.itimers & 1 << which)
            setitimer(which, &parked.itimer[which], NULL);
}

void zygote_record_handlers(void)
{
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction sa;
        if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &sa) == 0 &&
            sa.sa_handler != SIG_DFL)
            parked.ctor_sigs |= UINT64_C(1) << (sig - 1);
    }
}

/* Our own fds go high, out of the way of the numbers the program's later
 * constructors would get after an exec (the launcher puts our channels
 * just below the limit). */
int zygote_move_high(int fd)
{
    struct rlimit rl;
    long top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (long)rl.rlim_cur < top)
        top = (long)rl.rlim_cur;
    if (fd < 0 || top <= 32)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - 32));
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

void zygote_exit(int code)
{
    if (parked.replica)
        pspawn_replica_remove(parked.replica);
    _exit(code);
}

void zygote_say(const char *fmt, ...)
{
    if (!pspawn_debug_wanted())
        return;
    va_list ap;
    va_start(ap, fmt);
    pspawn_vsay_line("libpspawn zygote", fmt, ap);
    va_end(ap);
}

void zygote_exit_stale(const char *library)
{
    /* In a group of our own, a write to a terminal with tostop set would
     * stop us. */
    signal(SIGTTOU, SIG_IGN);
    zygote_say("%s was replaced on disk: exiting (its tasks are exec'd from now on)", library);
    zygote_exit(ZYGOTE_EXIT_STALE);
}

/* dl_iterate_phdr: one more object, unless it is this proxy (the one
 * whose loaded segments hold this very function). */
static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t here = (uintptr_t)count_object;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        if (ph->p_type == PT_LOAD && here >= at && here - at < ph->p_memsz)
            return 0;
    }
    ++*(int *)data;
    return 0;
}

int zygote_objects(void)
{
    int objects = 0;
    dl_iterate_phdr(count_object, &objects);
    return objects;
}

char *zygote_hello(size_t *len)
{
    int objects = zygote_objects();
    struct standin_reply h = { PSPAWN_MAGIC, STANDIN_HELLO, (int32_t)getpid(),
                               (int32_t)((parked.python_warm ? HELLO_PYTHON : 0) |
                                         (parked.pip ? HELLO_PIP : 0) | HELLO_OBJECTS(objects)) };
    size_t at = sizeof h;
    char *hello = malloc(HELLO_MAX);
    if (!hello)
        return NULL;
    for (char **e = parked.exec_env; e && *e; e++) {
        size_t n = strlen(*e) + 1;
        if (strncmp(*e, "PSPAWN_ZYGOTE_", 14) == 0)
            continue;
        if (at + n > HELLO_MAX) {
            h.status |= HELLO_NO_ENV;
            at = sizeof h;
            break;
        }
        memcpy(hello + at, *e, n);
        at += n;
    }
    memcpy(hello, &h, sizeof h);
    *len = at;
    return hello;
}
