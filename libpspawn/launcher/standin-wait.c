/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in's life once its request is sent, for every stand-in (the
 * Slurm shim, the interception library's pspawn-standin): hear that the
 * task exists, wait for the zygote's word of its end while passing on the
 * signals the stand-in takes, or wait for the task itself when the zygote
 * is gone, and end as the task did.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pidfd.h"
#include "procfs.h"
#include "unixsock.h"

/* 0 once FD has something to read (or an error to tell), or -1 with
 * ETIMEDOUT after MS. */
static int readable_within(int fd, int ms)
{
    struct pollfd p = { fd, POLLIN, 0 };
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

ssize_t pspawn_recv_within(int fd, void *buf, size_t len, int ms)
{
    if (readable_within(fd, ms) < 0)
        return -1;
    return recv(fd, buf, len, MSG_DONTWAIT);
}

int pspawn_zygote_made(int sock, pid_t task)
{
    struct ucred zygote;
    if (pspawn_peer_cred(sock, &zygote) != 0)
        return 0;
    /* Its child, or a sub-zygote's: fan-out nests at most a few levels. */
    unsigned long long pid = (unsigned long long)task;
    for (int depth = 0; depth < 4; depth++) {
        if (pspawn_proc_stat((pid_t)pid, 4, 4, &pid) != 0 || pid <= 1)
            return 0;
        if ((pid_t)pid == zygote.pid)
            return 1;
    }
    return 0;
}

/* One reply, within MS, with the fd it may carry (*FD, else -1). */
static ssize_t recv_reply(int sock, struct standin_reply *r, int ms, int *fd)
{
    *fd = -1;
    if (readable_within(sock, ms) < 0)
        return -1;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { r, sizeof *r };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf };
    ssize_t got = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = got > 0 ? CMSG_FIRSTHDR(&m) : NULL;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return got;
}

int pspawn_standin_setup_done(int setup, pid_t task, const char **why)
{
    static char buf[128];
    struct pollfd p = { setup, POLLIN, 0 };
    int pr, err = 0;
    ssize_t got = -1;
    while ((pr = poll(&p, 1, PSPAWN_SETUP_WAIT_MS)) < 0 && errno == EINTR)
        ;
    while (pr > 0 && (got = read(setup, &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(setup);
    if (got == 0)
        return 0;
    if (pr == 0) {
        kill(task, SIGKILL);    /* held: it ran nothing of its program */
        *why = "the task's setup did not end in time";
    } else {
        snprintf(buf, sizeof buf, "the task's setup failed: %s",
                 got == (ssize_t)sizeof err ? strerror(err) : "no word from it");
        *why = buf;
    }
    return -1;
}

pid_t pspawn_standin_started(int sock, int wait_ms, int *setup_out, const char **why)
{
    struct standin_reply r;
    int setup;
    *setup_out = -1;
    ssize_t got = recv_reply(sock, &r, wait_ms, &setup);
    if (got != (ssize_t)sizeof r || r.magic != PSPAWN_MAGIC || r.kind != STANDIN_STARTED) {
        int timed_out = got < 0 && errno == ETIMEDOUT;
        if (setup >= 0)
            close(setup);
        *why = got == 0 ? "zygote lost before it started the task"
               : timed_out ? "zygote did not answer in time (3 x PSPAWN_TIMEOUT)"
                           : "zygote refused the task";
        return -1;
    }
    if (r.pid <= 0 || !pspawn_zygote_made(sock, r.pid)) {
        if (setup >= 0)
            close(setup);
        *why = "zygote named a task that is not its child";
        return -1;
    }
    *setup_out = setup;
    return r.pid;
}

/* A task that has ended and is not reaped yet (its zygote stopped, or its
 * new parent not at it yet) shows its wait status in /proc (stat field 52,
 * exit_code); its pidfd, still alive after, says it was our task's. */
static int zombie_status(pid_t task, int pidfd)
{
    unsigned long long state, code;
    if (pspawn_proc_stat(task, 3, 3, &state) < 0 || state != 'Z' ||
        pspawn_proc_stat(task, 52, 52, &code) < 0 ||
        syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0)
        return -1;
    return (int)code;
}

/* TASK's wait status from its pidfd alone, once it has ended: as a zombie
 * (any kernel), or reaped, through PIDFD_GET_INFO (Linux 6.15).  -1 when
 * neither can tell (yet). */
static int ended_status(pid_t task, int pidfd)
{
    int zombie = zombie_status(task, pidfd);
    if (zombie >= 0)
        return zombie;
    struct pspawn_pidfd_info info;
    memset(&info, 0, sizeof info);
    info.mask = PSPAWN_PIDFD_INFO_EXIT;
    if (ioctl(pidfd, PSPAWN_PIDFD_GET_INFO, &info) == 0 && (info.mask & PSPAWN_PIDFD_INFO_EXIT))
        return info.exit_code;
    return -1;
}

/* Whether TASK (not ours to wait for) has ended: gone, or a zombie. */
static int task_ended(pid_t task)
{
    unsigned long long state;
    return pspawn_proc_stat(task, 3, 3, &state) < 0 ? errno == ESRCH : state == 'Z';
}

static void take_signals(const struct pspawn_standin_signals *s, struct pollfd *p)
{
    if (s && (p->revents & POLLIN))
        s->take(s->arg);
}

int pspawn_standin_task_status(int sock, pid_t task, int task_pidfd, int grace_ms,
                               const struct pspawn_standin_signals *sig)
{
    double ended_at = -1;
    for (;;) {
        struct pollfd p[3] = { { sock, POLLIN, 0 }, { sig ? sig->fd : -1, POLLIN, 0 },
                               { ended_at >= 0 ? -1 : task_pidfd, POLLIN, 0 } };
        /* Without a pidfd (Linux before 5.3), a look each second. */
        int r = poll(p, 3, ended_at >= 0 ? 1000 : task_pidfd < 0 ? 1000 : -1);
        if (r < 0)
            continue;
        take_signals(sig, &p[1]);
        if (p[0].revents)
            break;
        if (ended_at < 0 && (p[2].revents || (task_pidfd < 0 && task_ended(task)))) {
            /* Ended: its status from the kernel at once, not after the
             * zygote, busy forking another task, has reaped it and said. */
            int st = task_pidfd >= 0 ? ended_status(task, task_pidfd) : -1;
            if (st >= 0)
                return st;
            ended_at = pspawn_now_ms();
        }
        /* The task ended long ago, and no word: the zygote is gone (or
         * stopped), whoever still holds its end of SOCK. */
        if (ended_at >= 0 && pspawn_now_ms() - ended_at >= grace_ms)
            return -1;
    }
    struct standin_reply rep;
    ssize_t got = recv(sock, &rep, sizeof rep, MSG_DONTWAIT);
    if (got == (ssize_t)sizeof rep && rep.magic == PSPAWN_MAGIC && rep.kind == STANDIN_EXITED &&
        rep.pid == task)
        return rep.status;
    return -1;
}

/* Until FD is readable (or hung up), however long the task it stands for
 * runs, taking SIG's signals meanwhile. */
static void readable_serving(int fd, const struct pspawn_standin_signals *sig)
{
    for (;;) {
        struct pollfd p[2] = { { fd, POLLIN, 0 }, { sig ? sig->fd : -1, POLLIN, 0 } };
        if (poll(p, 2, -1) < 0)
            continue;
        take_signals(sig, &p[1]);
        if (p[0].revents)
            return;
    }
}

int pspawn_standin_orphan_status(pid_t task, int pidfd, const struct pspawn_standin_signals *sig)
{
    if (pidfd < 0)
        return -1;
    readable_serving(pidfd, sig);
    /* Exited; its exit status is kept once its new parent has reaped it
     * (ESRCH until then), on kernels that keep it (6.15: ENOTTY before). */
    for (int tries = 0; tries < 200; tries++) {
        int st = ended_status(task, pidfd);
        if (st >= 0)
            return st;
        struct pspawn_pidfd_info info = { .mask = PSPAWN_PIDFD_INFO_EXIT };
        if (ioctl(pidfd, PSPAWN_PIDFD_GET_INFO, &info) < 0 && errno != ESRCH)
            return -1;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* TASK's status from the keeper of the zygote pspawn-KEY, once the keeper,
 * its reaper since the zygote died, has reaped it; -1 if there is no
 * keeper of our user's there, or it did not reap TASK.  SIG is served
 * meanwhile. */
static int kept_status(const char *key, pid_t task, unsigned long long start,
                       const struct pspawn_standin_signals *sig)
{
    char kname[256];
    snprintf(kname, sizeof kname, "pspawn-%s" PSPAWN_KEEPER_SUFFIX, key);
    int fd = pspawn_connect_abstract(kname, geteuid());
    struct keeper_query q = { PSPAWN_KEEPER_MAGIC, task, start };
    if (fd < 0 || send(fd, &q, sizeof q, MSG_NOSIGNAL) != (ssize_t)sizeof q) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* As long as the task runs: the keeper answers once it has ended. */
    readable_serving(fd, sig);
    struct keeper_answer a;
    ssize_t got = recv(fd, &a, sizeof a, MSG_DONTWAIT);
    close(fd);
    if (got != (ssize_t)sizeof a || a.magic != PSPAWN_KEEPER_MAGIC || a.pid != task || !a.known)
        return -1;
    return a.status;
}

int pspawn_standin_lost_status(const char *key, pid_t task, unsigned long long start, int pidfd,
                               const struct pspawn_standin_signals *sig, const char **from)
{
    int status = start ? kept_status(key, task, start, sig) : -1;
    *from = "the zygote's keeper";
    if (status < 0) {
        status = pspawn_standin_orphan_status(task, pidfd, sig);
        *from = "its pidfd";
    }
    return status;
}

void pspawn_standin_exit_like(int status)
{
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no);
        signal(sig, SIG_DFL);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    _exit(1);
}
