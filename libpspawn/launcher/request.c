/*
 * Sending tasks through the zygotes: each task to the server of its group
 * (the root or a sub-zygote), up to WINDOW requests in flight per server,
 * all servers at once; reports in from the one pipe they share; and a
 * server that dies or hangs dealt with so that no task is lost and none
 * runs twice: what it released runs, what it held is cancelled and sent
 * elsewhere, or exec'd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "go.h"
#include "pidfd.h"

#define WINDOW 3 /* requests in flight per server: it always has the next one */

struct outstanding {
    uint32_t id;
    int server;
    int k;
    size_t idx[PSPAWN_REQ_MAX];     /* task indices */
    unsigned char seen[PSPAWN_REQ_MAX];         /* its report was read */
    unsigned char cancelled[PSPAWN_REQ_MAX];    /* caught before it ran */
    int reported;
    int done, cloned, refusal, detail;
    int lost;               /* its server is gone: no DONE will come */
    double deadline;        /* lost: how long released tasks may take to report */
    struct encoded_request req;
};

static char *const *task_argv(const struct batch *b, size_t i)
{
    return b->zargv ? b->zargv[i] : b->tasks[i].argv;
}

/* The CPUs task I is bound to (into BUF): its own, else the call's. */
static const unsigned char *task_cpus(const struct batch *b, size_t i, unsigned char *buf)
{
    const pspawn_task_t *t = &b->tasks[i];
    if (t->cpuset) {
        memset(buf, 0, PSPAWN_CPUSET_BYTES);
        memcpy(buf, t->cpuset, t->cpusetsize < PSPAWN_CPUSET_BYTES ? t->cpusetsize
                                                                    : PSPAWN_CPUSET_BYTES);
        return buf;
    }
    if (b->c->have_cpuset)
        return b->c->cpuset;
    memset(buf, 0xff, PSPAWN_CPUSET_BYTES);
    return buf;
}

static void dispatch(struct batch *b, size_t i)
{
    unsigned char buf[PSPAWN_CPUSET_BYTES];
    b->server[i] = pspawn_server_for(b->z, task_cpus(b, i, buf));
}

/* Tasks still to do whose server is gone go to another, or to exec. */
static void redispatch(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->state[i] == T_TODO &&
            (b->server[i] < 0 || b->z->servers[b->server[i]].state == SERVER_LOST))
            dispatch(b, i);
    for (int s = 0; s < b->z->topo.ngroups; s++)
        b->cursor[s] = 0;
}

/* Encode the next up to PSPAWN_REQ_MAX tasks of server S and send them.
 * Returns 0 (also when S has nothing to send), or an errno. */
static int send_request(struct batch *b, int s)
{
    if (b->nout == b->capout) {
        int cap = b->capout ? 2 * b->capout : 8;
        struct outstanding *v = realloc(b->out, (size_t)cap * sizeof *v);
        if (!v)
            return ENOMEM;
        b->out = v;
        b->capout = cap;
    }
    struct outstanding *o = &b->out[b->nout];
    memset(o, 0, sizeof *o);
    o->server = s;
    unsigned char cpus[PSPAWN_REQ_MAX][PSPAWN_CPUSET_BYTES];
    struct encode_task et[PSPAWN_REQ_MAX];
    size_t i = b->cursor[s];
    for (; i < b->n && o->k < PSPAWN_REQ_MAX; i++) {
        if (b->state[i] != T_TODO || b->server[i] != s)
            continue;
        const pspawn_task_t *t = &b->tasks[i];
        et[o->k] = (struct encode_task){ task_argv(b, i), task_envp(b, i), NULL };
        if (t->cpuset)
            et[o->k].cpuset = task_cpus(b, i, cpus[o->k]);
        o->idx[o->k++] = i;
    }
    b->cursor[s] = i;
    if (o->k == 0)
        return 0;
    int err = pspawn_encode_request(&o->req, b->c, et, o->k, b->pgroup, NULL);
    if (!err) {
        o->id = pspawn_zygote_next_id(b->z);
        err = pspawn_send_request(b->z->servers[s].sock, o->id, &o->req, b->c);
        if (err)
            pspawn_encoded_release(&o->req);
    }
    if (err) {
        b->cursor[s] = o->idx[0];   /* not sent: still to do */
        return err;
    }
    for (int j = 0; j < o->k; j++)
        b->state[o->idx[j]] = T_SENT;
    b->nout++;
    b->inflight[s]++;
    return 0;
}

static struct outstanding *find_request(struct batch *b, uint32_t id)
{
    for (int i = 0; i < b->nout; i++)
        if (b->out[i].id == id)
            return &b->out[i];
    return NULL;
}

/* A task that exits at once, unseen by the caller: a failed setup, or one
 * cancelled before main. */
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
    b->z->servers[o->server].progress_ms = pspawn_now_ms();
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
    /* A cancelled task reports too, then exits: reaped at the end. */
    if (r->index >= (uint32_t)o->k || o->seen[r->index] || o->cancelled[r->index])
        return;
    /* A record no task of ours wrote is dropped (the request then ends
     * as lost): the kernel wrote each cloned task's pid in the go block
     * before it ran, a failed clone has none, and errnos are small. */
    int32_t cloned = __atomic_load_n(&o->req.go->pid[r->index], __ATOMIC_ACQUIRE);
    if (r->err < 0 || r->err >= 4096 || (r->pid > 0 ? r->pid != cloned : !r->err || cloned > 0))
        return;
    o->seen[r->index] = 1;
    o->reported++;
    size_t i = o->idx[r->index];
    pspawn_task_t *t = &b->tasks[i];
    b->state[i] = T_DONE;
    if (r->err && r->pid <= 0) {
        /* The zygote could not clone it (EAGAIN, ENOMEM: the zygote's own
         * limits or memory): no task exists, an exec may still make one. */
        b->state[i] = T_EXEC;
        pspawn_fallback(b->z, 0, "task %zu: the zygote could not create it (%s)", i,
                        strerror(r->err));
        return;
    }
    if (r->err) {
        /* The task failed its own setup (as the exec path would have) and
         * exits at once: reap it, the caller never sees its pid. */
        reap(r->pid);
        t->error = r->err;
        return;
    }
    t->pid = r->pid;
    b->z->servers[o->server].tasks++;
    if (b->c->user_flags & PSPAWN_PIDFD) {
        t->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
        if (t->pidfd >= 0)
            fcntl(t->pidfd, F_SETFD, FD_CLOEXEC);
    }
    /* The caller has the pid before the task runs (REQ_LAUNCHER_GO). */
    const struct pspawn_attr_impl *a = b->c->attr;
    if (a && a->pid_hook) {
        a->pid_hook(a->pid_hook_arg, i, r->pid);
        pspawn_go_swap(&o->req.go->go[r->index], GO_RUN);
    }
}

static void read_reports(struct batch *b)
{
    struct task_report recs[256];
    ssize_t got;
    while (b->z->report_r >= 0 && (got = read(b->z->report_r, recs, sizeof recs)) > 0) {
        for (size_t i = 0; i < (size_t)got / sizeof recs[0]; i++)
            take_report(b, &recs[i]);
        if ((size_t)got < sizeof recs)
            break;
    }
}

static const char *ctor_state_name(int what)
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

/* A refused request's tasks are exec'd: every zygote would refuse them. */
static void note_refusal(struct batch *b, const struct outstanding *o)
{
    struct pspawn_zygote *z = b->z;
    if (o->refusal == REFUSE_FD_CONFLICT)
        pspawn_fallback(z, 0, "fd %d requested for the task is open in the zygote "
                        "(a constructor opened it)", o->detail);
    else if (o->refusal == REFUSE_SECCOMP)
        /* Filters are never removed: this holds for every later call. */
        pspawn_fallback(z, 1, "the caller runs under seccomp filters (%d) that the "
                        "zygote does not: a fork of it would escape them", o->detail);
    else if (o->refusal == REFUSE_CTOR_STATE)
        pspawn_fallback(z, 0, "a constructor changed the program's %s, and so did "
                        "the caller since the zygote started: exec would apply the "
                        "constructor's change to the caller's", ctor_state_name(o->detail));
    else
        pspawn_fallback(z, 0, "zygote refused the request (code %d)", o->refusal);
    for (int j = 0; j < o->k; j++)
        if (!o->seen[j])
            b->state[o->idx[j]] = T_EXEC;
}

/* Retire every request that is complete: all its tasks reported, or its
 * server lost and every task it released reported or given up on. */
static void finish_requests(struct batch *b)
{
    double now = pspawn_now_ms();
    for (int i = 0; i < b->nout;) {
        struct outstanding *o = &b->out[i];
        int open = 0;
        for (int j = 0; j < o->k; j++)
            open += !o->seen[j] && !o->cancelled[j];
        int complete = o->lost ? open == 0 || now >= o->deadline
                               : o->done && o->reported >= o->cloned;
        if (!complete) {
            i++;
            continue;
        }
        if (o->refusal) {
            note_refusal(b, o);
        } else {
            for (int j = 0; j < o->k; j++) {
                if (o->seen[j] || o->cancelled[j])
                    continue;
                /* Released by a zygote that died, and silent since: it is
                 * ours (the kernel wrote its pid before it ran). */
                pspawn_task_t *t = &b->tasks[o->idx[j]];
                if (o->lost && o->req.go->pid[j] > 0) {
                    t->pid = o->req.go->pid[j];
                    b->state[o->idx[j]] = T_DONE;
                } else {
                    b->state[o->idx[j]] = T_TODO;
                }
            }
        }
        pspawn_encoded_release(&o->req);
        b->inflight[o->server]--;
        b->out[i] = b->out[--b->nout];
    }
}

/* Server S died or hangs.  Once it is gone (killed if it hangs), what it
 * released runs, whatever it still held is cancelled (such a task exits
 * 127 before main) and goes to another server or to exec.  Losing the
 * root loses every server. */
static void server_gone(struct batch *b, int s, int kill_it, const char *why)
{
    struct pspawn_zygote *z = b->z;
    pspawn_server_lost(z, s, kill_it, why);
    read_reports(b);
    double deadline = pspawn_now_ms() + (z->timeout_ms > 2000 ? z->timeout_ms : 2000);
    for (int i = 0; i < b->nout; i++) {
        struct outstanding *o = &b->out[i];
        if (o->lost || z->servers[o->server].state != SERVER_LOST)
            continue;
        o->lost = 1;
        o->deadline = deadline;
        for (int j = 0; j < o->k; j++) {
            /* Reported: it is the caller's, released by us if the zygote
             * died before it could. */
            if (o->seen[j]) {
                if (!b->tasks[o->idx[j]].error)
                    pspawn_go_swap(&o->req.go->go[j], GO_RUN);
                continue;
            }
            if (!pspawn_go_swap(&o->req.go->go[j], GO_CANCEL))
                continue;   /* released: it runs, and reports */
            o->cancelled[j] = 1;
            b->state[o->idx[j]] = T_TODO;
            pid_t pid = o->req.go->pid[j];
            if (pid > 0 && b->ncancelled < (int)b->n)
                b->cancelled[b->ncancelled++] = pid;
        }
    }
    /* pspawn_server_lost may have learnt better why (its exit status). */
    why = z->servers[s].why;
    if (z->stale)   /* not a fallback: a new zygote is started (vector.c) */
        pspawn_debug(z, "zygote %d ended: %s", s, why);
    else if (z->fallback)
        pspawn_fallback(z, 1, "%s", why);
    else
        pspawn_fallback(z, 0, "sub-zygote %d: %s; its tasks go to the other zygotes", s, why);
    redispatch(b);
}

/* Cancelled tasks exit right after their setup: reap them, within a
 * limit (a task stuck in its setup, in an open() of a FIFO, say, is left). */
static void reap_cancelled(struct batch *b)
{
    double deadline = pspawn_now_ms() + (b->z->timeout_ms > 2000 ? b->z->timeout_ms : 2000);
    for (int i = 0; i < b->ncancelled; i++) {
        int fd = (int)syscall(SYS_pidfd_open, b->cancelled[i], 0);
        struct pollfd p = { fd, POLLIN, 0 };
        int left = (int)(deadline - pspawn_now_ms());
        if (fd < 0 || (left > 0 && poll(&p, 1, left) == 1))
            reap(b->cancelled[i]);
        if (fd >= 0)
            close(fd);
    }
    b->ncancelled = 0;
}

static int serving(const struct zygote_server *sv)
{
    return sv->state == SERVER_READY || sv->state == SERVER_STARTING;
}

/* Send what can be sent now; 0 when nothing is in flight afterwards. */
static int send_all(struct batch *b)
{
    struct pspawn_zygote *z = b->z;
    for (int s = 0; s < z->topo.ngroups; s++) {
        while (serving(&z->servers[s]) && b->inflight[s] < WINDOW) {
            int before = b->nout;
            int err = send_request(b, s);
            if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
                server_gone(b, s, 0, "zygote died (its socket is closed)");
                break;
            }
            if (err) {
                /* Not the zygote's fault (no memory for a request...):
                 * these tasks go by exec, the zygote stays. */
                pspawn_fallback(z, 0, "could not build a request: %s", strerror(err));
                for (size_t i = 0; i < b->n; i++)
                    if (b->state[i] == T_TODO && b->server[i] == s)
                        b->state[i] = T_EXEC;
                break;
            }
            if (b->nout == before)
                break;  /* nothing more for it */
        }
    }
    return b->nout;
}

void pspawn_batch_run(struct batch *b)
{
    struct pspawn_zygote *z = b->z;
    int ns = z->topo.ngroups;
    struct pollfd *pfd = calloc(1 + 2 * (size_t)ns, sizeof *pfd);
    b->server = calloc(b->n, sizeof *b->server);
    b->inflight = calloc((size_t)ns, sizeof *b->inflight);
    b->cursor = calloc((size_t)ns, sizeof *b->cursor);
    b->cancelled = calloc(b->n, sizeof *b->cancelled);
    if (!pfd || !b->server || !b->inflight || !b->cursor || !b->cancelled)
        goto out;   /* every task left to exec */
    int fl = fcntl(z->report_r, F_GETFL);
    if (!(fl & O_NONBLOCK))
        fcntl(z->report_r, F_SETFL, fl | O_NONBLOCK);
    for (size_t i = 0; i < b->n; i++)
        if (b->state[i] == T_TODO)
            dispatch(b, i);
    double now = pspawn_now_ms();
    for (int s = 0; s < ns; s++)
        if (z->servers[s].state == SERVER_READY)
            z->servers[s].progress_ms = now;
    while (send_all(b)) {
        /* Death shows on the pidfd, or (kernels without pidfds) as a
         * hang-up of the socket, which tasks close first thing.  A server
         * asked for (start=lazy) says it is ready on its socket. */
        int np = 0;
        pfd[np++] = (struct pollfd){ z->report_r, POLLIN, 0 };
        double wake = pspawn_now_ms() + z->timeout_ms;
        for (int s = 0; s < ns; s++) {
            const struct zygote_server *sv = &z->servers[s];
            int busy = serving(sv) && (b->inflight[s] > 0 || sv->state == SERVER_STARTING);
            pfd[np++] = (struct pollfd){ busy ? sv->sock : -1,
                                         sv->state == SERVER_STARTING ? POLLIN : 0, 0 };
            pfd[np++] = (struct pollfd){ busy ? sv->pidfd : -1, POLLIN, 0 };
            double limit = sv->progress_ms + (sv->state == SERVER_STARTING
                                              ? pspawn_start_timeout_ms(z) : z->timeout_ms);
            if (busy && limit < wake)
                wake = limit;
        }
        for (int i = 0; i < b->nout; i++)
            if (b->out[i].lost && b->out[i].deadline < wake)
                wake = b->out[i].deadline;
        int left = (int)(wake - pspawn_now_ms()) + 1;
        int r;
        while ((r = poll(pfd, (nfds_t)np, left > 0 ? left : 0)) < 0 && errno == EINTR)
            ;
        if (pfd[0].revents & POLLIN)
            read_reports(b);
        now = pspawn_now_ms();
        for (int s = 0; s < ns; s++) {
            struct zygote_server *sv = &z->servers[s];
            short sock_ev = pfd[1 + 2 * s].revents, pid_ev = pfd[2 + 2 * s].revents;
            if (!serving(sv))
                continue;
            if (sv->state == SERVER_STARTING && (sock_ev & POLLIN) &&
                pspawn_server_ready(z, s) < 0) {
                server_gone(b, s, 0, sv->why);
            } else if ((pid_ev & POLLIN) || (sock_ev & (POLLHUP | POLLERR))) {
                /* Died: take what it said before dying, then cancel the rest. */
                server_gone(b, s, 0, "zygote died");
            } else if ((b->inflight[s] > 0 || sv->state == SERVER_STARTING) &&
                       now >= sv->progress_ms + (sv->state == SERVER_STARTING
                                                 ? pspawn_start_timeout_ms(z) : z->timeout_ms)) {
                char why[128];
                snprintf(why, sizeof why, "zygote stopped answering (no progress in %d ms)",
                         z->timeout_ms);
                server_gone(b, s, 1, why);
            }
        }
        finish_requests(b);
    }
out:
    for (int i = 0; i < b->nout; i++)
        pspawn_encoded_release(&b->out[i].req);
    b->nout = 0;
    reap_cancelled(b);
    free(pfd);
    free(b->out);
    free(b->server);
    free(b->inflight);
    free(b->cursor);
    free(b->cancelled);
    b->out = NULL;
    b->capout = 0;      /* so that the batch can run again (a new zygote) */
}
