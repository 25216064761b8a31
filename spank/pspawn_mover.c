/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The step's mover thread in slurmstepd (see pspawn_cgroup.h).
 *
 * slurmstepd drops its effective ids to the user's around some calls
 * (glibc applies seteuid to every thread, ours included) and keeps 0 as
 * its real and saved ids.  The thread takes root back for itself, with
 * the raw system calls that change only the calling thread, before it
 * listens (the socket's peer credentials are those of the listen: the
 * shims check them) and before every move.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pidfd.h"
#include "pspawn_spank.h"
#include "pspawn_cgroup.h"
#include "procfs.h"
#include "protocol.h"
#include "unixsock.h"

static struct {
    char extern_job[48];    /* "/job_ID/step_extern" for reuse=job, else "" */
    pthread_t thread;
    int running;
    int lfd;
    int stop[2];            /* written by pspawn_mover_stop */
    int ready[2];           /* the thread's first result, for start */
    uid_t uid;
    char name[108];
    char token[PSPAWN_MOVER_TOKEN];
} mv = { .lfd = -1, .stop = { -1, -1 }, .ready = { -1, -1 } };

static int become_root(void)
{
    if (geteuid() == 0)
        return 0;
    if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0)
        return -1;
    return 0;
}

static char *read_proc(pid_t pid, const char *what)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    return pspawn_read_file(path);
}

/* PID's parent, and its uid in *UID: the real one, or -1 when its real,
 * effective, saved and file-system uids are not all the same (a set-uid
 * program's, say); -1 if gone. */
static pid_t parent_of(pid_t pid, uid_t *uid)
{
    char *status = read_proc(pid, "status");
    unsigned long long ppid;
    const char *u = status ? strstr(status, "\nUid:") : NULL;
    unsigned long r, e, s, f;
    int ok = u && sscanf(u, "\nUid: %lu %lu %lu %lu", &r, &e, &s, &f) == 4 &&
             pspawn_proc_stat(pid, 4, 4, &ppid) == 0;
    free(status);
    if (!ok)
        return -1;
    *uid = r == e && r == s && r == f ? (uid_t)r : (uid_t)-1;
    return (pid_t)ppid;
}

/* Whether PID is in the extern step of the job (mv.extern_job, "" when
 * the step has no job's zygote): in some hierarchy, a cgroup
 * .../job_ID/step_extern or below it.  Only root puts processes there. */
static int in_job_extern(pid_t pid)
{
    if (!mv.extern_job[0])
        return 0;
    char *cg = read_proc(pid, "cgroup");
    int yes = 0;
    for (char *line = cg; line && *line && !yes;) {
        char *nl = strchrnul(line, '\n');
        char *at = strstr(line, mv.extern_job);
        if (at && at < nl) {
            char after = at[strlen(mv.extern_job)];
            yes = after == '/' || after == '\n' || after == '\0';
        }
        line = *nl ? nl + 1 : nl;
    }
    free(cg);
    return yes;
}

/* Whether PID runs with the credentials of the shim that asks (PEER, its
 * SO_PEERCRED: every uid of PID is its uid) and descends from this
 * slurmstepd, or (reuse=job) is the child of a job's zygote: a process
 * of that user in the job's extern step whose parent is too. */
static int ours(pid_t pid, const struct ucred *peer)
{
    uid_t uid, puid;
    pid_t parent;
    if (pid <= 1 || (parent = parent_of(pid, &uid)) < 0 || uid != peer->uid || uid == (uid_t)-1)
        return 0;
    if (in_job_extern(pid) && parent > 1 && parent_of(parent, &puid) >= 0 && puid == uid &&
        in_job_extern(parent))
        return 1;
    pid_t p = pid;
    for (int depth = 0; depth < 16 && p > 1; depth++) {
        uid_t u;
        p = parent_of(p, &u);
        if (p == getpid())
            return 1;
    }
    return 0;
}

/* The process a pid names when the request comes: a pidfd (it names that
 * process whatever its number becomes), or, before Linux 5.3, the pid and
 * its start time. */
struct target {
    pid_t pid;
    int pidfd;
    unsigned long long start;
};

static int target_open(struct target *t, pid_t pid)
{
    t->pid = pid;
    t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (t->pidfd < 0 && errno != ENOSYS)
        return -1;
    return pspawn_proc_stat(pid, 22, 22, &t->start);
}

/* Whether T's process still exists (a zombie does: its pid is not free),
 * so that its pid is still its own. */
static int target_alive(const struct target *t)
{
    if (t->pidfd >= 0)
        return syscall(SYS_pidfd_send_signal, t->pidfd, 0, NULL, 0) == 0;
    unsigned long long start;
    return pspawn_proc_stat(t->pid, 22, 22, &start) == 0 && start == t->start;
}

static int write_pid(const char *file, pid_t pid)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d\n", (int)pid);
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = write(fd, buf, (size_t)len) == len ? 0 : errno;
    close(fd);
    return err;
}

/* Put T into the cgroups of SHIM.  Returns 0 or an errno; *MOVED.  A pid
 * is only a number, which the kernel gives to a new process once the one
 * it named is reaped: all that was read of it holds only if it still
 * lives after, and what was written went to it only if it still lives
 * after the write. */
static int move(pid_t shim, const struct target *t, int *moved)
{
    *moved = 0;
    pid_t pid = t->pid;
    char *to = read_proc(shim, "cgroup"), *from = read_proc(pid, "cgroup");
    char *mounts = pspawn_read_file("/proc/self/mountinfo");
    static char paths[PSPAWN_CG_MAX][PATH_MAX];
    int n = to && from && mounts ? pspawn_cg_moves(to, from, mounts, paths) : -1;
    free(to);
    free(from);
    free(mounts);
    if (n < 0 || !target_alive(t))
        return ESRCH;
    int err = 0;
    for (int i = 0; i < n; i++) {
        int e = write_pid(paths[i], pid);
        if ((e == EACCES || e == EPERM) && become_root() == 0)
            e = write_pid(paths[i], pid);
        if (!e && !target_alive(t)) {
            /* Gone between our look and the write: the number may be
             * another process's now, which that write moved. */
            slurm_error("pspawn: mover: task %d ended as it was moved into %s: if its pid was "
                        "reused at once, another process went there", (int)pid, paths[i]);
            return ESRCH;
        }
        if (e) {
            slurm_error("pspawn: moving task %d into %s: %s", (int)pid, paths[i], strerror(e));
            err = e;
        } else {
            (*moved)++;
        }
    }
    return err;
}

/*
 * Connections are served side by side, so that a shim that connects and
 * then stalls (stopped by `scontrol suspend`, or a process of the user's
 * that only connects) holds up nobody else: each waits in a poll set for
 * its request, at most REQUEST_WAIT_MS, while the others are answered.
 */
#define MAX_PENDING 256
#define REQUEST_WAIT_MS 10000   /* a shim's request, after its connect */
#define DRAIN_WAIT_MS 200       /* a refused peer's request, after our reply */

struct conn {
    int fd;
    int refused;                /* replied already; only its request to take */
    pid_t peer;
    uid_t peer_uid;
    long long deadline;         /* ms, CLOCK_MONOTONIC */
};

static struct conn pending[MAX_PENDING];
static int n_pending;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reply(struct conn *c, int err, int moved)
{
    struct pspawn_mover_reply r = { PSPAWN_MOVER_MAGIC, err, moved };
    /* At debug level: slurm_error would reach the step's output, which
     * another user's connections must not be able to write into. */
    if (err == EPERM)
        slurm_debug("pspawn: mover: refused a request from pid %d uid %d", (int)c->peer,
                    (int)c->peer_uid);
    send(c->fd, &r, sizeof r, MSG_NOSIGNAL);
}

/* A new connection: others are answered at once, without waiting for
 * their request (their send may then fail; the reply is still theirs to
 * read).  Those are kept a moment, to take the request they may still
 * send: one unread when we close would make the sender's socket report
 * ECONNRESET instead of our reply. */
static void admit(int fd)
{
    struct ucred peer = { 0, (uid_t)-1, (gid_t)-1 };
    uid_t u;
    struct conn *c = &pending[n_pending++];
    int ok = pspawn_peer_cred(fd, &peer) == 0 &&
             peer.uid == mv.uid && parent_of(peer.pid, &u) == getpid();
    *c = (struct conn){ fd, !ok, peer.pid, peer.uid,
                        now_ms() + (ok ? REQUEST_WAIT_MS : DRAIN_WAIT_MS) };
    if (!ok) {
        reply(c, EPERM, 0);
        shutdown(fd, SHUT_WR);
    }
}

/* C's request has come (READY), or its time is up: answer it, and end it. */
static void finish(struct conn *c, int ready)
{
    struct pspawn_mover_req q;
    if (c->refused) {
        if (ready)
            recv(c->fd, &q, sizeof q, MSG_DONTWAIT);
    } else if (!ready || recv(c->fd, &q, sizeof q, MSG_DONTWAIT) != (ssize_t)sizeof q ||
               q.magic != PSPAWN_MOVER_MAGIC) {
        reply(c, EPROTO, 0);
    } else if (!pspawn_tokens_equal(q.token, mv.token, PSPAWN_MOVER_TOKEN)) {
        reply(c, EPERM, 0);
    } else {
        /* The process, held by a pidfd before anything is read of it. */
        struct target t;
        struct ucred peer = { c->peer, c->peer_uid, (gid_t)-1 };
        int moved = 0, err = target_open(&t, q.pid) < 0 ? ESRCH : 0;
        if (!err && (!ours(q.pid, &peer) || !target_alive(&t))) {
            /* The step's own shim, for a process that is not (or no
             * longer) the step's: its zygote died and the task, still
             * held, is init's now.  The shim then cancels it and execs:
             * no error for the user's output. */
            slurm_debug("pspawn: mover: pid %d is not a process of this step", (int)q.pid);
            err = ESRCH;
        }
        if (!err)
            err = move(c->peer, &t, &moved);
        if (t.pidfd >= 0)
            close(t.pidfd);
        reply(c, err, moved);
    }
    close(c->fd);
    *c = pending[--n_pending];
}

static void *mover_main(void *arg)
{
    (void)arg;
    int err = become_root() < 0 ? errno : 0;
    if (!err && (mv.lfd = pspawn_listen_abstract(mv.name, 128)) < 0)
        err = errno;
    while (write(mv.ready[1], &err, sizeof err) < 0 && errno == EINTR)
        ;
    if (err)
        return NULL;
    struct pollfd p[2 + MAX_PENDING];
    for (;;) {
        /* Stop taking connections while the set is full: they wait in the
         * listen queue. */
        p[0] = (struct pollfd){ n_pending < MAX_PENDING ? mv.lfd : -1, POLLIN, 0 };
        p[1] = (struct pollfd){ mv.stop[0], POLLIN, 0 };
        long long now = now_ms(), wait = -1;
        for (int i = 0; i < n_pending; i++) {
            p[2 + i] = (struct pollfd){ pending[i].fd, POLLIN, 0 };
            long long left = pending[i].deadline > now ? pending[i].deadline - now : 0;
            if (wait < 0 || left < wait)
                wait = left;
        }
        int nfds = 2 + n_pending;
        if (poll(p, (nfds_t)nfds, (int)wait) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        /* From the end, as finish() moves the last entry into the slot. */
        now = now_ms();
        for (int i = nfds - 3; i >= 0; i--)
            if (p[2 + i].revents || pending[i].deadline <= now)
                finish(&pending[i], p[2 + i].revents != 0);
        if (p[0].revents & POLLIN) {
            int fd = accept4(mv.lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                admit(fd);
        }
    }
    while (n_pending > 0) {
        close(pending[n_pending - 1].fd);
        n_pending--;
    }
    close(mv.lfd);
    mv.lfd = -1;
    return NULL;
}

int pspawn_mover_start(uid_t uid, const char *name, const char *token, uint32_t job_zygote)
{
    if (mv.running)
        return 0;
    mv.uid = uid;
    mv.extern_job[0] = '\0';
    if (job_zygote)
        snprintf(mv.extern_job, sizeof mv.extern_job, "/job_%u/step_extern", job_zygote);
    snprintf(mv.name, sizeof mv.name, "%s", name);
    memset(mv.token, 0, sizeof mv.token);
    snprintf(mv.token, sizeof mv.token, "%s", token);
    if (pipe2(mv.stop, O_CLOEXEC) < 0 || pipe2(mv.ready, O_CLOEXEC) < 0) {
        slurm_error("pspawn: mover: pipe: %s; tasks stay in the zygote's cgroups", strerror(errno));
        return -1;
    }
    int err = pthread_create(&mv.thread, NULL, mover_main, NULL);
    if (err) {
        slurm_error("pspawn: mover: pthread_create: %s; tasks stay in the zygote's cgroups",
                    strerror(err));
        return -1;
    }
    mv.running = 1;
    int terr = -1;
    while (read(mv.ready[0], &terr, sizeof terr) < 0 && errno == EINTR)
        ;
    if (terr) {
        slurm_error("pspawn: mover: listening on @%s: %s; tasks stay in the zygote's cgroups",
                    name, strerror(terr));
        pspawn_mover_stop();
        return -1;
    }
    return 0;
}

void pspawn_mover_stop(void)
{
    if (mv.running) {
        char c = 1;
        while (write(mv.stop[1], &c, 1) < 0 && errno == EINTR)
            ;
        pthread_join(mv.thread, NULL);
        mv.running = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (mv.stop[i] >= 0)
            close(mv.stop[i]);
        if (mv.ready[i] >= 0)
            close(mv.ready[i]);
        mv.stop[i] = mv.ready[i] = -1;
    }
}
