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

#include <unistd.h>

#include "pspawn_spank.h"

SPANK_PLUGIN(pspawn, 1);

struct pspawn_config pspawn_config;

int slurm_spank_init(spank_t sp, int ac, char *av[])
{
    char err[512];
    pspawn_config_defaults(&pspawn_config);
    if (pspawn_config_parse(&pspawn_config, ac, av, err, sizeof err) < 0) {
        slurm_error("pspawn: %s", err);
        return -1;
    }
    switch (spank_context()) {
    case S_CTX_REMOTE:
        pspawn_stepd_pid = getpid();
        return pspawn_option_register(sp);
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
        return pspawn_option_register(sp);
    default:
        return 0;
    }
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char *av[])
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_LOCAL)
        pspawn_srun_post_opt();
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

int slurm_spank_task_init(spank_t sp, int ac, char *av[])
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    return pspawn_stepd_task_init(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char *av[])
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        pspawn_stepd_exit();
    return 0;
}
