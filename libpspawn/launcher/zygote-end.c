/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A zygote server's end: signalled, reaped, lost (with its sub-zygotes,
 * the root's); why a zygote refused to serve; the debug line and the
 * reason a context uses exec.  The fan-out (fanout.c) and the start
 * (zygote.c) both end servers here; nothing here calls either.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "pidfd.h"
#include "sayline.h"

void pspawn_debug(const struct pspawn_zygote *z, const char *fmt, ...)
{
    if (!z->debug)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pspawn_say_line("libpspawn", "%s: %s", z->prog.path ? z->prog.path : "?", buf);
}

void pspawn_fallback(struct pspawn_zygote *z, int for_good, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->reason, sizeof z->reason, fmt, ap);
    va_end(ap);
    z->have_reason = 1;
    if (for_good)
        z->fallback = 1;
    pspawn_debug(z, "exec fallback: %s", z->reason);
}

/* Signal and reap a server through its pidfd where there is one: a
 * launcher that reaps every child itself (prted's waitpid(-1)) may have
 * reaped it already, and its pid may since belong to another process. */
int pspawn_signal_server(const struct zygote_server *sv, int sig)
{
    int r = 0;
    if (sv->pidfd >= 0)
        r = (int)syscall(SYS_pidfd_send_signal, sv->pidfd, sig, NULL, 0);
    else if (sv->pid > 0)
        r = kill(sv->pid, sig);
    return r < 0 ? errno : 0;
}

int pspawn_reap_server(struct zygote_server *sv, int *status)
{
    if (sv->pidfd >= 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int r;
        while ((r = waitid((idtype_t)P_PIDFD, (id_t)sv->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
            ;
        if (r == 0) {
            *status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
            return 1;
        }
        if (errno != EINVAL)
            return 0;   /* reaped by someone else */
        /* EINVAL: Linux 5.3, pidfds but no waitid(P_PIDFD): by pid. */
    }
    pid_t r;
    while ((r = waitpid(sv->pid, status, 0)) < 0 && errno == EINTR)
        ;
    return r == sv->pid;
}

static void close_server(struct zygote_server *sv)
{
    if (sv->sock >= 0)
        close(sv->sock);
    if (sv->pidfd >= 0)
        close(sv->pidfd);
    sv->sock = sv->pidfd = -1;
}

static int serving(const struct zygote_server *sv)
{
    return sv->state == SERVER_READY || sv->state == SERVER_STARTING;
}

void pspawn_server_lost(struct pspawn_zygote *z, int s, unsigned how, const char *why)
{
    struct zygote_server *sv = &z->servers[s];
    if (sv->state == SERVER_LOST)
        return;
    /* One that never said it was ready is our child all the same (made
     * with CLONE_PARENT): its maker wrote its pid. */
    int32_t made = sv->pid_slot ? __atomic_load_n(sv->pid_slot, __ATOMIC_ACQUIRE) : 0;
    if (sv->pid <= 0 && made > 0) {
        sv->pid = made;
        sv->pidfd = (int)syscall(SYS_pidfd_open, sv->pid, 0);
    }
    /* Hang up first: a zygote exits when its launcher does, which is all
     * that stops one the launcher may no longer signal (it gave up the
     * privileges the zygote kept).  One that does not exit in time (a
     * stopped one) is left unreaped rather than waited for forever. */
    if (sv->sock >= 0)
        close(sv->sock);
    sv->sock = -1;
    if (sv->pid > 0) {
        int st = 0, reap = 1;
        if ((how & SERVER_KILL) && pspawn_signal_server(sv, SIGKILL) != 0 && sv->pidfd >= 0) {
            struct pollfd p = { sv->pidfd, POLLIN, 0 };
            reap = poll(&p, 1, z->timeout_ms) == 1;
        }
        if (reap && pspawn_reap_server(sv, &st) && WIFEXITED(st) &&
            WEXITSTATUS(st) == ZYGOTE_EXIT_STALE && sv->state == SERVER_READY) {
            why = "a library it loaded was replaced on disk";
            pspawn_debug(z, "zygote %d exited: %s", (int)sv->pid, why);
            z->stale = 1;
        }
        sv->pid = -1;
    }
    close_server(sv);
    sv->state = SERVER_LOST;
    snprintf(sv->why, sizeof sv->why, "%s", why ? why : "stopped");
    int stopped = (how & SERVER_STOP) != 0;
    if (s > 0 && !stopped)
        pspawn_debug(z, "sub-zygote %d lost: %s", s, sv->why);
    /* Sub-zygotes watch their root and exit with it; they are ours to
     * reap. */
    if (s == 0)
        for (int k = 1; k < z->topo.ngroups; k++)
            pspawn_server_lost(z, k, (how & SERVER_STOP) |
                                         ((how & SERVER_KILL) || z->servers[k].state == SERVER_READY
                                          ? SERVER_KILL : 0),
                               stopped ? "stopped with its root" : "its root zygote is gone");
    int left = 0;
    for (int k = 0; k < z->topo.ngroups; k++)
        left += serving(&z->servers[k]) || z->servers[k].state == SERVER_NONE;
    /* The report pipe stays open: tasks released before the loss still
     * report, and a task must never die writing its report. */
    if (!left || s == 0)
        z->fallback = 1;
}

/* Every zygote is gone or useless: kill them if asked, reap them, and use
 * exec from now on. */
void pspawn_zygote_lost(struct pspawn_zygote *z, int kill_it)
{
    if (z->servers)
        pspawn_server_lost(z, 0, SERVER_STOP | (kill_it ? SERVER_KILL : 0), "stopped");
    z->fallback = 1;
}

void pspawn_zygote_refusal(char *buf, size_t size, int status, int detail)
{
    switch (status) {
    case ZYGOTE_THREADED:
        if (detail > 1)
            snprintf(buf, size, "zygote has %d threads at main (a constructor started a thread; "
                     "fork would copy only one)", detail);
        else if (detail == -EINVAL)
            snprintf(buf, size, "zygote has more than one thread at main (a constructor started "
                     "a thread; fork would copy only one; no /proc to count them)");
        else
            snprintf(buf, size, "cannot tell whether the zygote has threads at main (no "
                     "/proc/self/task, and unshare(CLONE_THREAD) failed: %s)",
                     strerror(detail < 0 && detail > -4096 ? -detail : EINVAL));
        break;
    case ZYGOTE_TOO_MANY_FDS:
        snprintf(buf, size, "the program's constructors left %d fds open, more than a zygote "
                 "keeps for its tasks", detail);
        break;
    case ZYGOTE_POSIX_TIMERS:
        if (detail > 0)
            snprintf(buf, size, "zygote has POSIX timers at main (%d: a constructor called "
                     "timer_create; fork keeps none)", detail);
        else if (detail == -E2BIG)
            snprintf(buf, size, "cannot tell whether the zygote has POSIX timers at main (no "
                     "/proc/self/timers, and its constructors made too many to look at)");
        else
            snprintf(buf, size, "cannot tell whether the zygote has POSIX timers at main (no "
                     "/proc/self/timers, and no timer could be made to find their numbers: %s)",
                     strerror(detail < 0 && detail > -4096 ? -detail : EINVAL));
        break;
    case ZYGOTE_NO_LIBC_START:
        snprintf(buf, size, "program does not start through __libc_start_main "
                 "(not a glibc program): no place to park it");
        break;
    case ZYGOTE_PYTHON_REFUSED:
        snprintf(buf, size, "%s", detail == PYTHON_TOO_OLD
                 ? "Python interpreter older than 3.8: it cannot be kept warm"
                 : detail == PYTHON_IMPORTS_SHOWN
                 ? "the interpreter shows what its tasks import or allocate (-X importtime, "
                   "-X tracemalloc, PYTHONPROFILEIMPORTTIME or PYTHONTRACEMALLOC): modules "
                   "imported ahead would be missing from it"
                 : "the warm Python zygote's bootstrap failed (its error is on the zygote's "
                   "standard error; python=off parks it before main)");
        break;
    case ZYGOTE_LISTEN_FAILED:
        snprintf(buf, size, "zygote could not listen for the step's tasks: %s", strerror(detail));
        break;
    default:
        snprintf(buf, size, "zygote gave no answer it could be started with (status %d)", status);
    }
}

int pspawn_start_timeout_ms(const struct pspawn_zygote *z)
{
    /* Loading a program with a thousand libraries from a slow file system
     * can take minutes; only then is a silent zygote a hung one. */
    int t = 4 * z->timeout_ms;
    return t < 120000 ? 120000 : t;
}

/* To join internal.h (inspect.c): inspect PATH on one fd each file, and
 * keep the ELF exec loads open (O_PATH) in *EXE_FD; whether A and B are
 * the same program, file for file. */
