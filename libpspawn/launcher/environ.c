/* SPDX-License-Identifier: BSD-3-Clause */
/* A zygote's environment, and the loader variables a task must share with
 * its zygote (the loader reads them before main, once, in the zygote). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

#ifndef PSPAWN_PROXY_PATH
#define PSPAWN_PROXY_PATH "libpspawn-proxy.so"
#endif

extern char **environ;

const char *pspawn_proxy_path(void)
{
    const char *p = getenv("PSPAWN_PROXY");
    return p && *p ? p : PSPAWN_PROXY_PATH;
}

char **pspawn_env_subset(char *const env[], int (*pick)(const char *))
{
    size_t n = 0, k = 0;
    for (size_t i = 0; env && env[i]; i++)
        n += pick(env[i]) != 0;
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && env && env[i]; i++)
        if (pick(env[i]) && !(v[k++] = strdup(env[i]))) {
            pspawn_strv_free(v);
            return NULL;
        }
    return v;
}

const char *pspawn_env_subset_differs(char *const subset[], char *const envp[],
                                      int (*pick)(const char *), size_t *namelen)
{
    size_t mine = 0, have = 0;
    for (char *const *l = subset; l && *l; l++)
        mine++;
    for (size_t i = 0; envp && envp[i]; i++) {
        if (!pick(envp[i]))
            continue;
        have++;
        int found = 0;
        for (char *const *l = subset; l && *l && !found; l++)
            found = strcmp(*l, envp[i]) == 0;
        if (!found) {
            *namelen = strcspn(envp[i], "=");
            return envp[i];
        }
    }
    if (have == mine)
        return NULL;
    /* One of the subset's is missing from ENVP. */
    for (char *const *l = subset; l && *l; l++) {
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

char **pspawn_loader_env_of(char *const env[])
{
    return pspawn_env_subset(env, pspawn_loader_var);
}

const char *pspawn_loader_env_differs(const struct pspawn_zygote *z, char *const envp[],
                                      size_t *namelen)
{
    return pspawn_env_subset_differs(z->loader_env, envp, pspawn_loader_var, namelen);
}

/* FMT as a new string, or NULL (asprintf leaves its pointer undefined
 * when it fails; pspawn_strv_complete needs a NULL there). */
__attribute__((format(printf, 1, 2)))
static char *format(const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* Whether ENTRY (NAME=VALUE) is one that launchers give each task of a
 * job its own value of: a rank.  The zygote that the first task's launch
 * starts must not carry that task's, for its constructors (and a warm
 * interpreter's imports) to read as every task's: they see none.  One
 * that PSPAWN_CTOR_VARS lists is kept (it is in the zygote's key: each
 * value gets a zygote of its own). */
static int per_task_var(const char *entry, const char *ctor_vars)
{
    static const char *const names[] = {
        "PSPAWN_RANK", "PSPAWN_SIZE", "PSPAWN_LOCAL_RANK",
        "SLURM_PROCID", "SLURM_LOCALID", "SLURM_TASK_PID",
        "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID",
        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK",
        "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "PALS_RANKID", "PALS_LOCAL_RANKID",
    };
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(entry, names[i], len))
            return !pspawn_loader_var_listed(entry, ctor_vars);
    return 0;
}

/* The zygote's environment: the caller's, with the proxy appended to its
 * LD_PRELOAD (the user's value kept, for the proxy to put back before
 * main), a PiP root's loader told to make room, and no task's rank. */
char **pspawn_zygote_environ(const char *const extra[], char *const base[], int record, int pip)
{
    const char *ctor_vars = getenv(PSPAWN_ENV_CTOR_VARS);
    char *const *src = base ? base : environ;
    size_t n = 0, nextra = 0;
    while (src && src[n])
        n++;
    while (extra && extra[nextra])
        nextra++;
    char **env = calloc(n + nextra + 8, sizeof *env);
    if (!env)
        return NULL;
    const char *user_preload = NULL, *user_tunables = NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (pip && strncmp(src[i], "GLIBC_TUNABLES=", 15) == 0)
            user_tunables = src[i] + 15;
        else if (strncmp(src[i], "LD_PRELOAD=", 11) == 0)
            user_preload = src[i] + 11;
        else if (strncmp(src[i], "PSPAWN_ZYGOTE_", 14) != 0 && !per_task_var(src[i], ctor_vars))
            env[k++] = strdup(src[i]);
    }
    const char *proxy = pspawn_proxy_path();
    /* A zygote that learns what its tasks load has the recorder too
     * (zygote/preload.c), next to the proxy. */
    char recorder[PATH_MAX] = "";
    if (record) {
        const char *slash = strrchr(proxy, '/');
        snprintf(recorder, sizeof recorder, " %.*slibpspawn-record.so",
                 slash ? (int)(slash - proxy + 1) : 0, proxy);
    }
    if (user_preload && *user_preload)
        env[k++] = format("LD_PRELOAD=%s %s%s", user_preload, proxy, recorder);
    else
        env[k++] = format("LD_PRELOAD=%s%s", proxy, recorder);
    if (user_preload)
        env[k++] = format(PSPAWN_ENV_PRELOAD "=%s", user_preload);
    /* A PiP root loads each task's libc into a namespace of its own, each
     * with its static TLS: the loader reserves room for that many only
     * when told at exec (default 4: 11 namespaces that load libc fit,
     * 15 with 16; FACTS.md).  The user's own setting wins. */
    if (pip && user_tunables && strstr(user_tunables, "glibc.rtld.nns="))
        env[k++] = format("GLIBC_TUNABLES=%s", user_tunables);
    else if (pip)
        env[k++] = format("GLIBC_TUNABLES=%s%sglibc.rtld.nns=16", user_tunables ? user_tunables : "",
                          user_tunables && *user_tunables ? ":" : "");
    env[k++] = format(PSPAWN_ENV_PARENT "=%d", (int)getpid());
    struct pspawn_base start;
    char text[RLIM_NLIMITS * 44 + 64];
    pspawn_base_get(&start);
    if (pspawn_base_format(&start, text, sizeof text) == 0)
        env[k++] = format(PSPAWN_ENV_BASE "=%s", text);
    for (size_t i = 0; i < nextra; i++)
        if (*extra[i])
            env[k++] = strdup(extra[i]);
    env[k] = NULL;
    return pspawn_strv_complete(env, k);
}

