/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TAP test tests/integration/spank-plugin: spank_pspawn.so in a fake slurmstepd.
 *
 * test-slurmstepd.c  the fake slurmstepd: the SPANK calls the plugin sees,
 *                    the plugin's loading, a step's callbacks played in turn
 * test-plugin.c      main, the plugin's tests, the one TAP stream
 * test-mover.c       the root mover's tests (as root only)
 */
#ifndef SPANK_TEST_PLUGIN_H
#define SPANK_TEST_PLUGIN_H

#include <sys/types.h>

/* Slurm 22.05's slurm/spank.h uses uint32_t without including it. */
#include <stdint.h>
#include <slurm/spank.h>
#include <slurm/slurm.h>

/* What the plugin reads from slurmstepd and srun: exported (the program
 * is linked with -export-dynamic), so they stay outside the hidden part. */
extern slurm_conf_t slurm_conf;
extern int MPIR_being_debugged;

/* The rest is the test's own: kept out of the dynamic symbol table, as
 * when it was all static in one file, so no name of ours can stand in for
 * one the plugin or a library looks up. */
#pragma GCC visibility push(hidden)

#define MAX_ENV 64
#define MAX_ARGV 16

#define SHIM "/bin/true"    /* any executable: the plugin checks X_OK */

struct spank_handle {
    int in_task;
};

/* The fake slurmstepd's state: what its SPANK calls answer and record. */
struct fake_slurmstepd {
    spank_context_t context;
    uid_t uid;
    uint32_t jobid, stepid, local_tasks;
    int argc;
    char *argv[MAX_ARGV + 2];   /* the step's argv (S_JOB_ARGV) */
    char *env[MAX_ENV];         /* the job's environment, "NAME=value" */
    const char *fail_setenv;    /* spank_setenv refuses this name */
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    int task_argc;
    char *task_argv[MAX_ARGV + 4];
#endif
    int task_id;                /* S_TASK_ID: -1 outside a task */
    pid_t task_pid;             /* S_TASK_PID, in task_post_fork */
    struct spank_option *option;
    char last_error[1024];
    char log[8192];             /* every line of any level, until cleared */
    int n_errors;
};
extern struct fake_slurmstepd host;

/* The job's environment (host.env). */
const char *env_get(const char *var);
void env_clear(void);

/* The plugin (PLUGIN_PATH), loaded with RTLD_NOW, and its callbacks. */
extern void *plugin;
extern spank_f *p_init, *p_post_opt, *p_user_init, *p_task_init, *p_task_post_fork, *p_exit;
int load(void);
void unload(void);

/* One task's child, as slurmstepd makes it after user_init: forked from
 * this process, the plugin's task_post_fork run here for it (as root,
 * S_TASK_PID its pid), and only then task_init in the child (S_TASK_ID
 * TASK_ID).  Returns the child's pid here; in the child, 0 with *TRC the
 * rc of task_init, which the caller goes on from (and must _exit).  -1 if
 * it cannot fork. */
pid_t fork_task(struct spank_handle *sp, int task_id, int *trc);

/* A step as one slurmstepd sees it. */
struct step {
    const char *plugstack;      /* plugstack.conf arguments */
    int option_given;
    const char *optarg;         /* --pspawn argument (NULL: none) */
    uint32_t stepid, local_tasks;
    const char *argv[MAX_ARGV];
    const char *env;            /* one extra "NAME=value", or NULL */
    const char *fail_setenv;
};

/* What one task's execve would get. */
struct task {
    int shim;                   /* execve runs the shim */
    char argv0[256];            /* what execve runs */
    char user_argv[512];        /* the task's argv as the shim passes it on, joined by ' ' */
    char key[64], token[64], local_tasks[16], signals[8], debug[4], proctrack[64], mover[16];
    char signal_children[4];
    int n_pspawn_vars;
};

/* ARGV from index FROM, joined by ' ', into DST. */
void join(char *dst, size_t len, char *const *argv, int from);

/* Run the step's callbacks and one task's task_init; 0 if every callback
 * returned 0 and the task's execve is described in *t. */
int run_step(const struct step *s, struct task *t, int ntasks_run, struct task *more);

/* 0, or -1 if PATH could not be written. */
int write_file(const char *path, const char *text);

/* tests/fixtures/tap.h counts in statics, one count per file that includes it: the
 * mover's tests report through these, into test-plugin.c's one stream. */
__attribute__((format(printf, 2, 3)))
int shared_tap_ok(int cond, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void shared_tap_skip(const char *reason, const char *fmt, ...);

/* test-mover.c: the mover of a step set up as root; its results. */
void test_mover(void);

/* spank-mover.c: while set, the plugin's socketpair() fails (EMFILE). */
extern int fail_socketpair;

#pragma GCC visibility pop

#endif
