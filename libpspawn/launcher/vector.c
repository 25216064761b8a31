/*
 * The vector spawn: what may go through the zygotes (not a changed binary,
 * not a caller whose privileges, session or loader variables differ from
 * the zygote's) goes there (request.c); everything else, and everything
 * they did not create, is a plain exec, once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "batch.h"
#include "pidfd.h"

static void free_script_argvs(struct batch *b)
{
    for (size_t i = 0; b->zargv && i < b->n; i++)
        free(b->zargv[i]);
    free(b->zargv);
    b->zargv = NULL;
}

/* binfmt_script: the interpreter words, then the script's path in place
 * of argv[0], then argv[1...]. */
static char ***script_argvs(struct batch *b)
{
    const struct program *p = &b->z->prog;
    char ***v = calloc(b->n, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < b->n; i++) {
        char *const *argv = b->tasks[i].argv;
        size_t argc = 0;
        while (argv && argv[argc])
            argc++;
        v[i] = calloc(p->ninterp + argc + 2, sizeof(char *));
        if (!v[i]) {
            b->zargv = v;
            free_script_argvs(b);
            return NULL;
        }
        size_t k = 0;
        for (int j = 0; j < p->ninterp; j++)
            v[i][k++] = p->interp_argv[j];
        v[i][k++] = p->path;
        for (size_t j = 1; j < argc; j++)
            v[i][k++] = argv[j];
        /* exec fails if the rewritten list is too big, too */
        if (!b->tasks[i].error && b->state[i] != T_DONE &&
            (b->tasks[i].error = pspawn_args_too_big(p->exe, v[i], task_envp(b, i),
                                                     pspawn_call_stack_limit(b->c))))
            b->state[i] = T_DONE;
    }
    return v;
}

int pspawn_run_vector(struct pspawn_zygote *z, pspawn_task_t *tasks, size_t n,
                      const struct call *c)
{
    struct batch b = { .z = z, .tasks = tasks, .n = n, .c = c };
    b.state = calloc(n ? n : 1, 1);
    if (!b.state)
        return ENOMEM;
    int first_err = 0;
    uint64_t stack_limit = pspawn_call_stack_limit(c);
    for (size_t i = 0; i < n; i++) {
        tasks[i].pid = -1;
        tasks[i].pidfd = -1;
        tasks[i].error = 0;
        if (!tasks[i].argv)
            tasks[i].error = EINVAL;
        else
            tasks[i].error = pspawn_args_too_big(z->prog.path, tasks[i].argv, task_envp(&b, i),
                                                 stack_limit);
        if (tasks[i].error)
            b.state[i] = T_DONE;
    }

    int forced = (c->user_flags & (PSPAWN_FORCE_EXEC | PSPAWN_TRACEME)) != 0;
    /* A zygote that exited because a library it loaded was replaced on
     * disk is followed by a new one, which loads the new library: at most
     * once per call (here, for one lost in an earlier call that had used
     * its restart, or after this call's batch). */
    int restarted = 0;
    if (z->stale && z->fallback && !forced) {
        restarted = 1;
        pspawn_zygote_restart(z);   /* if it fails, exec (the reason says why) */
    }
    int use_zygote = !z->fallback && !forced;
    if (c->user_flags & PSPAWN_FORCE_EXEC)
        pspawn_fallback(z, 0, "PSPAWN_FORCE_EXEC requested");
    else if (c->user_flags & PSPAWN_TRACEME)
        pspawn_fallback(z, 0, "PSPAWN_TRACEME requested (stop at exec): a fork of the zygote "
                        "has no exec to stop at");
    if (use_zygote && pspawn_program_changed(&z->prog)) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "binary changed on disk since the zygote started "
                        "(device, inode, size or mtime differ)");
        use_zygote = 0;
    }
    /* A caller that gave up privileges (dropped root, groups, a
     * capability) must not get tasks that still have them. */
    struct pspawn_creds now;
    const char *what = NULL;
    if (use_zygote && (pspawn_creds_get(&now) || (what = pspawn_creds_differ(&now, &z->creds)))) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "the caller's %s changed since the zygote started",
                        what ? what : "credentials (unreadable)");
        use_zygote = 0;
    }
    /* A task starts in its caller's process group and session, as after
     * exec; a clone of the zygote starts in the zygote's, the caller's
     * when the zygote started.  It can join a group of that session, or
     * make one there (setpgroup), not get into another session. */
    if (use_zygote && !(c->flags & REQ_SETSID)) {
        pid_t pg = getpgrp();
        if (getsid(0) != z->sid) {
            pspawn_fallback(z, 0, "the caller is in another session than when the zygote "
                            "started: a clone of the zygote cannot join it");
            use_zygote = 0;
        } else if (!(c->flags & REQ_SETPGROUP) && pg != z->pgid) {
            b.pgroup = pg;
        }
    }
    /* Tasks mostly share one environment: compare each distinct one once. */
    char *const *seen = NULL;
    const char *var = NULL;
    size_t len = 0;
    for (size_t i = 0; use_zygote && i < n; i++) {
        if (b.state[i] != T_TODO)
            continue;
        if (!seen || task_envp(&b, i) != seen) {
            seen = task_envp(&b, i);
            var = pspawn_loader_env_differs(z, seen, &len);
        }
        if (var) {
            b.state[i] = T_EXEC;
            pspawn_fallback(z, 0, "task %zu: its %.*s differs from the zygote's "
                            "(the loader reads it before main)", i, (int)len, var);
        }
    }
    if (use_zygote && n > 0 && z->prog.ninterp && !(b.zargv = script_argvs(&b)))
        use_zygote = 0;
    /* A warm Python zygote: the interpreter options, then the start-up
     * variables (compared once per distinct environment, as above). */
    seen = NULL;
    for (size_t i = 0; use_zygote && z->python && i < n; i++) {
        if (b.state[i] != T_TODO)
            continue;
        const char *why = pspawn_python_argv_refusal(z, b.zargv ? b.zargv[i] : tasks[i].argv);
        if (!why && (!seen || task_envp(&b, i) != seen)) {
            seen = task_envp(&b, i);
            var = pspawn_python_env_differs(z, seen, &len);
        }
        if (why) {
            b.state[i] = T_EXEC;
            pspawn_fallback(z, 0, "task %zu: %s", i, why);
        } else if (var) {
            b.state[i] = T_EXEC;
            pspawn_fallback(z, 0, "task %zu: its %.*s differs from the warm interpreter's "
                            "(read at start)", i, (int)len, var);
        }
    }
    if (use_zygote && n > 0) {
        pspawn_batch_run(&b);
        /* What the stale zygote did not create goes to the new one. */
        if (z->stale && !restarted) {
            restarted = 1;
            if (pspawn_zygote_restart(z) == 0 && !z->fallback)
                pspawn_batch_run(&b);
        }
    }
    free_script_argvs(&b);

    /* Everything the zygote did not serve: a plain exec, once. */
    for (size_t i = 0; i < n; i++) {
        if (b.state[i] == T_DONE)
            continue;
        unsigned char cpuset[PSPAWN_CPUSET_BYTES];
        const unsigned char *cs = NULL;
        if (tasks[i].cpuset) {
            memset(cpuset, 0, sizeof cpuset);
            memcpy(cpuset, tasks[i].cpuset, tasks[i].cpusetsize < sizeof cpuset
                   ? tasks[i].cpusetsize : sizeof cpuset);
            cs = cpuset;
        }
        tasks[i].error = pspawn_exec_task(&tasks[i].pid, z->prog.path, c, i, cs,
                                          tasks[i].argv, task_envp(&b, i));
        if (!tasks[i].error && (c->user_flags & PSPAWN_PIDFD)) {
            tasks[i].pidfd = (int)syscall(SYS_pidfd_open, tasks[i].pid, 0);
            if (tasks[i].pidfd >= 0)
                fcntl(tasks[i].pidfd, F_SETFD, FD_CLOEXEC);
        }
        if (tasks[i].error)
            tasks[i].pid = -1;
    }
    for (size_t i = 0; i < n; i++)
        if (tasks[i].error && !first_err)
            first_err = tasks[i].error;
    free(b.state);
    return first_err;
}

