/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vector spawn: what may go through the zygotes (not a changed binary,
 * not a caller whose privileges, session or loader variables differ from
 * the zygote's) goes there (request.c); everything else, and everything
 * they did not create, is a plain exec, once (settle.c).  The
 * synchronous calls drive the engine here until every task is final; the
 * launch session (session.c) drives the same engine from its fd.  The
 * engine's first stage: it calls the loop (pipeline.c) and the stages
 * below it, never back.
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

/* binfmt_script: the interpreter words, then the script's path in place
 * of argv[0], then argv[1...].  0 or ENOMEM. */
static int script_argv(struct batch *b, size_t i)
{
    const struct program *p = &b->z->prog;
    char *const *argv = b->task[i].t.argv;
    size_t argc = 0;
    while (argv && argv[argc])
        argc++;
    char **v = calloc(p->ninterp + argc + 2, sizeof(char *));
    if (!v)
        return ENOMEM;
    size_t k = 0;
    for (int j = 0; j < p->ninterp; j++)
        v[k++] = p->interp_argv[j];
    v[k++] = p->path;
    for (size_t j = 1; j < argc; j++)
        v[k++] = argv[j];
    b->task[i].zargv = v;
    /* exec fails if the rewritten list is too big, too */
    int err = pspawn_args_too_big(p->exe, v, task_envp(b, i),
                                  pspawn_call_stack_limit(&b->task[i].call->c));
    if (err)
        pspawn_batch_fail(b, i, err, "its arguments and environment, with the interpreter's "
                          "words, are too big for exec");
    return 0;
}

/* Whether CALL's tasks may go through the zygotes at all. */
static int call_may_use_zygote(struct batch *b, struct batch_call *call)
{
    struct pspawn_zygote *z = b->z;
    const struct call *c = &call->c;
    int forced = (c->user_flags & (PSPAWN_FORCE_EXEC | PSPAWN_TRACEME)) != 0;
    /* A zygote that exited because a library it loaded was replaced on
     * disk is followed by a new one, which loads the new library: at most
     * once per call (here, for one lost in an earlier call that had used
     * its restart; pipeline.c for one lost during this call).  Not while
     * another call's requests are in flight: their tasks report on the
     * old zygote's pipe. */
    if (z->stale && z->fallback && !forced && b->nout == 0) {
        call->restarted = 1;
        pspawn_zygote_restart(z);   /* if it fails, exec (the reason says why) */
        b->report_eof = 0;
        b->fdgen++;
    }
    if (pspawn_batch_servers_resize(b))
        return 0;
    if (c->user_flags & PSPAWN_FORCE_EXEC)
        pspawn_fallback(z, 0, "PSPAWN_FORCE_EXEC requested");
    else if (c->user_flags & PSPAWN_TRACEME)
        pspawn_fallback(z, 0, "PSPAWN_TRACEME requested (stop at exec): a fork of the zygote "
                        "has no exec to stop at");
    if (z->fallback || forced)
        return 0;
    if (!pspawn_zygote_current(z))
        return 0;
    /* A task starts in its caller's process group and session, as after
     * exec; a clone of the zygote starts in the zygote's, the caller's
     * when the zygote started.  It can join a group of that session, or
     * make one there (setpgroup), not get into another session. */
    if (!(c->flags & REQ_SETSID)) {
        pid_t pg = getpgrp();
        if (getsid(0) != z->sid) {
            pspawn_fallback(z, 0, "the caller is in another session than when the zygote "
                            "started: a clone of the zygote cannot join it");
            return 0;
        }
        if (!(c->flags & REQ_SETPGROUP) && pg != z->pgid)
            call->pgroup = pg;
    }
    /* An exec'd task inherits its caller's working directory whatever
     * its permissions; a clone of the zygote enters it by path, as the
     * caller's user: not where a directory on that path is closed to
     * that user (a 0700 home above it), nor where it was removed. */
    if (c->cwd_inherited &&
        (!(c->flags & REQ_CWD) || faccessat(AT_FDCWD, c->cwd, X_OK, AT_EACCESS) < 0)) {
        pspawn_fallback(z, 0, "the caller's working directory cannot be entered by its path "
                        "(%s) as the caller's user: an exec'd task inherits it, a fork of the "
                        "zygote would have to chdir", (c->flags & REQ_CWD) ? strerror(errno)
                        : "removed, or its path unknown");
        return 0;
    }
    return 1;
}

/* An environment compared with the zygote's: tasks mostly share one, so
 * each distinct one is compared once. */
struct env_verdict {
    int checked;
    char *const *env;
    const char *var;        /* the first variable that differs, or NULL */
    size_t len;             /* its name's length */
};

static const char *env_differs(struct env_verdict *v, char *const *env,
                               const char *(*differs)(const struct pspawn_zygote *,
                                                      char *const *, size_t *),
                               const struct pspawn_zygote *z)
{
    if (!v->checked || env != v->env) {
        v->checked = 1;
        v->env = env;
        v->var = differs(z, env, &v->len);
    }
    return v->var;
}

/* Whether task I, which its call lets go through the zygotes, may not:
 * its loader variables, a warm interpreter's options or start-up
 * variables differ from the zygote's. */
static int task_refused(struct batch *b, size_t i, struct env_verdict *loader,
                        struct env_verdict *python)
{
    struct pspawn_zygote *z = b->z;
    if (env_differs(loader, task_envp(b, i), pspawn_loader_env_differs, z)) {
        pspawn_fallback(z, 0, "task %zu: its %.*s differs from the zygote's "
                        "(read before main: by the loader, libc or a constructor)", i,
                        (int)loader->len, loader->var);
        return 1;
    }
    if (!z->python)
        return 0;
    const char *why = pspawn_python_argv_refusal(z, task_argv(b, i));
    if (why) {
        pspawn_fallback(z, 0, "task %zu: %s", i, why);
        return 1;
    }
    if (env_differs(python, task_envp(b, i), pspawn_python_env_differs, z)) {
        pspawn_fallback(z, 0, "task %zu: its %.*s differs from the warm interpreter's "
                        "(read at start)", i, (int)python->len, python->var);
        return 1;
    }
    return 0;
}

/* Tasks FIRST..FIRST+N of CALL: to a zygote, or to exec. */
static void admit(struct batch *b, size_t first, size_t n, struct batch_call *call)
{
    int use_zygote = call_may_use_zygote(b, call);
    struct env_verdict loader = { 0 }, python = { 0 };
    for (size_t i = first; i < first + n; i++) {
        if (b->task[i].state != T_TODO)
            continue;
        if (use_zygote && b->z->prog.ninterp && script_argv(b, i))
            use_zygote = 0;
        if (b->task[i].state != T_TODO)
            continue;   /* too big once rewritten */
        if (use_zygote && !task_refused(b, i, &loader, &python))
            pspawn_batch_dispatch(b, i);
        else
            pspawn_batch_to_exec(b, i);
    }
}

int pspawn_batch_add(struct batch *b, const pspawn_task_t *tasks, size_t n,
                     struct batch_call *call)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        while (cap < b->n + n)
            cap *= 2;
        struct batch_task *v = realloc(b->task, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        b->task = v;
        b->cap = cap;
    }
    if (b->ncalls == b->capcalls) {
        size_t cap = b->capcalls ? 2 * b->capcalls : 4;
        struct batch_call **v = realloc(b->calls, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        b->calls = v;
        b->capcalls = cap;
    }
    b->calls[b->ncalls++] = call;
    size_t first = b->n;
    uint64_t stack_limit = pspawn_call_stack_limit(&call->c);
    for (size_t i = first; i < first + n; i++) {
        struct batch_task *t = &b->task[i];
        *t = (struct batch_task){ .t = tasks[i - first], .call = call, .server = -1,
                                  .state = T_TODO };
        t->t.pid = -1;
        t->t.pidfd = -1;
        t->t.error = 0;
    }
    b->n += n;
    b->unsettled += n;
    call->unsettled = n;
    for (size_t i = first; i < first + n; i++) {
        int err = b->task[i].t.argv ? pspawn_args_too_big(b->z->prog.path, b->task[i].t.argv,
                                                          task_envp(b, i), stack_limit)
                                    : EINVAL;
        if (err)
            pspawn_batch_fail(b, i, err, err == EINVAL ? "it has no argv"
                              : "its arguments and environment are too big for exec");
    }
    admit(b, first, n, call);
    return 0;
}

int pspawn_run_vector(struct pspawn_zygote *z, pspawn_task_t *tasks, size_t n,
                      struct batch_call *call)
{
    /* A session with tasks in flight reads the context's report pipe. */
    struct batch b;
    pspawn_batch_init(&b, z);
    if (pspawn_zygote_claim(z, &b)) {
        pspawn_batch_call_free(call);
        return EBUSY;
    }
    int err = pspawn_batch_add(&b, tasks, n, call);
    if (err)
        pspawn_batch_call_free(call);
    while (!err && pspawn_batch_busy(&b))
        pspawn_batch_step(&b, -1);
    int first_err = err;
    for (size_t i = 0; !err && i < n; i++) {
        tasks[i].pid = b.task[i].t.pid;
        tasks[i].pidfd = b.task[i].t.pidfd;
        tasks[i].error = b.task[i].t.error;
        if (tasks[i].error && !first_err)
            first_err = tasks[i].error;
    }
    pspawn_batch_free(&b);
    pspawn_zygote_release(z, &b);
    return first_err;
}
