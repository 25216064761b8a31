/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper of a stand-in zygote (a step's, a job's, a launcher's): the
 * process that starts the zygote and stays its parent, as a child
 * subreaper.  Should the zygote die while its tasks run (killed, out of
 * memory, crashed), they become the keeper's children, not init's: it
 * reaps them, keeps each one's wait status, and gives it to the task's
 * stand-in, which asks on the zygote's name + PSPAWN_KEEPER_SUFFIX.
 * Without it a stand-in could learn the status of a task that someone
 * else reaped only from Linux 6.15 on (PIDFD_INFO_EXIT); with it, on
 * every kernel, and by pid and start time where there is no pidfd (4.18).
 *
 * It reaps whatever else comes to it at once (a task's daemons, orphaned
 * while the zygote lives).  It ends when its zygote has ended and every
 * stand-in that asked has its answer, after giving the stand-ins of a
 * zygote that died KEEPER_SETTLE_MS to ask; what still runs then (daemons,
 * tasks nobody asked for) goes to the next reaper up, as it would have
 * without us.  It serves its own user only, and waits on nobody without
 * a limit but for the tasks it was asked about.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"
#include "unixsock.h"

/* The stand-ins of a zygote that died ask as soon as its socket closes,
 * which is before the keeper hears of the death: this is ample. */
#define KEEPER_SETTLE_MS 2000
/* A stand-in that connects must ask within this. */
#define KEEPER_ASK_MS 2000
#define KEPT_MAX 4096       /* statuses kept, the oldest dropped first */
#define ASKERS_MAX 1024     /* a zygote serves as many stand-ins */

struct kept {
    pid_t pid;
    unsigned long long start;
    int status;
};

struct asker {
    int fd;
    struct keeper_query q;      /* magic 0 until it has asked */
    double since;
};

static struct {
    pid_t zpid;
    int zygote_done, zygote_died;
    double done_at;
    struct kept kept[KEPT_MAX];
    unsigned long nkept;
    struct asker askers[ASKERS_MAX];
    int naskers;
} k;

/* Reap every child that has ended, keeping its status and start time
 * (read while it is a zombie: the pid alone could be reused after). */
static void reap_all(void)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        unsigned long long start = 0;
        pspawn_proc_stat(si.si_pid, 22, 22, &start);
        int status;
        if (waitpid(si.si_pid, &status, 0) < 0)
            return;
        if (si.si_pid == k.zpid) {
            k.zygote_done = 1;
            k.zygote_died = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            k.done_at = pspawn_now_ms();
            continue;
        }
        k.kept[k.nkept++ % KEPT_MAX] = (struct kept){ si.si_pid, start, status };
    }
}

static void drop_asker(int i)
{
    close(k.askers[i].fd);
    k.askers[i] = k.askers[--k.naskers];
}

static void answer(int i, int known, int status)
{
    struct keeper_answer a = { PSPAWN_KEEPER_MAGIC, k.askers[i].q.pid, known, status };
    if (send(k.askers[i].fd, &a, sizeof a, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* it is gone: nothing to tell */
    }
    drop_asker(i);
}

/* Answer asker I if we can: its task's status if we reaped it; unknown if
 * the task is gone (or its pid another process's) and we did not.  1 if
 * answered (the asker is dropped). */
static int try_answer(int i)
{
    const struct keeper_query *q = &k.askers[i].q;
    unsigned long n = k.nkept < KEPT_MAX ? k.nkept : KEPT_MAX;
    for (unsigned long j = 0; j < n; j++) {
        const struct kept *e = &k.kept[(k.nkept - 1 - j) % KEPT_MAX];
        if (e->pid == q->pid && e->start == q->start) {
            answer(i, 1, e->status);
            return 1;
        }
    }
    unsigned long long start;
    if (pspawn_proc_stat(q->pid, 22, 22, &start) == 0 && start == q->start)
        return 0;   /* it runs, or someone's zombie: wait */
    answer(i, 0, 0);
    return 1;
}

static void take_asker(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    /* Our user's stand-ins only. */
    if (!pspawn_peer_uid_is(fd, geteuid()) || k.naskers == ASKERS_MAX) {
        close(fd);
        return;
    }
    k.askers[k.naskers++] = (struct asker){ .fd = fd, .since = pspawn_now_ms() };
}

static void hear_asker(int i)
{
    struct keeper_query q;
    ssize_t got = recv(k.askers[i].fd, &q, sizeof q, MSG_DONTWAIT);
    if (got < 0 && errno == EAGAIN)
        return;
    if (got != (ssize_t)sizeof q || q.magic != PSPAWN_KEEPER_MAGIC || q.pid <= 0 ||
        k.askers[i].q.magic) {
        drop_asker(i);
        return;
    }
    k.askers[i].q = q;
}

/* Everything but stdio and KEEP[0..NKEEP) closed: the stand-in's fds (its
 * task's pipes, Slurm's) must not stay open for as long as we live. */
static void close_inherited(const int *keep, int nkeep)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name), kept = fd <= 2 || fd == dirfd(d);
        for (int i = 0; i < nkeep; i++)
            kept |= fd == keep[i];
        if (!kept)
            close(fd);
    }
    if (d)
        closedir(d);
}

static void __attribute__((noreturn)) keep(int lfd)
{
    /* SIGTERM for us (pspawn --intercept stopping its scope's zygotes, a
     * kill of the stand-in's own) is for the zygote: it decides, finishing
     * its tasks first, and we end after it. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    int keep_fds[] = { lfd, sfd };
    close_inherited(keep_fds, 2);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2 && null >= 0; fd++)
        dup2(null, fd);
    if (null > 2)
        close(null);
    for (;;) {
        reap_all();
        double now = pspawn_now_ms();
        for (int i = k.naskers - 1; i >= 0; i--) {
            if (k.askers[i].q.magic)
                try_answer(i);
            else if (now - k.askers[i].since >= KEEPER_ASK_MS)
                drop_asker(i);
        }
        if (k.zygote_done && k.naskers == 0 &&
            (!k.zygote_died || now - k.done_at >= KEEPER_SETTLE_MS))
            _exit(0);
        struct pollfd p[2 + ASKERS_MAX];
        int np = 0;
        p[np++] = (struct pollfd){ sfd, POLLIN, 0 };
        p[np++] = (struct pollfd){ k.naskers < ASKERS_MAX ? lfd : -1, POLLIN, 0 };
        for (int i = 0; i < k.naskers; i++)
            p[np++] = (struct pollfd){ k.askers[i].fd, POLLIN, 0 };
        /* A look each 250 ms: a task that someone else reaped sends no
         * signal to us. */
        if (poll(p, (nfds_t)np, 250) <= 0)
            continue;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) > 0)
            if (si.ssi_signo == SIGTERM && !k.zygote_done)
                kill(k.zpid, SIGTERM);  /* our child, not reaped: its pid */
        for (int i = k.naskers - 1; i >= 0; i--)
            if (p[2 + i].revents)
                hear_asker(i);
        if (p[1].revents & POLLIN)
            take_asker(lfd);
    }
}

pid_t pspawn_keeper_start(struct pspawn_standin_client *c, const char *name, int lock_fd)
{
    int word[2];
    if (pipe2(word, O_CLOEXEC) < 0)
        return -1;
    pid_t starter = getpid(), keeper = fork();
    if (keeper == 0) {
        close(word[0]);
        /* The signals a step's process group or a terminal gets are for
         * the tasks: we live as long as the zygote, which decides. */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);   /* until keep() passes it on */
        signal(SIGHUP, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGCHLD, SIG_DFL);   /* ignored, the kernel would reap for us */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        c->starter = starter;
        k.zpid = pspawn_standin_start_zygote(c, name);
        close(lock_fd);
        /* Parked, the zygote holds no directory of its tasks (its cwd is
         * "/"), nor may we: a task's file system must unmount once the
         * tasks are done, as after an exec. */
        if (chdir("/") < 0) {
            /* "/" is there */
        }
        /* Listening before our starter hears that the zygote parked: a
         * stand-in can only ask later.  Someone else's name (a squatter)
         * leaves our stand-ins to the kernel, as before keepers. */
        char kname[256];
        snprintf(kname, sizeof kname, "%s" PSPAWN_KEEPER_SUFFIX, name);
        int lfd = k.zpid > 0 ? pspawn_listen_abstract(kname, SOMAXCONN) : -1;
        if (k.zpid > 0 && lfd < 0 && c->log)
            c->log("the zygote's keeper cannot listen: its tasks' ends are left to the kernel");
        if (lfd >= 0)
            fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
        ssize_t w = write(word[1], &k.zpid, sizeof k.zpid);
        close(word[1]);
        if (k.zpid < 0 || w != (ssize_t)sizeof k.zpid)
            _exit(1);
        keep(lfd);
    }
    close(word[1]);
    if (keeper < 0) {
        close(word[0]);
        return -1;
    }
    /* The zygote's own start gives it 120 s to park. */
    struct pollfd p = { word[0], POLLIN, 0 };
    pid_t zpid = -1;
    int r;
    while ((r = poll(&p, 1, 130000)) < 0 && errno == EINTR)
        ;
    if (r != 1 || read(word[0], &zpid, sizeof zpid) != (ssize_t)sizeof zpid)
        zpid = -1;
    close(word[0]);
    if (zpid <= 0) {
        kill(keeper, SIGKILL);
        while (waitpid(keeper, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    c->zpid = zpid;
    return keeper;
}
