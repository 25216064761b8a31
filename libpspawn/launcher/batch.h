/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launch engine: one state machine that both the launch session
 * (session.c, the asynchronous API) and the synchronous calls (context.c:
 * pspawn_vector and the calls on top of it) drive.
 *
 *   vector.c     what may go through the zygotes (pspawn_batch_add), the
 *                exec of what they do not serve, the synchronous driver;
 *   request.c    requests to the servers (the root and its sub-zygotes):
 *                sending, reports, retiring, cancelling;
 *   servers.c    a server that starts, dies or hangs, and the tasks it
 *                held; the tasks cancelled before main, reaped;
 *   pipeline.c   one step: wait (or not) for the zygotes, take what they
 *                said, send what can be sent, exec what must be.
 *
 * Tasks are numbered across the engine's life (one submit after another);
 * each belongs to the call (struct batch_call) it was submitted with.
 * The engine reads the context's zygote state (B->z) and changes it only
 * through the zygote handle (internal.h); it never calls the context.
 */
#ifndef PSPAWN_BATCH_H
#define PSPAWN_BATCH_H

#include <poll.h>

#include "internal.h"

/* T_EXEC: never (or no longer) offered to a zygote: none can be faithful
 * to it, or none serves it.  T_DONE: final (created, or failed). */
enum task_state { T_TODO, T_SENT, T_DONE, T_EXEC };

/* One submit: the caller's state when it was made, which all its tasks
 * share. */
struct batch_call {
    struct call c;
    pspawn_attr_t attr;     /* async: a copy of the caller's, which c.attr points into */
    char **environ_copy;    /* async, no envp given: the caller's environ then */
    int dup_fds;            /* async: c.fds are our own copies, closed when settled */
    pid_t pgroup;           /* > 0: its tasks join this group (the caller's) */
    size_t unsettled;       /* its tasks not yet T_DONE */
    int restarted;          /* its one new zygote after a replaced library is used */
};

struct batch_task {
    pspawn_task_t t;        /* the caller's (argv, envp, cpuset); pid, pidfd, error out */
    struct batch_call *call;
    char **zargv;           /* a #! program: argv as the kernel makes it */
    const char *reason;     /* failed: why, a constant sentence */
    int server;             /* the server it goes to, -1: none serves it */
    unsigned char state;    /* enum task_state */
};

/* A request in flight: up to PSPAWN_REQ_MAX tasks of one call, sent to
 * one server. */
struct outstanding {
    uint32_t id;
    int server;
    int k;
    size_t idx[PSPAWN_REQ_MAX];                 /* task indices */
    unsigned char seen[PSPAWN_REQ_MAX];         /* its report was read */
    unsigned char cancelled[PSPAWN_REQ_MAX];    /* caught before it ran */
    int done, refusal, detail;
    int lost;               /* its server is gone: no DONE will come */
    double deadline;        /* lost: how long released tasks may take to say
                             * how their setup ended */
    struct encoded_request req;
};

/* A task cancelled before main: it exits 127 at once and is reaped here,
 * within a limit (one stuck in its setup, in an open() of a FIFO, is
 * left). */
struct cancelled_task {
    pid_t pid;
    int pidfd;
    double deadline;
};

struct batch {
    struct pspawn_zygote *z;
    struct batch_task *task;
    size_t n, cap;
    size_t unsettled;       /* tasks not T_DONE */
    struct batch_call **calls;
    size_t ncalls, capcalls;
    struct outstanding *out;
    int nout, capout;
    int nservers;           /* the length of inflight[] and cursor[] */
    int *inflight;          /* per server: its requests outstanding */
    size_t *cursor;         /* per server: where its next tasks are looked for */
    size_t nexec;           /* tasks in T_EXEC */
    size_t next_exec;       /* none below it is T_EXEC */
    struct cancelled_task *cancelled;
    size_t ncancelled, capcancelled;
    unsigned fdgen;         /* changes whenever the fds to watch may have */
    int report_eof;         /* the report pipe has no writer left */
    int awaiting_restart;   /* tasks wait for a new zygote (a library was replaced) */
    int draining;           /* being freed: nothing more is sent or exec'd */
    struct pollfd *pfd;     /* pspawn_batch_pollfds' */
    int *slot;
    size_t cappfd, capslot;
    int exec_budget_ms;     /* the most one step spends on execs; 0: no limit */
    /* A task became T_DONE: created (pid > 0) or failed (error). */
    void (*settled)(void *arg, size_t i);
    void *settled_arg;
};

static inline char *const *task_envp(const struct batch *b, size_t i)
{
    const struct batch_task *t = &b->task[i];
    return t->t.envp ? t->t.envp : t->call->c.envp;
}

static inline char *const *task_argv(const struct batch *b, size_t i)
{
    return b->task[i].zargv ? b->task[i].zargv : b->task[i].t.argv;
}

static inline int server_serving(const struct zygote_server *sv)
{
    return sv->state == SERVER_READY || sv->state == SERVER_STARTING;
}

/* vector.c */
/* Add N tasks of CALL (which the engine then owns: freed by
 * pspawn_batch_free); decide which may go through the zygotes.  Tasks
 * that fail at once (no argv, E2BIG) are settled before it returns.
 * 0 or ENOMEM (then nothing was added, CALL is still the caller's). */
int pspawn_batch_add(struct batch *b, const pspawn_task_t *tasks, size_t n,
                     struct batch_call *call);
/* The synchronous calls: N TASKS of CALL (freed here) through Z until
 * each is final.  0, else the error of the first task that was not
 * created, ENOMEM, or EBUSY (a launch session has tasks in flight on Z). */
int pspawn_run_vector(struct pspawn_zygote *z, pspawn_task_t *tasks, size_t n,
                      struct batch_call *call);

/* request.c */
/* The server for task I (its binding's), or exec if none serves. */
void pspawn_batch_dispatch(struct batch *b, size_t i);
/* Send server S its next request, if it has tasks waiting: 0 (B->nout
 * tells whether one went), or an errno (EPIPE, ECONNRESET, ENOTCONN: S
 * is gone). */
int pspawn_batch_send_to(struct batch *b, int s);
/* Take every report waiting in the pipe. */
void pspawn_batch_read_reports(struct batch *b);
/* The tasks of request O whose slot says they are set up, not yet taken:
 * the caller's.  At its record, or while its server is lost. */
void pspawn_batch_take_ready(struct batch *b, struct outstanding *o);
/* Retire the requests that are complete. */
void pspawn_batch_retire(struct batch *b);
/* Cancel every task not created yet; returns how many. */
size_t pspawn_batch_cancel(struct batch *b);
/* Whether task I's zygote after a replaced library is still to come. */
int pspawn_batch_restart_due(const struct batch *b, size_t i);

/* servers.c */
/* Server S died or hangs (see pspawn_server_lost): its held tasks go
 * elsewhere. */
void pspawn_batch_server_gone(struct batch *b, int s, int kill_it, const char *why);
/* Look at every server: ready (start=lazy), dead, or silent too long.
 * P[...] are the poll results of pspawn_batch_pollfds (NULL: none), SLOT[s]
 * the index of server S's socket there (its pidfd follows), -1 if not
 * polled. */
void pspawn_batch_check_servers(struct batch *b, const struct pollfd *p, const int *slot);
/* Where the per-server arrays match the context's servers (a new zygote
 * may have a different number).  0 or ENOMEM. */
int pspawn_batch_servers_resize(struct batch *b);
/* Send what can be sent now, up to WINDOW requests per server. */
void pspawn_batch_send(struct batch *b);

/* settle.c */
/* Exec tasks in T_EXEC, within the step's budget; 1 if some are left. */
int pspawn_batch_exec(struct batch *b);
/* Task I is final: created (its pid set) or failed with ERR for REASON. */
void pspawn_batch_settle(struct batch *b, size_t i);
void pspawn_batch_fail(struct batch *b, size_t i, int err, const char *reason);
/* Task I can go through no zygote: exec it. */
void pspawn_batch_to_exec(struct batch *b, size_t i);
void pspawn_batch_call_free(struct batch_call *call);
/* A task was cancelled before main: reap it when it exits. */
void pspawn_batch_reap_later(struct batch *b, pid_t pid);
/* Reap the cancelled tasks that exited; give up on those past their
 * deadline. */
void pspawn_batch_reap_cancelled(struct batch *b);

/* pipeline.c */
void pspawn_batch_init(struct batch *b, struct pspawn_zygote *z);
/* One step: send, wait up to WAIT_MS for the zygotes (< 0: until the
 * engine's next deadline; 0: not at all), take what they said, handle
 * dead and hung ones, send again, exec what must be. */
void pspawn_batch_step(struct batch *b, int wait_ms);
/* Whether anything is in flight: a task not final, a request not
 * retired, a cancelled task not reaped, a new zygote due. */
int pspawn_batch_busy(const struct batch *b);
/* When the next step is due without any fd becoming ready
 * (pspawn_now_ms() clock): now or earlier for work that can be done at
 * once, a deadline of the zygotes, or -1 for none. */
double pspawn_batch_deadline(const struct batch *b);
/* The fds a step reads, in B->pfd (B->slot as for
 * pspawn_batch_check_servers): the report pipe, each server's socket and
 * pidfd, each cancelled task's pidfd; how many.  0 (and B->pfd unchanged)
 * if there is no memory for them. */
size_t pspawn_batch_pollfds(struct batch *b);
/* Cancel what is left, wait (bounded by the context's timeout) for what
 * is in flight, and free everything. */
void pspawn_batch_free(struct batch *b);

#endif
