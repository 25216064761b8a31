/* Spawning through the zygote: requests out, reports in, tasks released,
 * and every task the zygote could not serve retried by exec, once. */
#include "config.h"

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
#include <unistd.h>

#include "internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define WINDOW 3 /* requests in flight: the zygote always has the next one */

/* T_EXEC: never offered to the zygote (it cannot be faithful to it). */
enum task_state { T_TODO, T_SENT, T_DONE, T_EXEC };

struct outstanding {
    uint32_t id;
    int k;
    size_t idx[PSPAWN_REQ_MAX];     /* task indices */
    unsigned char seen[PSPAWN_REQ_MAX];
    int reported;
    int done, cloned, refusal, detail;
    struct wire_request *map;
    size_t size;
    int memfd;
};

struct batch {
    struct pspawn_zygote *z;
    pspawn_task_t *tasks;
    char ***zargv;          /* #! programs: argv as the kernel makes it */
    const char *token;      /* stand-in requests */
    size_t n;
    const struct call *c;
    unsigned char *state;
    struct outstanding out[WINDOW];
    int nout;
    size_t next;
    pid_t pgroup;           /* > 0: join this group (the caller's) */
};

static char *const *task_envp(const struct batch *b, size_t i)
{
    return b->tasks[i].envp ? b->tasks[i].envp : b->c->envp;
}

/* The argv a task gets: for a #! script, the one the kernel would make. */
static char *const *task_argv(const struct batch *b, size_t i)
{
    return b->zargv ? b->zargv[i] : b->tasks[i].argv;
}

static size_t strv_bytes(char *const *v, uint32_t *count)
{
    size_t bytes = 0;
    uint32_t n = 0;
    for (; v && v[n]; n++)
        bytes += strlen(v[n]) + 1;
    *count = n;
    return bytes;
}

static char *put_strv(char *p, char *const *v)
{
    for (size_t i = 0; v && v[i]; i++) {
        size_t l = strlen(v[i]) + 1;
        memcpy(p, v[i], l);
        p += l;
    }
    return p;
}

static void set_go(struct outstanding *o, int index, uint32_t v)
{
    __atomic_store_n(&o->map->go[index], v, __ATOMIC_RELEASE);
    syscall(SYS_futex, &o->map->go[index], FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void release(struct outstanding *o)
{
    munmap(o->map, o->size);
    close(o->memfd);
}

/* Encode the next up to PSPAWN_REQ_MAX waiting tasks into a memfd and send
 * it.  Returns 0, or an errno when the zygote cannot be reached. */
static int send_request(struct batch *b)
{
    const struct call *c = b->c;
    struct pspawn_zygote *z = b->z;
    struct outstanding *o = &b->out[b->nout];
    memset(o, 0, offsetof(struct outstanding, map));

    size_t size = sizeof(struct wire_request);
    size_t cwd_off = size;
    size += strlen(c->cwd) + 1;
    size = (size + 7) & ~(size_t)7;
    size_t rl_off = size;
    size += c->nrlimits * sizeof(struct wire_rlimit);
    size_t act_off = size;
    size += c->nactions * sizeof(struct wire_action);
    for (int i = 0; i < c->nactions; i++)
        if (c->actions[i].kind == FA_OPEN)
            size += strlen(c->actions[i].path) + 1;
    size = (size + 7) & ~(size_t)7;
    while (b->next < b->n && o->k < PSPAWN_REQ_MAX) {
        if (b->state[b->next] == T_TODO)
            o->idx[o->k++] = b->next;
        b->next++;
    }
    if (o->k == 0)
        return 0;
    size_t task_off = size;
    size += o->k * sizeof(struct wire_task);
    for (int j = 0; j < o->k; j++) {
        uint32_t cnt;
        size += strv_bytes(task_argv(b, o->idx[j]), &cnt);
        size += strv_bytes(task_envp(b, o->idx[j]), &cnt);
    }
    if (size > UINT32_MAX)
        return E2BIG;

    int fd = (int)syscall(SYS_memfd_create, "pspawn-request", MFD_CLOEXEC);
    if (fd < 0)
        return errno;
    if (ftruncate(fd, (off_t)size) < 0) {
        int e = errno;
        close(fd);
        return e;
    }
    char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        close(fd);
        return e;
    }
    struct wire_request *w = (struct wire_request *)base;
    w->ntasks = (uint32_t)o->k;
    w->flags = c->flags;
    w->umask = c->umask;
    w->pgroup = c->pgroup;
    if (b->pgroup > 0) {
        w->flags |= REQ_SETPGROUP;
        w->pgroup = b->pgroup;
    }
    w->nice = c->nice;
    w->sched_policy = c->sched_policy;
    w->sched_priority = c->sched_priority;
    w->launcher_pid = (uint32_t)getpid();
    w->sigmask = c->sigmask;
    w->sigign = c->ignored;
    w->mempolicy = c->mempolicy;
    memcpy(w->nodemask, c->nodemask, sizeof w->nodemask);
    w->seccomp = c->seccomp;
    w->proc = c->proc;
    w->cwd = (uint32_t)cwd_off;
    strcpy(base + cwd_off, c->cwd);
    w->nrlimits = (uint32_t)c->nrlimits;
    w->rlimits = (uint32_t)rl_off;
    memcpy(base + rl_off, c->rlimits, c->nrlimits * sizeof(struct wire_rlimit));
    w->nactions = (uint32_t)c->nactions;
    w->actions = (uint32_t)act_off;
    struct wire_action *wa = (struct wire_action *)(base + act_off);
    char *p = (char *)(wa + c->nactions);
    for (int i = 0; i < c->nactions; i++) {
        const struct child_action *a = &c->actions[i];
        wa[i] = (struct wire_action){ a->kind, a->fd, a->src, a->oflag, a->mode, 0 };
        if (a->kind == FA_OPEN) {
            wa[i].path = (uint32_t)(p - base);
            p = stpcpy(p, a->path) + 1;
        }
    }
    if (c->have_cpuset)
        memcpy(w->cpuset, c->cpuset, sizeof w->cpuset);
    if (b->token)
        snprintf(w->token, sizeof w->token, "%s", b->token);
    if (c->have_cpuset)
        w->flags |= REQ_CPUSET;
    w->tasks = (uint32_t)task_off;
    struct wire_task *wt = (struct wire_task *)(base + task_off);
    p = (char *)(wt + o->k);
    for (int j = 0; j < o->k; j++) {
        const pspawn_task_t *t = &b->tasks[o->idx[j]];
        char *start = p;
        wt[j].strings = (uint32_t)(p - base);
        p = put_strv(p, task_argv(b, o->idx[j]));
        wt[j].strings_len = (uint32_t)(p - start);
        start = p;
        p = put_strv(p, task_envp(b, o->idx[j]));
        wt[j].env_len = (uint32_t)(p - start);
        strv_bytes(task_argv(b, o->idx[j]), &wt[j].argc);
        strv_bytes(task_envp(b, o->idx[j]), &wt[j].envc);
        if (t->cpuset) {
            wt[j].has_cpuset = 1;
            memcpy(wt[j].cpuset, t->cpuset,
                   t->cpusetsize < PSPAWN_CPUSET_BYTES ? t->cpusetsize : PSPAWN_CPUSET_BYTES);
        }
    }

    o->id = ++z->next_req;
    o->map = w;
    o->size = size;
    o->memfd = fd;
    struct request_msg msg = { PSPAWN_MAGIC, o->id, (uint32_t)size, (uint32_t)c->nfds };
    int sendfds[PSPAWN_FD_MAX + 1];
    sendfds[0] = fd;
    memcpy(sendfds + 1, c->fds, c->nfds * sizeof(int));
    union {
        char buf[CMSG_SPACE(sizeof sendfds)];
        struct cmsghdr align;
    } cm;
    struct iovec iov = { &msg, sizeof msg };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                         .msg_controllen = CMSG_SPACE((1 + c->nfds) * sizeof(int)) };
    struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN((1 + c->nfds) * sizeof(int));
    memcpy(CMSG_DATA(ch), sendfds, (1 + c->nfds) * sizeof(int));
    ssize_t r;
    while ((r = sendmsg(z->sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        int e = errno;
        munmap(base, size);
        close(fd);
        /* Not sent: its tasks are still to do. */
        for (int j = 0; j < o->k; j++)
            b->state[o->idx[j]] = T_TODO;
        return e;
    }
    for (int j = 0; j < o->k; j++)
        b->state[o->idx[j]] = T_SENT;
    b->nout++;
    return 0;
}

static struct outstanding *find_request(struct batch *b, uint32_t id)
{
    for (int i = 0; i < b->nout; i++)
        if (b->out[i].id == id)
            return &b->out[i];
    return NULL;
}

static void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

static void take_report(struct batch *b, const struct task_report *r)
{
    struct outstanding *o = find_request(b, r->req);
    if (!o)
        return;
    if (r->index == PSPAWN_REPORT_DONE) {
        o->done = 1;
        if (r->err) {
            o->refusal = r->err;
            o->detail = r->pid;
            o->cloned = 0;
        } else {
            o->cloned = r->pid;
        }
        return;
    }
    if (r->index >= (uint32_t)o->k || o->seen[r->index])
        return;
    o->seen[r->index] = 1;
    o->reported++;
    pspawn_task_t *t = &b->tasks[o->idx[r->index]];
    b->state[o->idx[r->index]] = T_DONE;
    if (r->err) {
        /* The task failed its own setup (as the exec path would have) and
         * exits at once: reap it, the caller never sees its pid. */
        if (r->pid > 0)
            reap(r->pid);
        t->error = r->err;
        return;
    }
    t->pid = r->pid;
    if (b->c->user_flags & PSPAWN_PIDFD) {
        t->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
        if (t->pidfd >= 0)
            fcntl(t->pidfd, F_SETFD, FD_CLOEXEC);
    }
    /* We have its pid: it may run (and exit) now. */
    set_go(o, (int)r->index, GO_RUN);
}

static const char *pspawn_ctor_state_name(int what)
{
    static const char *const rlimit_names[] = {
        "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE",
        "RLIMIT_RSS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS",
        "RLIMIT_LOCKS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
        "RLIMIT_RTPRIO", "RLIMIT_RTTIME",
    };
    if (what == CTOR_STATE_UMASK)
        return "umask";
    if (what == CTOR_STATE_NICE)
        return "nice value";
    if (what >= 0 && what < (int)(sizeof rlimit_names / sizeof rlimit_names[0]))
        return rlimit_names[what];
    return "state";
}

/* Retire every request whose tasks all reported. */
static void finish_requests(struct batch *b)
{
    for (int i = 0; i < b->nout;) {
        struct outstanding *o = &b->out[i];
        if (!o->done || o->reported < o->cloned) {
            i++;
            continue;
        }
        if (o->refusal) {
            if (o->refusal == REFUSE_FD_CONFLICT)
                pspawn_fallback(b->z, 0, "fd %d requested for the task is open in the zygote "
                                "(a constructor opened it)", o->detail);
            else if (o->refusal == REFUSE_SECCOMP)
                /* Filters are never removed: this holds for every later call. */
                pspawn_fallback(b->z, 1, "the caller runs under seccomp filters (%d) that the "
                                "zygote does not: a fork of it would escape them", o->detail);
            else if (o->refusal == REFUSE_CTOR_STATE)
                pspawn_fallback(b->z, 0, "a constructor changed the program's %s, and so did "
                                "the caller since the zygote started: exec would apply the "
                                "constructor's change to the caller's",
                                pspawn_ctor_state_name(o->detail));
            else
                pspawn_fallback(b->z, 0, "zygote refused the request (code %d)", o->refusal);
        }
        /* Tasks the zygote did not clone are left to exec. */
        for (int j = 0; j < o->k; j++)
            if (!o->seen[j])
                b->state[o->idx[j]] = T_TODO;
        release(o);
        b->out[i] = b->out[--b->nout];
    }
}

static int read_reports(struct batch *b)
{
    struct task_report recs[256];
    ssize_t got;
    int any = 0;
    while ((got = read(b->z->report_r, recs, sizeof recs)) > 0) {
        any = 1;
        for (size_t i = 0; i < (size_t)got / sizeof recs[0]; i++)
            take_report(b, &recs[i]);
        if ((size_t)got < sizeof recs)
            break;
    }
    return any;
}

/* The zygote died or hung with requests in flight.  A task it cloned that
 * the caller has not seen the report of is cancelled (it exits 127 before
 * main) and later retried by exec; every other task runs.  So no task is
 * lost and none runs twice. */
static void zygote_lost(struct batch *b, int kill_it, const char *why)
{
    struct pspawn_zygote *z = b->z;
    pid_t zpid = z->zpid;
    if (kill_it && zpid > 0)
        pspawn_signal_zygote(z, SIGKILL);
    read_reports(b);
    for (int i = 0; i < b->nout; i++) {
        struct outstanding *o = &b->out[i];
        for (int j = 0; j < o->k; j++)
            if (!o->seen[j]) {
                set_go(o, j, GO_CANCEL);
                b->state[o->idx[j]] = T_TODO;
            }
    }
    int fl = fcntl(z->report_r, F_GETFL);
    fcntl(z->report_r, F_SETFL, fl & ~O_NONBLOCK);
    for (int i = 0; i < b->nout; i++)
        release(&b->out[i]);
    /* Cancelled tasks report late, then exit: reap them.  The pipe ends
     * once the zygote and every task of ours have let go of it. */
    double deadline = pspawn_now_ms() + (z->timeout_ms > 2000 ? z->timeout_ms : 2000);
    for (;;) {
        struct pollfd pfd = { z->report_r, POLLIN, 0 };
        int left = (int)(deadline - pspawn_now_ms());
        if (left <= 0)
            break;
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;   /* SIGCHLD of a cancelled task, say */
        if (pr <= 0)
            break;
        struct task_report r;
        ssize_t got = read(z->report_r, &r, sizeof r);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        /* Seen tasks never report twice: a late report is a cancelled task. */
        if (got == sizeof r && r.index != PSPAWN_REPORT_DONE && r.pid > 0)
            reap(r.pid);
    }
    b->nout = 0;
    pspawn_zygote_lost(z, 0);
    pspawn_fallback(z, 1, "%s", why);
}

static void zygote_batch(struct batch *b)
{
    struct pspawn_zygote *z = b->z;
    int fl = fcntl(z->report_r, F_GETFL);
    if (!(fl & O_NONBLOCK))
        fcntl(z->report_r, F_SETFL, fl | O_NONBLOCK);
    for (;;) {
        while (b->nout < WINDOW && b->next < b->n) {
            int err = send_request(b);
            if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
                zygote_lost(b, 0, "zygote died (its socket is closed)");
                return;
            }
            if (err) {
                /* Not the zygote's fault (no memory for a request...):
                 * these tasks go by exec, the zygote stays. */
                pspawn_fallback(z, 0, "could not build a request: %s", strerror(err));
                break;
            }
        }
        if (b->nout == 0)
            return;
        /* Death shows on the pidfd, or (kernels without pidfds) as a hang-up
         * of the socket, which tasks close first thing. */
        struct pollfd pfd[3] = { { z->report_r, POLLIN, 0 }, { z->sock, 0, 0 },
                                 { z->pidfd, POLLIN, 0 } };
        int np = z->pidfd >= 0 ? 3 : 2;
        int r;
        while ((r = poll(pfd, (nfds_t)np, z->timeout_ms)) < 0 && errno == EINTR)
            ;
        if (r == 0) {
            char why[128];
            snprintf(why, sizeof why, "zygote stopped answering (no progress in %d ms)",
                     z->timeout_ms);
            zygote_lost(b, 1, why);
            return;
        }
        if (pfd[0].revents & POLLIN)
            read_reports(b);
        finish_requests(b);
        if ((np == 3 && (pfd[2].revents & POLLIN)) || (pfd[1].revents & (POLLHUP | POLLERR))) {
            /* Died: take what it said before dying, then cancel the rest. */
            read_reports(b);
            finish_requests(b);
            zygote_lost(b, 0, "zygote died");
            return;
        }
    }
}

static void free_script_argvs(struct batch *b)
{
    for (size_t i = 0; b->zargv && i < b->n; i++)
        free(b->zargv[i]);
    free(b->zargv);
    b->zargv = NULL;
}

/* binfmt_script: the interpreter words, then the script's path in place
 * of argv[0], then argv[1...]. */
static char ***script_argvs(struct batch *b)
{
    const struct program *p = &b->z->prog;
    char ***v = calloc(b->n, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < b->n; i++) {
        char *const *argv = b->tasks[i].argv;
        size_t argc = 0;
        while (argv && argv[argc])
            argc++;
        v[i] = calloc(p->ninterp + argc + 2, sizeof(char *));
        if (!v[i]) {
            b->zargv = v;
            free_script_argvs(b);
            return NULL;
        }
        size_t k = 0;
        for (int j = 0; j < p->ninterp; j++)
            v[i][k++] = p->interp_argv[j];
        v[i][k++] = p->path;
        for (size_t j = 1; j < argc; j++)
            v[i][k++] = argv[j];
        /* exec fails if the rewritten list is too big, too */
        if (!b->tasks[i].error && b->state[i] != T_DONE &&
            (b->tasks[i].error = pspawn_args_too_big(p->exe, v[i], task_envp(b, i))))
            b->state[i] = T_DONE;
    }
    return v;
}

int pspawn_run_vector(struct pspawn_zygote *z, pspawn_task_t *tasks, size_t n,
                      const struct call *c)
{
    struct batch b = { .z = z, .tasks = tasks, .n = n, .c = c };
    b.state = calloc(n ? n : 1, 1);
    if (!b.state)
        return ENOMEM;
    int first_err = 0;
    for (size_t i = 0; i < n; i++) {
        tasks[i].pid = -1;
        tasks[i].pidfd = -1;
        tasks[i].error = 0;
        if (!tasks[i].argv)
            tasks[i].error = EINVAL;
        else
            tasks[i].error = pspawn_args_too_big(z->prog.path, tasks[i].argv, task_envp(&b, i));
        if (tasks[i].error)
            b.state[i] = T_DONE;
    }

    int use_zygote = !z->fallback && !(c->user_flags & (PSPAWN_FORCE_EXEC | PSPAWN_TRACEME));
    if (c->user_flags & PSPAWN_FORCE_EXEC)
        pspawn_fallback(z, 0, "PSPAWN_FORCE_EXEC requested");
    else if (c->user_flags & PSPAWN_TRACEME)
        pspawn_fallback(z, 0, "PSPAWN_TRACEME requested (stop at exec): a fork of the zygote "
                        "has no exec to stop at");
    if (use_zygote && pspawn_program_changed(&z->prog)) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "binary changed on disk since the zygote started "
                        "(device, inode, size or mtime differ)");
        use_zygote = 0;
    }
    /* A caller that gave up privileges (dropped root, groups, a
     * capability) must not get tasks that still have them. */
    struct pspawn_creds now;
    const char *what = NULL;
    if (use_zygote && (pspawn_creds_get(&now) || (what = pspawn_creds_differ(&now, &z->creds)))) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "the caller's %s changed since the zygote started",
                        what ? what : "credentials (unreadable)");
        use_zygote = 0;
    }
    /* A task starts in its caller's process group and session, as after
     * exec; a clone of the zygote starts in the zygote's, the caller's
     * when the zygote started.  It can join a group of that session, not
     * another session. */
    if (use_zygote && !b.token && !(c->flags & (REQ_SETSID | REQ_SETPGROUP))) {
        pid_t pg = getpgrp();
        if (getsid(0) != z->sid) {
            pspawn_fallback(z, 0, "the caller is in another session than when the zygote "
                            "started: a clone of the zygote cannot join it");
            use_zygote = 0;
        } else if (pg != z->pgid) {
            b.pgroup = pg;
        }
    }
    /* Tasks mostly share one environment: compare each distinct one once. */
    char *const *seen = NULL;
    const char *var = NULL;
    size_t len = 0;
    for (size_t i = 0; use_zygote && !b.token && i < n; i++) {
        if (b.state[i] != T_TODO)
            continue;
        if (!seen || task_envp(&b, i) != seen) {
            seen = task_envp(&b, i);
            var = pspawn_loader_env_differs(z, seen, &len);
        }
        if (var) {
            b.state[i] = T_EXEC;
            pspawn_fallback(z, 0, "task %zu: its %.*s differs from the zygote's "
                            "(the loader reads it before main)", i, (int)len, var);
        }
    }
    if (use_zygote && n > 0 && z->prog.ninterp && !(b.zargv = script_argvs(&b)))
        use_zygote = 0;
    if (use_zygote && n > 0)
        zygote_batch(&b);
    free_script_argvs(&b);

    /* Everything the zygote did not serve: a plain exec, once. */
    for (size_t i = 0; i < n; i++) {
        if (b.state[i] == T_DONE)
            continue;
        unsigned char cpuset[PSPAWN_CPUSET_BYTES];
        const unsigned char *cs = NULL;
        if (tasks[i].cpuset) {
            memset(cpuset, 0, sizeof cpuset);
            memcpy(cpuset, tasks[i].cpuset, tasks[i].cpusetsize < sizeof cpuset
                   ? tasks[i].cpusetsize : sizeof cpuset);
            cs = cpuset;
        }
        tasks[i].error = pspawn_exec_task(&tasks[i].pid, z->prog.path, c, cs,
                                          tasks[i].argv, task_envp(&b, i));
        if (!tasks[i].error && (c->user_flags & PSPAWN_PIDFD)) {
            tasks[i].pidfd = (int)syscall(SYS_pidfd_open, tasks[i].pid, 0);
            if (tasks[i].pidfd >= 0)
                fcntl(tasks[i].pidfd, F_SETFD, FD_CLOEXEC);
        }
        if (tasks[i].error)
            tasks[i].pid = -1;
    }
    for (size_t i = 0; i < n; i++)
        if (tasks[i].error && !first_err)
            first_err = tasks[i].error;
    free(b.state);
    return first_err;
}

int pspawn_send_standin(int sock, const struct call *c, pspawn_task_t *task, const char *token,
                        struct pspawn_hold *hold)
{
    struct pspawn_zygote z = { .sock = sock };
    unsigned char state = T_TODO;
    struct batch b = { .z = &z, .tasks = task, .n = 1, .c = c, .state = &state, .token = token };
    int err = send_request(&b);
    if (!err && b.nout) {
        if ((c->flags & REQ_HOLD) && hold)
            *hold = (struct pspawn_hold){ b.out[0].map, b.out[0].size, b.out[0].memfd };
        else
            release(&b.out[0]);  /* the zygote has its own mapping */
    }
    return err;
}

void pspawn_standin_go(struct pspawn_hold *hold, int run)
{
    if (!hold->map)
        return;
    struct outstanding o = { .map = hold->map, .size = hold->size, .memfd = hold->memfd };
    set_go(&o, 0, run ? GO_RUN : GO_CANCEL);
    release(&o);
    hold->map = NULL;
}
