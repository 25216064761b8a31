/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Task cgroup placement: the "mover".
 *
 * slurmstepd puts each task's process (for --pspawn: the stand-in, the
 * shim) into the task's own cgroups (task_N under task/cgroup) before it
 * runs.  The real task is forked by the zygote, so it starts in the
 * zygote's cgroups, those of the task whose shim started the zygote.
 * Moving it takes root, which neither the shim nor the zygote has.
 *
 * So slurmstepd (root) runs one mover thread per step, started by the
 * plugin, listening on an abstract socket.  A shim whose task the zygote
 * has forked, and holds before its first instruction, asks the mover to
 * put that task into the shim's own cgroups; then it lets the task run.
 * The mover serves only a direct child of its slurmstepd running as the
 * step's user that knows the step's token, and moves only a process of
 * that user that descends from its slurmstepd, into that child's cgroups:
 * the worst a user can do with it is reshuffle its own step's processes
 * between the step's task cgroups.  With a job's zygote (reuse=job) it
 * also moves a child of that user's process in the job's extern step:
 * the worst is then to move one's own processes of the job's extern step
 * (ssh sessions adopted there, say) into one of one's own tasks.
 */
#ifndef PSPAWN_CGROUP_H
#define PSPAWN_CGROUP_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"

#define PSPAWN_MOVER_MAGIC 0x70736d76u  /* "psmv" */
#define PSPAWN_MOVER_TOKEN 64

/* shim -> mover: put PID into my cgroups */
struct pspawn_mover_req {
    uint32_t magic;
    int32_t pid;
    char token[PSPAWN_MOVER_TOKEN];
};

/* mover -> shim */
struct pspawn_mover_reply {
    uint32_t magic;
    int32_t err;            /* 0 or an errno */
    int32_t moved;          /* hierarchies in which the pid was moved */
};


#ifdef PSPAWN_SPANK_H
/* In slurmstepd (user_init): start the step's mover for user UID and
 * TOKEN, listening on NAME; JOB_ZYGOTE: the job id whose extern step
 * holds the step's zygote (reuse=job), whose children it moves too, or
 * 0.  Returns 0, or -1 (tasks then stay in the zygote's cgroups; the
 * reason is logged). */
int pspawn_mover_start(uid_t uid, const char *name, const char *token, uint32_t job_zygote);
/* In slurmstepd (exit): stop it, before the plugin is unloaded. */
void pspawn_mover_stop(void);
#endif

#endif
