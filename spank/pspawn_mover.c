/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The step's mover thread in slurmstepd (see pspawn_cgroup.h).
 *
 * slurmstepd drops its effective ids to the user's around some calls
 * (glibc applies seteuid to every thread, ours included) and keeps 0 as
 * its real and saved ids.  The thread takes root back for itself, with
 * the raw system calls that change only the calling thread, before every
 * move.
 *
 * Every process it acts on is pinned first (pin.h): each task's child by
 * task_post_fork, the process a request names when the request comes,
 * and each ancestor it walks through; what it read of one holds only if
 * that one is still alive after the read.
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
#include <unistd.h>

#include "pin.h"
#include "pspawn_spank.h"
#include "pspawn_cgroup.h"
#include "procfs.h"

/* One local task's pair: the mover's end, the end its child keeps, and
 * that child, pinned by task_post_fork. */
struct channel {
    int mover_end;
    int task_end;
    struct pspawn_pin shim;     /* pid -1 until task_post_fork */
    int reported;               /* its shim's report is in the tally */
};

static struct {
    struct channel *ch;
    uint32_t n;
    char *job_extern;       /* the job's extern step (reuse=job), or NULL */
    pthread_t thread;
    pthread_mutex_t lock;   /* ch[].shim: task_post_fork sets, the thread reads */
    int running;
    int stop[2];            /* written by pspawn_mover_stop */
    uid_t uid;
    char token[PSPAWN_MOVER_TOKEN];
    struct pspawn_tally tally;  /* what the shims reported */
    unsigned reports;
    char node[64], scope[48];   /* the tally's line's */
} mv = { .stop = { -1, -1 }, .lock = PTHREAD_MUTEX_INITIALIZER };

static int become_root(void)
{
    if (geteuid() == 0)
        return 0;
    if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0)
        return -1;
    return 0;
}

/* P's parent, and its uid in *UID: the real one, or -1 when its real,
 * effective, saved and file-system uids are not all the same (a set-uid
 * program's, say).  -1 if P is gone. */
static pid_t parent_of(const struct pspawn_pin *p, uid_t *uid)
{
    char *status = pspawn_pin_read(p, "status");
    const char *u = status ? strstr(status, "\nUid:") : NULL;
    const char *pp = status ? strstr(status, "\nPPid:") : NULL;
    unsigned long r, e, s, f;
    long ppid;
    int ok = u && pp && sscanf(u, "\nUid: %lu %lu %lu %lu", &r, &e, &s, &f) == 4 &&
             sscanf(pp, "\nPPid: %ld", &ppid) == 1;
    free(status);
    if (!ok)
        return -1;
    *uid = r == e && r == s && r == f ? (uid_t)r : (uid_t)-1;
    return (pid_t)ppid;
}

/* Whether P is in the job's extern step (reuse=job), by its cgroups. */
static int in_job_extern(const struct pspawn_pin *p)
{
    if (!mv.job_extern)
        return 0;
    char *cg = pspawn_pin_read(p, "cgroup");
    int yes = cg && pspawn_cg_within(cg, mv.job_extern);
    free(cg);
    return yes;
}

/* Whether T runs with the step's user's credentials (every uid of it) and
 * descends from this slurmstepd, or (reuse=job) is the child of a process
 * of that user in the job's extern step, itself in there.  Each ancestor
 * is pinned while it is looked at, and all of them are checked alive at
 * the end: a parent that died (and whose pid went to another process)
 * would have left T another parent. */
static int ours(const struct pspawn_pin *t)
{
    uid_t uid;
    pid_t parent = parent_of(t, &uid);
    if (parent < 0 || uid != mv.uid || uid == (uid_t)-1)
        return 0;
    struct pspawn_pin chain[16];
    int n = 0, yes = 0;
    for (pid_t p = parent; p > 1 && n < 16 && !yes; n++) {
        if (pspawn_pin_pid(&chain[n], p) < 0)
            break;
        uid_t u;
        if (p == getpid()) {
            yes = 1;
        } else if (n == 0 && in_job_extern(t) && in_job_extern(&chain[0]) &&
                   parent_of(&chain[0], &u) >= 0 && u == uid) {
            yes = 1;    /* a job zygote's child */
        }
        if (!yes && (p = parent_of(&chain[n], &u)) < 0) {
            n++;
            break;
        }
    }
    uid_t u;
    yes = yes && parent_of(t, &u) == parent;
    for (int i = 0; i < n; i++) {
        yes = yes && pspawn_pin_alive(&chain[i]);
        pspawn_pin_close(&chain[i]);
    }
    return yes;
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

/* Put T into the cgroups TO (its destination's /proc/PID/cgroup, read
 * while that was pinned).  Returns 0 or an errno; *MOVED.  The kernel has
 * no way to move a process by pidfd: what was written went to T only if
 * it still lives after the write. */
static int move(const char *to, const struct pspawn_pin *t, int *moved)
{
    *moved = 0;
    char *from = pspawn_pin_read(t, "cgroup");
    char *mounts = pspawn_read_file("/proc/self/mountinfo");
    static char paths[PSPAWN_CG_MAX][PATH_MAX];
    int n = from && mounts ? pspawn_cg_moves(to, from, mounts, paths) : -1;
    free(from);
    free(mounts);
    if (n < 0)
        return ESRCH;
    int err = 0;
    for (int i = 0; i < n; i++) {
        int e = write_pid(paths[i], t->pid);
        if ((e == EACCES || e == EPERM) && become_root() == 0)
            e = write_pid(paths[i], t->pid);
        if (!e && !pspawn_pin_alive(t)) {
            /* Gone between our look and the write: the number may be
             * another process's now, which that write moved. */
            slurm_error("pspawn: mover: task %d ended as it was moved into %s: if its pid was "
                        "reused at once, another process went there", (int)t->pid, paths[i]);
            return ESRCH;
        }
        if (e) {
            slurm_error("pspawn: moving task %d into %s: %s", (int)t->pid, paths[i], strerror(e));
            err = e;
        } else {
            (*moved)++;
        }
    }
    return err;
}

/* The answer to a request for PID on CH: an errno, or 0 with *MOVED. */
static int answer(struct channel *ch, pid_t pid, int *moved)
{
    pthread_mutex_lock(&mv.lock);
    struct pspawn_pin shim = ch->shim;
    char *to = shim.pid > 0 ? pspawn_pin_read(&shim, "cgroup") : NULL;
    pthread_mutex_unlock(&mv.lock);
    if (!to) {
        /* The task's child that slurmstepd forked is gone (or was never
         * pinned): whoever asks on its end now is not it. */
        slurm_debug("pspawn: mover: a request on the end of task pid %d, which is gone",
                    (int)shim.pid);
        return EPERM;
    }
    struct pspawn_pin t;
    int err = 0;
    if (pspawn_pin_pid(&t, pid) < 0) {
        err = ESRCH;
    } else if (!ours(&t)) {
        /* The step's own shim, for a process that is not (or no longer)
         * the step's: its zygote died and the task, still held, is
         * init's now.  The shim then cancels it and execs. */
        slurm_debug("pspawn: mover: pid %d is not a process of this step", (int)pid);
        err = ESRCH;
    } else {
        err = move(to, &t, moved);
    }
    pspawn_pin_close(&t);
    free(to);
    return err;
}

static void reply(int fd, int err, int moved)
{
    struct pspawn_mover_reply r = { PSPAWN_MOVER_MAGIC, err, moved };
    send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* A shim's report on CH: counted once per task; a verbose shim gets the
 * node's line once every task has reported, else "". */
static void take_report(struct channel *ch, const void *buf, size_t len)
{
    struct pspawn_mover_report r;
    int err = pspawn_report_decode(buf, len, mv.token, &r);
    if (err) {
        slurm_debug("pspawn: mover: a report that is not one (%s)", strerror(err));
        return;
    }
    if (!ch->reported) {
        ch->reported = 1;
        mv.reports++;
        if (r.forked) {
            pspawn_tally_forked(&mv.tally, r.zygote, r.zygote_start_ms);
            pspawn_tally_zygote_program(&mv.tally, r.objects, r.python);
        }
        else
            pspawn_tally_exec(&mv.tally, 1, r.why);
    }
    if (!r.verbose)
        return;
    struct pspawn_mover_line l = { PSPAWN_REPORT_MAGIC, "" };
    if (mv.reports == mv.n)
        pspawn_tally_format(&mv.tally, mv.node, mv.scope, l.line, sizeof l.line);
    send(ch->mover_end, &l, sizeof l, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* CH's end has something: a request (answered), a report, or the end of
 * it. */
static void serve(struct channel *ch)
{
    union {
        struct pspawn_mover_req req;
        struct pspawn_mover_report report;
    } u;
    char buf[sizeof u + 1];
    ssize_t n = recv(ch->mover_end, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* Every copy of the task's end is closed: it is over. */
        close(ch->mover_end);
        ch->mover_end = -1;
        return;
    }
    uint32_t magic = 0;
    if ((size_t)n >= sizeof magic)
        memcpy(&magic, buf, sizeof magic);
    if (magic == PSPAWN_REPORT_MAGIC) {
        take_report(ch, buf, (size_t)n);
        return;
    }
    pid_t pid = 0;
    int moved = 0;
    int err = pspawn_mover_decode(buf, (size_t)n, mv.token, &pid);
    if (err == EPERM)
        slurm_debug("pspawn: mover: a request with another token");
    if (!err)
        err = answer(ch, pid, &moved);
    reply(ch->mover_end, err, moved);
}

/* The step ends: what its shims sent before is still taken (a task that
 * ended at once reported just before; the stop may be seen first).  At
 * most a few messages per task's pair: a shim cannot keep us here. */
static void drain(void)
{
    for (uint32_t i = 0; i < mv.n; i++) {
        for (int k = 0; k < 4 && mv.ch[i].mover_end >= 0; k++) {
            struct pollfd q = { mv.ch[i].mover_end, POLLIN, 0 };
            if (poll(&q, 1, 0) != 1)
                break;
            serve(&mv.ch[i]);
        }
    }
}

static void *mover_main(void *arg)
{
    (void)arg;
    struct pollfd *p = calloc(mv.n + 1, sizeof *p);
    if (!p) {
        slurm_error("pspawn: mover: out of memory; tasks that ask are exec'd");
        return NULL;
    }
    for (;;) {
        p[0] = (struct pollfd){ mv.stop[0], POLLIN, 0 };
        for (uint32_t i = 0; i < mv.n; i++)
            p[1 + i] = (struct pollfd){ mv.ch[i].mover_end, POLLIN, 0 };
        if (poll(p, mv.n + 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents) {
            drain();
            break;
        }
        for (uint32_t i = 0; i < mv.n; i++)
            if (p[1 + i].revents)
                serve(&mv.ch[i]);
    }
    free(p);
    return NULL;
}

static void close_all(void)
{
    for (uint32_t i = 0; mv.ch && i < mv.n; i++) {
        if (mv.ch[i].mover_end >= 0)
            close(mv.ch[i].mover_end);
        if (mv.ch[i].task_end >= 0)
            close(mv.ch[i].task_end);
        pspawn_pin_close(&mv.ch[i].shim);
    }
    free(mv.ch);
    free(mv.job_extern);
    mv.ch = NULL;
    mv.job_extern = NULL;
    mv.n = 0;
    for (int i = 0; i < 2; i++) {
        if (mv.stop[i] >= 0)
            close(mv.stop[i]);
        mv.stop[i] = -1;
    }
}

int pspawn_mover_start(uid_t uid, const char *token, uint32_t ntasks, const char *job_extern,
                       const char *node, const char *scope)
{
    if (mv.running)
        return 0;
    mv.uid = uid;
    pspawn_tally_init(&mv.tally, ntasks);
    mv.reports = 0;
    snprintf(mv.node, sizeof mv.node, "%s", node ? node : "");
    snprintf(mv.scope, sizeof mv.scope, "%s", scope ? scope : "");
    memset(mv.token, 0, sizeof mv.token);
    snprintf(mv.token, sizeof mv.token, "%s", token);
    mv.ch = calloc(ntasks ? ntasks : 1, sizeof *mv.ch);
    mv.job_extern = job_extern ? strdup(job_extern) : NULL;
    if (!mv.ch || (job_extern && !mv.job_extern)) {
        slurm_error("pspawn: mover: out of memory");
        close_all();
        return -1;
    }
    for (mv.n = 0; mv.n < ntasks; mv.n++) {
        int sv[2];
        /* Close-on-exec: only task_init clears it, on its own task's end
         * in its own child, for the shim.  Nothing else slurmstepd runs
         * (TaskProlog, the job's zygote's starter) gets one. */
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
            slurm_error("pspawn: mover: socketpair for task %u of %u: %s", mv.n, ntasks,
                        strerror(errno));
            close_all();
            return -1;
        }
        mv.ch[mv.n] = (struct channel){ sv[0], sv[1], PSPAWN_PIN_NONE, 0 };
    }
    if (pipe2(mv.stop, O_CLOEXEC) < 0) {
        slurm_error("pspawn: mover: pipe: %s", strerror(errno));
        close_all();
        return -1;
    }
    int err = pthread_create(&mv.thread, NULL, mover_main, NULL);
    if (err) {
        slurm_error("pspawn: mover: pthread_create: %s", strerror(err));
        close_all();
        return -1;
    }
    mv.running = 1;
    return 0;
}

int pspawn_mover_task_forked(int task, pid_t pid)
{
    if (!mv.running || task < 0 || (uint32_t)task >= mv.n)
        return -1;
    struct channel *ch = &mv.ch[task];
    struct pspawn_pin pin;
    uid_t uid;
    /* slurmstepd's own child, which it has not let run yet (nor reaped):
     * this pin is that process. */
    if (pspawn_pin_pid(&pin, pid) < 0 || parent_of(&pin, &uid) != getpid()) {
        slurm_error("pspawn: mover: task %d's pid %d is not a child of slurmstepd", task,
                    (int)pid);
        pspawn_pin_close(&pin);
        return -1;
    }
    pthread_mutex_lock(&mv.lock);
    pspawn_pin_close(&ch->shim);
    ch->shim = pin;
    pthread_mutex_unlock(&mv.lock);
    if (ch->task_end >= 0) {
        close(ch->task_end);    /* the child has its own copy */
        ch->task_end = -1;
    }
    return 0;
}

int pspawn_mover_task_channel(int task)
{
    if (!mv.running || task < 0 || (uint32_t)task >= mv.n || mv.ch[task].task_end < 0)
        return -1;
    int keep = mv.ch[task].task_end;
    for (uint32_t i = 0; i < mv.n; i++) {
        if (mv.ch[i].mover_end >= 0)
            close(mv.ch[i].mover_end);
        if (i != (uint32_t)task && mv.ch[i].task_end >= 0)
            close(mv.ch[i].task_end);
        mv.ch[i].mover_end = mv.ch[i].task_end = -1;
        if (mv.ch[i].shim.pidfd >= 0)
            close(mv.ch[i].shim.pidfd);
        mv.ch[i].shim = PSPAWN_PIN_NONE;
    }
    for (int i = 0; i < 2; i++) {
        if (mv.stop[i] >= 0)
            close(mv.stop[i]);
        mv.stop[i] = -1;
    }
    mv.running = 0;     /* this child has no mover thread */
    if (fcntl(keep, F_SETFD, 0) < 0) {
        close(keep);
        return -1;
    }
    return keep;
}

int pspawn_mover_stop(struct pspawn_tally *tally)
{
    int was = mv.running;
    if (mv.running) {
        char c = 1;
        while (write(mv.stop[1], &c, 1) < 0 && errno == EINTR)
            ;
        pthread_join(mv.thread, NULL);
        mv.running = 0;
        if (tally)
            *tally = mv.tally;
    }
    close_all();
    return was ? 0 : -1;
}
