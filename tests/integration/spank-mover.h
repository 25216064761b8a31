/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The root mover's tests (spank-mover.c) and what plays their parts
 * (spank-mover-play.c): shims made as slurmstepd makes task children,
 * processes of the step and outside it, a pid given to another process
 * at the worst moment, other users flooding names.
 */
#ifndef SPANK_TEST_MOVER_H
#define SPANK_TEST_MOVER_H

#include <sys/types.h>

#include "spank-plugin.h"

#pragma GCC visibility push(hidden)

/* Every played shim is another task of the step, as in Slurm: each task
 * id has one child, one channel to the mover. */
#define STEP_TASKS 32
extern int next_task_id;

/* Armed (victim), the next cgroup.procs the plugin opens first ends the
 * victim and gives its pid to another process of UID (successor). */
struct mover_reuse {
    pid_t victim;
    pid_t successor;
    uid_t uid;
};
extern struct mover_reuse reuse;

/* While set: the kernel has no pidfds (pidfd_open is ENOSYS); ask_mover's
 * task runs with this euid (-1: the user's); slurmstepd's euid is the
 * user's while a request is served. */
extern int no_pidfd, task_euid, stepd_euid_dropped;

struct mover_result {
    int err, moved;
    char cgroup[512];           /* the task's /proc/PID/cgroup afterwards */
};

/* A process of UID in cgroup CG (or none) that takes pid WANT; its pid,
 * or 0 if the kernel gave another. */
pid_t take_pid(pid_t want, uid_t uid, const char *cg);
int join_cgroup(const char *dir, pid_t pid);
int read_text(const char *path, char *buf, size_t len);
/* In a task's child after task_init: the channel a shim reaches the mover by. */
int mover_channel(void);
/* Ask on channel FD for PID to be moved with TOKEN. */
void ask(int fd, pid_t pid, const char *token, struct mover_result *r);
/* Play a shim: the next task's child, as UID, asks for TASK (0: a child
 * of its own) with TOKEN; SHIM_CG, TASK_CG: where they start. */
struct mover_result ask_mover(struct spank_handle *sp, uid_t uid, const char *token,
                              pid_t task, const char *shim_cg, const char *task_cg);
/* Where to make test cgroups: v1's cpuset hierarchy (its cpus and mems),
 * or v2's; NULL if neither. */
const char *cgroup_base(char *cpus, char *mems);
/* A process of the user's forked by this fake slurmstepd, in cgroup CG. */
pid_t step_process(uid_t user, const char *cg);
void end_process(pid_t p);
/* Whether PID's cgroups name a folder ending in DIR_SUFFIX. */
int cgroup_has(pid_t pid, const char *dir_suffix);
/* The abstract names listening now whose name holds KEY. */
void names_with(const char *key, char *out, size_t len);
/* As another user, connect to NAMES as fast as can be until STOP closes. */
void __attribute__((noreturn)) flooder(const char *names, int stop, int ready);

#pragma GCC visibility pop

#endif
