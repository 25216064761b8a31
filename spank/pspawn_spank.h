/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the parts of spank_pspawn.so share.  pspawn_spank.c holds the
 * SPANK entry points and sends each call to the part for the process it
 * runs in: pspawn_srun.c (the --pspawn option, registered in srun,
 * sbatch/salloc and slurmstepd alike) and pspawn_slurmstepd.c (the step
 * on a node: whether it uses the shim, and the task's exec).
 */
#ifndef PSPAWN_SPANK_H
#define PSPAWN_SPANK_H

/* Slurm 22.05's slurm/spank.h uses uint32_t without including it. */
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "pspawn_config.h"

/* The plugstack.conf arguments, parsed by slurm_spank_init in every
 * process that loads the plugin. */
extern struct pspawn_config pspawn_config;

/* pspawn_srun.c */

/* Register --pspawn[=on|off|auto][,KEY=VALUE...]; only valid in
 * slurm_spank_init. */
int pspawn_option_register(spank_t sp);

/* The mode for this step: the --pspawn argument (in slurmstepd, as Slurm
 * handed it over from srun) or, with no --pspawn, the site default. */
enum pspawn_mode pspawn_option_mode(void);

/* Whether the user gave --pspawn (or the allocation's --pspawn reached
 * this step through its environment). */
int pspawn_option_given(void);

/* Why the site's policy (force=off, allow=) made a step that would have
 * used pspawn exec its tasks, or NULL. */
const char *pspawn_option_policy(void);

/* libpspawn's options from the --pspawn argument ("fanout=l3,..."), or "". */
const char *pspawn_option_options(void);

/* Whether the --pspawn argument has the word verbose (kept where the
 * site's allow= refused the rest of it): the step's line goes to the
 * user's stderr too. */
int pspawn_option_verbose(void);

/* srun under a parallel debugger (MPIR: TotalView, DDT, or srun
 * --debugger-test) has slurmstepd stop each task at its exec for the
 * debugger to attach: with the shim, the debugger would find the shim, not
 * the program.  srun's side (slurm_spank_init_post_opt) then sets this
 * variable in srun's environment, which reaches the step even with
 * --export=NONE (Slurm passes SLURM_* on); the step's side runs its tasks
 * with a plain exec and removes the variable from their environment. */
#define PSPAWN_DEBUGGER_VAR "SLURM_PSPAWN_DEBUGGER"
void pspawn_srun_post_opt(void);

/* pspawn_slurmconf.c: in slurmstepd, what the shim needs of the site's
 * Slurm configuration, which SPANK does not show.  ProctrackType
 * ("proctrack/cgroup"; "" when unknown), from Slurm's slurm_conf. */
void pspawn_read_proctrack(char *buf, size_t len);
/* "1" where cgroup.conf says SignalChildrenProcesses=yes, else "". */
void pspawn_read_signal_children(char *buf, size_t len);

/* pspawn_slurmstepd.c: in slurmstepd, as the callbacks of those names */
extern pid_t pspawn_stepd_pid;   /* set by slurm_spank_init in slurmstepd */
int pspawn_stepd_post_opt(spank_t sp);     /* reuse=job: the zygote's early start */
int pspawn_stepd_user_init(spank_t sp);
int pspawn_stepd_task_post_fork(spank_t sp);
int pspawn_stepd_task_init(spank_t sp);
/* slurm_spank_exit: stop the step's mover thread (pspawn_mover.c), and
 * log the step's line (tally.h) at info level where it asked for pspawn. */
void pspawn_stepd_exit(void);

#endif
