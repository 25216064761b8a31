/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipbench-groups.c - the groups of tasks bench/pipbench measures: N PiP
 * tasks (pspawn mode=pip, each checked to be in its root's address
 * space), N processes, or one process of N threads, started on a shared
 * control block, waited for until ready, let go and reaped.
 */
#include <linux/kcmp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "pipbench.h"

/* The shared file paths[I] of SIZE bytes, its control block mapped here. */
struct pipctl *make_shared(int i, const char *tag, size_t size)
{
    snprintf(paths[i], sizeof paths[i], "/dev/shm/pipbench.%d.%s", (int)getpid(), tag);
    int fd = open(paths[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size))
        die("cannot create", paths[i]);
    void *p = mmap(NULL, PIP_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        die("cannot map", paths[i]);
    return p;
}

/* A PiP context, or an error in ERR. */
int pip_create(pspawn_context_t *ctx, char *err, size_t errlen)
{
    int e = pspawn_context_create_opts(ctx, task, environ, "mode=pip");
    if (e) {
        char msg[256] = "";
        if (e == EINVAL)
            pspawn_options_check("mode=pip", msg, sizeof msg);
        snprintf(err, errlen, "pspawn_context_create_opts(\"mode=pip\"): %s%s%s", strerror(e),
                 msg[0] ? ": " : "", msg);
        return e;
    }
#ifdef PSPAWN_MODE_PIP
    const char *why = NULL;
    if (pspawn_context_mode(ctx, &why) != PSPAWN_MODE_PIP) {
        snprintf(err, errlen, "mode=pip refused: %s", why ? why : "(no reason)");
        pspawn_context_destroy(ctx);
        return ENOTSUP;
    }
#endif
    return 0;
}

static int group_start(struct group *g, int var, int n, char **one, char **thr)
{
    memset(g, 0, sizeof *g);
    g->var = var;
    if (var != V_PIP) {
        for (int i = 0; i < (var == V_PROC ? n : 1); i++, g->npids++) {
            int e = posix_spawn(&g->pids[i], task, NULL, NULL, var == V_PROC ? one : thr, environ);
            if (e)
                return snprintf(g->err, sizeof g->err, "posix_spawn: %s", strerror(e)), -1;
        }
        return 0;
    }
    if (pip_create(&g->ctx, g->err, sizeof g->err))
        return -1;
    g->have_ctx = 1;
    int e = pspawn_n(g->pids, &g->ctx, n, one);
    for (int i = 0; i < n; i++)
        g->npids += g->pids[i] > 0;
    if (e || g->npids != n)
        return snprintf(g->err, sizeof g->err, "pspawn_n(%d): %s", n, strerror(e ? e : EIO)), -1;
    const char *r = pspawn_context_reason(&g->ctx);
    if (r)
        return snprintf(g->err, sizeof g->err, "mode=pip used exec: %s", r), -1;
    /* Each task must be in the root's address space: the point of PiP. */
    pid_t root = pspawn_context_zygote_pid(&g->ctx);
    for (int i = 0; i < n; i++) {
        long k = syscall(SYS_kcmp, root, g->pids[i], KCMP_VM, 0, 0);
        if (k > 0)
            return snprintf(g->err, sizeof g->err, "mode=pip accepted, but task %d (pid %d) is "
                            "not in the address space of its root (pid %d; kcmp KCMP_VM)",
                            i, (int)g->pids[i], (int)root), -1;
        if (k < 0)
            return snprintf(g->err, sizeof g->err, "cannot tell whether the tasks share the "
                            "root's address space (kcmp: %s)", strerror(errno)), -1;
    }
    return 0;
}

/* Reap what exited; 1 if anything did. */
static int group_poll(struct group *g)
{
    int any = 0;
    for (int i = 0; i < g->npids; i++)
        if (!g->done[i] && waitpid(g->pids[i], &g->st[i], WNOHANG) == g->pids[i])
            g->done[i] = 1, any = 1;
    return any;
}

/* Wait until *W >= WANT, or a task exited (unless EXIT_OK), or
 * TIMEOUT_MS passed. */
int group_wait(struct group *g, _Atomic uint32_t *w, uint32_t want, long timeout_ms,
               const char *what, int exit_ok)
{
    uint64_t end = pip_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (pip_wait_ge(w, want, 200))
        if (group_poll(g) && !exit_ok)
            return snprintf(g->err, sizeof g->err, "a task exited before %s", what), -1;
        else if (pip_now_ns() > end)
            return snprintf(g->err, sizeof g->err, "timed out waiting for %s (%u of %u)", what,
                            atomic_load(w), want), -1;
    return 0;
}

/* Let the tasks go, reap them all (killing them after 30 s, or at once
 * with KILL_NOW), destroy the context.  0 if every task exited 0. */
int group_end(struct group *g, struct pipctl *c, int kill_now)
{
    atomic_store(&c->go, 1);
    pip_wake(&c->go);
    uint64_t end = pip_now_ns() + (kill_now ? 0 : 30000000000ull);
    int left = 1, killed = 0;
    while (left) {
        group_poll(g);
        left = 0;
        for (int i = 0; i < g->npids; i++)
            left += !g->done[i];
        for (int i = 0; left && !killed && pip_now_ns() > end && i <= g->npids; i++)
            i < g->npids ? (void)(g->done[i] || kill(g->pids[i], SIGKILL)) : (void)(killed = 1);
        if (left)
            usleep(1000);
    }
    if (g->have_ctx)
        pspawn_context_destroy(&g->ctx);
    int bad = killed || c->failed;
    for (int i = 0; i < g->npids; i++)
        bad |= !WIFEXITED(g->st[i]) || WEXITSTATUS(g->st[i]);
    if (bad && !g->err[0])
        snprintf(g->err, sizeof g->err, "%s", c->failed ? c->err
                                         : killed ? "killed a task that did not exit"
                                                  : "a task failed");
    return bad ? -1 : 0;
}

void report_fail(const char *m, struct group *g)
{
    if (g->var == V_PIP && !pip_off[0]) {
        snprintf(pip_off, sizeof pip_off, "%s", g->err);
        printf("PiP: not available (%s)\n", g->err);
    } else if (g->var != V_PIP)
        printf("%s, %s: failed: %s\n", m, vname[g->var], g->err);
}

/* Start a group on a fresh control block C and wait until its N tasks
 * are ready; on failure, end it and say why (-1). */
int group_ready(struct group *g, struct pipctl *c, int var, int n, char **one,
                char **thr, const char *m)
{
    memset(c, 0, sizeof *c);
    c->magic = PIPCTL_MAGIC;
    if (!group_start(g, var, n, one, thr) &&
        !group_wait(g, &c->ready, (uint32_t)n, 120000, "all tasks were ready", 0) && !c->failed)
        return 0;
    group_end(g, c, 1);
    report_fail(m, g);
    return -1;
}
