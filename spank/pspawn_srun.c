/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srun side: the --pspawn option.
 *
 * Slurm runs the option's callback in srun (remote == 0), where a bad
 * argument stops srun before anything is launched, and again in every
 * slurmstepd of the step (remote == 1) with the argument srun forwarded:
 * that second call is how the step learns the user's choice.  The option
 * is registered in sbatch/salloc too, so `#SBATCH --pspawn` sets it for
 * every srun of the job (Slurm passes it on through the environment).
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "pspawn_spank.h"

static int option_given;
static enum pspawn_mode option_mode;
static char option_options[512];
static int option_verbose;      /* the word verbose, even in a refused argument */
/* In slurmstepd: why the site's allow= refused the user's keys. */
static char option_refused[400];

static int on_option(int val, const char *optarg, int remote)
{
    (void)val;
    /* sbatch/salloc --pspawn with no argument reaches srun through the
     * job's environment as the text "(null)" (plugstack.c, _option_setenv
     * formats the NULL argument). */
    if (optarg && strcmp(optarg, "(null)") == 0)
        optarg = NULL;
    enum pspawn_mode mode;
    char err[256], options[sizeof option_options];
    /* Parsed aside: a refused value leaves the choice made before (an
     * allocation's --pspawn) whole, its options with its mode. */
    if (pspawn_arg_parse(optarg, &mode, options, sizeof options, err, sizeof err) < 0) {
        slurm_error("pspawn: --pspawn=%s: %s%s", optarg ? optarg : "", err,
                    remote ? " (in slurmstepd)" : "");
        return -1;
    }
    /* The site's allow=: srun (or sbatch, salloc) refuses at once, with
     * the rule; slurmstepd, which decides (its plugstack.conf is the
     * node's), execs the step's tasks and says why in its log. */
    option_refused[0] = '\0';
    struct pspawn_options asked;
    pspawn_options_defaults(&asked);
    int verbose = pspawn_options_parse(&asked, options, err, sizeof err) == 0 && asked.verbose;
    if (pspawn_config_refuses(&pspawn_config, options, err, sizeof err) < 0) {
        if (!remote) {
            slurm_error("pspawn: --pspawn=%s: %s", optarg ? optarg : "", err);
            return -1;
        }
        /* Said once, by the step's line at its end (pspawn_slurmstepd.c). */
        snprintf(option_refused, sizeof option_refused, "--pspawn=%s: %s", optarg ? optarg : "",
                 err);
        slurm_debug("pspawn: %s: the step's tasks are exec'd", option_refused);
        mode = PSPAWN_MODE_OFF;
        options[0] = '\0';
    }
    if (!remote && pspawn_config.force_off && mode != PSPAWN_MODE_OFF)
        slurm_info("pspawn: --pspawn is turned off on this cluster (plugstack.conf force=off): "
                   "tasks start by exec");
    memcpy(option_options, options, sizeof options);
    option_mode = mode;
    option_verbose = verbose;
    option_given = 1;
    return 0;
}

int pspawn_option_register(spank_t sp)
{
    /* srun --help prints usage once the plugin is loaded, so it can name
     * the site default from plugstack.conf. */
    static char usage[384];
    snprintf(usage, sizeof usage,
             "start each task as a fork of one copy of the program per node, "
             "loaded once (--pspawn alone means on; auto: only with more than one "
             "task per node; site default: %s; verbose: each node says how its tasks "
             "started; with fanout=numa|l3|core|N, one forking zygote per group of CPUs)",
             pspawn_mode_name(pspawn_config.default_mode));
    static struct spank_option option = {
        .name = "pspawn",
        .arginfo = "[on|off|auto][,verbose][,fanout=MODE,...]",
        .has_arg = 2,   /* optional: --pspawn or --pspawn=WORD */
        .val = 0,
        .cb = on_option,
    };
    option.usage = usage;
    spank_err_t rc = spank_option_register(sp, &option);
    if (rc != ESPANK_SUCCESS) {
        slurm_error("pspawn: cannot register --pspawn: %s", spank_strerror(rc));
        return -1;
    }
    return 0;
}

enum pspawn_mode pspawn_option_mode(void)
{
    if (pspawn_config.force_off)
        return PSPAWN_MODE_OFF;
    return option_given ? option_mode : pspawn_config.default_mode;
}

const char *pspawn_option_policy(void)
{
    if (pspawn_config.force_off &&
        (option_given ? option_mode : pspawn_config.default_mode) != PSPAWN_MODE_OFF)
        return "the site's force=off in plugstack.conf";
    return option_refused[0] ? option_refused : NULL;
}

int pspawn_option_given(void)
{
    return option_given;
}

const char *pspawn_option_options(void)
{
    return option_given ? option_options : "";
}

int pspawn_option_verbose(void)
{
    return option_given && option_verbose;
}

void pspawn_srun_post_opt(void)
{
    if (pspawn_option_mode() == PSPAWN_MODE_OFF)
        return;
    /* srun exports its MPIR symbols for debuggers; a debugger sets this one
     * before srun runs, and --debugger-test before the plugins' post-option
     * call (srun/opt.c: _opt_args, then spank_init_post_opt). */
    const volatile int *being_debugged = dlsym(RTLD_DEFAULT, "MPIR_being_debugged");
    if (being_debugged && *being_debugged)
        setenv(PSPAWN_DEBUGGER_VAR, "1", 1);
}
