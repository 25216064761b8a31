/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's setup as the default component's child makes it, and what
 * the default does when a rank cannot start (odls_pspawn_rank.c).
 */
#ifndef PRTE_ODLS_PSPAWN_RANK_H
#define PRTE_ODLS_PSPAWN_RANK_H

#include <sched.h>

#include "prte_config.h"

#include "src/mca/odls/base/base.h"

#include "pspawn.h"

/* The rank's CPU set, from child->cpuset (a hwloc list).  Returns 0 and
 * *have = 1 with SET to bind to, *have = 0 to leave the binding as it is,
 * or -1 after the error message when binding is required and impossible.
 * A rank bound to its own cpuset also gets the default's memory policy in
 * ATTR.  --report-bindings lines go to OUT_FD. */
int pspawn_rank_cpuset(prte_odls_spawn_caddy_t *cd, int out_fd, cpu_set_t *set, int *have,
                       pspawn_attr_t *attr);

/* The child ends of the pipes (or the pty) at 0, 1 and 2, as file actions
 * in ATTR.  Returns 0 or -1. */
int pspawn_rank_stdio(prte_odls_spawn_caddy_t *cd, pspawn_attr_t *attr);

/* The parent's side of the pipes, closed as the default's parent does. */
void pspawn_rank_close_child_ends(prte_odls_spawn_caddy_t *cd);

/* The rank did not start: its ends closed, its state FAILED_TO_START.
 * Returns PRTE_ERR_FAILED_TO_START. */
int pspawn_rank_failed(prte_odls_spawn_caddy_t *cd);

/* The default's "execve error" message for ERR (or WHY, the zygote's own
 * words), then pspawn_rank_failed(). */
int pspawn_rank_exec_failed(prte_odls_spawn_caddy_t *cd, int err, const char *why);

#endif
