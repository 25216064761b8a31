/* Contexts: starting, watching and stopping a program's zygote. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef PSPAWN_PROXY_PATH
#define PSPAWN_PROXY_PATH "libpspawn-proxy.so"
#endif

extern char **environ;

void pspawn_debug(const struct pspawn_zygote *z, const char *fmt, ...)
{
    if (!z->debug)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "libpspawn: %s: %s\n", z->prog.path ? z->prog.path : "?", buf);
}

void pspawn_fallback(struct pspawn_zygote *z, int for_good, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->reason, sizeof z->reason, fmt, ap);
    va_end(ap);
    z->have_reason = 1;
    if (for_good)
        z->fallback = 1;
    pspawn_debug(z, "exec fallback: %s", z->reason);
}

/* Signal and reap the zygote through its pidfd where there is one: a
 * launcher that reaps every child itself (prted's waitpid(-1)) may have
 * reaped it already, and its pid may since belong to another process. */
int pspawn_signal_zygote(const struct pspawn_zygote *z, int sig)
{
    int r = 0;
    if (z->pidfd >= 0)
        r = (int)syscall(SYS_pidfd_send_signal, z->pidfd, sig, NULL, 0);
    else if (z->zpid > 0)
        r = kill(z->zpid, sig);
    return r < 0 ? errno : 0;
}

static int reap_zygote(struct pspawn_zygote *z, int *status)
{
    if (z->pidfd >= 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int r;
        while ((r = waitid((idtype_t)P_PIDFD, (id_t)z->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
            ;
        if (r < 0)
            return 0;   /* reaped by someone else */
        *status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
        return 1;
    }
    pid_t r;
    while ((r = waitpid(z->zpid, status, 0)) < 0 && errno == EINTR)
        ;
    return r == z->zpid;
}

static void close_channels(struct pspawn_zygote *z)
{
    if (z->sock >= 0)
        close(z->sock);
    if (z->report_r >= 0)
        close(z->report_r);
    if (z->pidfd >= 0)
        close(z->pidfd);
    z->sock = z->report_r = z->pidfd = -1;
}

/* The zygote is gone or useless: kill it if asked, reap it, and use exec
 * from now on. */
void pspawn_zygote_lost(struct pspawn_zygote *z, int kill_it)
{
    /* Hang up first: a zygote exits when its launcher does, which is all
     * that stops one the launcher may no longer signal (it gave up the
     * privileges the zygote kept).  One that does not exit in time (a
     * stopped one) is left unreaped rather than waited for forever. */
    if (z->sock >= 0)
        close(z->sock);
    if (z->report_r >= 0)
        close(z->report_r);
    z->sock = z->report_r = -1;
    if (z->zpid > 0) {
        int st, reap = 1;
        if (kill_it && pspawn_signal_zygote(z, SIGKILL) != 0 && z->pidfd >= 0) {
            struct pollfd p = { z->pidfd, POLLIN, 0 };
            reap = poll(&p, 1, z->timeout_ms) == 1;
        }
        if (reap)
            reap_zygote(z, &st);
        z->zpid = -1;
    }
    close_channels(z);
    z->fallback = 1;
}

const char *pspawn_proxy_path(void)
{
    const char *p = getenv("PSPAWN_PROXY");
    return p && *p ? p : PSPAWN_PROXY_PATH;
}

int pspawn_loader_var(const char *kv)
{
    if (strncmp(kv, "LD_", 3) == 0)
        return strncmp(kv, "LD_BIND_NOW=", 12) != 0;   /* the zygote binds anyway */
    return strncmp(kv, "GLIBC_TUNABLES=", 15) == 0 || strncmp(kv, "MALLOC_", 7) == 0;
}

/* The loader variables of ENV, copied, NULL-terminated. */
static char **loader_env_of(char *const env[])
{
    size_t n = 0, k = 0;
    for (size_t i = 0; env && env[i]; i++)
        n += pspawn_loader_var(env[i]) != 0;
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && env && env[i]; i++)
        if (pspawn_loader_var(env[i]) && !(v[k++] = strdup(env[i]))) {
            pspawn_free_environ(v);
            return NULL;
        }
    return v;
}

const char *pspawn_loader_env_differs(const struct pspawn_zygote *z, char *const envp[],
                                      size_t *namelen)
{
    size_t mine = 0, have = 0;
    for (char **l = z->loader_env; l && *l; l++)
        mine++;
    for (size_t i = 0; envp && envp[i]; i++) {
        if (!pspawn_loader_var(envp[i]))
            continue;
        have++;
        int found = 0;
        for (char **l = z->loader_env; l && *l && !found; l++)
            found = strcmp(*l, envp[i]) == 0;
        if (!found) {
            *namelen = strcspn(envp[i], "=");
            return envp[i];
        }
    }
    if (have == mine)
        return NULL;
    /* One of the zygote's is missing from the task's. */
    for (char **l = z->loader_env; l && *l; l++) {
        size_t len = strcspn(*l, "=") + 1, i;
        for (i = 0; envp && envp[i] && strncmp(envp[i], *l, len) != 0; i++)
            ;
        if (!envp || !envp[i]) {
            *namelen = len - 1;
            return *l;
        }
    }
    *namelen = 0;
    return "";
}

/* The zygote's environment: the caller's, with the proxy appended to its
 * LD_PRELOAD, lazy binding done at load, and the user's values of both
 * kept so the proxy can put them back before main. */
char **pspawn_zygote_environ(const char *const extra[], char *const base[])
{
    char *const *src = base ? base : environ;
    size_t n = 0, nextra = 0;
    while (src && src[n])
        n++;
    while (extra && extra[nextra])
        nextra++;
    char **env = calloc(n + nextra + 8, sizeof *env);
    if (!env)
        return NULL;
    const char *user_preload = NULL, *user_bindnow = NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(src[i], "LD_PRELOAD=", 11) == 0)
            user_preload = src[i] + 11;
        else if (strncmp(src[i], "LD_BIND_NOW=", 12) == 0)
            user_bindnow = src[i] + 12;
        else if (strncmp(src[i], "PSPAWN_ZYGOTE_", 14) != 0 &&
                 strncmp(src[i], PSPAWN_ENV_FLOOR "=", sizeof PSPAWN_ENV_FLOOR) != 0)
            env[k++] = strdup(src[i]);
    }
    const char *proxy = pspawn_proxy_path();
    if (user_preload && *user_preload)
        asprintf(&env[k++], "LD_PRELOAD=%s %s", user_preload, proxy);
    else
        asprintf(&env[k++], "LD_PRELOAD=%s", proxy);
    asprintf(&env[k++], "LD_BIND_NOW=1");
    if (user_preload)
        asprintf(&env[k++], PSPAWN_ENV_PRELOAD "=%s", user_preload);
    if (user_bindnow)
        asprintf(&env[k++], PSPAWN_ENV_BINDNOW "=%s", user_bindnow);
    asprintf(&env[k++], PSPAWN_ENV_PARENT "=%d", (int)getpid());
    struct pspawn_base start;
    char text[RLIM_NLIMITS * 44 + 64];
    pspawn_base_get(&start);
    if (pspawn_base_format(&start, text, sizeof text) == 0)
        asprintf(&env[k++], PSPAWN_ENV_BASE "=%s", text);
    for (size_t i = 0; i < nextra; i++)
        env[k++] = strdup(extra[i]);
    env[k] = NULL;
    for (size_t i = 0; i < k; i++)
        if (!env[i]) {
            for (size_t j = 0; j < k; j++)
                free(env[j]);
            free(env);
            return NULL;
        }
    return env;
}

void pspawn_free_environ(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

static int start_timeout_ms(const struct pspawn_zygote *z)
{
    /* Loading a program with a thousand libraries from a slow file system
     * can take minutes; only then is a silent zygote a hung one. */
    int t = 4 * z->timeout_ms;
    return t < 120000 ? 120000 : t;
}

int pspawn_creds_get(struct pspawn_creds *c)
{
    memset(c, 0, sizeof *c);
    if (getresuid(&c->uid[0], &c->uid[1], &c->uid[2]) < 0 ||
        getresgid(&c->gid[0], &c->gid[1], &c->gid[2]) < 0)
        return errno;
    gid_t small[64], *g = small;
    int n = getgroups(0, NULL);
    if (n > (int)(sizeof small / sizeof small[0]) && !(g = malloc((size_t)n * sizeof *g)))
        return ENOMEM;
    n = n < 0 ? -1 : getgroups(n, g);
    int err = n < 0 ? errno : 0;
    uint64_t h = UINT64_C(14695981039346656037);    /* FNV-1a */
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)g[i];
        h *= UINT64_C(1099511628211);
    }
    if (g != small)
        free(g);
    if (err)
        return err;
    c->groups = h;
    c->ngroups = (uint32_t)n;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &hdr, d) == 0)
        for (int i = 0; i < 2; i++) {
            c->cap[3 * i] = d[i].effective;
            c->cap[3 * i + 1] = d[i].permitted;
            c->cap[3 * i + 2] = d[i].inheritable;
        }
    c->securebits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    /* Exec keeps both sets, and builds the task's capabilities from them
     * (root's tasks get the bounding set).  Each is one prctl per
     * capability, so read only where capget's sets say it could differ:
     * dropping a bounding capability needs CAP_SETPCAP in the permitted
     * set, and the ambient set is always within permitted and inheritable,
     * so outside those the sets cannot change without capget's changing. */
    uint64_t perm = (uint64_t)c->cap[1] | (uint64_t)c->cap[4] << 32;
    uint64_t inh = (uint64_t)c->cap[2] | (uint64_t)c->cap[5] << 32;
    if (perm & (UINT64_C(1) << CAP_SETPCAP))
        for (int cap = 0; cap < 64; cap++) {
            int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
            if (r < 0)
                break;      /* EINVAL: past the kernel's last capability */
            if (r)
                c->bounding |= UINT64_C(1) << cap;
        }
    for (int cap = 0; cap < 64 && (perm & inh) >> cap; cap++)
        if ((perm & inh) >> cap & 1 &&
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
            c->ambient |= UINT64_C(1) << cap;
    return 0;
}

const char *pspawn_creds_differ(const struct pspawn_creds *a, const struct pspawn_creds *b)
{
    if (memcmp(a->uid, b->uid, sizeof a->uid))
        return "user IDs";
    if (memcmp(a->gid, b->gid, sizeof a->gid))
        return "group IDs";
    if (a->groups != b->groups || a->ngroups != b->ngroups)
        return "supplementary groups";
    if (memcmp(a->cap, b->cap, sizeof a->cap))
        return "capabilities";
    if (a->securebits != b->securebits)
        return "securebits";
    if (a->bounding != b->bounding)
        return "bounding capability set";
    if (a->ambient != b->ambient)
        return "ambient capabilities";
    return NULL;
}

void pspawn_zygote_refusal(char *buf, size_t size, int status, int detail)
{
    switch (status) {
    case ZYGOTE_THREADED:
        snprintf(buf, size, "zygote has %d threads at main (a constructor started a thread; "
                 "fork would copy only one)", detail);
        break;
    case ZYGOTE_POSIX_TIMERS:
        snprintf(buf, size, "zygote has POSIX timers at main (%d: a constructor called "
                 "timer_create; fork keeps none)", detail);
        break;
    case ZYGOTE_NO_LIBC_START:
        snprintf(buf, size, "program does not start through __libc_start_main "
                 "(not a glibc program): no place to park it");
        break;
    case ZYGOTE_LISTEN_FAILED:
        snprintf(buf, size, "zygote could not listen for the step's tasks: %s", strerror(detail));
        break;
    default:
        snprintf(buf, size, "zygote gave no answer it could be started with (status %d)", status);
    }
}

static int start_zygote(struct pspawn_zygote *z, int core, char *const envp[])
{
    const char *proxy = pspawn_proxy_path();
    if (access(proxy, R_OK) < 0) {
        pspawn_fallback(z, 1, "proxy library %s not found (%s)", proxy, strerror(errno));
        return 0;
    }
    /* The zygote's channels sit just below the fd limit, far from the
     * numbers a constructor would get. */
    struct rlimit rl;
    int top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024)
        top = (int)rl.rlim_cur;
    int zsock_fd = top - 1, zreport_fd = top - 2;

    int sv[2], rep[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return errno;
    if (pipe2(rep, O_CLOEXEC) < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return e;
    }
    char sock_var[64], report_var[64];
    snprintf(sock_var, sizeof sock_var, PSPAWN_ENV_SOCK "=%d", zsock_fd);
    snprintf(report_var, sizeof report_var, PSPAWN_ENV_REPORT "=%d", zreport_fd);
    const char *const extra[] = { sock_var, report_var, NULL };
    char **env = pspawn_zygote_environ(extra, envp);
    if (!env) {
        close(sv[0]); close(sv[1]); close(rep[0]); close(rep[1]);
        return ENOMEM;
    }

    struct child_action actions[5];
    int fds[5], nfds = 0, nact = 0;
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) >= 0) {
            fds[nfds] = fd;
            actions[nact++] = (struct child_action){ FA_DUP2, fd, nfds++, 0, 0, NULL };
        }
    fds[nfds] = sv[1];
    actions[nact++] = (struct child_action){ FA_DUP2, zsock_fd, nfds++, 0, 0, NULL };
    fds[nfds] = rep[1];
    actions[nact++] = (struct child_action){ FA_DUP2, zreport_fd, nfds++, 0, 0, NULL };
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    memset(cpuset, 0, sizeof cpuset);
    if (core >= 0 && core < PSPAWN_CPUSET_BYTES * 8)
        cpuset[core / 8] |= (unsigned char)(1u << (core % 8));
    /* Every signal starts at its default in the zygote, so that at park
     * time a non-default disposition is one a constructor set. */
    struct child_setup s = {
        .actions = actions, .nactions = nact, .fds = fds, .nfds = nfds,
        .sig_default = ~UINT64_C(0),
        .cpuset = core >= 0 ? cpuset : NULL,
    };
    char *argv[] = { z->prog.path, NULL };
    pid_t pid;
    int err = pspawn_exec_setup(&pid, z->prog.path, &s, 0, argv, env);
    pspawn_free_environ(env);
    close(sv[1]);
    close(rep[1]);
    if (err) {
        close(sv[0]);
        close(rep[0]);
        pspawn_fallback(z, 1, "could not start the zygote: %s", strerror(err));
        return 0;
    }
    z->zpid = pid;
    z->pgid = getpgrp();
    z->sid = getsid(0);
    z->sock = sv[0];
    z->report_r = rep[0];
    z->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (z->pidfd >= 0)
        fcntl(z->pidfd, F_SETFD, FD_CLOEXEC);

    struct zygote_ready ready;
    struct pollfd pfd = { z->sock, POLLIN, 0 };
    int pr;
    while ((pr = poll(&pfd, 1, start_timeout_ms(z))) < 0 && errno == EINTR)
        ;
    ssize_t got = pr > 0 ? recv(z->sock, &ready, sizeof ready, 0) : -1;
    if (got != (ssize_t)sizeof ready || ready.magic != PSPAWN_MAGIC) {
        int st = 0;
        if (pr == 0)
            pspawn_signal_zygote(z, SIGKILL);
        reap_zygote(z, &st);
        z->zpid = -1;
        close_channels(z);
        if (pr == 0)
            pspawn_fallback(z, 1, "zygote stopped answering during startup (%d ms)",
                            start_timeout_ms(z));
        else if (WIFSIGNALED(st))
            pspawn_fallback(z, 1, "zygote died during startup (signal %d)", WTERMSIG(st));
        else
            pspawn_fallback(z, 1, "zygote died during startup (exit status %d)",
                            WEXITSTATUS(st));
        return 0;
    }
    if (ready.pid != (int32_t)pid) {
        /* Only a program the zygote's constructors started could send
         * it, with the variables it inherited (the proxy stops that). */
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "the zygote's ready message came from pid %d, not from the "
                        "zygote (%d)", (int)ready.pid, (int)pid);
        return 0;
    }
    if (ready.status != ZYGOTE_PARKED) {
        char why[160];
        pspawn_zygote_refusal(why, sizeof why, (int)ready.status, ready.detail);
        pspawn_zygote_lost(z, 0);
        pspawn_fallback(z, 1, "%s", why);
        return 0;
    }
    pspawn_debug(z, "zygote %d parked", (int)pid);
    return 0;
}

int pspawn_context_create(pspawn_context_t *ctx, const char *path, int core)
{
    return pspawn_context_create_ex(ctx, path, core, NULL);
}

int pspawn_context_create_ex(pspawn_context_t *ctx, const char *path, int core,
                             char *const envp[])
{
    if (!ctx || !path)
        return EINVAL;
    ctx->impl = NULL;
    struct pspawn_zygote *z = calloc(1, sizeof *z);
    if (!z)
        return ENOMEM;
    z->zpid = -1;
    z->sock = z->report_r = z->pidfd = -1;
    z->debug = pspawn_env_true("PSPAWN_DEBUG");
    z->timeout_ms = 10000;
    const char *t = getenv("PSPAWN_TIMEOUT");
    if (t && *t) {
        double s = strtod(t, NULL);
        if (s > 0)
            z->timeout_ms = (int)(s * 1000);
    }
    int err = pspawn_program_inspect(&z->prog, path);
    if (err) {
        free(z);
        return err;
    }
    if (z->prog.fallback)
        pspawn_fallback(z, 1, "%s", z->prog.fallback);
    else if ((err = pspawn_creds_get(&z->creds)))
        ;
    else if (pspawn_env_true("PSPAWN_FORCE_EXEC"))
        pspawn_fallback(z, 1, "PSPAWN_FORCE_EXEC is set");
    else if (!(z->loader_env = loader_env_of(envp ? envp : environ)))
        err = ENOMEM;
    else
        err = start_zygote(z, core, envp);
    if (err) {
        pspawn_free_environ(z->loader_env);
        pspawn_program_free(&z->prog);
        free(z);
        return err;
    }
    ctx->impl = z;
    return 0;
}

void pspawn_context_destroy(pspawn_context_t *ctx)
{
    if (!ctx || !ctx->impl)
        return;
    struct pspawn_zygote *z = ctx->impl;
    /* The zygote holds no task and no state worth a clean exit: its
     * destructors must not run, since main never did. */
    if (z->zpid > 0)
        pspawn_zygote_lost(z, 1);
    close_channels(z);
    pspawn_program_free(&z->prog);
    pspawn_free_environ(z->loader_env);
    free(z);
    ctx->impl = NULL;
}

const char *pspawn_context_reason(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl && ctx->impl->have_reason ? ctx->impl->reason : NULL;
}

int pspawn_context_uses_zygote(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl && !ctx->impl->fallback && ctx->impl->zpid > 0;
}

pid_t pspawn_context_zygote_pid(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl && ctx->impl->zpid > 0 ? ctx->impl->zpid : -1;
}

void pspawn_context_set_timeout(pspawn_context_t *ctx, int timeout_ms)
{
    if (ctx && ctx->impl && timeout_ms > 0)
        ctx->impl->timeout_ms = timeout_ms;
}

/* ---- the paper's calls and their extended forms ---------------------- */

int pspawn_vector(pspawn_context_t *ctx, pspawn_task_t *tasks, size_t n,
                  const pspawn_attr_t *attr, char *const envp[])
{
    if (!ctx || !ctx->impl || (!tasks && n))
        return EINVAL;
    struct call *c = malloc(sizeof *c);
    if (!c)
        return ENOMEM;
    int err = pspawn_call_init(c, attr, envp);
    if (!err)
        err = pspawn_run_vector(ctx->impl, tasks, n, c);
    free(c);
    return err;
}

int pspawn_n_ex(pid_t *pids, pspawn_context_t *ctx, int n, const pspawn_attr_t *attr,
                char *const argv[], char *const envp[])
{
    if (n < 0 || !pids || !argv)
        return EINVAL;
    pspawn_task_t *tasks = calloc(n ? (size_t)n : 1, sizeof *tasks);
    if (!tasks)
        return ENOMEM;
    for (int i = 0; i < n; i++)
        tasks[i].argv = argv;
    int err = pspawn_vector(ctx, tasks, (size_t)n, attr, envp);
    for (int i = 0; i < n; i++)
        pids[i] = tasks[i].pid;
    free(tasks);
    return err;
}

int pspawn_ex(pid_t *pid, pspawn_context_t *ctx, const pspawn_attr_t *attr,
              char *const argv[], char *const envp[])
{
    pid_t p = -1;
    int err = pspawn_n_ex(&p, ctx, 1, attr, argv, envp);
    if (!err && pid)
        *pid = p;
    return err;
}

int pspawn_n(pid_t *pids, pspawn_context_t *ctx, int n, char *const argv[])
{
    return pspawn_n_ex(pids, ctx, n, NULL, argv, NULL);
}

pid_t pspawn(pspawn_context_t *ctx, char *const argv[])
{
    pid_t pid;
    int err = pspawn_ex(&pid, ctx, NULL, argv, NULL);
    if (err) {
        errno = err;
        return -1;
    }
    return pid;
}
