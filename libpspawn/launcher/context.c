/* SPDX-License-Identifier: BSD-3-Clause */
/* The public calls: contexts (create, destroy, what they say) and the
 * synchronous spawn calls, which all end in the launch engine's vector
 * spawn (vector.c).  The context owns its zygotes' lifecycle (start,
 * stop); the engine changes them only through the zygote handle
 * (handle.c, which also restarts them after a replaced library) and
 * never calls anything here. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "sayline.h"

extern char **environ;

int pspawn_options_check(const char *options, char *msg, size_t size)
{
    struct pspawn_options o;
    pspawn_options_defaults(&o);
    return pspawn_options_parse(&o, options, msg, size) < 0 ? EINVAL : 0;
}

int pspawn_context_create(pspawn_context_t *ctx, const char *path, int core)
{
    return pspawn_context_create_ex(ctx, path, core, NULL);
}

static int every_entry(const char *kv)
{
    (void)kv;
    return 1;
}

/* CORE >= 0 (the older calls): one zygote, pinned there while it loads. */
static int create(pspawn_context_t *ctx, const char *path, int core, char *const argv[],
                  char *const envp[], const char *options)
{
    if (!ctx || !path)
        return EINVAL;
    ctx->impl = NULL;
    struct pspawn_zygote *z = calloc(1, sizeof *z);
    if (!z)
        return ENOMEM;
    pspawn_options_defaults(&z->opts);
    char msg[256];
    /* No options given: PSPAWN_OPTIONS, if it parses (tests and sites set
     * it for launchers that give none). */
    const char *env = getenv("PSPAWN_OPTIONS");
    if (!options && core < 0 && env && *env && pspawn_options_check(env, msg, sizeof msg) == 0)
        options = env;
    if (pspawn_options_parse(&z->opts, options, msg, sizeof msg) < 0) {
        free(z);
        return EINVAL;
    }
    if (core >= 0 && !options)
        z->opts.fanout = PSPAWN_FANOUT_NONE;
    /* A PiP task loads the program afresh: a warm interpreter would be
     * of no use to it. */
    if (z->opts.pip)
        z->opts.python = 0;
    z->start_core = core;
    z->report_r = -1;
    z->debug = pspawn_debug_wanted();
    z->timeout_ms = 10000;
    const char *t = getenv("PSPAWN_TIMEOUT");
    if (t && *t && pspawn_timeout_parse(t, &z->timeout_ms)) {
        free(z);
        return EINVAL;
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
    else if (!(z->loader_env = pspawn_loader_env_of(envp ? envp : environ)) ||
             !(z->start_env = pspawn_env_subset(envp ? envp : environ, every_entry)))
        err = ENOMEM;
    else if (!(err = pspawn_python_prepare(z, argv, envp)))
        err = pspawn_zygote_start(z, core, envp);
    if (err) {
        pspawn_zygote_stop(z);
        pspawn_python_free(z);
        pspawn_strv_free(z->loader_env);
        pspawn_strv_free(z->start_env);
        pspawn_program_free(&z->prog);
        free(z);
        return err;
    }
    ctx->impl = z;
    return 0;
}

int pspawn_context_create_ex(pspawn_context_t *ctx, const char *path, int core,
                             char *const envp[])
{
    return create(ctx, path, core, NULL, envp, NULL);
}

int pspawn_context_create_opts(pspawn_context_t *ctx, const char *path, char *const envp[],
                               const char *options)
{
    return create(ctx, path, -1, NULL, envp, options);
}

int pspawn_context_create_argv(pspawn_context_t *ctx, const char *path, char *const argv[],
                               char *const envp[], const char *options)
{
    return create(ctx, path, -1, argv, envp, options);
}

void pspawn_context_destroy(pspawn_context_t *ctx)
{
    if (!ctx || !ctx->impl)
        return;
    struct pspawn_zygote *z = ctx->impl;
    pspawn_zygote_stop(z);
    pspawn_program_free(&z->prog);
    pspawn_strv_free(z->loader_env);
    pspawn_strv_free(z->start_env);
    pspawn_python_free(z);
    free(z);
    ctx->impl = NULL;
}

const char *pspawn_context_reason(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl && ctx->impl->have_reason ? ctx->impl->reason : NULL;
}

static const struct zygote_server *root_of(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl && ctx->impl->servers ? &ctx->impl->servers[0] : NULL;
}

int pspawn_context_uses_zygote(const pspawn_context_t *ctx)
{
    const struct zygote_server *root = root_of(ctx);
    return root && !ctx->impl->fallback && root->state == SERVER_READY;
}

pid_t pspawn_context_zygote_pid(const pspawn_context_t *ctx)
{
    const struct zygote_server *root = root_of(ctx);
    return root && root->state == SERVER_READY ? root->pid : -1;
}

int pspawn_context_objects(const pspawn_context_t *ctx)
{
    const struct zygote_server *root = root_of(ctx);
    return root && root->state == SERVER_READY ? ctx->impl->objects : 0;
}

size_t pspawn_context_zygotes(const pspawn_context_t *ctx, pspawn_zygote_info_t *info, size_t n)
{
    if (!root_of(ctx))
        return 0;
    const struct pspawn_zygote *z = ctx->impl;
    size_t count = (size_t)z->topo.ngroups;
    for (size_t k = 0; k < n && k < count; k++) {
        const struct zygote_server *sv = &z->servers[k];
        pspawn_zygote_info_t *i = &info[k];
        memset(i, 0, sizeof *i);
        i->pid = sv->state == SERVER_READY ? sv->pid : -1;
        i->group = (int)k;
        memcpy(&i->cpus, z->topo.groups[k].cpus,
               sizeof i->cpus < PSPAWN_CPUSET_BYTES ? sizeof i->cpus : PSPAWN_CPUSET_BYTES);
        i->node = z->topo.groups[k].node;
        i->tasks = sv->tasks;
        i->state = sv->state == SERVER_READY ? "serving" : sv->state == SERVER_STARTING ? "starting"
                   : sv->state == SERVER_NONE ? "not started" : sv->why;
    }
    return count;
}

int pspawn_context_owns(const pspawn_context_t *ctx, pid_t pid)
{
    if (!root_of(ctx) || pid <= 0)
        return 0;
    for (int k = 0; k < ctx->impl->topo.ngroups; k++)
        if (ctx->impl->servers[k].pid == pid)
            return 1;
    return 0;
}

const char *pspawn_context_topology(const pspawn_context_t *ctx)
{
    return ctx && ctx->impl ? ctx->impl->topo.describe : NULL;
}

void pspawn_context_set_timeout(pspawn_context_t *ctx, int timeout_ms)
{
    if (ctx && ctx->impl && timeout_ms > 0)
        ctx->impl->timeout_ms = timeout_ms;
}


int pspawn_vector(pspawn_context_t *ctx, pspawn_task_t *tasks, size_t n,
                  const pspawn_attr_t *attr, char *const envp[])
{
    if (!ctx || !ctx->impl || (!tasks && n))
        return EINVAL;
    struct batch_call *call = calloc(1, sizeof *call);
    if (!call)
        return ENOMEM;
    int err = pspawn_call_init(&call->c, attr, envp);
    if (err) {
        pspawn_batch_call_free(call);
        return err;
    }
    return pspawn_run_vector(ctx->impl, tasks, n, call);
}

int pspawn_n_ex(pid_t *pids, pspawn_context_t *ctx, int n, const pspawn_attr_t *attr,
                char *const argv[], char *const envp[])
{
    if (n < 0 || !pids || !argv)
        return EINVAL;
    pspawn_task_t *tasks = calloc(n ? (size_t)n : 1, sizeof *tasks);
    if (!tasks)
        return ENOMEM;
    for (int i = 0; i < n; i++) {
        tasks[i].argv = argv;
        tasks[i].pid = -1;
        tasks[i].pidfd = -1;
    }
    int err = pspawn_vector(ctx, tasks, (size_t)n, attr, envp);
    for (int i = 0; i < n; i++) {
        pids[i] = tasks[i].pid;
        /* PSPAWN_PIDFD set in ATTR: these calls return pids only. */
        if (tasks[i].pidfd >= 0)
            close(tasks[i].pidfd);
    }
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
