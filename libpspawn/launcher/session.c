/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launch session: the launch engine (batch.h) driven from an epoll
 * fd instead of a loop.  The fd holds a timerfd (the engine's deadlines,
 * and "now" when it has work that needs no fd), the engine's own fds in
 * an epoll of their own (the report pipe, the zygotes' sockets and
 * pidfds, the cancelled tasks' pidfds: rebuilt whole when they change, so
 * that no fd number that was closed and reused can be missed), and, with
 * PSPAWN_SESSION_REAP, a pidfd per running task.  No thread: the work is
 * done in pspawn_session_progress() and the calls around it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "pidfd.h"

extern char **environ;

/* What an epoll event of the session's fd stands for. */
enum { EV_TIMER = 0, EV_ENGINE = 1, EV_TASK = 2 /* + the task's index */ };

#define UNWATCHED_POLL_MS 10    /* REAP without a pidfd: how often to look */

struct session_task {
    unsigned char state;    /* enum pspawn_task_state */
    int exit_pidfd;         /* REAP: ours, in the epoll set while it runs */
    int wait_status;
};

struct session_event {
    size_t index;
    int state;
};

struct pspawn_session {
    struct pspawn_zygote *z;
    unsigned flags;
    struct batch b;
    struct session_task *task;  /* as many as b.n, room for cap */
    size_t cap;
    struct session_event *ev;   /* pspawn_session_next() reads from head */
    size_t head, nev, capev;
    size_t events_to_come;      /* what the tasks may still add to ev */
    pspawn_session_counts_t counts;
    int epfd, timerfd;
    int engine_fd;              /* the engine's fds' epoll, or -1 */
    unsigned engine_gen;        /* the engine's fdgen it was built for */
    double timer_due;           /* pspawn_now_ms() time armed for, or -1 */
    size_t *unwatched;          /* REAP: running tasks with no pidfd to watch */
    size_t nunwatched, capunwatched;
};

static void push_event(pspawn_session_t *s, size_t i, int state)
{
    s->task[i].state = (unsigned char)state;
    /* Room was made at submit for every event a task can give. */
    if (s->nev < s->capev)
        s->ev[s->nev++] = (struct session_event){ i, state };
    s->events_to_come--;
}

static void add_unwatched(pspawn_session_t *s, size_t i)
{
    if (s->nunwatched == s->capunwatched) {
        size_t cap = s->capunwatched ? 2 * s->capunwatched : 16;
        size_t *v = realloc(s->unwatched, cap * sizeof *v);
        if (!v)
            return;     /* left to the caller to reap; it stays SPAWNED */
        s->unwatched = v;
        s->capunwatched = cap;
    }
    s->unwatched[s->nunwatched++] = i;
}

/* PSPAWN_SESSION_REAP: watch task I's exit. */
static void watch_exit(pspawn_session_t *s, size_t i)
{
    int fd = pspawn_pidfd_open_reapable(s->b.task[i].t.pid);
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = EV_TASK + (uint64_t)i };
    if (fd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &e) == 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        s->task[i].exit_pidfd = fd;
        return;
    }
    /* No fd left (EMFILE), no watch, or no pidfd to reap by (before Linux
     * 5.4): looked at every few ms. */
    if (fd >= 0)
        close(fd);
    add_unwatched(s, i);
}

/* The engine made task I final. */
static void task_settled(void *arg, size_t i)
{
    pspawn_session_t *s = arg;
    s->counts.pending--;
    if (s->b.task[i].t.pid > 0) {
        s->counts.spawned++;
        push_event(s, i, PSPAWN_TASK_SPAWNED);
        if (s->flags & PSPAWN_SESSION_REAP)
            watch_exit(s, i);
        return;
    }
    s->counts.failed++;
    push_event(s, i, PSPAWN_TASK_FAILED);
    if (s->flags & PSPAWN_SESSION_REAP)
        s->events_to_come--;    /* no exit to come */
}

static void task_exited(pspawn_session_t *s, size_t i, int status)
{
    s->task[i].wait_status = status;
    s->counts.spawned--;
    s->counts.exited++;
    push_event(s, i, PSPAWN_TASK_EXITED);
}

/* Reap task I if it exited (its pidfd is readable). */
static void reap_watched(pspawn_session_t *s, size_t i)
{
    struct session_task *t = &s->task[i];
    int status = -1;
    if (pspawn_pidfd_try_reap(t->exit_pidfd, &status) == 0)
        return;     /* not yet */
    close(t->exit_pidfd);   /* and out of the epoll set with it */
    t->exit_pidfd = -1;
    task_exited(s, i, status);
}

/* The tasks with no pidfd: by pid, which stays theirs until we reap them
 * (the caller does not, with PSPAWN_SESSION_REAP). */
static void reap_unwatched(pspawn_session_t *s)
{
    for (size_t k = 0; k < s->nunwatched;) {
        size_t i = s->unwatched[k];
        int status;
        pid_t r = waitpid(s->b.task[i].t.pid, &status, WNOHANG);
        if (r == 0 || (r < 0 && errno == EINTR)) {
            k++;
            continue;
        }
        s->unwatched[k] = s->unwatched[--s->nunwatched];
        task_exited(s, i, r > 0 ? status : -1);
    }
}

/* Take what the session's fd says is ready. */
static void take_ready(pspawn_session_t *s)
{
    struct epoll_event e[64];
    /* Each ready fd is cleared by what is done for it, but a bound keeps
     * a misbehaving one from holding us here. */
    for (int round = 0; round < 1 + (int)(s->b.n / 64); round++) {
        int n = epoll_wait(s->epfd, e, 64, 0);
        for (int k = 0; k < n; k++) {
            uint64_t what = e[k].data.u64;
            if (what == EV_TIMER) {
                uint64_t ticks;
                if (read(s->timerfd, &ticks, sizeof ticks) == (ssize_t)sizeof ticks)
                    s->timer_due = -1;  /* it fired: disarmed */
            } else if (what >= EV_TASK && what - EV_TASK < s->b.n &&
                       s->task[what - EV_TASK].exit_pidfd >= 0) {
                reap_watched(s, (size_t)(what - EV_TASK));
            }
        }
        if (n < 64)
            break;
    }
}

/* The engine's fds in an epoll of their own, rebuilt when they changed;
 * none while the engine has nothing in flight. */
static void watch_engine(pspawn_session_t *s)
{
    int busy = pspawn_batch_busy(&s->b);
    if (busy == (s->engine_fd >= 0) && (!busy || s->engine_gen == s->b.fdgen))
        return;
    if (s->engine_fd >= 0)
        close(s->engine_fd);    /* which takes it out of the session's set */
    s->engine_fd = -1;
    if (!busy)
        return;
    int fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = EV_ENGINE };
    if (fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
        /* Without it the timer still drives the engine, at its deadlines. */
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t np = pspawn_batch_pollfds(&s->b);
    for (size_t k = 0; k < np; k++) {
        struct epoll_event pe = { .events = (uint32_t)s->b.pfd[k].events };
        if (s->b.pfd[k].fd >= 0)
            epoll_ctl(fd, EPOLL_CTL_ADD, s->b.pfd[k].fd, &pe);
    }
    s->engine_fd = fd;
    s->engine_gen = s->b.fdgen;
}

/* The timer for the engine's next deadline (now, for work that waits on
 * no fd), or for the tasks reaped by pid. */
static void arm_timer(pspawn_session_t *s)
{
    double due = pspawn_batch_busy(&s->b) ? pspawn_batch_deadline(&s->b) : -1;
    if (s->nunwatched) {
        double poll_at = pspawn_now_ms() + UNWATCHED_POLL_MS;
        if (due < 0 || poll_at < due)
            due = poll_at;
    }
    if (due == s->timer_due)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (due >= 0) {
        /* An absolute time in the past fires at once; 0 would disarm. */
        its.it_value.tv_sec = (time_t)(due / 1000);
        its.it_value.tv_nsec = (long)((due - its.it_value.tv_sec * 1000.0) * 1e6);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    }
    if (timerfd_settime(s->timerfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        s->timer_due = due;
}

/* After any change: the context is ours only while tasks are in flight;
 * the fd watches what the engine now waits on. */
static void after_change(pspawn_session_t *s)
{
    if (!pspawn_batch_busy(&s->b))
        pspawn_zygote_release(s->z, &s->b);
    watch_engine(s);
    arm_timer(s);
}

int pspawn_session_create(pspawn_session_t **session, pspawn_context_t *ctx, unsigned flags)
{
    if (!session || !ctx || !ctx->impl || (flags & ~PSPAWN_SESSION_REAP))
        return EINVAL;
    pspawn_session_t *s = calloc(1, sizeof *s);
    if (!s)
        return ENOMEM;
    s->z = ctx->impl;
    s->flags = flags;
    s->engine_fd = -1;
    s->timer_due = -1;
    pspawn_batch_init(&s->b, s->z);
    s->b.settled = task_settled;
    s->b.settled_arg = s;
    /* A session's caller goes on with its own work: a long exec fallback
     * is done a few ms at a time. */
    s->b.exec_budget_ms = 5;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = EV_TIMER };
    int err = s->epfd < 0 || s->timerfd < 0 ? errno : 0;
    if (!err && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timerfd, &e) < 0)
        err = errno;
    if (err) {
        if (s->epfd >= 0)
            close(s->epfd);
        if (s->timerfd >= 0)
            close(s->timerfd);
        free(s);
        return err;
    }
    *session = s;
    return 0;
}

static int every_entry(const char *kv)
{
    (void)kv;
    return 1;
}

/* The caller's state for tasks that start later: ATTR copied, its
 * environ copied where ENVP is NULL, the fds the tasks take duplicated
 * (the caller may close its own meanwhile). */
static int make_call(struct batch_call **out, const pspawn_attr_t *attr, char *const envp[])
{
    struct batch_call *call = calloc(1, sizeof *call);
    if (!call)
        return ENOMEM;
    int err = pspawn_attr_copy(&call->attr, attr);
    if (!err && !envp && !(envp = call->environ_copy = pspawn_env_subset(environ, every_entry)))
        err = ENOMEM;
    if (!err)
        err = pspawn_call_init(&call->c, &call->attr, envp);
    for (int k = 0; !err && k < call->c.nfds; k++) {
        int fd = fcntl(call->c.fds[k], F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            err = errno;
            call->c.nfds = k;   /* those before it are ours, to close */
        } else {
            call->c.fds[k] = fd;
        }
        call->dup_fds = 1;
    }
    if (err) {
        pspawn_batch_call_free(call);
        return err;
    }
    *out = call;
    return 0;
}

/* Room for N more tasks, and every event they can give. */
static int make_room(pspawn_session_t *s, size_t n)
{
    size_t want = s->b.n + n;
    if (want > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        while (cap < want)
            cap *= 2;
        struct session_task *v = realloc(s->task, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        s->task = v;
        s->cap = cap;
    }
    if (s->head == s->nev)
        s->head = s->nev = 0;
    size_t per_task = s->flags & PSPAWN_SESSION_REAP ? 2 : 1;
    size_t need = s->nev + s->events_to_come + n * per_task;
    if (need > s->capev && s->head > 0) {
        memmove(s->ev, s->ev + s->head, (s->nev - s->head) * sizeof *s->ev);
        s->nev -= s->head;
        s->head = 0;
        need = s->nev + s->events_to_come + n * per_task;
    }
    if (need > s->capev) {
        struct session_event *v = realloc(s->ev, need * sizeof *v);
        if (!v)
            return ENOMEM;
        s->ev = v;
        s->capev = need;
    }
    return 0;
}

int pspawn_session_submit(pspawn_session_t *s, const pspawn_task_t *tasks, size_t n,
                          const pspawn_attr_t *attr, char *const envp[], size_t *first)
{
    if (!s || (!tasks && n))
        return EINVAL;
    if (s->z->in_use && s->z->in_use != &s->b)
        return EBUSY;
    size_t base = s->b.n;
    if (first)
        *first = base;
    if (n == 0)
        return 0;
    struct batch_call *call = NULL;
    int err = make_room(s, n);
    if (!err)
        err = make_call(&call, attr, envp);
    if (err)
        return err;
    for (size_t i = base; i < base + n; i++)
        s->task[i] = (struct session_task){ PSPAWN_TASK_PENDING, -1, 0 };
    s->counts.tasks += n;
    s->counts.pending += n;
    s->events_to_come += n * (s->flags & PSPAWN_SESSION_REAP ? 2 : 1);
    pspawn_zygote_claim(s->z, &s->b);     /* (not another's: asked above) */
    err = pspawn_batch_add(&s->b, tasks, n, call);
    if (err) {
        pspawn_batch_call_free(call);
        s->counts.tasks -= n;
        s->counts.pending -= n;
        s->events_to_come -= n * (s->flags & PSPAWN_SESSION_REAP ? 2 : 1);
    } else {
        /* The zygotes start on them while the caller does other things. */
        pspawn_batch_send(&s->b);
    }
    after_change(s);
    return err;
}

int pspawn_session_fd(const pspawn_session_t *s)
{
    return s ? s->epfd : -1;
}

int pspawn_session_progress(pspawn_session_t *s)
{
    if (!s)
        return EINVAL;
    take_ready(s);
    /* Before the step, as take_ready's pidfds: a task is never reaped in
     * the progress that made it SPAWNED, so the caller that takes that
     * event finds it alive (or a zombie) and its pid still its own. */
    reap_unwatched(s);
    if (pspawn_batch_busy(&s->b))
        pspawn_batch_step(&s->b, 0);
    after_change(s);
    return 0;
}

static void fill_status(const pspawn_session_t *s, size_t i, int state,
                        pspawn_task_status_t *st)
{
    const struct batch_task *t = &s->b.task[i];
    int created = state == PSPAWN_TASK_SPAWNED || state == PSPAWN_TASK_EXITED;
    memset(st, 0, sizeof *st);
    st->index = i;
    st->state = state;
    st->pid = created ? t->t.pid : -1;
    st->pidfd = created ? t->t.pidfd : -1;
    if (state == PSPAWN_TASK_FAILED) {
        st->error = t->t.error;
        st->reason = t->reason;
    }
    if (state == PSPAWN_TASK_EXITED)
        st->wait_status = s->task[i].wait_status;
}

int pspawn_session_next(pspawn_session_t *s, pspawn_task_status_t *status)
{
    if (!s || !status || s->head == s->nev)
        return 0;
    const struct session_event *e = &s->ev[s->head++];
    fill_status(s, e->index, e->state, status);
    return 1;
}

int pspawn_session_status(const pspawn_session_t *s, size_t index, pspawn_task_status_t *status)
{
    if (!s || !status || index >= s->b.n)
        return EINVAL;
    fill_status(s, index, s->task[index].state, status);
    return 0;
}

void pspawn_session_counts(const pspawn_session_t *s, pspawn_session_counts_t *counts)
{
    if (!counts)
        return;
    if (s)
        *counts = s->counts;
    else
        memset(counts, 0, sizeof *counts);
}

static int reached(const pspawn_session_t *s, int until)
{
    if (until == PSPAWN_WAIT_EVENT)
        return s->head < s->nev;
    /* ... and the context free for other launches: the zygotes' last
     * words on the requests come right after the last task's. */
    int launched = s->counts.pending == 0 && !pspawn_batch_busy(&s->b);
    return launched && (until == PSPAWN_WAIT_LAUNCHED || s->counts.spawned == 0);
}

int pspawn_session_wait(pspawn_session_t *s, int until, int timeout_ms)
{
    if (!s || until < PSPAWN_WAIT_EVENT || until > PSPAWN_WAIT_EXITED ||
        (until == PSPAWN_WAIT_EXITED && !(s->flags & PSPAWN_SESSION_REAP)))
        return EINVAL;
    double end = timeout_ms >= 0 ? pspawn_now_ms() + timeout_ms : -1;
    for (;;) {
        pspawn_session_progress(s);
        if (reached(s, until))
            return 0;
        int left = -1;
        if (end >= 0) {
            double d = end - pspawn_now_ms();
            if (d <= 0)
                return ETIMEDOUT;
            left = (int)d + 1;
        }
        struct pollfd p = { s->epfd, POLLIN, 0 };
        poll(&p, 1, left);  /* EINTR: look again */
    }
}

size_t pspawn_session_cancel(pspawn_session_t *s)
{
    if (!s)
        return 0;
    size_t n = pspawn_batch_cancel(&s->b);
    after_change(s);
    return n;
}

void pspawn_session_destroy(pspawn_session_t *s)
{
    if (!s)
        return;
    /* Busy, it holds the context (after_change): it may drain. */
    pspawn_batch_free(&s->b);
    pspawn_zygote_release(s->z, &s->b);
    for (size_t i = 0; i < s->counts.tasks; i++)
        if (s->task[i].exit_pidfd >= 0)
            close(s->task[i].exit_pidfd);
    if (s->engine_fd >= 0)
        close(s->engine_fd);
    close(s->timerfd);
    close(s->epfd);
    free(s->unwatched);
    free(s->task);
    free(s->ev);
    free(s);
}
