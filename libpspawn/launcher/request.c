/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests to the zygote servers: each task to the server of its group
 * (the root or a sub-zygote), up to WINDOW requests in flight per server
 * (servers.c sends), all servers at once.  What became of the tasks
 * comes in on the one pipe every server shares: one record per request
 * once all its tasks are set up (each says how in its slot of the go
 * block), and one per task that failed, before it.  A request is retired
 * once each of its tasks is accounted for.  A task not created yet can be
 * cancelled through its go word: exactly one of its release and its
 * cancel wins.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "go.h"
#include "pidfd.h"

/* The CPUs task I is bound to (into BUF): its own, else its call's. */
static const unsigned char *task_cpus(const struct batch *b, size_t i, unsigned char *buf)
{
    const pspawn_task_t *t = &b->task[i].t;
    if (t->cpuset) {
        memset(buf, 0, PSPAWN_CPUSET_BYTES);
        memcpy(buf, t->cpuset, t->cpusetsize < PSPAWN_CPUSET_BYTES ? t->cpusetsize
                                                                    : PSPAWN_CPUSET_BYTES);
        return buf;
    }
    if (b->task[i].call->c.have_cpuset)
        return b->task[i].call->c.cpuset;
    memset(buf, 0xff, PSPAWN_CPUSET_BYTES);
    return buf;
}

int pspawn_batch_restart_due(const struct batch *b, size_t i)
{
    return b->z->stale && !b->task[i].call->restarted && !b->draining;
}

void pspawn_batch_dispatch(struct batch *b, size_t i)
{
    struct pspawn_zygote *z = b->z;
    unsigned char buf[PSPAWN_CPUSET_BYTES];
    int s = b->nservers == z->topo.ngroups ? pspawn_zygote_route(z, task_cpus(b, i, buf)) : -1;
    b->task[i].server = s;
    if (s < 0) {
        if (pspawn_batch_restart_due(b, i))
            b->awaiting_restart = 1;
        else
            pspawn_batch_to_exec(b, i);
        return;
    }
    if (b->cursor[s] > i)
        b->cursor[s] = i;
    /* start=lazy: the server just asked for has a socket to watch */
    if (z->servers[s].state == SERVER_STARTING)
        b->fdgen++;
}

/* Encode the next up to PSPAWN_REQ_MAX tasks of server S (all of one
 * call: a request carries one caller's state) and send them.  Returns 0
 * (also when S has nothing to send), or an errno. */
int pspawn_batch_send_to(struct batch *b, int s)
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
    struct batch_call *call = NULL;
    size_t i = b->cursor[s];
    for (; i < b->n && o->k < PSPAWN_REQ_MAX; i++) {
        const struct batch_task *t = &b->task[i];
        if (t->state != T_TODO || t->server != s)
            continue;
        if (call && t->call != call)
            break;
        call = t->call;
        et[o->k] = (struct encode_task){ task_argv(b, i), task_envp(b, i), NULL };
        if (t->t.cpuset)
            et[o->k].cpuset = task_cpus(b, i, cpus[o->k]);
        o->idx[o->k++] = i;
    }
    b->cursor[s] = i;
    if (o->k == 0)
        return 0;
    int err = pspawn_encode_request(&o->req, &call->c, et, o->k, call->pgroup, NULL);
    if (!err) {
        o->id = pspawn_zygote_next_id(b->z);
        err = pspawn_send_request(b->z->servers[s].sock, o->id, &o->req, &call->c);
        if (err)
            pspawn_encoded_release(&o->req);
    }
    if (err) {
        b->cursor[s] = o->idx[0];   /* not sent: still to do */
        return err;
    }
    for (int j = 0; j < o->k; j++)
        b->task[o->idx[j]].state = T_SENT;
    /* Idle until now: its silence counts from here. */
    if (b->inflight[s]++ == 0 && b->z->servers[s].state == SERVER_READY)
        pspawn_zygote_heard(b->z, s, 0);
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

/* A task that exits at once, unseen by the caller: its setup failed. */
static void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

/* Task I of request O reported PID: it is the caller's. */
static void created(struct batch *b, struct outstanding *o, int j, pid_t pid)
{
    size_t i = o->idx[j];
    pspawn_task_t *t = &b->task[i].t;
    const struct call *c = &b->task[i].call->c;
    t->pid = pid;
    pspawn_zygote_heard(b->z, o->server, 1);
    if (c->user_flags & PSPAWN_PIDFD) {
        t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (t->pidfd >= 0)
            fcntl(t->pidfd, F_SETFD, FD_CLOEXEC);
    }
    /* The caller has the pid before the task runs (REQ_LAUNCHER_GO). */
    const struct pspawn_attr_impl *a = c->attr;
    if (a && a->pid_hook) {
        a->pid_hook(a->pid_hook_arg, i, pid);
        pspawn_go_swap(&o->req.go->go[j], GO_RUN);
    }
    pspawn_batch_settle(b, i);
}

void pspawn_batch_take_ready(struct batch *b, struct outstanding *o)
{
    for (int j = 0; j < o->k; j++) {
        /* A cancelled task is set up too, then exits: reaped once
         * retired. */
        if (o->seen[j] || o->cancelled[j] ||
            __atomic_load_n(&o->req.go->setup[j], __ATOMIC_ACQUIRE) != SETUP_READY)
            continue;
        /* The kernel wrote its pid before it ran. */
        pid_t pid = __atomic_load_n(&o->req.go->pid[j], __ATOMIC_ACQUIRE);
        if (pid <= 0)
            continue;
        o->seen[j] = 1;
        created(b, o, j, pid);
    }
}

static void take_report(struct batch *b, const struct task_report *r)
{
    struct outstanding *o = find_request(b, r->req);
    if (!o)
        return;
    pspawn_zygote_heard(b->z, o->server, 0);
    if (r->index == PSPAWN_REPORT_DONE) {
        o->done = 1;
        if (r->err) {
            o->refusal = r->err;
            o->detail = r->pid;
        } else {
            /* Every task of it has said how its setup ended. */
            pspawn_batch_take_ready(b, o);
        }
        return;
    }
    /* A task's own record says that it failed.  A cancelled task's is
     * dropped: it exits, and is reaped once retired. */
    if (r->index >= (uint32_t)o->k || o->seen[r->index] || o->cancelled[r->index])
        return;
    /* A record no task of ours wrote is dropped (the request then ends
     * as lost): the kernel wrote each cloned task's pid in the go block
     * before it ran, a failed clone has none, and errnos are small. */
    int32_t cloned = __atomic_load_n(&o->req.go->pid[r->index], __ATOMIC_ACQUIRE);
    if (r->err <= 0 || r->err >= 4096 || (r->pid > 0 ? r->pid != cloned : cloned > 0))
        return;
    o->seen[r->index] = 1;
    size_t i = o->idx[r->index];
    if (r->pid <= 0) {
        /* The zygote could not clone it (EAGAIN, ENOMEM: the zygote's own
         * limits or memory): no task exists, an exec may still make one. */
        pspawn_fallback(b->z, 0, "task %zu: the zygote could not create it (%s)", i,
                        strerror(r->err));
        pspawn_batch_to_exec(b, i);
        return;
    }
    /* The task failed its own setup (as the exec path would have) and
     * exits at once: reap it, the caller never sees its pid. */
    reap(r->pid);
    pspawn_batch_fail(b, i, r->err, "its setup failed in the zygote's clone, where an "
                      "exec'd task's would have");
}

void pspawn_batch_read_reports(struct batch *b)
{
    struct task_report recs[256];
    ssize_t got;
    while (b->z->report_r >= 0 && (got = read(b->z->report_r, recs, sizeof recs)) > 0) {
        for (size_t i = 0; i < (size_t)got / sizeof recs[0]; i++)
            take_report(b, &recs[i]);
        if ((size_t)got < sizeof recs)
            return;
    }
    /* No writer left (no zygote, no task in its setup) until a new
     * zygote: not worth waking up for. */
    if (b->z->report_r >= 0 && got == 0 && !b->report_eof) {
        b->report_eof = 1;
        b->fdgen++;
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
        if (!o->seen[j] && !o->cancelled[j])
            pspawn_batch_to_exec(b, o->idx[j]);
}

/* The tasks of a retired request that said nothing, and were not
 * refused: the zygote will not create them. */
static void settle_silent(struct batch *b, struct outstanding *o)
{
    for (int j = 0; j < o->k; j++) {
        pid_t pid = __atomic_load_n(&o->req.go->pid[j], __ATOMIC_ACQUIRE);
        if (o->cancelled[j] || o->seen[j])
            continue;
        /* Released by a zygote that died, and silent since: it is ours
         * (the kernel wrote its pid before it ran). */
        size_t i = o->idx[j];
        if (o->lost && pid > 0) {
            b->task[i].t.pid = pid;
            if (b->task[i].call->c.user_flags & PSPAWN_PIDFD) {
                b->task[i].t.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (b->task[i].t.pidfd >= 0)
                    fcntl(b->task[i].t.pidfd, F_SETFD, FD_CLOEXEC);
            }
            pspawn_batch_settle(b, i);
        } else {
            b->task[i].state = T_TODO;
            pspawn_batch_dispatch(b, i);
        }
    }
}

void pspawn_batch_retire(struct batch *b)
{
    double now = pspawn_now_ms();
    for (int i = 0; i < b->nout;) {
        struct outstanding *o = &b->out[i];
        /* No record may come for it: look at its slots. */
        if (o->lost)
            pspawn_batch_take_ready(b, o);
        int open = 0;
        for (int j = 0; j < o->k; j++)
            open += !o->seen[j] && !o->cancelled[j];
        int complete = o->lost ? open == 0 || now >= o->deadline
                               : o->done && (o->refusal || open == 0);
        if (!complete) {
            i++;
            continue;
        }
        if (o->refusal)
            note_refusal(b, o);
        else
            settle_silent(b, o);
        /* Its pid is final now (the zygote is done with the request, or
         * gone). */
        for (int j = 0; j < o->k; j++) {
            pid_t pid = __atomic_load_n(&o->req.go->pid[j], __ATOMIC_ACQUIRE);
            if (o->cancelled[j] && pid > 0)
                pspawn_batch_reap_later(b, pid);
        }
        pspawn_encoded_release(&o->req);
        b->inflight[o->server]--;
        b->out[i] = b->out[--b->nout];
    }
}

size_t pspawn_batch_cancel(struct batch *b)
{
    size_t n = 0;
    for (int r = 0; r < b->nout; r++) {
        struct outstanding *o = &b->out[r];
        for (int j = 0; j < o->k; j++) {
            if (o->seen[j] || o->cancelled[j] || b->task[o->idx[j]].state != T_SENT)
                continue;
            /* Released already: it runs, and reports. */
            if (!pspawn_go_swap(&o->req.go->go[j], GO_CANCEL))
                continue;
            o->cancelled[j] = 1;
            pspawn_batch_fail(b, o->idx[j], ECANCELED, "cancelled before it was created");
            n++;
        }
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->task[i].state == T_TODO || b->task[i].state == T_EXEC) {
            pspawn_batch_fail(b, i, ECANCELED, "cancelled before it was created");
            n++;
        }
    return n;
}
