/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the parts of pspawn-shim share: pspawn-shim.c (the stand-in),
 * shim-mover.c (its request to the step's mover) and shim-job.c (the
 * starter of a job's zygote, srun --pspawn=reuse=job: pspawn-shim
 * --job-zygote, exec'd by the plugin from slurmstepd in the job's extern
 * step with the job's user's credentials; it runs no task).
 */
#ifndef PSPAWN_SHIM_H
#define PSPAWN_SHIM_H

#include <sys/types.h>

struct pspawn_standin_client;

/* With PSPAWN_SHIM_DEBUG=1: the line FMT on stderr, with our pid and the
 * wall clock to the ms. */
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ask the step's mover (slurmstepd, root), on our end FD of the socket
 * pair to it, to put TASK into our own cgroups, within WAIT_MS.  Returns
 * 0 or an errno. */
int shim_move_task(int fd, pid_t task, const char *token, int wait_ms);

/* Tell the step's mover on FD (-1: none) what became of our task:
 * FORKED by a zygote of kind ZYGOTE started at ZYGOTE_START_MS that
 * loaded OBJECTS objects (0: unknown) and is a warm Python or not
 * (PYTHON), or exec'd for WHY.  VERBOSE: wait (a second at most) for the answer, and print the
 * node's line on stderr when it comes with it (we were the last). */
void shim_report(int fd, const char *token, int forked, int zygote, long long zygote_start_ms,
                 int objects, int python, const char *why, int verbose);

/* Start the job's zygote that C names, holding the lock name whose fd
 * LOCK_FD (text) says, with the idle limit IDLE_MS (text, ms); returns
 * the exit code: 0 once it parked, 1 if it could not. */
int shim_start_job(struct pspawn_standin_client *c, const char *lock_fd, const char *idle_ms);

#endif
