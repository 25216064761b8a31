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
#include <stddef.h>

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

/*
 * The job's extern step, as a slurmstepd of any of its steps sees it:
 * from SELF, its own /proc/self/cgroup text (root's cgroups, which no user
 * can make), each hierarchy whose path holds a step's folder (the deepest
 * component "step_*") gives "<the job's folder>/step_extern", whatever
 * the job's folder is named (job_ID, or Slurm 26.05's SLUID).  Written to
 * OUT as /proc/PID/cgroup text, one line per such hierarchy.  Returns how
 * many (0: none, not in a job's cgroups), or -1 for text that cannot be
 * parsed or does not fit LEN.
 */
int pspawn_cg_job_extern(const char *self, char *out, size_t len);

/* Whether a process whose /proc/PID/cgroup text is CGROUP sits, in some
 * hierarchy, in a cgroup of WITHIN (text as pspawn_cg_job_extern makes
 * it) or below it: an exact prefix of whole path components. */
int pspawn_cg_within(const char *cgroup, const char *within);

#endif
