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
 * plugin's user_init with one socket pair per local task, and no name
 * anyone could connect to.  In task_post_fork (slurmstepd, root, before
 * any task runs) the plugin pins each task's child by a pidfd (or its pid
 * and start time) as the one process whose requests that pair carries;
 * in task_init the child keeps its own end, open across its exec into the
 * shim, and closes the others.  A shim whose task the zygote has forked,
 * and holds before its first instruction, asks on its end for that task
 * to be put into the shim's own cgroups; then it lets the task run.
 *
 * The mover answers only while the pinned shim of that pair lives, and
 * reads its destination, the shim's cgroups, through that pin: whatever
 * holds the end later (a child the shim handed it to) cannot steer a move
 * into the cgroups of a process that took the shim's pid.  It moves only
 * a process of the step's user that descends from its slurmstepd, with
 * the step's token: the worst a user can do with it is reshuffle its own
 * step's processes between the step's task cgroups.  With a job's zygote
 * (reuse=job) it also moves a child of that user's process in the job's
 * extern step (found from slurmstepd's own cgroups, never by a job
 * number): the worst is then to move one's own processes of the job's
 * extern step (ssh sessions adopted there, say) into one of one's own
 * tasks.
 */
#ifndef PSPAWN_CGROUP_H
#define PSPAWN_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "tally.h"

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


/* shim -> mover, once: what became of its task, for the step's tally
 * (tally.h): forked and released, or about to be exec'd.  The mover counts
 * one report per task's pair, the first; the shim of a verbose step waits
 * for the answer, which the last of the node's tasks to report gets with
 * the node's line to print. */
#define PSPAWN_REPORT_MAGIC 0x70737270u /* "psrp" */
struct pspawn_mover_report {
    uint32_t magic;
    int32_t forked;             /* 1: forked, 0: exec'd */
    int32_t zygote;             /* forked: enum pspawn_zygote_kind */
    int32_t verbose;            /* 1: answer, with the line if it is complete */
    int64_t zygote_start_ms;    /* forked: its zygote's start; 0: unknown */
    /* forked: what its zygote's hello said (protocol.h, HELLO_OBJECTS):
     * the objects it loaded (0: not said), and whether it is a warm
     * Python, which `default=auto` learns from (worth.h). */
    int32_t objects;
    int32_t python;
    char token[PSPAWN_MOVER_TOKEN];
    char why[PSPAWN_TALLY_WHY]; /* exec'd: why (any bytes: the tally cleans them) */
};
/* mover -> a verbose step's shim: the node's line, or "" (not complete) */
struct pspawn_mover_line {
    uint32_t magic;             /* PSPAWN_REPORT_MAGIC */
    char line[480];
};

/* What the mover reads of a request: 0 with *PID (the process to move),
 * EPROTO (not a request: LEN bytes at BUF), or EPERM (another token than
 * TOKEN, PSPAWN_MOVER_TOKEN bytes). */
int pspawn_mover_decode(const void *buf, size_t len, const char *token, pid_t *pid);
/* What it reads of a report: 0 with *R (its why NUL-terminated), EPROTO
 * (not a report, or values out of range) or EPERM (another token). */
int pspawn_report_decode(const void *buf, size_t len, const char *token,
                         struct pspawn_mover_report *r);

#ifdef PSPAWN_SPANK_H
/* In slurmstepd (user_init): start the step's mover for user UID and
 * TOKEN, with a socket pair for each of its NTASKS local tasks; NODE and
 * SCOPE ("step=J.S") name the tally's line.
 * JOB_EXTERN: the job's extern step (pspawn_cg_job_extern's text) whose
 * processes' children it moves too (reuse=job), or NULL.  Returns 0, or
 * -1 (tasks cannot be moved; the reason is logged). */
int pspawn_mover_start(uid_t uid, const char *token, uint32_t ntasks, const char *job_extern,
                       const char *node, const char *scope);
/* In slurmstepd (task_post_fork, root, before any task runs): TASK's
 * child is PID, pinned now as the only process the mover serves on TASK's
 * pair; slurmstepd's copy of the child's end is closed.  0, or -1. */
int pspawn_mover_task_forked(int task, pid_t pid);
/* In TASK's child (task_init): its end of TASK's pair, kept open across
 * the exec, every other end closed; the fd, or -1 (no mover). */
int pspawn_mover_task_channel(int task);
/* In slurmstepd (exit): stop it, before the plugin is unloaded; *TALLY
 * (when not NULL) gets what its tasks' shims reported.  0, or -1 when it
 * was not running. */
int pspawn_mover_stop(struct pspawn_tally *tally);
#endif

#endif
