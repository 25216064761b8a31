/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /proc/PID/stat, read in one place: the proxy (what PR_SET_MM_MAP needs),
 * the Slurm mover (a process's parent), the PRRTE component (a rank's state)
 * and the benchmarks (CPU time) all take their fields from here; and the
 * one reader of whole small /proc files.
 */
#ifndef PSPAWN_PROCFS_H
#define PSPAWN_PROCFS_H

#include <sys/types.h>

/* Fields FIRST..LAST of /proc/PID/stat (PID 0: the calling process),
 * numbered as in proc(5) (3 state, 4 ppid, 14 utime, 15 stime, ...; FIRST
 * at least 3: the command name is not returned), into OUT[0..LAST-FIRST].
 * The state is its letter's character code.  Allocation-free and
 * async-signal-safe.  Returns 0, or -1 with errno (ESRCH: no such process;
 * EINVAL: fewer fields than asked for). */
int pspawn_proc_stat(pid_t pid, int first, int last, unsigned long long *out);

/* The whole of a small file (/proc/PID/cgroup, mountinfo, comm),
 * NUL-terminated, malloc'd; NULL on error (errno). */
char *pspawn_read_file(const char *path);

#endif
