/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zygotes as processes: starting one (exec, then its ready message) and
 * stopping them all; their loss is zygote-end.c's.  The context
 * (context.c) and its zygote handle are made of these; nothing here calls
 * back into the context or the launch engine.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <unistd.h>

#include "internal.h"
#include "pidfd.h"

/* Where the program's fd goes in the zygote: below its channels (and the
 * cgroup fd an exec'd sub-zygote gets at 1021), far from the numbers a
 * constructor would get. */
static int exec_fd_number(const struct zygote_exec *x)
{
    struct rlimit rl;
    int at = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024)
        at = (int)rl.rlim_cur;
    for (at -= 4; at > 2; at--) {
        int taken = 0;
        for (int i = 0; i < x->nfds; i++)
            taken |= x->at[i] == at;
        if (!taken)
            return at;
    }
    return -1;
}

/* X's program, inspected on its own fds (*EXE_FD: the ELF the kernel
 * loads): 0, its errno, or ESTALE where it is not EXPECT (if not NULL)
 * or can never have a zygote. */
static int open_expected(const struct zygote_exec *x, const struct program *expect,
                         struct program *prog, int *exe_fd)
{
    int err = pspawn_program_open(prog, x->path, exe_fd);
    if (err)
        return err;
    if (*exe_fd < 0 || prog->fallback || (expect && !pspawn_program_same(expect, prog))) {
        if (*exe_fd >= 0)
            close(*exe_fd);
        pspawn_program_free(prog);
        return ESTALE;
    }
    return 0;
}

/* What the kernel is given to exec the zygote with: its fd's /proc link
 * (AT >= 0), else its path. */
struct exec_how {
    int at;                         /* the program's fd in the zygote, or -1 */
    char exec_var[PATH_MAX + 64];   /* PSPAWN_ENV_EXEC=AT:PATH, or "" */
    char link[64];
    const char *path;
    char *const *argv;              /* NULL: { PATH } */
    char *script_argv[2 * PSPAWN_MAX_INTERP + 2];
};

static void exec_how(const struct zygote_exec *x, const struct program *prog,
                     struct exec_how *h)
{
    h->at = exec_fd_number(x);
    h->path = x->path;
    h->argv = x->argv;
    if (h->at >= 0 && access("/proc/self/fd", X_OK) == 0) {
        snprintf(h->link, sizeof h->link, "/proc/self/fd/%d", h->at);
        snprintf(h->exec_var, sizeof h->exec_var, PSPAWN_ENV_EXEC "=%d:%s", h->at, x->path);
        h->path = h->link;
        if (prog->ninterp) {
            int k = 0;
            for (int i = 0; i < prog->ninterp; i++)
                h->script_argv[k++] = prog->interp_argv[i];
            h->script_argv[k++] = (char *)x->path;
            h->script_argv[k] = NULL;
            h->argv = h->script_argv;
        }
    } else {
        /* No /proc: by path, as the kernel finds it now. */
        h->at = -1;
        h->exec_var[0] = 0;
    }
}

/* The zygote's environment: X's, with EXEC_VAR first.  NULL: no memory. */
static char **exec_environ(const struct zygote_exec *x, const char *exec_var)
{
    size_t nextra = 0;
    while (x->extra_env && x->extra_env[nextra])
        nextra++;
    const char **extra = calloc(nextra + 2, sizeof *extra);
    char **env = NULL;
    if (extra) {
        extra[0] = exec_var;
        for (size_t i = 0; i < nextra; i++)
            extra[i + 1] = x->extra_env[i];
        env = pspawn_zygote_environ(extra, x->base_env, x->record, x->pip);
        free(extra);
    }
    return env;
}

/* The zygote's fds as ACTIONS on FDS (returns how many fds, *NACT
 * actions): stdio (NULL_FD, if >= 0, on all three), X's fds at their
 * numbers, the program's EXE_FD at AT (if >= 0). */
static int exec_fds(const struct zygote_exec *x, int at, int exe_fd, int null_fd,
                    struct child_action *actions, int *fds, int *nact)
{
    int nfds = 0;
    for (int fd = 0; fd <= 2; fd++)
        if (null_fd >= 0 || fcntl(fd, F_GETFD) >= 0) {
            fds[nfds] = null_fd >= 0 ? null_fd : fd;
            actions[(*nact)++] = (struct child_action){ FA_DUP2, fd, nfds++, 0, 0, NULL };
        }
    for (int i = 0; i < x->nfds && i < ZYGOTE_EXEC_FDS; i++) {
        fds[nfds] = x->fds[i];
        actions[(*nact)++] = (struct child_action){ FA_DUP2, x->at[i], nfds++, 0, 0, NULL };
    }
    if (at >= 0) {
        fds[nfds] = exe_fd;
        actions[(*nact)++] = (struct child_action){ FA_DUP2, at, nfds++, 0, 0, NULL };
    }
    return nfds;
}

/* The zygote is exec'd from the fd its program was inspected on (a script's
 * interpreter's, with the words the kernel would have put before the
 * script's path): what was checked (not set-user-ID, dynamic...) is what
 * runs, whatever happens to the path meanwhile.  The fd goes in at a fixed
 * number and the kernel is given its /proc/self/fd link (a #! script
 * exec'd from a close-on-exec fd could not open itself; an interpreter
 * exec'd from it needs no such thing); the zygote learns the path it
 * stands for from PSPAWN_ENV_EXEC.  EXPECT, if not NULL, is the program as
 * inspected before: another one now is ESTALE. */
static int zygote_exec(const struct zygote_exec *x, const struct program *expect, pid_t *pid)
{
    struct program prog;
    int exe_fd = -1;
    int err = open_expected(x, expect, &prog, &exe_fd);
    if (err)
        return err;
    struct exec_how how;
    exec_how(x, &prog, &how);
    char **env = exec_environ(x, how.exec_var);
    if (!env) {
        close(exe_fd);
        pspawn_program_free(&prog);
        return ENOMEM;
    }
    /* Stdio: the caller's 0-2 where open, or /dev/null (a stand-in's
     * zygote must not hold its task's pipes open). */
    int null = -1;
    if (x->null_stdio && (null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
        int e = errno;
        pspawn_strv_free(env);
        close(exe_fd);
        pspawn_program_free(&prog);
        return e;
    }
    struct child_action actions[4 + ZYGOTE_EXEC_FDS];
    int fds[4 + ZYGOTE_EXEC_FDS], nact = 0;
    int nfds = exec_fds(x, how.at, exe_fd, null, actions, fds, &nact);
    /* Every signal starts at its default and none is blocked, so that at
     * park time a non-default disposition is one a constructor set. */
    struct child_setup s = {
        .actions = actions, .nactions = nact, .fds = fds, .nfds = nfds,
        .sig_default = ~UINT64_C(0),
        .cpuset = x->cpuset,
    };
    char *path_only[] = { (char *)x->path, NULL };
    err = pspawn_exec_setup(pid, how.path, &s, 0, how.argv ? how.argv : path_only, env);
    pspawn_strv_free(env);
    if (null >= 0)
        close(null);
    close(exe_fd);
    pspawn_program_free(&prog);
    return err;
}

int pspawn_zygote_exec(const struct zygote_exec *x, pid_t *pid)
{
    return zygote_exec(x, NULL, pid);
}

int pspawn_zygote_await(int sock, pid_t pid, int timeout_ms, struct zygote_ready *r)
{
    struct pollfd pfd = { sock, POLLIN, 0 };
    int pr;
    while ((pr = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (pr == 0)
        return ETIMEDOUT;
    ssize_t got = pr > 0 ? recv(sock, r, sizeof *r, 0) : -1;
    if (got != (ssize_t)sizeof *r || r->magic != PSPAWN_MAGIC)
        return EPIPE;
    /* Only a program the zygote's constructors started could send another
     * pid, with the variables it inherited (the proxy stops that). */
    if (r->pid != (int32_t)pid)
        return EPROTO;
    return 0;
}

/* The fds of the root's channels in the zygote: just below the fd limit,
 * far from the numbers a constructor would get. */
static void root_channel_fds(int *zsock_fd, int *zreport_fd)
{
    struct rlimit rl;
    int top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024)
        top = (int)rl.rlim_cur;
    *zsock_fd = top - 1;
    *zreport_fd = top - 2;
}

/* The root's request socket pair SV and report pipe REP.  0 or an errno. */
static int open_root_channels(int sv[2], int rep[2])
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return errno;
    if (pipe2(rep, O_CLOEXEC) < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return e;
    }
    /* Our end never blocks: the launch engine reads what is there. */
    fcntl(rep[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* Exec Z's root with SV[1] and REP[1] at ZSOCK_FD and ZREPORT_FD, pinned
 * to CORE (if >= 0) while it loads.  0 (*PID) or zygote_exec's errno. */
static int exec_root(struct pspawn_zygote *z, int core, char *const envp[], const int sv[2],
                     const int rep[2], int zsock_fd, int zreport_fd, pid_t *pid)
{
    char sock_var[64], report_var[64];
    snprintf(sock_var, sizeof sock_var, PSPAWN_ENV_SOCK "=%d", zsock_fd);
    snprintf(report_var, sizeof report_var, PSPAWN_ENV_REPORT "=%d", zreport_fd);
    char preload_var[PATH_MAX + 64] = PSPAWN_ENV_PRELOAD_LIBS "=";
    strncat(preload_var, z->opts.preload, PATH_MAX);
    const char *const extra[] = { sock_var, report_var, z->opts.preload[0] ? preload_var : "",
                                  z->opts.pip ? PSPAWN_ENV_PIP "=1" : "",
                                  z->py_start.first_var, z->py_start.modules_var, NULL };
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    memset(cpuset, 0, sizeof cpuset);
    if (core >= 0 && core < PSPAWN_CPUSET_BYTES * 8)
        cpuset[core / 8] |= (unsigned char)(1u << (core % 8));
    char *first_only[2];
    struct zygote_exec x = {
        .path = z->prog.path, .argv = pspawn_python_exec_argv(&z->prog, &z->py_start, first_only),
        .base_env = envp, .extra_env = extra, .record = !strcmp(z->opts.preload, "auto"),
        .pip = z->opts.pip,
        .fds = { sv[1], rep[1] }, .at = { zsock_fd, zreport_fd }, .nfds = 2,
        .cpuset = core >= 0 ? cpuset : NULL,
    };
    return zygote_exec(&x, &z->prog, pid);
}

/* The root PID, exec'd, on SOCK with its report pipe's read end REPORT_R:
 * starting, ours to watch. */
static void root_started(struct pspawn_zygote *z, pid_t pid, int sock, int report_r)
{
    struct zygote_server *root = &z->servers[0];
    root->pid = pid;
    root->sock = sock;
    root->state = SERVER_STARTING;
    /* It leads a group of its own once parked (park.c), out of reach of
     * the terminal's signals and of kill(0, ...): each task joins its
     * caller's.  Our session. */
    z->pgid = pid;
    z->sid = getsid(0);
    z->report_r = report_r;
    root->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (root->pidfd >= 0)
        fcntl(root->pidfd, F_SETFD, FD_CLOEXEC);
}

/* The root said nothing in time (ETIMEDOUT) or died (EPIPE) while it
 * started: reap it, and exec from now on. */
static void root_silent(struct pspawn_zygote *z, int err)
{
    struct zygote_server *root = &z->servers[0];
    int st = 0;
    if (err == ETIMEDOUT)
        pspawn_signal_server(root, SIGKILL);
    pspawn_reap_server(root, &st);
    root->pid = -1;
    pspawn_zygote_lost(z, 0);
    if (err == ETIMEDOUT)
        pspawn_fallback(z, 1, "zygote stopped answering during startup (%d ms)",
                        pspawn_start_timeout_ms(z));
    else if (WIFSIGNALED(st))
        pspawn_fallback(z, 1, "zygote died during startup (signal %d)", WTERMSIG(st));
    else
        pspawn_fallback(z, 1, "zygote died during startup (exit status %d)",
                        WEXITSTATUS(st));
}

/* The root PID parked (READY): it serves, as what it says it is. */
static void root_parked(struct pspawn_zygote *z, pid_t pid, const struct zygote_ready *ready)
{
    z->servers[0].state = SERVER_READY;
    z->python = (ready->flags & READY_PYTHON) != 0;
    z->pip = (ready->flags & READY_PIP) != 0;
    z->pip_refusal = (int)READY_PIP_REFUSAL(ready->flags);
    z->objects = ready->objects > 0 ? ready->objects : 0;
    pspawn_debug(z, "zygote %d parked%s%s, %d objects loaded", (int)pid,
                 z->python ? " inside Python" : "", z->pip ? ": its tasks are PiP tasks" : "",
                 z->objects);
    if (z->opts.pip && !z->pip)
        pspawn_debug(z, "mode=pip refused: %s: its tasks are forked",
                     pspawn_pip_refusal_text((unsigned)z->pip_refusal));
}

/* The root zygote: exec'd once, it parks and serves group 0. */
static int start_root(struct pspawn_zygote *z, int core, char *const envp[])
{
    int zsock_fd, zreport_fd, sv[2], rep[2];
    root_channel_fds(&zsock_fd, &zreport_fd);
    int err = open_root_channels(sv, rep);
    if (err)
        return err;
    pid_t pid;
    err = exec_root(z, core, envp, sv, rep, zsock_fd, zreport_fd, &pid);
    close(sv[1]);
    close(rep[1]);
    if (err) {
        close(sv[0]);
        close(rep[0]);
        if (err == ENOMEM)
            return err;
        if (err == ESTALE)
            pspawn_fallback(z, 1, "the program changed on disk since it was inspected");
        else
            pspawn_fallback(z, 1, "could not start the zygote: %s", strerror(err));
        return 0;
    }
    root_started(z, pid, sv[0], rep[0]);

    struct zygote_ready ready;
    err = pspawn_zygote_await(sv[0], pid, pspawn_start_timeout_ms(z), &ready);
    if (err == ETIMEDOUT || err == EPIPE) {
        root_silent(z, err);
        return 0;
    }
    if (err == EPROTO) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "the zygote's ready message came from pid %d, not from the "
                        "zygote (%d)", (int)ready.pid, (int)pid);
        return 0;
    }
    if (ready.status != ZYGOTE_PARKED) {
        char why[256];
        pspawn_zygote_refusal(why, sizeof why, (int)ready.status, ready.detail);
        pspawn_zygote_lost(z, 0);
        pspawn_fallback(z, 1, "%s", why);
        return 0;
    }
    root_parked(z, pid, &ready);
    return 0;
}

int pspawn_zygote_start(struct pspawn_zygote *z, int core, char *const envp[])
{
    const char *proxy = pspawn_proxy_path();
    if (access(proxy, R_OK) < 0) {
        pspawn_fallback(z, 1, "proxy library %s not found (%s)", proxy, strerror(errno));
        return 0;
    }
    /* The groups first: there is a server for each. */
    int err = pspawn_fanout_plan(z);
    if (!err)
        err = start_root(z, core, envp);
    if (!err && !z->fallback && z->topo.ngroups > 1)
        err = pspawn_fanout_start(z);
    return err;
}

void pspawn_zygote_stop(struct pspawn_zygote *z)
{
    /* A zygote holds no task and no state worth a clean exit: its
     * destructors must not run, since main never did. */
    pspawn_zygote_lost(z, 1);
    if (z->report_r >= 0)
        close(z->report_r);
    z->report_r = -1;
    pspawn_fanout_cleanup(z);
}
