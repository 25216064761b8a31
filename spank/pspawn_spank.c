/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spank_pspawn.so: `srun --pspawn` (see spank/README.md).
 *
 * The SPANK entry points, each sent on by spank_context() to the code for
 * the process it runs in: pspawn_srun.c for the option (srun, sbatch,
 * salloc, and slurmstepd when Slurm hands the option over) and
 * pspawn_slurmstepd.c for the step on a node.  slurmd and the
 * prolog/epilog load the plugin too and find nothing to do.
 *
 * plugstack.conf: `optional|required PATH/spank_pspawn.so [default=on|off|auto]
 * [signals=auto|yes|no] [debug=0|1] [shim=PATH]`.
 */
#include "config.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "kernel.h"
#include "pspawn_jobzygote.h"
#include "pspawn_spank.h"
/* After spank.h, for SLURM_EXTERN_CONT. */
#include <slurm/slurm.h>

SPANK_PLUGIN(pspawn, 1);

#ifdef HAVE_SPANK_INIT_FAILURE_MODE
/* Slurm >= 25.05: how a failed slurm_spank_init of a `required` plugin is
 * taken.  Ours fails only for a plugstack.conf argument it cannot parse or
 * an option it cannot register: the same on every node, so the default
 * (the node is at fault: drained, the job requeued) would drain each node
 * the job is sent to next.  The job fails instead, with our message. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

/* What the node's kernel lacks of what libpspawn uses, at info level so
 * that an admin sees it in slurmd's log without debug (README.md,
 * "Requirements"); nothing when it lacks nothing. */
static void log_kernel_gaps(void)
{
    const char *gaps[8];
    size_t n = pspawn_kernel_gaps(gaps, sizeof gaps / sizeof gaps[0]);
    struct utsname u;
    const char *release = uname(&u) == 0 ? u.release : "?";
    for (size_t i = 0; i < n; i++)
        slurm_info("pspawn: kernel %s: %s", release, gaps[i]);
    if (n == 0)
        slurm_verbose("pspawn: kernel %s has every feature libpspawn uses", release);
}

/* Since Slurm 25.05 any non-zero return is an error (before, only a
 * negative one was): every path that means "nothing for pspawn here"
 * returns 0, and -1 means a real error only. */
int slurm_spank_init(spank_t sp, int ac, char *av[])
{
    char err[512];
    spank_context_t ctx = spank_context();
    /* slurmd and the prolog/epilog load the plugin too: nothing to do
     * there, not even a plugstack.conf error to take (srun and slurmstepd
     * say it), as a prolog that fails drains the node.  slurmd, once as it
     * starts, says what this node's kernel lacks and what that costs. */
    if (ctx == S_CTX_SLURMD)
        log_kernel_gaps();
    if (ctx != S_CTX_REMOTE && ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
        return 0;
    pspawn_config_defaults(&pspawn_config);
    if (pspawn_config_parse(&pspawn_config, ac, av, err, sizeof err) < 0) {
        slurm_error("pspawn: %s", err);
        return -1;
    }
    if (ctx == S_CTX_REMOTE)
        pspawn_stepd_pid = getpid();
    return pspawn_option_register(sp) < 0 ? -1 : 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char *av[])
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_LOCAL)
        pspawn_srun_post_opt();
    else if (spank_context() == S_CTX_REMOTE)
        return pspawn_stepd_post_opt(sp);
    return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char *av[])
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    return pspawn_stepd_user_init(sp);
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char *av[])
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    return pspawn_stepd_task_post_fork(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char *av[])
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    return pspawn_stepd_task_init(sp);
}

/* slurm_spank_exit: in a step's slurmstepd, its mover stops.  In the
 * job's extern step's, at the job's end on the node (root): its zygotes
 * (reuse=job) died with that step's processes; kill any that did not,
 * and remove the job's state.  (Not a job epilog: one of those makes
 * slurmd run a process at every job's end, which delays the next job.) */
int slurm_spank_exit(spank_t sp, int ac, char *av[])
{
    (void)ac;
    (void)av;
    uint32_t jobid, stepid;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    pspawn_stepd_exit();
    if (getuid() == 0 && spank_get_item(sp, S_JOB_ID, &jobid) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
        stepid == SLURM_EXTERN_CONT)
        pspawn_job_end(jobid);
    return 0;
}
