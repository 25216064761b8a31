/*
 * A vector spawn in flight: vector.c decides what may go through the
 * zygotes and execs the rest; request.c sends the requests to the servers
 * (the root and its sub-zygotes), reads the reports, and deals with a
 * server that dies or hangs.
 */
#ifndef PSPAWN_BATCH_H
#define PSPAWN_BATCH_H

#include "internal.h"

/* T_EXEC: never offered to a zygote (none can be faithful to it, or none
 * serves it). */
enum task_state { T_TODO, T_SENT, T_DONE, T_EXEC };

struct batch {
    struct pspawn_zygote *z;
    pspawn_task_t *tasks;
    char ***zargv;          /* #! programs: argv as the kernel makes it */
    size_t n;
    const struct call *c;
    unsigned char *state;
    int *server;            /* per task: the server it goes to */
    pid_t pgroup;           /* > 0: join this group (the caller's) */
    struct outstanding *out;
    int nout, capout;
    int *inflight;          /* per server: its requests outstanding */
    size_t *cursor;         /* per server: where its next tasks are looked for */
    pid_t *cancelled;       /* tasks cancelled before main: reaped at the end */
    int ncancelled;
};

static inline char *const *task_envp(const struct batch *b, size_t i)
{
    return b->tasks[i].envp ? b->tasks[i].envp : b->c->envp;
}

/* request.c: send every T_TODO task through the servers; what they did not
 * create is left T_TODO or T_EXEC, for exec. */
void pspawn_batch_run(struct batch *b);

#endif
