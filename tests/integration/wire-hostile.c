/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire-hostile - a zygote's launcher that sends it what libpspawn never
 * would: the zygote refuses each bad request (REFUSE_MALFORMED in its
 * report), stays alive, and serves the next good one.
 *
 *   - a request memfd that is not sealed against resizing (its sender
 *     could truncate it under the zygote: SIGBUS), or a go block that
 *     is not;
 *   - a request memfd shorter than the message says;
 *   - a go block of the wrong size;
 *   - a message with fewer fds than it says;
 * then REQ_LAUNCHER_GO: the zygote leaves the task held until the
 * launcher releases it (pspawn_attr_setpidhook's guarantee).
 *
 * This test is the launcher: it execs $TESTS_BUILDDIR/task with the proxy
 * ($PSPAWN_PROXY) preloaded and the zygote's channels, as libpspawn does,
 * and writes its requests by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "../fixtures/tap.h"
#include "unixsock.h"

static int sock, report;
static uint32_t next_id = 1;
static char task[PATH_MAX], outfile[PATH_MAX];

/* A memfd of SIZE bytes, sealed against resizing if SEAL, mapped. */
static void *memfd(size_t size, int seal, int *fd)
{
    *fd = (int)syscall(SYS_memfd_create, "hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (*fd < 0 || ftruncate(*fd, (off_t)size) < 0)
        return NULL;
    if (seal && fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
        return NULL;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* A one-task request: "task append OUTFILE TAG", with the three fds sent. */
static size_t build(char *base, size_t cap, unsigned flags, const char *tag)
{
    struct wire_request *w = (struct wire_request *)base;
    memset(base, 0, cap);
    size_t off = sizeof *w;
    w->ntasks = 1;
    w->flags = flags;
    w->launcher_pid = (uint32_t)getpid();
    w->seccomp = 0;
    w->proc = (struct wire_procstate){ -1, -1, -1, -1, -1 };
    w->cwd = (uint32_t)off;
    off += (size_t)sprintf(base + off, "/") + 1;
    w->nactions = 3;
    off = (off + 7) & ~(size_t)7;
    w->actions = (uint32_t)off;
    struct wire_action *a = (struct wire_action *)(base + off);
    for (int i = 0; i < 3; i++)
        a[i] = (struct wire_action){ FA_DUP2, i, i, 0, 0, 0 };
    off += 3 * sizeof *a;
    off = (off + 7) & ~(size_t)7;
    w->tasks = (uint32_t)off;
    struct wire_task *t = (struct wire_task *)(base + off);
    off += sizeof *t;
    t->strings = (uint32_t)off;
    const char *argv[] = { task, "append", outfile, tag };
    for (int i = 0; i < 4; i++)
        off += (size_t)sprintf(base + off, "%s", argv[i]) + 1;
    t->argc = 4;
    t->strings_len = (uint32_t)(off - t->strings);
    off += (size_t)sprintf(base + off, "PSPAWN_RANK=%s", tag) + 1;
    t->envc = 1;
    t->env_len = (uint32_t)(off - t->strings - t->strings_len);
    return off;
}

/* Read reports for request ID until its DONE and every task it cloned
 * has reported (or 5 s).  Returns its err (a refusal) and the task's pid
 * in *PID (0 if none reported). */
static int await_done(uint32_t id, struct wire_go *go, pid_t *pid)
{
    *pid = 0;
    for (int waited = 0; waited < 5000;) {
        struct pollfd p = { report, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0) {
            waited += 100;
            continue;
        }
        struct task_report r;
        if (read(report, &r, sizeof r) != (ssize_t)sizeof r)
            return -1;
        /* A task's own record says it failed; the request's comes last. */
        if (r.req != id || r.index != PSPAWN_REPORT_DONE)
            continue;
        if (!r.err && go && __atomic_load_n(&go->setup[0], __ATOMIC_ACQUIRE) == SETUP_READY)
            *pid = __atomic_load_n(&go->pid[0], __ATOMIC_ACQUIRE);
        return r.err;
    }
    return -2;
}

/* Send one request: its memfd (sealed or not, SHORT bytes short of what
 * the message says), a go block of GOSIZE bytes (sealed or not), and the
 * fds 0-2 (NFDS_SAID of them announced).  Returns the id. */
static uint32_t send_request(unsigned flags, int seal, size_t shortby, size_t gosize, int goseal,
                             int nfds_said, const char *tag, struct wire_go **gomap)
{
    char buf[4096];
    size_t size = build(buf, sizeof buf, flags, tag);
    int fd, gofd;
    char *m = memfd(size - shortby, seal, &fd);
    memcpy(m, buf, size - shortby);
    munmap(m, size - shortby);
    struct wire_go *go = memfd(gosize, goseal, &gofd);
    if (go && gosize == sizeof *go)
        go->left = 2;   /* its task and the zygote count themselves out */
    struct request_msg msg = { PSPAWN_MAGIC, next_id++, (uint32_t)size, (uint32_t)nfds_said };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int fds[5] = { fd, gofd, 0, null, 2 };     /* the task prints: not into our TAP */
    if (pspawn_send_fds(sock, &msg, sizeof msg, fds, 5) != 0)
        tap_diag("send: %s", strerror(errno));
    close(fd);
    close(gofd);
    close(null);
    if (gomap)
        *gomap = go;
    else
        munmap(go, gosize);
    return msg.id;
}

static int runs_of(const char *tag)
{
    FILE *f = fopen(outfile, "r");
    char line[256];
    int n = 0;
    size_t len = strlen(tag);
    while (f && fgets(line, sizeof line, f))
        n += strncmp(line, tag, len) == 0 && line[len] == ' ';
    if (f)
        fclose(f);
    return n;
}

int main(void)
{
    const char *dir = getenv("TESTS_BUILDDIR"), *proxy = getenv("PSPAWN_PROXY");
    if (!dir || !proxy) {
        printf("Bail out! TESTS_BUILDDIR and PSPAWN_PROXY must be set\n");
        return 1;
    }
    snprintf(task, sizeof task, "%s/task", dir);
    snprintf(outfile, sizeof outfile, "%s/wire-hostile.%d.out", dir, (int)getpid());
    unlink(outfile);

    int sv[2], rep[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(rep, O_CLOEXEC) < 0)
        return 1;
    pid_t zygote = fork();
    if (zygote == 0) {
        dup2(sv[1], 1000);
        dup2(rep[1], 999);
        char e1[PATH_MAX + 16], e3[64];
        snprintf(e1, sizeof e1, "LD_PRELOAD=%s", proxy);
        snprintf(e3, sizeof e3, PSPAWN_ENV_PARENT "=%d", (int)getppid());
        char *env[] = { e1, "LD_BIND_NOW=1", PSPAWN_ENV_SOCK "=1000", PSPAWN_ENV_REPORT "=999",
                        e3, NULL };
        char *argv[] = { task, NULL };
        execve(task, argv, env);
        _exit(127);
    }
    close(sv[1]);
    close(rep[1]);
    sock = sv[0];
    report = rep[0];
    struct zygote_ready ready;
    struct pollfd p = { sock, POLLIN, 0 };
    int parked = poll(&p, 1, 30000) == 1 && recv(sock, &ready, sizeof ready, 0) == sizeof ready &&
                 ready.status == ZYGOTE_PARKED;
    if (!tap_ok(parked, "the zygote parked"))
        return tap_done();

    pid_t pid;
    struct {
        const char *what;
        int seal;
        size_t shortby, gosize;
        int goseal, nfds_said;
    } bad[] = {
        { "a request memfd not sealed against resizing", 0, 0, sizeof(struct wire_go), 1, 3 },
        { "a request memfd shorter than the message says", 1, 16, sizeof(struct wire_go), 1, 3 },
        { "a go block not sealed", 1, 0, sizeof(struct wire_go), 0, 3 },
        { "a go block of the wrong size", 1, 0, sizeof(struct wire_go) / 2, 1, 3 },
        { "more fds announced than sent", 1, 0, sizeof(struct wire_go), 1, 7 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "bad%zu", i);
        uint32_t id = send_request(0, bad[i].seal, bad[i].shortby, bad[i].gosize, bad[i].goseal,
                                   bad[i].nfds_said, tag, NULL);
        int r = await_done(id, NULL, &pid);
        tap_ok(r == REFUSE_MALFORMED && pid == 0 && kill(zygote, 0) == 0,
               "%s: refused as malformed (%d), no task, the zygote alive", bad[i].what, r);
    }

    /* A good request still runs, once. */
    struct wire_go *go;
    uint32_t id = send_request(0, 1, 0, sizeof(struct wire_go), 1, 3, "good", &go);
    int r = await_done(id, go, &pid);
    munmap(go, sizeof *go);
    int st = -1;
    if (pid > 0)
        waitpid(pid, &st, 0);
    tap_ok(r == 0 && pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && runs_of("good") == 1,
           "then a good request: its task ran once and exited 0 (done %d, pid %d, status %#x, "
           "%d runs)", r, (int)pid, st, runs_of("good"));

    /* REQ_LAUNCHER_GO: held until we release it. */
    id = send_request(REQ_LAUNCHER_GO, 1, 0, sizeof(struct wire_go), 1, 3, "held", &go);
    r = await_done(id, go, &pid);
    struct timespec d = { 0, 300 * 1000000L };
    nanosleep(&d, NULL);
    int held = pid > 0 && runs_of("held") == 0 && waitpid(pid, &st, WNOHANG) == 0;
    int swapped = __atomic_exchange_n(&go->go[0], GO_RUN, __ATOMIC_ACQ_REL);
    syscall(SYS_futex, &go->go[0], FUTEX_WAKE, 1, NULL, NULL, 0);
    st = -1;
    if (pid > 0)
        waitpid(pid, &st, 0);
    tap_ok(r == 0 && held && swapped != GO_RUN && go->pid[0] == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0 && runs_of("held") == 1,
           "REQ_LAUNCHER_GO: the task waits for the launcher's go (still held after 300 ms, "
           "its pid in the go block), then runs once");
    munmap(go, sizeof *go);

    close(sock);    /* the zygote exits when its launcher hangs up */
    waitpid(zygote, &st, 0);
    tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the zygote exits 0 when the launcher hangs up");
    unlink(outfile);
    return tap_done();
}
