/*
 * TAP: spank_pspawn.so in a fake slurmstepd.
 *
 * This program defines the SPANK calls the plugin may use (exported with
 * -export-dynamic, as slurmstepd's libslurmfull does), loads the built
 * plugin with RTLD_NOW (so a call outside this list fails the load), and
 * plays the callbacks a step would: init, the --pspawn callback as Slurm
 * hands the option over, user_init, then task_init for each task on a
 * copy of the state, as each task's child would have.  PLUGIN_PATH is the
 * plugin in the build tree.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <linux/magic.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slurm 22.05's slurm/spank.h uses uint32_t without including it. */
#include <stdint.h>
#include <slurm/spank.h>
#include <slurm/slurm.h>

#include "pspawn_cgroup.h"
#include "protocol.h"
#include "tap.h"
#include "unixsock.h"


/* ---- the fake slurmstepd: what the plugin's SPANK calls see ---- */

struct spank_handle {
    int in_task;
};

#define MAX_ENV 64
#define MAX_ARGV 16

static struct {
    spank_context_t context;
    uid_t uid;
    uint32_t jobid, stepid, local_tasks;
    int argc;
    char *argv[MAX_ARGV + 2];   /* the step's argv (S_JOB_ARGV) */
    char *env[MAX_ENV];         /* the job's environment, "NAME=value" */
    const char *fail_setenv;    /* spank_setenv refuses this name */
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    int task_argc;
    char *task_argv[MAX_ARGV + 4];
#endif
    struct spank_option *option;
    char last_error[1024];
    char log[8192];             /* every line of any level, until cleared */
    int n_errors;
} host;

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

static const char *env_get(const char *var)
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

static void env_clear(void)
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

static void *plugin;
static spank_f *p_init, *p_post_opt, *p_user_init, *p_task_init, *p_exit;

static int load(void)
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
    p_exit = (spank_f *)dlsym(plugin, "slurm_spank_exit");
    return p_init && p_post_opt && p_user_init && p_task_init && p_exit ? 0 : -1;
}

static void unload(void)
{
    dlclose(plugin);
    plugin = NULL;
    host.option = NULL;
}

/* A step as one slurmstepd sees it. */
struct step {
    const char *plugstack;      /* plugstack.conf arguments */
    int option_given;
    const char *optarg;         /* --pspawn argument (NULL: none) */
    uint32_t stepid, local_tasks;
    const char *argv[MAX_ARGV];
    const char *env;            /* one extra "NAME=value", or NULL */
    const char *fail_setenv;
};

/* What one task's execve would get. */
struct task {
    int shim;                   /* execve runs the shim */
    char argv0[256];            /* what execve runs */
    char user_argv[512];        /* the task's argv as the shim passes it on, joined by ' ' */
    char key[64], token[64], local_tasks[16], signals[8], debug[4], proctrack[64], mover[96];
    char signal_children[4];
    int n_pspawn_vars;
};

static void copy_var(char *dst, size_t len, const char *var)
{
    const char *v = env_get(var);
    snprintf(dst, len, "%s", v ? v : "-");
}

static void join(char *dst, size_t len, char *const *argv, int from)
{
    dst[0] = '\0';
    for (int i = from; argv[i]; i++)
        snprintf(dst + strlen(dst), len - strlen(dst), "%s%s", i > from ? " " : "", argv[i]);
}

/* Run the step's callbacks and one task's task_init; 0 if every callback
 * returned 0 and the task's execve is described in *t. */
static int run_step(const struct step *s, struct task *t, int ntasks_run, struct task *more)
{
    struct spank_handle sp = { 0 };
    char *av[16];
    int ac = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s->plugstack ? s->plugstack : "");
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && ac < 16;
         w = strtok_r(NULL, " ", &save))
        av[ac++] = w;

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

    if (load() < 0)
        return -1;
    if (p_init(&sp, ac, av) != 0 || !host.option)
        return -1;
    if (s->option_given && host.option->cb(host.option->val, s->optarg, 1) != 0)
        return -1;
    host.argc = 0;
    for (int i = 0; s->argv[i]; i++)
        host.argv[host.argc++] = (char *)s->argv[i];
    host.argv[host.argc] = NULL;
    if (p_user_init(&sp, 0, NULL) != 0)
        return -1;

    /* Each task's child starts from the step's state after user_init. */
    char *saved_env[MAX_ENV];
    for (int i = 0; i < MAX_ENV; i++)
        saved_env[i] = host.env[i] ? strdup(host.env[i]) : NULL;
    int rc = 0;
    for (int k = 0; k < ntasks_run && rc == 0; k++) {
        struct task *tk = k == 0 ? t : &more[k - 1];
        memset(tk, 0, sizeof *tk);
        env_clear();
        for (int i = 0; i < MAX_ENV; i++)
            host.env[i] = saved_env[i] ? strdup(saved_env[i]) : NULL;
        host.argc = 0;
        for (int i = 0; s->argv[i]; i++)
            host.argv[host.argc++] = (char *)s->argv[i];
        host.argv[host.argc] = NULL;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
        host.task_argc = host.argc;
        for (int i = 0; i <= host.argc; i++)
            host.task_argv[i] = host.argv[i] ? strdup(host.argv[i]) : NULL;
#endif
        sp.in_task = 1;
        if (p_task_init(&sp, 0, NULL) != 0)
            rc = -1;
        sp.in_task = 0;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
        char **exec_argv = host.task_argv;
#else
        char **exec_argv = host.argv;
#endif
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
        copy_var(tk->mover, sizeof tk->mover, "PSPAWN_SHIM_MOVER");
        copy_var(tk->signal_children, sizeof tk->signal_children, "PSPAWN_SHIM_SIGNAL_CHILDREN");
        tk->n_pspawn_vars = env_count_prefix("PSPAWN_") + env_count_prefix("SLURM_PSPAWN_");
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
        for (int i = 0; host.task_argv[i]; i++)
            free(host.task_argv[i]);
#else
        if (host.argv[0] != s->argv[0])
            free(host.argv[0]);     /* the plugin's copy of the shim path */
#endif
    }
    for (int i = 0; i < MAX_ENV; i++)
        free(saved_env[i]);
    env_clear();
    /* As slurmstepd does: exit (the mover thread stops), then unload. */
    if (p_exit(&sp, 0, NULL) != 0)
        rc = -1;
    unload();
    return rc;
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

#define SHIM "/bin/true"    /* any executable: the plugin checks X_OK */

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
        int good = rc == 0 && env_get("PSPAWN_SHIM_KEY") && !env_get("PSPAWN_SHIM_MOVER") &&
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

/* ---- the mover (as root only) ---- */

/* The plugin's open() is this one (exported with -export-dynamic), so
 * that a test can end the process whose pid the mover is about to write
 * into a cgroup.procs and give that pid to another process (through
 * ns_last_pid): the race of a pid reused between the mover's checks and
 * its write, made certain. */
static struct {
    pid_t victim;       /* armed: at the next cgroup.procs, end it */
    pid_t successor;    /* the process that got its pid, or 0 */
    uid_t uid;          /* the successor's */
} reuse;

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (reuse.victim > 0 && strstr(path, "cgroup.procs")) {
        pid_t v = reuse.victim;
        reuse.victim = 0;
        kill(v, SIGKILL);
        waitpid(v, NULL, 0);
        char last[32];
        snprintf(last, sizeof last, "%d", (int)v - 1);
        for (int tries = 0; tries < 50 && !reuse.successor; tries++) {
            int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/ns_last_pid", O_WRONLY);
            if (fd < 0 || write(fd, last, strlen(last)) < 0) {
                if (fd >= 0)
                    close(fd);
                break;
            }
            close(fd);
            pid_t p = fork();
            if (p == 0) {
                /* The step's user, like the victim: a process the mover
                 * would move, if it looked at the number alone. */
                syscall(SYS_setresgid, reuse.uid, reuse.uid, reuse.uid);
                syscall(SYS_setresuid, reuse.uid, reuse.uid, reuse.uid);
                for (;;)
                    pause();
            }
            if (p == v) {
                reuse.successor = p;
            } else if (p > 0) {
                kill(p, SIGKILL);
                waitpid(p, NULL, 0);
            }
        }
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* The euid ask_mover's task runs with (-1: the user's, as every uid). */
static int task_euid = -1;

struct mover_result {
    int err, moved;
    char cgroup[512];           /* the task's /proc/PID/cgroup afterwards */
};

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) == 0 ? rc : -1;
}

static int join_cgroup(const char *dir, pid_t pid)
{
    char path[PATH_MAX], buf[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    return write_file(path, buf);
}

/* Play a shim: a child of ours running as UID asks the mover NAME to move
 * TASK (0: its own child, running as UID too) with TOKEN.  With SHIM_CG
 * and TASK_CG, the shim and its task start in those cgroups. */
static struct mover_result ask_mover(const char *name, uid_t uid, const char *token, pid_t task,
                                     const char *shim_cg, const char *task_cg)
{
    struct mover_result res = { -1, -1, "" };
    int rp[2];
    if (pipe(rp) < 0)
        return res;
    pid_t shim = fork();
    if (shim == 0) {
        close(rp[0]);
        if (geteuid() != 0 && seteuid(0) < 0)
            _exit(1);
        if (shim_cg)
            join_cgroup(shim_cg, getpid());
        int hold[2], ready[2];
        if (pipe(hold) < 0 || pipe(ready) < 0)
            _exit(1);
        pid_t t = fork();
        if (t == 0) {
            close(hold[1]);
            close(ready[0]);
            if (task_cg)
                join_cgroup(task_cg, getpid());
            uid_t e = task_euid >= 0 ? (uid_t)task_euid : uid;
            if (setresgid(uid, uid, uid) < 0 || setresuid(uid, e, e) < 0)
                _exit(1);
            close(ready[1]);
            char c;
            (void)!read(hold[0], &c, 1);     /* until the shim is done */
            _exit(0);
        }
        close(hold[0]);
        close(ready[1]);
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        char c;
        (void)!read(ready[0], &c, 1);   /* the task has joined its cgroup and changed its uid */
        struct mover_result r = { -1, -1, "" };
        struct sockaddr_un a;
        int alen = pspawn_abstract_addr(&a, name);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, task ? task : t, { 0 } };
        snprintf(q.token, sizeof q.token, "%s", token);
        struct pspawn_mover_reply rep;
        /* A refusal may come before our send, which then fails: read it. */
        if (alen > 0 && connect(fd, (struct sockaddr *)&a, (socklen_t)alen) == 0 &&
            (send(fd, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q || errno == EPIPE ||
             errno == ECONNRESET) &&
            recv(fd, &rep, sizeof rep, 0) == (ssize_t)sizeof rep) {
            r.err = rep.err;
            r.moved = rep.moved;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)t);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(r.cgroup, 1, sizeof r.cgroup - 1, f) : 0;
        r.cgroup[got] = '\0';
        if (f)
            fclose(f);
        (void)!write(rp[1], &r, sizeof r);
        close(hold[1]);
        waitpid(t, NULL, 0);
        _exit(0);
    }
    close(rp[1]);
    if (read(rp[0], &res, sizeof res) != (ssize_t)sizeof res)
        res.err = -1;
    close(rp[0]);
    waitpid(shim, NULL, 0);
    return res;
}

/* Play a stalled shim: a child of ours (PID) running as UID connects to
 * the mover NAME, says 'c' on HEAR once connected, and sends nothing until
 * told (a byte on TELL); it then says on HEAR whether any reply had come
 * meanwhile (1: none had) and exits. */
struct staller {
    pid_t pid;
    int tell, hear;
};

static struct staller stall_mover(const char *name, uid_t uid)
{
    struct staller st = { -1, -1, -1 };
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        return st;
    st.pid = fork();
    if (st.pid == 0) {
        close(to[1]);
        close(from[0]);
        char verdict = 0, c;
        struct sockaddr_un a;
        int alen = pspawn_abstract_addr(&a, name);
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        verdict = alen > 0 && connect(fd, (struct sockaddr *)&a, (socklen_t)alen) == 0 ? 'c' : 'x';
        (void)!write(from[1], &verdict, 1);        /* connected */
        (void)!read(to[0], &c, 1);
        struct pollfd p = { fd, POLLIN, 0 };
        verdict = poll(&p, 1, 0) == 0 ? 1 : 0;
        (void)!write(from[1], &verdict, 1);
        _exit(0);
    }
    close(to[0]);
    close(from[1]);
    st.tell = to[1];
    st.hear = from[0];
    return st;
}

/* Where to make test cgroups: v1's cpuset hierarchy, or v2's. */
static const char *cgroup_base(char *cpus, char *mems)
{
    struct statfs st;
    cpus[0] = mems[0] = '\0';
    if (statfs("/sys/fs/cgroup/cpuset", &st) == 0 && st.f_type == CGROUP_SUPER_MAGIC) {
        FILE *f = fopen("/sys/fs/cgroup/cpuset/cpuset.cpus", "r");
        if (f && fgets(cpus, 256, f)) {
            fclose(f);
            f = fopen("/sys/fs/cgroup/cpuset/cpuset.mems", "r");
            if (f && fgets(mems, 256, f)) {
                fclose(f);
                return "/sys/fs/cgroup/cpuset";
            }
        }
        if (f)
            fclose(f);
        return NULL;
    }
    if (statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
        return "/sys/fs/cgroup";
    return NULL;
}

/* The task ends, and its pid goes to another process of the user's, just
 * before the mover writes it into the shim's cgroup a: the mover must see
 * that the pid it wrote is no longer its task's. */
static void test_mover_pid_reuse(const char *name, uid_t user, const char *token, const char *a,
                                 const char *b)
{
    int hold[2], ready[2];
    if (pipe(hold) < 0 || pipe(ready) < 0)
        return;
    fflush(stdout);
    pid_t victim = fork();
    if (victim == 0) {
        close(hold[1]);
        close(ready[0]);
        join_cgroup(b, getpid());
        if (setresgid(user, user, user) < 0 || setresuid(user, user, user) < 0)
            _exit(1);
        close(ready[1]);
        char c;
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(hold[0]);
    close(ready[1]);
    char c;
    (void)!read(ready[0], &c, 1);   /* in b, as the user */
    close(ready[0]);
    reuse.successor = 0;
    reuse.uid = user;
    reuse.victim = victim;
    struct mover_result r = ask_mover(name, user, token, victim, a, NULL);
    reuse.victim = 0;
    close(hold[1]);
    if (!reuse.successor) {
        printf("# the pid of an ended task could not be given to another process here "
               "(ns_last_pid): the race is not played\n");
        tap_skip("no pid reuse through ns_last_pid",
                 "a task's pid reused just before the mover's write: ESRCH");
    } else {
        tap_ok(r.err == ESRCH, "a task's pid reused by another process just before the mover "
               "writes it: the mover sees its task gone and answers ESRCH, not a move (err %d, "
               "moved %d)", r.err, r.moved);
        kill(reuse.successor, SIGKILL);
        waitpid(reuse.successor, NULL, 0);
    }
    waitpid(victim, NULL, WNOHANG);
}

static void test_mover(void)
{
    const uid_t user = 65534;
    struct spank_handle sp = { 0 };
    char *av[] = { "shim=" SHIM };
    host.context = S_CTX_REMOTE;
    host.uid = user;
    host.jobid = 43;
    host.stepid = 0;
    host.local_tasks = 2;
    host.fail_setenv = NULL;
    env_clear();
    host.argc = 1;
    host.argv[0] = "app";
    host.argv[1] = NULL;
    if (load() < 0 || p_init(&sp, 1, av) != 0 || !host.option ||
        host.option->cb(host.option->val, NULL, 1) != 0 || p_user_init(&sp, 0, NULL) != 0) {
        tap_ok(0, "mover: step set up");
        return;
    }
    /* One task's task_init sets the shim's variables. */
    char *app = host.argv[0];
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    host.task_argc = 1;
    host.task_argv[0] = strdup(app);
    host.task_argv[1] = NULL;
#endif
    sp.in_task = 1;
    int trc = p_task_init(&sp, 0, NULL);
    sp.in_task = 0;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    for (int i = 0; host.task_argv[i]; i++)
        free(host.task_argv[i]);
#else
    if (host.argv[0] != app)
        free(host.argv[0]);
#endif
    tap_ok(trc == 0, "mover: task_init");
    const char *name = env_get("PSPAWN_SHIM_MOVER");
    const char *token = env_get("PSPAWN_SHIM_TOKEN");
    tap_ok(name && token && strcmp(name, "pspawn-65534.43.0.mover") == 0,
           "mover: named for the step (%s)", name ? name : "none");
    if (!name || !token)
        goto out;

    struct mover_result r = ask_mover(name, user, token, 0, NULL, NULL);
    tap_ok(r.err == 0 && r.moved == 0,
           "a shim whose task is in its own cgroups already: nothing moved (err %d, moved %d)",
           r.err, r.moved);
    r = ask_mover(name, user, "0123456789abcdef0123456789abcdef", 0, NULL, NULL);
    tap_ok(r.err == EPERM, "a wrong token is refused with EPERM (err %d)", r.err);
    r = ask_mover(name, user, token, 1, NULL, NULL);
    tap_ok(r.err == ESRCH, "moving a process that is not the step's (pid 1) is refused with ESRCH "
           "(err %d)", r.err);
    r = ask_mover(name, 0, token, 0, NULL, NULL);
    tap_ok(r.err == EPERM, "a shim of another uid (root) is refused (err %d)", r.err);
    task_euid = 0;
    r = ask_mover(name, user, token, 0, NULL, NULL);
    task_euid = -1;
    tap_ok(r.err == ESRCH, "a task whose real uid is the user's but not its effective one (a "
           "set-uid program's) is not the shim's to move: ESRCH (err %d)", r.err);

    /* A shim that connects and stalls (suspended, say) holds up nobody:
     * the next one is answered while it still waits for its reply. */
    struct staller st = stall_mover(name, user);
    char c = 0, none = 0;
    int connected = st.pid > 0 && read(st.hear, &c, 1) == 1 && c == 'c';
    r = ask_mover(name, user, token, 0, NULL, NULL);
    if (st.pid > 0) {
        (void)!write(st.tell, "", 1);
        if (read(st.hear, &none, 1) != 1)
            none = 0;
        waitpid(st.pid, NULL, 0);
        close(st.tell);
        close(st.hear);
    }
    tap_ok(connected && r.err == 0 && none == 1,
           "a shim that connected and stalls does not hold up the next: it is answered (err %d) "
           "while the first still has no reply (%s)", r.err,
           !connected ? "no stalled connection" : none ? "none" : "it had one");

    /* A real move: the shim in cgroup a, its task in b. */
    char cpus[256], mems[256], dir[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8];
    const char *base = cgroup_base(cpus, mems);
    snprintf(dir, sizeof dir, "%s/pspawn-test-%d", base ? base : "", (int)getpid());
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    if (!base || mkdir(dir, 0755) < 0 || mkdir(a, 0755) < 0 || mkdir(b, 0755) < 0) {
        printf("# no writable cgroup hierarchy here (%s): the real move is not tested\n",
               base ? strerror(errno) : "neither v1 cpuset nor v2");
    } else {
        char f[PATH_MAX + 32];
        const char *subdirs[] = { dir, a, b };
        for (int i = 0; cpus[0] && i < 3; i++) {
            snprintf(f, sizeof f, "%s/cpuset.cpus", subdirs[i]);
            write_file(f, cpus);
            snprintf(f, sizeof f, "%s/cpuset.mems", subdirs[i]);
            write_file(f, mems);
        }
        /* slurmstepd may have dropped its effective uid to the user's, in
         * every thread, when the request comes: the mover takes root back. */
        int dropped = seteuid(user) == 0;
        r = ask_mover(name, user, token, 0, a, b);
        if (dropped && seteuid(0) < 0)
            printf("# seteuid(0): %s\n", strerror(errno));
        char want[PATH_MAX + 32];
        snprintf(want, sizeof want, ":/pspawn-test-%d/a\n", (int)getpid());
        tap_ok(r.err == 0 && r.moved == 1 && strstr(r.cgroup, want),
               "with slurmstepd's euid dropped, the task is moved from b into its shim's cgroup a "
               "(err %d, moved %d, %s)", r.err,
               r.moved, strstr(r.cgroup, "pspawn-test") ? strstr(r.cgroup, "pspawn-test") : "?");
        test_mover_pid_reuse(name, user, token, a, b);
        rmdir(a);
        rmdir(b);
        rmdir(dir);
    }
out:
    tap_ok(p_exit(&sp, 0, NULL) == 0, "exit stops the mover");
    struct mover_result gone = ask_mover(name ? name : "x", user, token ? token : "", 0, NULL, NULL);
    tap_ok(gone.err == -1, "after exit nobody listens on the mover's name");
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

int main(void)
{
    /* Loads with every Slurm call it makes resolved here. */
    tap_ok(load() == 0, "dlopen(RTLD_NOW) with only the SPANK API defined: %s", PLUGIN_PATH);
    if (!plugin) {
        tap_done();
        return 1;
    }
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
    /* srun under a parallel debugger: the step is told, through srun's
     * environment, to exec its tasks (the debugger must find the program,
     * not the shim). */
    unsetenv("SLURM_PSPAWN_DEBUGGER");
    MPIR_being_debugged = 0;
    tap_ok(p_post_opt(&sp, 0, NULL) == 0 && !getenv("SLURM_PSPAWN_DEBUGGER"),
           "srun, no debugger: post_opt sets nothing");
    MPIR_being_debugged = 1;
    tap_ok(p_post_opt(&sp, 0, NULL) == 0 && getenv("SLURM_PSPAWN_DEBUGGER") &&
           strcmp(getenv("SLURM_PSPAWN_DEBUGGER"), "1") == 0,
           "srun under a debugger (MPIR_being_debugged): post_opt sets SLURM_PSPAWN_DEBUGGER=1");
    unsetenv("SLURM_PSPAWN_DEBUGGER");
    tap_ok(host.option && host.option->cb(host.option->val, "off", 0) == 0 &&
           p_post_opt(&sp, 0, NULL) == 0 && !getenv("SLURM_PSPAWN_DEBUGGER"),
           "srun under a debugger with --pspawn=off: nothing set");
    MPIR_being_debugged = 0;
    host.context = S_CTX_ALLOCATOR;
    host.option = NULL;
    tap_ok(p_init(&sp, 0, none) == 0 && host.option, "sbatch/salloc: --pspawn registered");
    host.context = S_CTX_SLURMD;
    host.option = NULL;
    tap_ok(p_init(&sp, 0, none) == 0 && !host.option, "slurmd: nothing registered");
    unload();

    slurm_conf.proctrack_type = "proctrack/cgroup";
    struct task t, t2, t3[3];

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

    expect_shim("--pspawn",
                &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 7,
                                .local_tasks = 4, .argv = ARGV("./app", "-n", "3") },
                &t);
    tap_ok(strcmp(t.key, "1000.42.7") == 0, "PSPAWN_SHIM_KEY=uid.jobid.stepid (%s)", t.key);
    tap_ok(is_hex32(t.token), "PSPAWN_SHIM_TOKEN is 32 hex digits (%s)", t.token);
    tap_ok(strcmp(t.local_tasks, "4") == 0, "PSPAWN_SHIM_LOCAL_TASKS=4 (%s)", t.local_tasks);
    tap_ok(strcmp(t.signals, "auto") == 0 && strcmp(t.debug, "0") == 0,
           "PSPAWN_SHIM_SIGNALS=auto, PSPAWN_SHIM_DEBUG=0 (%s, %s)", t.signals, t.debug);
    tap_ok(strcmp(t.proctrack, "proctrack/cgroup") == 0,
           "PSPAWN_SHIM_PROCTRACK from slurm_conf (%s)", t.proctrack);
    /* The mover needs root (it takes back slurmstepd's saved uid 0). */
    int mover = geteuid() == 0;
    if (mover)
        tap_ok(strcmp(t.mover, "pspawn-1000.42.7.mover") == 0,
               "as root: PSPAWN_SHIM_MOVER names the step's mover (%s)", t.mover);
    else
        tap_ok(strcmp(t.mover, "-") == 0 && strstr(host.last_error, "zygote's cgroups"),
               "not root: no mover, and the log says why (%s)", host.last_error);
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    tap_ok(t.n_pspawn_vars == 6 + mover, "%d PSPAWN_ variables, no PSPAWN_SHIM_ARGV0 (%d)",
           6 + mover, t.n_pspawn_vars);
#else
    tap_ok(t.n_pspawn_vars == 7 + mover, "%d PSPAWN_ variables with PSPAWN_SHIM_ARGV0 (%d)",
           7 + mover, t.n_pspawn_vars);
#endif
    if (mover)
        test_mover();
    test_contain_spank();

    /* Tasks of one step share the token; another step draws its own. */
    struct step three = { .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 8,
                          .local_tasks = 3, .argv = ARGV("app") };
    int rc = run_step(&three, &t3[0], 3, &t3[1]);
    tap_ok(rc == 0 && t3[0].shim && t3[1].shim && t3[2].shim &&
           strcmp(t3[0].token, t3[1].token) == 0 && strcmp(t3[0].token, t3[2].token) == 0 &&
           strcmp(t3[0].user_argv, "app") == 0 && strcmp(t3[2].user_argv, "app") == 0,
           "three tasks of one step: all through the shim, one token");
    tap_ok(strcmp(t3[0].token, t.token) != 0, "another step, another token");

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
    expect_plain("--pspawn, --pty (SLURM_PTY_PORT)",
                 &(struct step){ .plugstack = "shim=" SHIM, .option_given = 1, .stepid = 1,
                                 .local_tasks = 4, .argv = ARGV("bash"),
                                 .env = "SLURM_PTY_PORT=41234" });
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
    test_signal_children();

    tap_done();
    return tap_failed ? 1 : 0;
}
