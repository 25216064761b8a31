/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slurmstepd side: one slurmstepd per step and node.
 *
 * slurm_spank_user_init (once, in slurmstepd) decides whether the step
 * runs its tasks through pspawn-shim and draws the step's token.
 * slurm_spank_task_post_fork (in slurmstepd, root, for each task's child
 * before any runs) pins that child for the step's mover.
 * slurm_spank_task_init (in each task's child, as the user, just before
 * slurmstepd goes on to TaskProlog, TMPDIR, the PATH lookup, rlimits and
 * execve) makes that execve start the shim, with the task's own argv after
 * it, and gives the shim what it needs in PSPAWN_SHIM_* variables.
 *
 * Slurm >= 23.11 (HAVE_SPANK_PREPEND_TASK_ARGV): spank_prepend_task_argv
 * puts the shim in front of the task's argv.  Before it, S_JOB_ARGV is the
 * very array slurmstepd passes to execve (every task's argv points at the
 * step's unless --multi-prog, slurmstepd_job.c), so its argv[0] is
 * replaced by the shim in the task's child and the shim finds the task's
 * argv[0] in PSPAWN_SHIM_ARGV0.  Either way the shim gets the argv[0]
 * as the user gave it (slurmstepd looks up PATH for argv[0] only, which is
 * now the shim) and looks it up itself.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pspawn_spank.h"
#include "pspawn_cgroup.h"
#include "pspawn_jobzygote.h"
#include "worth.h"
#include "options.h"
#include "tally.h"
/* After spank.h, for the step ids and slurm_conf_t. */
#include <slurm/slurm.h>

#define TOKEN_BYTES 16
#define KEY_NONCE_BYTES 8      /* the random part of the step's names */

/* slurmstepd's pid, from slurm_spank_init. */
pid_t pspawn_stepd_pid;

/* What slurm_spank_user_init decided, inherited by each task's child. */
static struct {
    int use;                        /* exec the shim for every task */
    char key[96];                   /* uid.jobid.stepid.nonce, or the job zygote's */
    char token[2 * TOKEN_BYTES + 1];
    char local_tasks[16];
    char proctrack[64];             /* "" when unknown */
    char signal_children[2];        /* "1": SignalChildrenProcesses=yes, else "" */
    int mover;                      /* the step's mover runs */
    char *job_extern;               /* reuse=job: the job's extern step's cgroups */
    char options[1040];             /* the site's libpspawn options, then the step's */
    int job;                        /* key names the job's zygote (reuse=job) */
    /* The step's line (tally.h), logged at its end where it asked for
     * pspawn, and printed on the user's stderr with --pspawn=verbose. */
    int report;
    int verbose;
    uint32_t ntasks;                /* local tasks */
    const char *plain_why;          /* every task exec'd, decided here: why */
    char node[64], scope[48];
    /* The step's program as root's table knows it (default=auto), read
     * by slurm_spank_init_post_opt (root), taught at the step's end. */
    struct pspawn_worth worth;
    uid_t worth_uid;
    int worth_read;
    char worth_why[320];
} step;

#define say(...)                                    \
    do {                                            \
        if (pspawn_config.debug)                    \
            slurm_info(__VA_ARGS__);                \
        else                                        \
            slurm_debug(__VA_ARGS__);               \
    } while (0)

/*
 * srun --multi-prog sends the configuration file's name and contents as
 * the step's argv (launch_slurm.c, _load_multi), and slurmstepd gives each
 * task its own argv from them; SPANK shows only the step's argv and no
 * flag for it.  So: contents of more than one line, or one line that
 * starts with a rank list ("0-3,5 prog" or "* prog").  A plain step whose
 * second argument looks like that runs with a plain exec, which is always
 * right, only not faster.
 */
static int looks_like_multi_prog(int argc, char **argv)
{
    if (argc < 2 || argv[1] == NULL)
        return 0;
    const char *s = argv[1];
    if (strchr(s, '\n'))
        return 1;
    while (isspace((unsigned char)*s))
        s++;
    const char *ranks = s;
    while (isdigit((unsigned char)*s) || *s == '-' || *s == ',' || *s == '*')
        s++;
    return s > ranks && isspace((unsigned char)*s);
}

/* BYTES random bytes as hex into HEX (2 * BYTES + 1 chars). */
static int random_hex(char *hex, size_t bytes)
{
    unsigned char raw[TOKEN_BYTES];
    size_t got = 0;
    if (bytes > sizeof raw)
        return -1;
    while (got < bytes) {
        ssize_t n = getrandom(raw + got, bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < bytes; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* Why the step cannot use the shim, or NULL if it can.  REUSE_JOB: the
 * step asks for the job's zygote, which serves later steps too. */
static const char *plain_exec_reason(spank_t sp, enum pspawn_mode mode, uint32_t stepid,
                                     uint32_t local_tasks, int debugger, int reuse_job)
{
    if (stepid >= SLURM_MAX_NORMAL_STEP_ID)
        return "batch, extern or interactive step";
    if (debugger)
        return "srun is under a parallel debugger: tasks stop at their exec for it";
    if (mode == PSPAWN_MODE_AUTO && local_tasks < 2 && !reuse_job)
        return "auto: one task on this node";
    if (mode == PSPAWN_MODE_AUTO && step.worth_read &&
        pspawn_worth_verdict(&step.worth,
                             pspawn_config.auto_objects >= 0 ? pspawn_config.auto_objects
                             : reuse_job ? PSPAWN_WORTH_KEPT_ZYGOTE : PSPAWN_WORTH_STEP_ZYGOTE,
                             step.worth_why,
                             sizeof step.worth_why))
        return step.worth_why;

    /* srun sets it for --pty (env.c) and slurmstepd reads it back (io.c). */
    char port[16];
    spank_err_t rc = spank_getenv(sp, "SLURM_PTY_PORT", port, sizeof port);
    if (rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE)
        return "--pty";
    /* srun --container (srun/opt.c sets it): slurmstepd writes each
     * task's argv, the shim first, into the config.json of an OCI bundle
     * of the task's own, and the runtime runs it inside the container,
     * where the shim is not.  (The steps of an sbatch or salloc
     * --container job inherit it, and are exec'd too: that costs them only
     * what pspawn would have gained.) */
    char bundle[8];
    rc = spank_getenv(sp, "SLURM_CONTAINER", bundle, sizeof bundle);
    if ((rc == ESPANK_SUCCESS && bundle[0]) || rc == ESPANK_NOSPACE)
        return "--container: each task runs in an OCI container of its own";

    int argc = 0;
    char **argv = NULL;
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
        argc < 1 || argv == NULL || argv[0] == NULL || argv[0][0] == '\0')
        return "no program";
    if (looks_like_multi_prog(argc, argv))
        return "--multi-prog";
    /* --bcast to a directory: slurmstepd appends the file name to argv[0]. */
    if (argv[0][strlen(argv[0]) - 1] == '/')
        return "--bcast to a directory";

    /* user_init runs with the user's effective ids. */
    if (faccessat(AT_FDCWD, pspawn_config.shim, X_OK, AT_EACCESS) < 0) {
        slurm_error("pspawn: shim %s: %s; tasks run with a plain exec",
                    pspawn_config.shim, strerror(errno));
        return "no shim";
    }
    return NULL;
}

/* reuse=job: point the step at the job's zygote for its program on this
 * node, which is started now if it is not there (pspawn_jobzygote.c).
 * 0, or -1 when the step must use a zygote of its own (said why). */
static int use_job_zygote(spank_t sp, const struct pspawn_options *o, uid_t uid, uint32_t jobid,
                          uint32_t stepid)
{
    const char *why = NULL;
    free(step.job_extern);
    step.job_extern = NULL;
    if (!strstr(step.proctrack, "cgroup"))
        why = "it needs proctrack/cgroup, which ends its zygotes with the job";
    else if (getpid() != pspawn_stepd_pid)
        why = "user_init runs outside slurmstepd (contain_spank)";
    else if (getuid() != 0)
        why = "slurmstepd is not root";
    else if (!(step.job_extern = pspawn_job_extern()))
        why = "slurmstepd's own cgroups name no step of a job";
    struct pspawn_job_step js = {
        .uid = uid, .jobid = jobid, .options = step.options, .max_zygotes = o->max_zygotes,
        .idle_s = o->idle_s, .shim = pspawn_config.shim, .debug = pspawn_config.debug,
        .job_extern = step.job_extern,
    };
    gid_t *gids = NULL;
    if (!why && (spank_get_item(sp, S_JOB_GID, &js.gid) != ESPANK_SUCCESS ||
                 spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &js.ngids) != ESPANK_SUCCESS ||
                 spank_get_item(sp, S_JOB_ARGV, &js.argc, &js.argv) != ESPANK_SUCCESS ||
                 spank_get_item(sp, S_JOB_ENV, &js.env) != ESPANK_SUCCESS))
        why = "the step's ids, argv or environment cannot be read";
    js.gids = gids;
    char key[sizeof step.key], token[sizeof step.token], what[320];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!why && pspawn_job_zygote(&js, key, sizeof key, token, sizeof token, what, sizeof what) < 0)
        why = what;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (why) {
        say("pspawn: step %u.%u: reuse=job: no job's zygote (%s): the step starts its own",
            jobid, stepid, why);
        return -1;
    }
    say("pspawn: step %u.%u: the job's zygote %s (%s in %.1f ms)", jobid, stepid, key, what, ms);
    snprintf(step.key, sizeof step.key, "%s", key);
    snprintf(step.token, sizeof step.token, "%s", token);
    step.job = 1;
    return 0;
}

/* The job's zygote as slurm_spank_init_post_opt found or started it:
 * that callback runs in slurmstepd about 50 ms before user_init (while
 * slurmstepd sets the step up: cgroups, I/O, credentials), so the
 * zygote's exec overlaps that too. */
static struct {
    int tried, ok;
    char key[sizeof step.key], token[sizeof step.token];
} early;

/* Whether the step's options ask for reuse=job, into *O. */
static int wants_job_zygote(struct pspawn_options *o, char *options, size_t len)
{
    const char *mine = pspawn_option_options();
    snprintf(options, len, "%s%s%s", pspawn_config.options,
             pspawn_config.options[0] && mine[0] ? "," : "", mine);
    char msg[256];
    pspawn_options_defaults(o);
    return pspawn_options_parse(o, options, msg, sizeof msg) == 0 && o->reuse_job;
}

/* What root's table knows of the step's program (its file is root's:
 * user_init, which runs with the user's ids, could not read it). */
static void recall_worth(spank_t sp, uid_t uid)
{
    int argc = 0;
    char **argv = NULL, **env = NULL;
    step.worth_read = 0;
    if (getuid() != 0 || spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
        return;
    pspawn_worth_recall(&step.worth, PSPAWN_WORTH_DIR, uid, NULL, argc, argv, env);
    step.worth_uid = uid;
    step.worth_read = 1;
    if (step.worth.known)
        say("pspawn: %s loaded %d objects in its last zygote%s", step.worth.path,
            step.worth.objects, step.worth.python ? " (a Python)" : "");
}

int pspawn_stepd_post_opt(spank_t sp)
{
    uid_t uid;
    uint32_t jobid, stepid, local_tasks;
    struct pspawn_options o;
    char flag[8];
    early.tried = early.ok = 0;
    step.worth_read = 0;
    enum pspawn_mode mode = pspawn_option_mode();
    if (mode == PSPAWN_MODE_OFF || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
        return 0;
    recall_worth(sp, uid);
    spank_err_t erc = spank_getenv(sp, PSPAWN_DEBUGGER_VAR, flag, sizeof flag);
    if (!wants_job_zygote(&o, step.options, sizeof step.options) ||
        spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS ||
        plain_exec_reason(sp, mode, stepid, local_tasks,
                          erc == ESPANK_SUCCESS || erc == ESPANK_NOSPACE, 1) != NULL)
        return 0;   /* user_init decides, and says why */
    pspawn_read_proctrack(step.proctrack, sizeof step.proctrack);
    /* Where slurmstepd is not in its step's cgroups yet (cgroup v1 puts
     * it there later), the job's extern step cannot be found from them:
     * user_init tries. */
    char *job_extern = pspawn_job_extern();
    free(job_extern);
    if (!job_extern)
        return 0;
    early.tried = 1;
    if (use_job_zygote(sp, &o, uid, jobid, stepid) == 0) {
        early.ok = 1;
        snprintf(early.key, sizeof early.key, "%s", step.key);
        snprintf(early.token, sizeof early.token, "%s", step.token);
    }
    step.job = 0;
    return 0;
}

/* A step that asked for pspawn (or was refused it by the site) has a
 * line at its end: name it.  Batch, interactive and extern steps have
 * none. */
static void begin_report(spank_t sp, uint32_t jobid, uint32_t stepid, uint32_t local_tasks)
{
    step.report = stepid < SLURM_MAX_NORMAL_STEP_ID;
    step.verbose = pspawn_option_verbose();
    step.ntasks = local_tasks;
    step.plain_why = NULL;
    snprintf(step.scope, sizeof step.scope, "step=%u.%u", jobid, stepid);
    if (spank_getenv(sp, "SLURMD_NODENAME", step.node, sizeof step.node) != ESPANK_SUCCESS &&
        gethostname(step.node, sizeof step.node) < 0)
        snprintf(step.node, sizeof step.node, "-");
    step.node[sizeof step.node - 1] = '\0';
}

/* Every task of the step is exec'd, decided here for WHY. */
static int all_plain(uint32_t jobid, uint32_t stepid, const char *why)
{
    say("pspawn: step %u.%u: plain exec (%s)", jobid, stepid, why);
    step.plain_why = why;
    return 0;
}

int pspawn_stepd_user_init(spank_t sp)
{
    enum pspawn_mode mode = pspawn_option_mode();
    step.use = 0;
    step.job = 0;
    step.report = 0;
    /* srun's word that it is under a parallel debugger: for us only. */
    char flag[8];
    spank_err_t erc = spank_getenv(sp, PSPAWN_DEBUGGER_VAR, flag, sizeof flag);
    int debugger = erc == ESPANK_SUCCESS || erc == ESPANK_NOSPACE;
    if (debugger)
        spank_unsetenv(sp, PSPAWN_DEBUGGER_VAR);
    /* The site's policy turned off a step that would have used pspawn:
     * its line says so (a site counts them). */
    const char *policy = pspawn_option_policy();
    if (mode == PSPAWN_MODE_OFF && !policy)
        return 0;

    uid_t uid;
    uint32_t jobid, stepid, local_tasks;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS) {
        slurm_error("pspawn: cannot read the step's ids; tasks run with a plain exec");
        return 0;
    }
    begin_report(sp, jobid, stepid, local_tasks);
    if (policy)
        return all_plain(jobid, stepid, policy);
    struct pspawn_options o;
    int reuse_job = wants_job_zygote(&o, step.options, sizeof step.options);
    const char *reason = plain_exec_reason(sp, mode, stepid, local_tasks, debugger, reuse_job);
    if (reason)
        return all_plain(jobid, stepid, reason);
    /* The step's names end with a random part: another user who reads
     * job ids could otherwise bind them before the step does (the mover's
     * first, at this very point). */
    char nonce[2 * KEY_NONCE_BYTES + 1];
    if (random_hex(step.token, TOKEN_BYTES) < 0 || random_hex(nonce, KEY_NONCE_BYTES) < 0) {
        slurm_error("pspawn: getrandom: %s; tasks run with a plain exec", strerror(errno));
        return 0;
    }
    snprintf(step.key, sizeof step.key, "%u.%u.%u.%s", (unsigned)uid, jobid, stepid, nonce);
    snprintf(step.local_tasks, sizeof step.local_tasks, "%u", local_tasks);
    pspawn_read_proctrack(step.proctrack, sizeof step.proctrack);
    pspawn_read_signal_children(step.signal_children, sizeof step.signal_children);
    if (early.tried && early.ok) {
        snprintf(step.key, sizeof step.key, "%s", early.key);
        snprintf(step.token, sizeof step.token, "%s", early.token);
        step.job = 1;
    } else if (!early.tried && reuse_job) {
        use_job_zygote(sp, &o, uid, jobid, stepid);
    }
    step.mover = 0;
    if (getpid() != pspawn_stepd_pid) {
        /* SlurmdParameters=contain_spank: this callback (and
         * task_post_fork) runs in a short-lived clone of slurmstepd, where
         * a thread, and the fds it would serve, would not outlive it. */
        say("pspawn: step %u.%u: user_init runs outside slurmstepd (contain_spank): "
            "tasks stay in the zygote's cgroups", jobid, stepid);
    } else if (getuid() != 0) {
        /* Not slurmstepd as Slurm runs it (a test's): no mover can be. */
        slurm_error("pspawn: step %u.%u: no mover (not root): tasks stay in the zygote's cgroups",
                    jobid, stepid);
    } else if (pspawn_mover_start(uid, step.token, local_tasks, step.job ? step.job_extern : NULL,
                                  step.node, step.scope) < 0) {
        /* Tasks would stay in the zygote's cgroups, accounted and limited
         * as another task: exec them as Slurm would. */
        return all_plain(jobid, stepid, "the mover could not start");
    } else {
        step.mover = 1;
    }
    step.use = 1;
    say("pspawn: step %u.%u: %u task(s) through %s (signals=%s, proctrack %s%s%s%s)",
        jobid, stepid, local_tasks, pspawn_config.shim,
        pspawn_signals_name(pspawn_config.signals),
        step.proctrack[0] ? step.proctrack : "unknown",
        step.signal_children[0] ? " with SignalChildrenProcesses=yes" : "",
        step.options[0] ? ", " : "", step.options);
    return 0;
}

static const char *const shim_vars[] = {
    "PSPAWN_SHIM_KEY", "PSPAWN_SHIM_TOKEN", "PSPAWN_SHIM_LOCAL_TASKS",
    "PSPAWN_SHIM_SIGNALS", "PSPAWN_SHIM_DEBUG", "PSPAWN_SHIM_PROCTRACK",
    "PSPAWN_SHIM_SIGNAL_CHILDREN",
    "PSPAWN_SHIM_ARGV0", "PSPAWN_SHIM_MOVER_FD", "PSPAWN_SHIM_OPTIONS", "PSPAWN_SHIM_JOB",
};

void pspawn_stepd_exit(void)
{
    struct pspawn_tally t;
    int reported = pspawn_mover_stop(&t) == 0;
    /* What the step's zygotes said of its program, for default=auto's
     * next steps of it (slurm_spank_exit runs as root). */
    if (reported && step.worth_read && step.worth.identified && t.objects > 0 && getuid() == 0 &&
        pspawn_worth_learn(&step.worth, PSPAWN_WORTH_DIR, step.worth_uid, t.objects, t.python) < 0)
        slurm_error("pspawn: " PSPAWN_WORTH_DIR ": %s: default=auto learns nothing of %s",
                    strerror(errno), step.worth.path);
    step.worth_read = 0;
    if (step.report && getpid() == pspawn_stepd_pid) {
        /* Without a mover (contain_spank, slurmstepd not root) no shim
         * could report: its tasks are unknown. */
        if (!reported)
            pspawn_tally_init(&t, step.ntasks);
        if (step.plain_why)
            pspawn_tally_exec(&t, step.ntasks, step.plain_why);
        char line[640];
        pspawn_tally_format(&t, step.node, step.scope, line, sizeof line);
        slurm_info("%s", line);
        step.report = 0;
    }
    free(step.job_extern);
    step.job_extern = NULL;
}

int pspawn_stepd_task_post_fork(spank_t sp)
{
    int task;
    pid_t pid;
    if (!step.use || !step.mover)
        return 0;
    if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
        /* Its shim's requests are then refused, and it execs its task. */
        slurm_error("pspawn: task_post_fork: no task id or pid; the task will be exec'd");
        return 0;
    }
    pspawn_mover_task_forked(task, pid);
    return 0;
}

/* Leave the task as plain srun would run it. */
static void unset_shim_vars(spank_t sp)
{
    for (size_t i = 0; i < sizeof shim_vars / sizeof shim_vars[0]; i++)
        spank_unsetenv(sp, shim_vars[i]);
}

static int set_shim_vars(spank_t sp, const char *mover_fd)
{
    const char *values[][2] = {
        { "PSPAWN_SHIM_KEY", step.key },
        { "PSPAWN_SHIM_TOKEN", step.token },
        { "PSPAWN_SHIM_LOCAL_TASKS", step.local_tasks },
        { "PSPAWN_SHIM_SIGNALS", pspawn_signals_name(pspawn_config.signals) },
        { "PSPAWN_SHIM_DEBUG", pspawn_config.debug ? "1" : "0" },
        { "PSPAWN_SHIM_PROCTRACK", step.proctrack },
        { "PSPAWN_SHIM_SIGNAL_CHILDREN", step.signal_children },
        { "PSPAWN_SHIM_MOVER_FD", mover_fd },
        { "PSPAWN_SHIM_OPTIONS", step.options },
        { "PSPAWN_SHIM_JOB", step.job ? "1" : "" },
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (values[i][1][0] == '\0')
            continue;
        spank_err_t rc = spank_setenv(sp, values[i][0], values[i][1], 1);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("pspawn: setting %s: %s; task runs with a plain exec",
                        values[i][0], spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
static int exec_shim(spank_t sp)
{
    const char *shim_argv[] = { pspawn_config.shim };
    spank_err_t rc = spank_prepend_task_argv(sp, 1, shim_argv);
    if (rc != ESPANK_SUCCESS) {
        slurm_error("pspawn: spank_prepend_task_argv: %s; task runs with a plain exec",
                    spank_strerror(rc));
        return -1;
    }
    return 0;
}
#else
static int exec_shim(spank_t sp)
{
    int argc = 0;
    char **argv = NULL;
    spank_err_t rc = spank_get_item(sp, S_JOB_ARGV, &argc, &argv);
    if (rc != ESPANK_SUCCESS || argc < 1 || argv == NULL || argv[0] == NULL) {
        slurm_error("pspawn: no S_JOB_ARGV in task_init; task runs with a plain exec");
        return -1;
    }
    rc = spank_setenv(sp, "PSPAWN_SHIM_ARGV0", argv[0], 1);
    if (rc != ESPANK_SUCCESS) {
        slurm_error("pspawn: setting PSPAWN_SHIM_ARGV0: %s; task runs with a plain exec",
                    spank_strerror(rc));
        return -1;
    }
    char *shim = strdup(pspawn_config.shim);
    if (shim == NULL)
        return -1;
    /* Only this task's child (about to exec) sees the change; slurmstepd
     * itself keeps the step's argv.  The old string stays allocated: this
     * process execs or exits next. */
    argv[0] = shim;
    return 0;
}
#endif

/* --pspawn=verbose on a step whose tasks are all exec'd by our decision:
 * no shim runs to print the node's line, so local task 0's child, whose
 * stderr is the task's, does. */
static void say_plain_step(spank_t sp)
{
    int task;
    if (!step.report || !step.verbose || !step.plain_why ||
        spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS || task != 0)
        return;
    struct pspawn_tally t;
    char line[640];
    pspawn_tally_init(&t, step.ntasks);
    pspawn_tally_exec(&t, step.ntasks, step.plain_why);
    pspawn_tally_format(&t, step.node, step.scope, line, sizeof line);
    fprintf(stderr, "%s\n", line);
}

int pspawn_stepd_task_init(spank_t sp)
{
    say_plain_step(sp);
    if (!step.use)
        return 0;
    /* This task's end to the mover: without it, its task would stay in
     * the zygote's cgroups, so it is exec'd instead. */
    char fd[16] = "";
    int task;
    if (step.mover) {
        int end = spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS
                      ? pspawn_mover_task_channel(task) : -1;
        if (end < 0) {
            slurm_error("pspawn: no channel to the step's mover; task runs with a plain exec");
            return 0;
        }
        snprintf(fd, sizeof fd, "%d", end);
    }
    if (set_shim_vars(sp, fd) < 0 || exec_shim(sp) < 0)
        unset_shim_vars(sp);
    /* Never fail the task: without the shim it runs as plain srun runs it. */
    return 0;
}
