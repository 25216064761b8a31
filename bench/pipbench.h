/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipbench.h - what the parts of bench/pipbench share: the driver
 * (pipbench.c: options, the PiP probe, output files), the groups of tasks
 * it measures (pipbench-groups.c) and the three measurements
 * (pipbench-measures.c).  The tasks are bench/pip-task, whose control
 * block and helpers come from its source (PIPTASK_SHARED_ONLY).
 */
#ifndef BENCH_PIPBENCH_H
#define BENCH_PIPBENCH_H

#define PIPTASK_SHARED_ONLY
#include "pip-task.c"

#include "pspawn.h"

extern char **environ;

#define MAXN 15                      /* a PiP root's most tasks */
#define MAXR 1000                    /* the most rounds */
#define SEG_ADDR 0x200000000000ull   /* where every task maps the segment */
#define CTL_ADDR 0x200040000000ull   /* and the ping-pong's control page */

/* What is compared: PiP tasks, one process of threads, processes. */
enum { V_PIP, V_THREADS, V_PROC, NV };
extern const char *vname[NV];

/* pipbench.c */
extern const char *task;             /* the task program's path */
extern char pip_off[512];            /* why PiP is not available, or "" */
extern char paths[3][64];            /* the shared files: segment, ping-pong, probe */
void csv_row(const char *m, const char *v, int n, const char *metric, double val,
             const char *unit);
void die(const char *what, const char *arg);

/* pipbench-groups.c */
struct pipctl *make_shared(int i, const char *tag, size_t size);
int pip_create(pspawn_context_t *ctx, char *err, size_t errlen);

/* A group: N PiP tasks, N processes, or one process of N threads. */
struct group {
    int var, npids;
    pid_t pids[MAXN];
    int done[MAXN], st[MAXN];
    pspawn_context_t ctx;
    int have_ctx;
    char err[512];
};

int group_wait(struct group *g, _Atomic uint32_t *w, uint32_t want, long timeout_ms,
               const char *what, int exit_ok);
int group_end(struct group *g, struct pipctl *c, int kill_now);
void report_fail(const char *m, struct group *g);
int group_ready(struct group *g, struct pipctl *c, int var, int n, char **one,
                char **thr, const char *m);

/* pipbench-measures.c */
void measure_pt(const int *ns, int nns, size_t seg_bytes);
void measure_ctxsw(int rounds, long iters, long bytes);
void measure_spawn(int rounds, int n);

#endif
