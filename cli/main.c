/* SPDX-License-Identifier: BSD-3-Clause */
/* pspawn: launch N instances of a program on this machine through a zygote
 * (its command line: args.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pspawn.h"

extern char **environ;

const char *progname = "pspawn";

struct task {
    pid_t pid;
    int status;
    int done;
    int out, err;           /* --label pipes, -1 when closed */
    char *obuf, *ebuf;      /* partial lines */
    size_t olen, elen;
};

static struct cli_options opt = { .n = 1 };

static int sigpipe_fds[2] = { -1, -1 };

static void on_signal(int sig)
{
    int e = errno;
    unsigned char c = (unsigned char)sig;
    if (write(sigpipe_fds[1], &c, 1) < 0) {
        /* pipe full: the loop is already awake */
    }
    errno = e;
}

/* The environment of task RANK: the caller's, --env's, and the task's
 * PSPAWN_RANK, PSPAWN_SIZE and PSPAWN_LOCAL_RANK; with RANK < 0, the
 * zygote's, which has no rank (its constructors and imports run once,
 * for every task). */
static char **task_env(int rank)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + opt.nextra + 4, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    static const char *const ours[] = { "PSPAWN_RANK=", "PSPAWN_SIZE=", "PSPAWN_LOCAL_RANK=" };
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t j = 0; j < 3; j++)
            if (strncmp(environ[i], ours[j], strlen(ours[j])) == 0)
                skip = 1;
        for (int j = 0; j < opt.nextra; j++) {
            size_t l = strcspn(opt.extra_env[j], "=") + 1;
            if (strncmp(environ[i], opt.extra_env[j], l) == 0)
                skip = 1;
        }
        if (!skip)
            env[k++] = environ[i];
    }
    for (int j = 0; j < opt.nextra; j++)
        env[k++] = opt.extra_env[j];
    env[k] = NULL;
    if (rank < 0)
        return env;
    char *v[3];
    if (asprintf(&v[0], "PSPAWN_RANK=%d", rank) < 0 ||
        asprintf(&v[1], "PSPAWN_SIZE=%d", opt.n) < 0 ||
        asprintf(&v[2], "PSPAWN_LOCAL_RANK=%d", rank) < 0)
        return NULL;
    for (int j = 0; j < 3; j++)
        env[k++] = v[j];
    env[k] = NULL;
    return env;
}

static void free_task_env(char **env, int rank)
{
    if (!env)
        return;
    size_t n = 0;
    while (env[n])
        n++;
    for (size_t i = n - 3; rank >= 0 && i < n; i++)
        free(env[i]);
    free(env);
}

static int cpu_for_rank(int rank, const cpu_set_t *allowed, cpu_set_t *set)
{
    CPU_ZERO(set);
    if (opt.bind_mode == 2) {
        CPU_SET(opt.bind_list[rank % opt.nbind], set);
        return 1;
    }
    if (opt.bind_mode == 1) {
        int count = CPU_COUNT(allowed), want = rank % (count ? count : 1), seen = 0;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, allowed) && seen++ == want) {
                CPU_SET(c, set);
                return 1;
            }
    }
    return 0;
}

static void flush_line(int rank, FILE *f, char **buf, size_t *len, int final)
{
    char *p = *buf, *nl;
    size_t left = *len;
    while (left && (nl = memchr(p, '\n', left))) {
        fprintf(f, "%d: %.*s\n", rank, (int)(nl - p), p);
        left -= (size_t)(nl - p) + 1;
        p = nl + 1;
    }
    if (final && left) {
        fprintf(f, "%d: %.*s\n", rank, (int)left, p);
        left = 0;
    }
    memmove(*buf, p, left);
    *len = left;
    fflush(f);
}

static void drain_fd(struct task *t, int rank, int which, int final)
{
    int *fd = which ? &t->err : &t->out;
    char **buf = which ? &t->ebuf : &t->obuf;
    size_t *len = which ? &t->elen : &t->olen;
    FILE *f = which ? stderr : stdout;
    if (*fd < 0)
        return;
    for (;;) {
        char *nb = realloc(*buf, *len + 65536);
        if (!nb)
            break;
        *buf = nb;
        ssize_t r = read(*fd, *buf + *len, 65536);
        if (r > 0) {
            *len += (size_t)r;
            flush_line(rank, f, buf, len, 0);
            if (!final)
                break;
            continue;
        }
        if (r < 0 && (errno == EINTR))
            continue;
        if (r == 0 || (r < 0 && errno != EAGAIN)) {
            flush_line(rank, f, buf, len, 1);
            close(*fd);
            *fd = -1;
        }
        break;
    }
}

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void forward(struct task *tasks, int sig)
{
    for (int i = 0; i < opt.n; i++)
        if (tasks[i].pid > 0 && !tasks[i].done)
            kill(tasks[i].pid, sig);
}

static int reap_all(struct task *tasks, int *running)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < opt.n; i++)
            if (tasks[i].pid == pid && !tasks[i].done) {
                tasks[i].done = 1;
                tasks[i].status = st;
                (*running)--;
                break;
            }
    }
    return 0;
}

/* Each rank's argv, environment and CPUs (--bind) in VT, SETS, ENVS.  0 or
 * ENOMEM. */
static int prepare_tasks(char **argv, const cpu_set_t *allowed, pspawn_task_t *vt,
                         cpu_set_t *sets, char ***envs)
{
    for (int r = 0; r < opt.n; r++) {
        envs[r] = task_env(r);
        if (!envs[r])
            return ENOMEM;
        vt[r].argv = argv;
        vt[r].envp = envs[r];
        if (cpu_for_rank(r, allowed, &sets[r])) {
            vt[r].cpuset = &sets[r];
            vt[r].cpusetsize = sizeof sets[r];
        }
    }
    return 0;
}

/* Ranks 1... in one vector call, in rank 0's process group PGID, with
 * ATTR (stdin from /dev/null).  0 or the first error. */
static int launch_rest(pspawn_context_t *ctx, pspawn_attr_t *attr, pspawn_task_t *vt,
                       struct task *tasks, pid_t pgid)
{
    pspawn_attr_addopen(attr, 0, "/dev/null", O_RDONLY, 0);
    pspawn_attr_setpgroup(attr, pgid);
    int err = pspawn_vector(ctx, vt + 1, (size_t)opt.n - 1, attr, NULL);
    for (int i = 1; i < opt.n; i++) {
        tasks[i].pid = vt[i].pid;
        if (vt[i].error && !err)
            err = vt[i].error;
    }
    return err;
}

/* Rank R alone (rank 0, or every rank with --label or --exec): its own
 * attributes, its --label pipes in *T.  0 (*PID) or an errno. */
static int launch_one(pspawn_context_t *ctx, const char *path, char **argv, char **env,
                      const cpu_set_t *set, int r, pid_t pgid, struct task *t, pid_t *pid)
{
    int err;
    pspawn_attr_t a;
    pspawn_attr_init(&a);
    if (r == 0)
        pspawn_attr_setpgroup(&a, 0);
    else {
        pspawn_attr_setpgroup(&a, pgid);
        pspawn_attr_addopen(&a, 0, "/dev/null", O_RDONLY, 0);
    }
    if (set)
        pspawn_attr_setcpuset(&a, sizeof *set, set);
    int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
    if (opt.label) {
        if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
            err = errno;
            pspawn_attr_destroy(&a);
            return err;
        }
        pspawn_attr_adddup2(&a, po[1], 1);
        pspawn_attr_adddup2(&a, pe[1], 2);
    }
    if (opt.force_exec)
        err = pspawn_exec(pid, path, &a, argv, env);
    else
        err = pspawn_ex(pid, ctx, &a, argv, env);
    pspawn_attr_destroy(&a);
    if (opt.label) {
        close(po[1]);
        close(pe[1]);
        t->out = po[0];
        t->err = pe[0];
        fcntl(po[0], F_SETFL, O_NONBLOCK);
        fcntl(pe[0], F_SETFL, O_NONBLOCK);
    }
    return err;
}

/* Launch every task; returns 0 or an errno (with the tasks launched so
 * far in tasks[].pid). */
static int launch(pspawn_context_t *ctx, const char *path, char **argv, struct task *tasks,
                  pid_t *pgid)
{
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int err = 0;
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    int per_task = opt.label || opt.force_exec;
    pspawn_task_t *vt = calloc((size_t)opt.n, sizeof *vt);
    cpu_set_t *sets = calloc((size_t)opt.n, sizeof *sets);
    char ***envs = calloc((size_t)opt.n, sizeof *envs);
    if (!vt || !sets || !envs)
        err = ENOMEM;
    else
        err = prepare_tasks(argv, &allowed, vt, sets, envs);
    for (int r = 0; r < opt.n && !err; r++) {
        /* Rank 0 first: its pid is the tasks' process group. */
        if (r > 0 && !per_task) {
            err = launch_rest(ctx, &attr, vt, tasks, *pgid);
            break;
        }
        pid_t pid = -1;
        err = launch_one(ctx, path, argv, envs[r], vt[r].cpuset ? &sets[r] : NULL, r, *pgid,
                         &tasks[r], &pid);
        if (err)
            break;
        tasks[r].pid = pid;
        if (r == 0)
            *pgid = pid;
    }
    for (int r = 0; envs && r < opt.n; r++)
        free_task_env(envs[r], r);
    free(envs);
    free(sets);
    free(vt);
    pspawn_attr_destroy(&attr);
    return err;
}

static void free_options(void)
{
    free(opt.extra_env);
    free(opt.options);
    free(opt.bind_list);
}

/* The signals we pass on to the tasks wake the loop through sigpipe_fds,
 * and so does SIGCHLD once the tasks are launched (watch_children): until
 * then a task's exit waits, a zombie, without waking the launch for
 * nothing.  0, or -1 (said). */
static int catch_signals(void)
{
    if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror(progname);
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        /* One we were started with ignored (a shell's background job:
         * SIGINT) stays so, for us and our tasks, as a shell leaves it. */
        struct sigaction old;
        if (sigaction(fwd[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(fwd[i], &sa, NULL);
    }
    /* Not ignored (then the kernel would reap our tasks for us, and they
     * would start with it ignored), not caught yet. */
    signal(SIGCHLD, SIG_DFL);
    return 0;
}

/* From now on a task's exit wakes the loop. */
static void watch_children(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
}

/* The context for PATH (TARGV its command line).  0 or an errno. */
static int create_context(pspawn_context_t *ctx, const char *path, char **targv)
{
    /* The zygote gets the tasks' environment, --env included, so
     * that their loader variables are its own; but no task's rank. */
    char **env0 = task_env(-1);
    int err = env0 ? pspawn_context_create_argv(ctx, path, targv, env0, opt.options) : ENOMEM;
    free_task_env(env0, -1);
    return err;
}

/* What the launch went through, for -v and --pip. */
struct launch_report {
    int used_zygote;
    int pip;
    char reason[600];
    char line[800];     /* -v: the node's line (tally.h) */
};

/* Say what the launch went through (-v, --pip not given), and destroy
 * the context: every task is our child, the zygote has nothing left to
 * do. */
static void close_context(pspawn_context_t *ctx, const char *path, int err,
                          struct launch_report *lr)
{
    lr->used_zygote = !opt.force_exec && pspawn_context_uses_zygote(ctx);
    if (opt.verbose && !opt.force_exec)
        cli_print_zygotes(ctx);
    if (!opt.force_exec && pspawn_context_reason(ctx))
        snprintf(lr->reason, sizeof lr->reason, "%s", pspawn_context_reason(ctx));
    if (opt.verbose && !err)
        cli_tally_line(ctx, opt.n, lr->used_zygote,
                       opt.force_exec ? "--exec" : *lr->reason ? lr->reason : NULL, lr->line,
                       sizeof lr->line);
    const char *not_pip = NULL;
    lr->pip = !opt.force_exec && pspawn_context_mode(ctx, &not_pip) == PSPAWN_MODE_PIP;
    /* Asked for, not given: say so (the tasks ran all the same). */
    if (opt.pip && !lr->pip && !err)
        fprintf(stderr, "%s: --pip: the tasks of %s are not PiP tasks: %s\n", progname, path,
                not_pip ? not_pip : *lr->reason ? lr->reason : "they were exec'd");
    pspawn_context_destroy(ctx);
}

/* Read what the signal pipe holds: pass the signals on, reap. */
static void take_signals(struct task *tasks, int *running)
{
    unsigned char sigs[64];
    ssize_t k;
    while ((k = read(sigpipe_fds[0], sigs, sizeof sigs)) > 0)
        for (ssize_t i = 0; i < k; i++)
            if (sigs[i] != SIGCHLD)
                forward(tasks, sigs[i]);
    reap_all(tasks, running);
}

/* Until every task has ended and its --label pipes are drained: pass
 * signals on, and with --timeout, terminate the tasks (SIGTERM, SIGKILL
 * 5 s later) once it is over (counted from T1).  1 if it was. */
static int supervise(struct task *tasks, struct pollfd *pfd, int running, double t1)
{
    double deadline = opt.timeout > 0 ? t1 + opt.timeout : 0, kill_at = 0;
    int timed_out = 0;
    reap_all(tasks, &running);
    for (;;) {
        int open_pipes = 0, np = 0;
        pfd[np++] = (struct pollfd){ sigpipe_fds[0], POLLIN, 0 };
        for (int i = 0; i < opt.n; i++) {
            if (tasks[i].out >= 0)
                pfd[np++] = (struct pollfd){ tasks[i].out, POLLIN, 0 }, open_pipes++;
            if (tasks[i].err >= 0)
                pfd[np++] = (struct pollfd){ tasks[i].err, POLLIN, 0 }, open_pipes++;
        }
        if (running == 0 && open_pipes == 0)
            break;
        int wait_ms = -1;
        double now = now_s();
        if (deadline && !timed_out)
            wait_ms = (int)((deadline - now) * 1e3) + 1;
        else if (kill_at)
            wait_ms = (int)((kill_at - now) * 1e3) + 1;
        if (wait_ms < 0 && (deadline || kill_at))
            wait_ms = 0;
        int r = poll(pfd, (nfds_t)np, wait_ms);
        now = now_s();
        if (deadline && !timed_out && now >= deadline) {
            timed_out = 1;
            fprintf(stderr, "%s: timeout after %g s: terminating %d tasks\n", progname,
                    opt.timeout, running);
            forward(tasks, SIGTERM);
            kill_at = now + 5;
        } else if (kill_at && now >= kill_at) {
            forward(tasks, SIGKILL);
            kill_at = 0;
        }
        if (r <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            take_signals(tasks, &running);
        for (int k = 1; k < np; k++)
            if (pfd[k].revents)
                for (int i = 0; i < opt.n; i++) {
                    if (tasks[i].out == pfd[k].fd)
                        drain_fd(&tasks[i], i, 0, 0);
                    else if (tasks[i].err == pfd[k].fd)
                        drain_fd(&tasks[i], i, 1, 0);
                }
    }
    return timed_out;
}

/* The highest exit code of the tasks that ended (128 + N: signal N); their
 * buffers freed. */
static int worst_exit_code(struct task *tasks)
{
    int code = 0;
    for (int i = 0; i < opt.n; i++) {
        if (tasks[i].pid > 0 && tasks[i].done) {
            int c2 = exit_code_of(tasks[i].status);
            if (c2 > code)
                code = c2;
        }
        free(tasks[i].obuf);
        free(tasks[i].ebuf);
    }
    return code;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--intercept"))
        return cli_intercept(argc, argv);
    int first = cli_parse(argc, argv, &opt);
    if (first <= 0)
        return -first;
    char **targv = argv + first;
    char path[PATH_MAX];
    int err = pspawn_resolve(targv[0], NULL, path, sizeof path);
    if (err) {
        fprintf(stderr, "%s: %s: %s\n", progname, targv[0], strerror(err));
        free_options();
        return err == ENOENT ? 127 : 126;
    }
    /* Enough fds for two pipes per task with --label. */
    struct rlimit rl;
    if (opt.label && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (catch_signals() < 0)
        return 1;
    /* Both before any task runs: once they do, pspawn must supervise. */
    struct task *tasks = calloc((size_t)opt.n, sizeof *tasks);
    struct pollfd *pfd = calloc(2 * (size_t)opt.n + 1, sizeof *pfd);
    if (!tasks || !pfd) {
        perror(progname);
        free(tasks);
        free(pfd);
        return 1;
    }
    for (int i = 0; i < opt.n; i++)
        tasks[i].pid = -1, tasks[i].out = tasks[i].err = -1;

    double t0 = now_s();
    pspawn_context_t ctx = { NULL };
    if (!opt.force_exec && (err = create_context(&ctx, path, targv))) {
        fprintf(stderr, "%s: %s: %s\n", progname, targv[0], strerror(err));
        free(tasks);
        free(pfd);
        free_options();
        return err == ENOENT ? 127 : 126;
    }
    pid_t pgid = 0;
    err = launch(&ctx, path, targv, tasks, &pgid);
    struct launch_report lr = { 0, 0, "", "" };
    close_context(&ctx, path, err, &lr);
    double t1 = now_s();

    int running = 0;
    for (int i = 0; i < opt.n; i++)
        if (tasks[i].pid > 0)
            running++;
    if (err) {
        fprintf(stderr, "%s: %s: %s\n", progname, targv[0], strerror(err));
        forward(tasks, SIGKILL);
    } else if (opt.verbose) {
        fprintf(stderr, "%s: launched %d tasks of %s in %.3f ms via %s%s%s\n", progname, opt.n,
                path, (t1 - t0) * 1e3, lr.pip ? "PiP" : lr.used_zygote ? "zygote" : "exec",
                *lr.reason ? ": " : "", lr.reason);
        fprintf(stderr, "%s\n", lr.line);
    }

    /* A terminal stays with the tasks, as it would with a shell's job. */
    int gave_tty = 0;
    if (!err && pgid > 0 && isatty(0) && tcgetpgrp(0) == getpgrp()) {
        signal(SIGTTOU, SIG_IGN);
        gave_tty = tcsetpgrp(0, pgid) == 0;
    }
    watch_children();
    int timed_out = supervise(tasks, pfd, running, t1);
    free(pfd);
    if (gave_tty)
        tcsetpgrp(0, getpgrp());
    int code = worst_exit_code(tasks);
    free(tasks);
    free_options();
    if (err)
        return err == ENOENT ? 127 : 126;
    if (timed_out)
        return 124;
    return code;
}
