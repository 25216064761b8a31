/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP: spank_pspawn.so in a fake slurmstepd (test-slurmstepd.c), which
 * plays a step's callbacks and records what the plugin asked of it; the
 * plugin's tests here, the root mover's in test-mover.c (test-plugin.h).
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fixtures/tap.h"
#include "kernel.h"
#include "spank-plugin.h"

/* The one TAP stream, for the other files (test-plugin.h). */
int shared_tap_ok(int cond, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return tap_ok(cond, "%s", text);
}

void shared_tap_skip(const char *reason, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tap_skip(reason, "%s", text);
}

int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) == 0 ? rc : -1;
}

static int is_hex32(const char *s)
{
    if (strlen(s) != 32)
        return 0;
    for (; *s; s++)
        if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
            return 0;
    return 1;
}

/* SlurmdParameters=contain_spank: user_init runs in a clone of slurmstepd
 * (another pid than init's), where a mover thread would die with it. */
static void test_contain_spank(void)
{
    struct spank_handle sp = { 0 };
    char *av[] = { "shim=" SHIM };
    host.context = S_CTX_REMOTE;
    host.uid = 65534;
    host.jobid = 44;
    host.stepid = 0;
    host.local_tasks = 2;
    env_clear();
    host.argc = 1;
    host.argv[0] = "app";
    host.argv[1] = NULL;
    if (load() < 0 || p_init(&sp, 1, av) != 0 || !host.option ||
        host.option->cb(host.option->val, NULL, 1) != 0) {
        tap_ok(0, "contain_spank: step set up");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        host.log[0] = '\0';
        int rc = p_user_init(&sp, 0, NULL);
        sp.in_task = 1;
        rc |= p_task_init(&sp, 0, NULL);
        int good = rc == 0 && env_get("PSPAWN_SHIM_KEY") && !env_get("PSPAWN_SHIM_MOVER_FD") &&
                   strstr(host.log, "contain_spank");
        fflush(stdout);
        _exit(good ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "contain_spank (user_init in another process): tasks still go through the shim, "
           "no mover, and the log says why");
    p_exit(&sp, 0, NULL);
    env_clear();
    unload();
}

#define ARGV(...) { __VA_ARGS__, NULL }

static void expect_shim(const char *what, const struct step *s, struct task *t);

/* cgroup.conf's SignalChildrenProcesses, found beside slurm.conf, reaches
 * the shim (its signals=auto then relays nothing under proctrack/cgroup). */
static void test_signal_children(void)
{
    char dir[] = "/tmp/pspawn-test-conf.XXXXXX", conf[64], cg[64];
    if (!mkdtemp(dir)) {
        tap_skip("no temporary directory", "SignalChildrenProcesses read from cgroup.conf");
        return;
    }
    snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
    snprintf(cg, sizeof cg, "%s/cgroup.conf", dir);
    slurm_conf.slurm_conf = conf;
    slurm_conf.proctrack_type = "proctrack/cgroup";
    static const struct {
        const char *text, *want;
    } cases[] = {
        { "CgroupPlugin=autodetect\n  signalchildrenprocesses = Yes  # 24.11\n", "1" },
        { "SignalChildrenProcesses=no\n", "-" },
        { "#SignalChildrenProcesses=yes\nConstrainCores=yes\n", "-" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct task t;
        write_file(cg, cases[i].text);
        expect_shim("--pspawn, proctrack/cgroup",
                    &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 3,
                                    .local_tasks = 2, .argv = ARGV("app") },
                    &t);
        tap_ok(strcmp(t.signal_children, cases[i].want) == 0,
               "cgroup.conf beside slurm.conf \"%.*s\": PSPAWN_SHIM_SIGNAL_CHILDREN %s (%s)",
               (int)strcspn(cases[i].text, "\n"), cases[i].text,
               strcmp(cases[i].want, "1") == 0 ? "=1" : "unset", t.signal_children);
    }
    unlink(cg);
    rmdir(dir);
    slurm_conf.slurm_conf = NULL;
    slurm_conf.proctrack_type = NULL;
}

static void expect_plain(const char *what, const struct step *s)
{
    struct task t;
    int rc = run_step(s, &t, 1, NULL);
    tap_ok(rc == 0 && !t.shim && t.n_pspawn_vars == 0 && strcmp(t.argv0, s->argv[0]) == 0,
           "%s: plain exec of %s (got %s, %d PSPAWN_ variables)", what, s->argv[0], t.argv0,
           t.n_pspawn_vars);
}

static void expect_shim(const char *what, const struct step *s, struct task *t)
{
    int rc = run_step(s, t, 1, NULL);
    char want_argv[512];
    join(want_argv, sizeof want_argv, (char *const *)s->argv, 0);
    tap_ok(rc == 0 && t->shim && strcmp(t->argv0, SHIM) == 0 &&
           strcmp(t->user_argv, want_argv) == 0,
           "%s: execve runs the shim with the task's argv \"%s\" (got %s, \"%s\")", what,
           want_argv, t->argv0, t->user_argv);
}

/* Loads with every Slurm call it makes resolved here; 0 when it did not. */
static int case_plugin_symbols(void)
{
    tap_ok(load() == 0, "dlopen(RTLD_NOW) with only the SPANK API defined: %s", PLUGIN_PATH);
    if (!plugin)
        return 0;
    const char *name = dlsym(plugin, "plugin_name");
    const char *type = dlsym(plugin, "plugin_type");
    const unsigned int *version = dlsym(plugin, "plugin_version");
    const unsigned int *spank_version = dlsym(plugin, "spank_plugin_version");
    tap_ok(name && strcmp(name, "pspawn") == 0, "plugin_name is pspawn");
    tap_ok(type && strcmp(type, "spank") == 0, "plugin_type is spank");
    tap_ok(version && *version == SLURM_VERSION_NUMBER,
           "plugin_version is this Slurm's (0x%x)", SLURM_VERSION_NUMBER);
    tap_ok(spank_version != NULL, "spank_plugin_version is there");
    tap_ok(dlsym(plugin, "pspawn_config_parse") == NULL, "internal functions are not exported");
    return 1;
}

/* srun under a parallel debugger: the step is told, through srun's
 * environment, to exec its tasks (the debugger must find the program,
 * not the shim). */
static void case_srun_post_opt_debugger(struct spank_handle *sp)
{
    unsetenv("SLURM_PSPAWN_DEBUGGER");
    MPIR_being_debugged = 0;
    tap_ok(p_post_opt(sp, 0, NULL) == 0 && !getenv("SLURM_PSPAWN_DEBUGGER"),
           "srun, no debugger: post_opt sets nothing");
    MPIR_being_debugged = 1;
    tap_ok(p_post_opt(sp, 0, NULL) == 0 && getenv("SLURM_PSPAWN_DEBUGGER") &&
           strcmp(getenv("SLURM_PSPAWN_DEBUGGER"), "1") == 0,
           "srun under a debugger (MPIR_being_debugged): post_opt sets SLURM_PSPAWN_DEBUGGER=1");
    unsetenv("SLURM_PSPAWN_DEBUGGER");
    tap_ok(host.option && host.option->cb(host.option->val, "off", 0) == 0 &&
           p_post_opt(sp, 0, NULL) == 0 && !getenv("SLURM_PSPAWN_DEBUGGER"),
           "srun under a debugger with --pspawn=off: nothing set");
    MPIR_being_debugged = 0;
}

/* Bad plugstack.conf arguments, then the option in srun, sbatch/salloc
 * and slurmd; unloads the plugin at the end. */
static void case_init_and_option(void)
{
    /* Bad plugstack.conf arguments fail init, naming the argument. */
    struct spank_handle sp = { 0 };
    char *bad[] = { "default=on", "signals=sometimes" };
    host.context = S_CTX_REMOTE;
    host.n_errors = 0;
    tap_ok(p_init(&sp, 2, bad) == -1 && strstr(host.last_error, "signals=sometimes"),
           "bad argument: init fails, error names it (%s)", host.last_error);

    /* The option, in srun: registered with an optional argument. */
    host.context = S_CTX_LOCAL;
    host.option = NULL;
    char *none[] = { NULL };
    tap_ok(p_init(&sp, 0, none) == 0 && host.option && strcmp(host.option->name, "pspawn") == 0 &&
           host.option->has_arg == 2 && host.option->usage && strstr(host.option->usage, "off"),
           "srun: --pspawn registered, optional argument, usage names the site default");
    tap_ok(host.option && host.option->cb(host.option->val, "bogus", 0) != 0,
           "--pspawn=bogus is refused in srun");
    tap_ok(host.option && host.option->cb(host.option->val, NULL, 0) == 0 &&
           host.option->cb(host.option->val, "auto", 0) == 0,
           "--pspawn and --pspawn=auto are taken");
    tap_ok(host.option && host.option->cb(host.option->val, "(null)", 0) == 0,
           "sbatch --pspawn, as srun finds it in the job's environment (\"(null)\"), is taken");
    tap_ok(p_user_init(&sp, 0, NULL) == 0 && p_task_init(&sp, 0, NULL) == 0,
           "srun: user_init and task_init do nothing");
    case_srun_post_opt_debugger(&sp);
    host.context = S_CTX_ALLOCATOR;
    host.option = NULL;
    tap_ok(p_init(&sp, 0, none) == 0 && host.option, "sbatch/salloc: --pspawn registered");
    host.context = S_CTX_SLURMD;
    host.option = NULL;
    host.log[0] = '\0';
    tap_ok(p_init(&sp, 0, none) == 0 && !host.option, "slurmd: nothing registered");
    /* ... and says what this kernel lacks, each gap once, at info level
     * (tests/integration/oldkernel.sh shows the gaps under each profile). */
    const char *gaps[8];
    size_t ngaps = pspawn_kernel_gaps(gaps, 8), said = 0;
    for (size_t i = 0; i < ngaps; i++)
        said += strstr(host.log, gaps[i]) != NULL;
    size_t lines = 0;
    for (const char *l = host.log; (l = strstr(l, "pspawn: kernel ")) != NULL; l++)
        lines++;
    tap_ok(said == ngaps && lines == (ngaps ? ngaps : 1),
           "slurmd: the kernel's %zu missing feature(s) logged as it starts (%zu lines)", ngaps,
           lines);
    unload();
}

static void case_off_and_debugger_exec(void)
{
    expect_plain("site default off, no --pspawn",
                 &(struct step){ .plugstack = "shim=" SHIM, .stepid = 7, .local_tasks = 4,
                                 .argv = ARGV("./app", "x") });

    host.log[0] = '\0';
    expect_plain("--pspawn, srun under a parallel debugger (SLURM_PSPAWN_DEBUGGER=1)",
                 &(struct step){ .plugstack = "shim=" SHIM " debug=1", .option_given = 1,
                                 .stepid = 7, .local_tasks = 4, .argv = ARGV("./app", "x"),
                                 .env = "SLURM_PSPAWN_DEBUGGER=1" });
    tap_ok(strstr(host.log, "parallel debugger") != NULL,
           "under a parallel debugger: the reason is logged with debug=1");
    expect_plain("--pspawn=off with SLURM_PSPAWN_DEBUGGER=1 (the variable is removed all the same)",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .optarg = "off",
                                 .stepid = 7, .local_tasks = 4, .argv = ARGV("./app", "x"),
                                 .env = "SLURM_PSPAWN_DEBUGGER=1" });
}

/* The variables a --pspawn task is given, in *t; returns whether a mover
 * is expected (it needs root: it takes back slurmstepd's saved uid 0). */
static int case_shim_variables(struct task *t)
{
    expect_shim("--pspawn",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 7,
                                .local_tasks = 4, .argv = ARGV("./app", "-n", "3") },
                t);
    tap_ok(strncmp(t->key, "1000.42.7.", 10) == 0 && strlen(t->key) == 26 &&
           strspn(t->key + 10, "0123456789abcdef") == 16,
           "PSPAWN_SHIM_KEY=uid.jobid.stepid.nonce, 16 hex digits of it random (%s)", t->key);
    tap_ok(is_hex32(t->token), "PSPAWN_SHIM_TOKEN is 32 hex digits (%s)", t->token);
    tap_ok(strcmp(t->local_tasks, "4") == 0, "PSPAWN_SHIM_LOCAL_TASKS=4 (%s)", t->local_tasks);
    tap_ok(strcmp(t->signals, "auto") == 0 && strcmp(t->debug, "0") == 0,
           "PSPAWN_SHIM_SIGNALS=auto, PSPAWN_SHIM_DEBUG=0 (%s, %s)", t->signals, t->debug);
    tap_ok(strcmp(t->proctrack, "proctrack/cgroup") == 0,
           "PSPAWN_SHIM_PROCTRACK from slurm_conf (%s)", t->proctrack);
    int mover = geteuid() == 0;
    if (mover)
        tap_ok(strspn(t->mover, "0123456789") == strlen(t->mover) && atoi(t->mover) > 2,
               "as root: PSPAWN_SHIM_MOVER_FD gives the task's socket to the step's mover (%s)",
               t->mover);
    else
        tap_ok(strcmp(t->mover, "-") == 0 && strstr(host.last_error, "zygote's cgroups"),
               "not root: no mover, and the log says why (%s)", host.last_error);
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    tap_ok(t->n_pspawn_vars == 6 + mover, "%d PSPAWN_ variables, no PSPAWN_SHIM_ARGV0 (%d)",
           6 + mover, t->n_pspawn_vars);
#else
    tap_ok(t->n_pspawn_vars == 7 + mover, "%d PSPAWN_ variables with PSPAWN_SHIM_ARGV0 (%d)",
           7 + mover, t->n_pspawn_vars);
#endif
    return mover;
}

/* Without its mover, tasks would stay in the zygote's cgroups, accounted
 * as another task: the step is exec'd instead. */
static void case_mover_cannot_start(void)
{
    fail_socketpair = 1;
    host.log[0] = '\0';
    expect_plain("as root, the mover cannot start (no socket pair for its tasks)",
                 &(struct step){ .plugstack = "shim=" SHIM " debug=1", .option_given = 1,
                                 .stepid = 9, .local_tasks = 4, .argv = ARGV("./app") });
    fail_socketpair = 0;
    tap_ok(strstr(host.log, "the mover could not start") != NULL,
           "the mover cannot start: the log says why");
}

/* Tasks of one step share the token; another step (*other) draws its own. */
static void case_one_token_per_step(const struct task *other)
{
    struct task t3[3];
    struct step three = { .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 8,
                          .local_tasks = 3, .argv = ARGV("app") };
    int rc = run_step(&three, &t3[0], 3, &t3[1]);
    tap_ok(rc == 0 && t3[0].shim && t3[1].shim && t3[2].shim &&
           strcmp(t3[0].token, t3[1].token) == 0 && strcmp(t3[0].token, t3[2].token) == 0 &&
           strcmp(t3[0].user_argv, "app") == 0 && strcmp(t3[2].user_argv, "app") == 0,
           "three tasks of one step: all through the shim, one token");
    tap_ok(strcmp(t3[0].token, other->token) != 0, "another step, another token");
}

/* --pspawn's arguments and the site default decide, with the tasks' count. */
static void case_option_and_default(void)
{
    struct task t;
    expect_shim("--pspawn from sbatch (\"(null)\")",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1,
                                .optarg = "(null)", .stepid = 0, .local_tasks = 1,
                                .argv = ARGV("app") },
                &t);
    expect_shim("default=on, no --pspawn",
                &(struct step){ .plugstack = "default=on shim=" SHIM, .stepid = 0,
                                .local_tasks = 1, .argv = ARGV("/bin/app") },
                &t);
    expect_plain("default=on, --pspawn=off",
                 &(struct step){ .plugstack = "default=on shim=" SHIM, .option_given = 1,
                                 .optarg = "off", .stepid = 0, .local_tasks = 4,
                                 .argv = ARGV("/bin/app") });
    expect_plain("--pspawn=auto, one task on the node",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .optarg = "auto",
                                 .stepid = 0, .local_tasks = 1, .argv = ARGV("app") });
    expect_shim("--pspawn=auto, two tasks on the node",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .optarg = "auto",
                                .stepid = 0, .local_tasks = 2, .argv = ARGV("app") },
                &t);
    expect_shim("default=auto, two tasks on the node",
                &(struct step){ .plugstack = "default=auto shim=" SHIM, .stepid = 0,
                                .local_tasks = 2, .argv = ARGV("app") },
                &t);
}

/* The site's policy in plugstack.conf: force=off execs every step, said
 * once per step at info level; allow= names the keys a user may set: srun
 * refuses another with the rule, and slurmstepd (which decides) execs the
 * step and says why. */
static void case_site_policy(void)
{
    struct task t;
    expect_plain("force=off, --pspawn",
                 &(struct step){ .plugstack = "force=off shim=" SHIM, .option_given = 1,
                                 .optarg = "on", .stepid = 0, .local_tasks = 4,
                                 .argv = ARGV("/bin/app") });
    if (!tap_ok(strstr(host.log, " tasks=4 forked=0 exec=4 unknown=0 zygote=none "
                       "zygote_start=- why=\"the site's force=off in plugstack.conf (4)\"") != NULL,
                "force=off: the step's line (info, at its end) says its 4 tasks were exec'd, "
                "and the rule"))
        tap_diag("log: %s", host.log);
    expect_plain("force=off, default=on, no --pspawn",
                 &(struct step){ .plugstack = "default=on force=off shim=" SHIM, .stepid = 0,
                                 .local_tasks = 4, .argv = ARGV("/bin/app") });
    expect_plain("allow=fanout:python, --pspawn=on,reuse=job (slurmstepd's decision)",
                 &(struct step){ .plugstack = "allow=fanout:python shim=" SHIM, .option_given = 1,
                                 .optarg = "on,reuse=job", .stepid = 0, .local_tasks = 4,
                                 .argv = ARGV("/bin/app") });
    tap_ok(strstr(host.log, "reuse= is not allowed on this cluster (its plugstack.conf says "
                  "allow=fanout:python)") && strstr(host.log, "plain exec (--pspawn=on,reuse=job"),
           "a refused key: slurmstepd's log names the key and the rule, and the step's exec");
    tap_ok(strstr(host.log, "exec=4 unknown=0 zygote=none zygote_start=- why=\"--pspawn=on,reuse=job: "
                  "reuse= is not allowed on this cluster") != NULL,
           "... in the step's line");
    expect_shim("allow=fanout:python, --pspawn=fanout=core",
                &(struct step){ .plugstack = "allow=fanout:python shim=" SHIM, .option_given = 1,
                                .optarg = "fanout=core", .stepid = 0, .local_tasks = 4,
                                .argv = ARGV("/bin/app") },
                &t);
    expect_shim("allow= (no key), --pspawn=auto",
                &(struct step){ .plugstack = "allow= shim=" SHIM, .option_given = 1,
                                .optarg = "auto", .stepid = 0, .local_tasks = 4,
                                .argv = ARGV("/bin/app") },
                &t);
    /* srun checks first, for the user: a refused key stops it. */
    struct spank_handle sp = { 0 };
    char *allow[] = { "allow=fanout" };
    host.context = S_CTX_LOCAL;
    host.option = NULL;
    host.n_errors = 0;
    tap_ok(load() == 0 && p_init(&sp, 1, allow) == 0 && host.option &&
           host.option->cb(host.option->val, "mode=pip", 0) != 0 &&
           strstr(host.last_error, "--pspawn=mode=pip: mode= is not allowed on this cluster"),
           "srun: a key the site does not allow is refused, naming it (%s)", host.last_error);
    tap_ok(host.option && host.option->cb(host.option->val, "fanout=core", 0) == 0,
           "srun: an allowed key is taken");
    unload();
    char *force[] = { "force=off" };
    host.option = NULL;
    host.log[0] = '\0';
    tap_ok(load() == 0 && p_init(&sp, 1, force) == 0 && host.option &&
           host.option->cb(host.option->val, "on", 0) == 0 &&
           strstr(host.log, "turned off on this cluster (plugstack.conf force=off)"),
           "srun under force=off: --pspawn taken, and the user told it is off");
    unload();
}

/* Steps the shim cannot serve (or must not) are exec'd as they are. */
static void case_steps_left_plain(void)
{
    struct task t;
    expect_plain("--pspawn, --pty (SLURM_PTY_PORT)",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4, .argv = ARGV("bash"),
                                 .env = "SLURM_PTY_PORT=41234" });
    host.log[0] = '\0';
    expect_plain("--pspawn, --container (SLURM_CONTAINER): the shim would run inside it",
                 &(struct step){ .plugstack = "shim=" SHIM " debug=1", .option_given = 1,
                                 .stepid = 1, .local_tasks = 4, .argv = ARGV("app"),
                                 .env = "SLURM_CONTAINER=/home/alice/bundle" });
    tap_ok(strstr(host.log, "plain exec (--container: each task runs in an OCI container of "
                            "its own)") != NULL,
           "--container: the log says why");
    expect_shim("--pspawn, SLURM_CONTAINER empty: not a container step",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                .local_tasks = 4, .argv = ARGV("app"),
                                .env = "SLURM_CONTAINER=" },
                &t);
    expect_plain("--pspawn, --multi-prog",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4,
                                 .argv = ARGV("mp.conf", "0-1 ./a\n2,3 ./b %t\n") });
    expect_plain("--pspawn, --multi-prog of one line",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4, .argv = ARGV("mp.conf", "* hostname") });
    expect_shim("--pspawn, a program whose first argument has no rank list",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                .local_tasks = 4, .argv = ARGV("./app", "10", "-x") },
                &t);
    expect_plain("--pspawn, batch step",
                 &(struct step){ .plugstack = "default=on shim=" SHIM, .option_given = 1,
                                 .stepid = SLURM_BATCH_SCRIPT, .local_tasks = 1,
                                 .argv = ARGV("/var/spool/slurmd/job42/slurm_script") });
    expect_plain("--pspawn, extern step",
                 &(struct step){ .plugstack = "default=on shim=" SHIM,
                                 .stepid = SLURM_EXTERN_CONT, .local_tasks = 1,
                                 .argv = ARGV("sleep", "100000000") });
    expect_plain("--pspawn, --bcast to a directory",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4, .argv = ARGV("/tmp/bcast/") });
}

static void case_shim_failures(void)
{
    host.n_errors = 0;
    expect_plain("--pspawn, shim missing",
                 &(struct step){ .plugstack = "shim=/nonexistent/pspawn-shim",
                                 .option_given = 1, .stepid = 1, .local_tasks = 4,
                                 .argv = ARGV("app") });
    tap_ok(host.n_errors == 1 && strstr(host.last_error, "/nonexistent/pspawn-shim"),
           "missing shim logged as an error naming it");
    expect_plain("--pspawn, a variable cannot be set",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4, .argv = ARGV("app"),
                                 .fail_setenv = "PSPAWN_SHIM_SIGNALS" });
}

/* Leaves slurm_conf.proctrack_type unset. */
static void case_signals_debug_and_proctrack(void)
{
    struct task t2;
    expect_shim("signals=no debug=1",
                &(struct step){ .plugstack = "signals=no debug=1 shim=" SHIM,
                                .option_given = 1, .optarg = "on", .stepid = 3,
                                .local_tasks = 2, .argv = ARGV("app") },
                &t2);
    tap_ok(strcmp(t2.signals, "no") == 0 && strcmp(t2.debug, "1") == 0,
           "PSPAWN_SHIM_SIGNALS=no, PSPAWN_SHIM_DEBUG=1 (%s, %s)", t2.signals, t2.debug);

    slurm_conf.proctrack_type = NULL;
    expect_shim("ProctrackType unknown",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 3,
                                .local_tasks = 2, .argv = ARGV("app") },
                &t2);
    tap_ok(strcmp(t2.proctrack, "-") == 0, "no PSPAWN_SHIM_PROCTRACK when it is unknown");
}

int main(void)
{
    if (!case_plugin_symbols()) {
        tap_done();
        return 1;
    }
    case_init_and_option();

    slurm_conf.proctrack_type = "proctrack/cgroup";
    case_off_and_debugger_exec();
    struct task t;
    if (case_shim_variables(&t)) {
        test_mover();
        case_mover_cannot_start();
    }
    test_contain_spank();
    case_one_token_per_step(&t);
    case_option_and_default();
    case_site_policy();
    case_steps_left_plain();
    case_shim_failures();
    case_signals_debug_and_proctrack();
    test_signal_children();

    tap_done();
    return tap_failed ? 1 : 0;
}
