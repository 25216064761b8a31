/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spawn-site priorities in the interception library: what its spawn
 * wrappers and wait wrappers call.  Everything is off unless
 * PSPAWN_INTERCEPT_PRIORITY names a mode (priority.h); then a spawn is
 * measured (children.h), its site's history (sites.h) predicts the child
 * long or short, and the child is started as the mode says.
 */
#ifndef PSPAWN_PREDICT_H
#define PSPAWN_PREDICT_H

#include <stdint.h>
#include <sys/types.h>

#include "children.h"
#include "priority.h"

/* Read the configuration and open the table (constructor time); the
 * scope's table must be attached already. */
void predict_init(void);
/* Whether spawns are measured and predicted. */
int predict_on(void);
/* In the process about to exec PATH with ARGV, from a call that returns
 * to RET: register it, and start it as its site predicts.  System calls
 * only (a vfork child).  MARK: for predict_exec_failed. */
void predict_exec(const void *ret, const char *path, char *const argv[],
                  struct child_mark *mark);
/* The exec of predict_exec's process failed: it is not a child of that
 * site. */
void predict_exec_failed(const struct child_mark *mark);
/* Before posix_spawn of PATH with ARGV from RET: the site, 0 if none, and
 * its verdict into *VERDICT. */
uint64_t predict_spawn(const void *ret, const char *path, char *const argv[],
                       enum priority_verdict *verdict);
/* After it started PID: register it, and start it as VERDICT says unless
 * it was ROUTED (its stand-in does, told by PRIORITY_ENV_STANDIN). */
void predict_spawned(pid_t pid, uint64_t site, enum priority_verdict verdict, int routed);
/* The launcher reaped PID: its sites learn its run time. */
void predict_reaped(pid_t pid);

#endif
