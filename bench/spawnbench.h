/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawnbench.h - what the parts of bench/spawnbench share: the driver
 * (spawnbench.c: options, the tasks' environment, repeats and output),
 * the schemes (spawnbench-schemes.c) and the floor (spawnbench-floor.c).
 */
#ifndef BENCH_SPAWNBENCH_H
#define BENCH_SPAWNBENCH_H

#include <stddef.h>
#include <sys/types.h>

extern char **environ;

enum scheme {
    S_PSPAWN, S_POSIX_SPAWN, S_FORKEXEC, S_VFORK, S_FLOOR, S_SFORK, S_AFORK,
    S_PFORK, S_COUNT
};

/* What is reported: some schemes give two numbers. */
enum result {
    R_PSPAWN, R_PSPAWN_WARM, R_POSIX_SPAWN, R_FORKEXEC, R_VFORK,
    R_FLOOR, R_FLOOR_WARM, R_SFORK, R_AFORK, R_PFORK, R_COUNT
};

struct bench {
    const char *path;   /* the program, resolved */
    char **argv;        /* argv of every task */
    int n;
    pid_t *pids;
    int quiet;
};

/* The zygote's environment: the tasks' plus PSPAWN_PROXY, if we had one
 * (spawnbench.c sets it). */
extern char **zygote_env;

/* spawnbench-schemes.c */
double now(void);
int wait_pid(pid_t pid, int *status);
void describe_status(char *buf, size_t len, int status);
void env_put(char **env, char *var);
/* Runs scheme S once; stores its time(s) in OUT by result. */
int run_scheme(const struct bench *b, enum scheme s, double out[R_COUNT]);

/* spawnbench-floor.c */
int run_floor(const struct bench *b, double *total, double *warm);

#endif
