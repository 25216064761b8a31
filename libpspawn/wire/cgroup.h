/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cgroup paths from /proc text: where a process's cgroups are, for the
 * Slurm mover (which moves a task into its stand-in's cgroups) and for the
 * library (subzygote=cgroup makes tasks in the launcher's own cgroup).
 * Pure text work, unit-tested in tests/unit/spank-cgroup.c.
 */
#ifndef PSPAWN_WIRE_CGROUP_H
#define PSPAWN_WIRE_CGROUP_H

#include <limits.h>

#define PSPAWN_CG_MAX 16    /* hierarchies handled */

/*
 * The cgroup.procs files to write a pid into, so that a process whose
 * /proc/PID/cgroup reads FROM ends up in the cgroups of one that reads TO;
 * MOUNTINFO is the reader's /proc/self/mountinfo.  One per hierarchy in
 * which they differ and which is mounted; cgroup v1 (controllers or
 * name=) and v2 alike.  Returns how many were stored in PATHS (at most
 * PSPAWN_CG_MAX), or -1 for text that cannot be parsed.
 */
int pspawn_cg_moves(const char *to, const char *from, const char *mountinfo,
                    char paths[][PATH_MAX]);

/* The directory of the cgroup v2 cgroup that /proc/PID/cgroup text SELF
 * names, as mounted per MOUNTINFO, into DIR (PATH_MAX bytes).  0, or -1
 * where there is no cgroup v2 hierarchy (or it is not mounted). */
int pspawn_cg2_dir(const char *self, const char *mountinfo, char *dir);

#endif
