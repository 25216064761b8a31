/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake slurmstepd of tests/integration/spank-plugin (test-plugin.h).
 *
 * It defines the SPANK calls the plugin may use (exported with
 * -export-dynamic, as slurmstepd's libslurmfull does), loads the built
 * plugin with RTLD_NOW (so a call outside this list fails the load), and
 * plays the callbacks a step would: init, the --pspawn callback as Slurm
 * hands the option over, user_init, then for each task, as slurmstepd
 * does: a child forked from that state, the step's task_post_fork for it,
 * and task_init in that child (what it would exec comes back through a
 * pipe).  PLUGIN_PATH is the plugin in the build tree.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spank-plugin.h"

/* ---- what the plugin's SPANK calls see ---- */

struct fake_slurmstepd host = { .task_id = -1 };

slurm_conf_t slurm_conf;

/* srun's, which a parallel debugger sets (srun exports it). */
int MPIR_being_debugged;

static void log_line(const char *level, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    printf("# %s: %s\n", level, buf);
    size_t used = strlen(host.log);
    snprintf(host.log + used, sizeof host.log - used, "%s\n", buf);
    if (strcmp(level, "error") == 0) {
        snprintf(host.last_error, sizeof host.last_error, "%s", buf);
        host.n_errors++;
    }
}

#define LOG_STUB(name, level)                  \
    void name(const char *fmt, ...)            \
    {                                          \
        va_list ap;                            \
        va_start(ap, fmt);                     \
        log_line(level, fmt, ap);              \
        va_end(ap);                            \
    }
LOG_STUB(slurm_error, "error")
LOG_STUB(slurm_info, "info")
LOG_STUB(slurm_verbose, "verbose")
LOG_STUB(slurm_debug, "debug")
LOG_STUB(slurm_debug2, "debug2")
LOG_STUB(slurm_debug3, "debug3")
LOG_STUB(slurm_spank_log, "spank")

const char *spank_strerror(spank_err_t err)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "spank error %d", (int)err);
    return buf;
}

spank_context_t spank_context(void)
{
    return host.context;
}

int spank_remote(spank_t sp)
{
    (void)sp;
    return host.context == S_CTX_REMOTE;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp;
    host.option = opt;
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    va_list ap;
    spank_err_t rc = ESPANK_SUCCESS;
    va_start(ap, item);
    switch (item) {
    case S_JOB_UID:
        *va_arg(ap, uid_t *) = host.uid;
        break;
    case S_JOB_ID:
        *va_arg(ap, uint32_t *) = host.jobid;
        break;
    case S_JOB_STEPID:
        *va_arg(ap, uint32_t *) = host.stepid;
        break;
    case S_JOB_LOCAL_TASK_COUNT:
        *va_arg(ap, uint32_t *) = host.local_tasks;
        break;
    case S_TASK_ID:
        /* In a task's child (task_init) and in task_post_fork. */
        if (host.task_id < 0)
            rc = ESPANK_NOT_TASK;
        else
            *va_arg(ap, int *) = host.task_id;
        break;
    case S_TASK_PID:
        if (host.task_pid <= 0)
            rc = ESPANK_NOT_TASK;
        else
            *va_arg(ap, pid_t *) = host.task_pid;
        break;
    case S_JOB_ENV: {
        /* The step's environment, as srun sent it: the variables set so far. */
        static char *compact[MAX_ENV + 1];
        int n = 0;
        for (int i = 0; i < MAX_ENV; i++)
            if (host.env[i])
                compact[n++] = host.env[i];
        compact[n] = NULL;
        *va_arg(ap, char ***) = compact;
        break;
    }
    case S_JOB_ARGV: {
        int *argc = va_arg(ap, int *);
        char ***argv = va_arg(ap, char ***);
        *argc = host.argc;
        *argv = host.argv;
        break;
    }
    default:
        rc = ESPANK_BAD_ARG;
    }
    va_end(ap);
    return rc;
}

static char **env_find(const char *var)
{
    size_t len = strlen(var);
    for (int i = 0; i < MAX_ENV; i++)
        if (host.env[i] && strncmp(host.env[i], var, len) == 0 && host.env[i][len] == '=')
            return &host.env[i];
    return NULL;
}

const char *env_get(const char *var)
{
    char **e = env_find(var);
    return e ? *e + strlen(var) + 1 : NULL;
}

static void env_put(const char *var, const char *val)
{
    char **e = env_find(var);
    if (!e)
        for (int i = 0; i < MAX_ENV && !e; i++)
            if (!host.env[i])
                e = &host.env[i];
    free(*e);
    size_t n = strlen(var) + strlen(val) + 2;
    *e = malloc(n);
    snprintf(*e, n, "%s=%s", var, val);
}

void env_clear(void)
{
    for (int i = 0; i < MAX_ENV; i++) {
        free(host.env[i]);
        host.env[i] = NULL;
    }
}

static int env_count_prefix(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < MAX_ENV; i++)
        if (host.env[i] && strncmp(host.env[i], prefix, strlen(prefix)) == 0)
            n++;
    return n;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    (void)sp;
    const char *v = env_get(var);
    if (!v)
        return ESPANK_ENV_NOEXIST;
    if ((int)strlen(v) >= len)
        return ESPANK_NOSPACE;
    memcpy(buf, v, strlen(v) + 1);
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp;
    if (host.fail_setenv && strcmp(var, host.fail_setenv) == 0)
        return ESPANK_ERROR;
    if (!overwrite && env_get(var))
        return ESPANK_ENV_EXISTS;
    env_put(var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
    (void)sp;
    char **e = env_find(var);
    if (e) {
        free(*e);
        *e = NULL;
    }
    return ESPANK_SUCCESS;
}

#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
spank_err_t spank_prepend_task_argv(spank_t sp, int argc, const char *argv[])
{
    if (!sp->in_task)
        return ESPANK_NOT_TASK;
    if (host.task_argc + argc > MAX_ARGV + 2)
        return ESPANK_ERROR;
    memmove(host.task_argv + argc, host.task_argv, (host.task_argc + 1) * sizeof(char *));
    for (int i = 0; i < argc; i++)
        host.task_argv[i] = strdup(argv[i]);
    host.task_argc += argc;
    return ESPANK_SUCCESS;
}
#endif

/* ---- the plugin ---- */

void *plugin;
spank_f *p_init, *p_post_opt, *p_user_init, *p_task_init, *p_task_post_fork, *p_exit;

int load(void)
{
    plugin = dlopen(PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        printf("# dlopen: %s\n", dlerror());
        return -1;
    }
    p_init = (spank_f *)dlsym(plugin, "slurm_spank_init");
    p_post_opt = (spank_f *)dlsym(plugin, "slurm_spank_init_post_opt");
    p_user_init = (spank_f *)dlsym(plugin, "slurm_spank_user_init");
    p_task_init = (spank_f *)dlsym(plugin, "slurm_spank_task_init");
    p_task_post_fork = (spank_f *)dlsym(plugin, "slurm_spank_task_post_fork");     /* optional */
    p_exit = (spank_f *)dlsym(plugin, "slurm_spank_exit");
    return p_init && p_post_opt && p_user_init && p_task_init && p_exit ? 0 : -1;
}

void unload(void)
{
    dlclose(plugin);
    plugin = NULL;
    host.option = NULL;
}

static void copy_var(char *dst, size_t len, const char *var)
{
    const char *v = env_get(var);
    snprintf(dst, len, "%s", v ? v : "-");
}

void join(char *dst, size_t len, char *const *argv, int from)
{
    dst[0] = '\0';
    for (int i = from; argv[i]; i++)
        snprintf(dst + strlen(dst), len - strlen(dst), "%s%s", i > from ? " " : "", argv[i]);
}

/* The plugstack.conf line's words, in buf, as init's argv; their count. */
static int split_plugstack(const char *plugstack, char *buf, size_t len, char **av, int max)
{
    int ac = 0;
    snprintf(buf, len, "%s", plugstack ? plugstack : "");
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && ac < max;
         w = strtok_r(NULL, " ", &save))
        av[ac++] = w;
    return ac;
}

static void set_host_argv(const struct step *s)
{
    host.argc = 0;
    for (int i = 0; s->argv[i]; i++)
        host.argv[host.argc++] = (char *)s->argv[i];
    host.argv[host.argc] = NULL;
}

/* slurmstepd's state for the step, before the plugin is loaded. */
static void set_up_host(const struct step *s)
{
    host.context = S_CTX_REMOTE;
    host.uid = 1000;
    host.jobid = 42;
    host.stepid = s->stepid;
    host.local_tasks = s->local_tasks;
    host.fail_setenv = s->fail_setenv;
    env_clear();
    env_put("PATH", "/usr/bin:/bin");
    if (s->env) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(s->env, "="), s->env);
        env_put(name, strchr(s->env, '=') + 1);
    }
}

/* The step's init, its option and user_init; 0 if each returned 0. */
static int start_step(struct spank_handle *sp, const struct step *s, int ac, char **av)
{
    if (p_init(sp, ac, av) != 0 || !host.option)
        return -1;
    if (s->option_given && host.option->cb(host.option->val, s->optarg, 1) != 0)
        return -1;
    set_host_argv(s);
    /* As slurmstepd: the options' callbacks, init_post_opt, user_init. */
    if (p_post_opt(sp, 0, NULL) != 0 || p_user_init(sp, 0, NULL) != 0)
        return -1;
    return 0;
}

/* What task_init left for the task's execve, in *tk. */
static void describe_task(struct task *tk, char **exec_argv)
{
    snprintf(tk->argv0, sizeof tk->argv0, "%s", exec_argv[0]);
    const char *argv0 = env_get("PSPAWN_SHIM_ARGV0");
    tk->shim = env_get("PSPAWN_SHIM_KEY") != NULL;
    if (argv0) {
        /* In place: argv[0] is the shim, the task's argv[0] is in the env. */
        char rest[512];
        join(rest, sizeof rest, exec_argv, 1);
        snprintf(tk->user_argv, sizeof tk->user_argv, "%.200s%s%.300s", argv0, rest[0] ? " " : "",
                 rest);
    } else {
        join(tk->user_argv, sizeof tk->user_argv, exec_argv, tk->shim ? 1 : 0);
    }
    copy_var(tk->key, sizeof tk->key, "PSPAWN_SHIM_KEY");
    copy_var(tk->token, sizeof tk->token, "PSPAWN_SHIM_TOKEN");
    copy_var(tk->local_tasks, sizeof tk->local_tasks, "PSPAWN_SHIM_LOCAL_TASKS");
    copy_var(tk->signals, sizeof tk->signals, "PSPAWN_SHIM_SIGNALS");
    copy_var(tk->debug, sizeof tk->debug, "PSPAWN_SHIM_DEBUG");
    copy_var(tk->proctrack, sizeof tk->proctrack, "PSPAWN_SHIM_PROCTRACK");
    copy_var(tk->mover, sizeof tk->mover, "PSPAWN_SHIM_MOVER_FD");
    copy_var(tk->signal_children, sizeof tk->signal_children, "PSPAWN_SHIM_SIGNAL_CHILDREN");
    tk->n_pspawn_vars = env_count_prefix("PSPAWN_") + env_count_prefix("SLURM_PSPAWN_");
}

pid_t fork_task(struct spank_handle *sp, int task_id, int *trc)
{
    int go[2];
    if (pipe(go) < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(1);   /* task_post_fork failed, or the parent is gone */
        close(go[0]);
        host.task_id = task_id;
        host.task_pid = 0;
        sp->in_task = 1;
        *trc = p_task_init(sp, 0, NULL);
        sp->in_task = 0;
        return 0;
    }
    close(go[0]);
    int rc = pid < 0 ? -1 : 0;
    if (pid > 0 && p_task_post_fork) {
        host.task_id = task_id;
        host.task_pid = pid;
        rc = p_task_post_fork(sp, 0, NULL);
        host.task_id = -1;
        host.task_pid = 0;
    }
    if (rc == 0 && write(go[1], "g", 1) == 1) {
        close(go[1]);
        return pid;
    }
    close(go[1]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return -1;
}

/* What a task's child sends back. */
struct task_result {
    int rc;
    struct task tk;
    int n_errors;
    char last_error[sizeof host.last_error];
    char log[sizeof host.log];
};

/* One task's child, from the step's environment after user_init
 * (saved_env); 0 if its task_init returned 0, its execve in *tk.  The
 * child's log lines are added to ours. */
static int run_task(struct spank_handle *sp, const struct step *s, int task_id, struct task *tk,
                    char *const *saved_env)
{
    memset(tk, 0, sizeof *tk);
    env_clear();
    for (int i = 0; i < MAX_ENV; i++)
        host.env[i] = saved_env[i] ? strdup(saved_env[i]) : NULL;
    set_host_argv(s);
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    host.task_argc = host.argc;
    for (int i = 0; i <= host.argc; i++)
        host.task_argv[i] = host.argv[i] ? strdup(host.argv[i]) : NULL;
#endif
    int out[2];
    if (pipe(out) < 0)
        return -1;
    size_t log0 = strlen(host.log);
    int trc = -1;
    pid_t pid = fork_task(sp, task_id, &trc);
    if (pid == 0) {
        static struct task_result r;
        close(out[0]);
        r.rc = trc;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
        describe_task(&r.tk, host.task_argv);
#else
        describe_task(&r.tk, host.argv);
#endif
        r.n_errors = host.n_errors;
        snprintf(r.last_error, sizeof r.last_error, "%s", host.last_error);
        snprintf(r.log, sizeof r.log, "%s", host.log + log0);
        fflush(stdout);
        const char *p = (const char *)&r;
        for (size_t left = sizeof r; left > 0;) {
            ssize_t n = write(out[1], p, left);
            if (n <= 0)
                _exit(1);
            p += n;
            left -= (size_t)n;
        }
        _exit(0);
    }
    close(out[1]);
    static struct task_result r;
    size_t got = 0;
    for (ssize_t n = 1; pid > 0 && n > 0 && got < sizeof r; got += n > 0 ? (size_t)n : 0)
        n = read(out[0], (char *)&r + got, sizeof r - got);
    close(out[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    for (int i = 0; host.task_argv[i]; i++)
        free(host.task_argv[i]);
#endif
    if (got != sizeof r)
        return -1;
    *tk = r.tk;
    host.n_errors = r.n_errors;
    if (r.last_error[0])
        snprintf(host.last_error, sizeof host.last_error, "%s", r.last_error);
    size_t used = strlen(host.log);
    snprintf(host.log + used, sizeof host.log - used, "%s", r.log);
    return r.rc == 0 ? 0 : -1;
}

/* Run the step's callbacks and one task's task_init; 0 if every callback
 * returned 0 and the task's execve is described in *t. */
int run_step(const struct step *s, struct task *t, int ntasks_run, struct task *more)
{
    struct spank_handle sp = { 0 };
    char *av[16];
    char buf[1024];
    int ac = split_plugstack(s->plugstack, buf, sizeof buf, av, 16);
    set_up_host(s);
    if (load() < 0)
        return -1;
    if (start_step(&sp, s, ac, av) != 0)
        return -1;

    /* Each task's child starts from the step's state after user_init. */
    char *saved_env[MAX_ENV];
    for (int i = 0; i < MAX_ENV; i++)
        saved_env[i] = host.env[i] ? strdup(host.env[i]) : NULL;
    int rc = 0;
    for (int k = 0; k < ntasks_run && rc == 0; k++)
        rc = run_task(&sp, s, k, k == 0 ? t : &more[k - 1], saved_env);
    for (int i = 0; i < MAX_ENV; i++)
        free(saved_env[i]);
    env_clear();
    /* As slurmstepd does: exit (the mover thread stops), then unload. */
    if (p_exit(&sp, 0, NULL) != 0)
        rc = -1;
    unload();
    return rc;
}
