/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node's zygotes in prted (see odls_pspawn_zygotes.h).
 *
 * odls_pspawn_reuse job (the default): one zygote per program and job,
 * stopped at the first launch after its job is gone.  odls_pspawn_reuse
 * dvm: a persistent DVM belongs to one user, so its jobs share one zygote
 * per program: same path, device, inode and mtime (a program rebuilt
 * between jobs gets a new zygote).  A rank whose loader variables differ
 * from the zygote's (LD_*, GLIBC_TUNABLES, MALLOC_*: the rule every job's
 * ranks follow) is exec'd by libpspawn, as is every rank of a job whose
 * first rank's differ.  The constructors ran with the first job's
 * environment (its PMIX_* variables among them).  At most
 * odls_pspawn_zygotes zygotes (the least recently used goes first), each
 * stopped after odls_pspawn_idle seconds without a rank (looked at on
 * each launch and by a timer on PRRTE's event base); all go with the DVM.
 *
 * Where a site made pspawn the default (odls_pspawn_priority above the
 * default component's) and the job did not name it (odls pspawn), the
 * component forks a program's ranks only where that is expected to gain,
 * as Slurm's default=auto does (wire/worth.h): 2 ranks or more on the node
 * (or a DVM's shared zygotes), and a program that loaded at least
 * odls_pspawn_auto_objects objects in its last zygote, or a Python
 * interpreter.  The counts are learned in the user's own cache
 * (pspawn_cache_dir()/worth); a program not in it goes through a zygote
 * once.
 */
#include "odls_pspawn.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "odls_pspawn_compat.h"
#include "odls_pspawn_zygotes.h"
#include "preload.h"

#include "src/runtime/prte_globals.h"
#include "src/util/name_fns.h"

#define VERBOSE(level, ...) \
    pmix_output_verbose(level, prte_odls_base_framework.framework_output, __VA_ARGS__)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct zygote *zygotes;
static size_t nzygotes, capzygotes;

static void zygote_free(struct zygote *z)
{
    if (!z->err && !z->plain)
        pspawn_context_destroy(&z->ctx);
    free(z->cmd);
    free(z->why);
    free(z->plain);
}

void pspawn_zygotes_lock(void)
{
    pthread_mutex_lock(&lock);
}

void pspawn_zygotes_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int reuse_dvm(void)
{
    const char *r = prte_mca_odls_pspawn_component.reuse;
    return NULL != r && 0 == strcmp(r, "dvm");
}

/* Stop zygote I (its ranks run on: they are prted's children). */
static void drop(size_t i, const char *why)
{
    VERBOSE(2, "%s odls:pspawn: stopping the zygote of %s (job %s): %s",
            PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), zygotes[i].cmd, zygotes[i].job, why);
    zygote_free(&zygotes[i]);
    memmove(&zygotes[i], &zygotes[i + 1], (nzygotes - i - 1) * sizeof *zygotes);
    nzygotes--;
}

/* A DVM runs many jobs: the zygotes of jobs that are gone go too, or,
 * shared by the DVM's jobs, those idle too long. */
void pspawn_zygotes_forget(void)
{
    double now = now_s(), idle = prte_mca_odls_pspawn_component.idle;
    for (size_t i = 0; i < nzygotes;) {
        if (reuse_dvm() ? now - zygotes[i].last_used >= idle
                        : NULL == prte_get_job_data_object(zygotes[i].job))
            drop(i, reuse_dvm() ? "idle" : "its job is gone");
        else
            i++;
    }
}

/* The timer of odls_pspawn_reuse dvm: idle zygotes go even when no job
 * comes; it runs again while any is left. */
static int timer_armed;
static void idle_timer(void)
{
    pthread_mutex_lock(&lock);
    pspawn_zygotes_forget();
    timer_armed = nzygotes > 0 &&
                  0 == pspawn_after((unsigned)prte_mca_odls_pspawn_component.idle * 1000, idle_timer);
    pthread_mutex_unlock(&lock);
}

void prte_odls_pspawn_finalize(void)
{
    pthread_mutex_lock(&lock);
    pspawn_after_cancel();
    timer_armed = 0;
    for (size_t i = 0; i < nzygotes; i++)
        zygote_free(&zygotes[i]);
    free(zygotes);
    zygotes = NULL;
    nzygotes = capzygotes = 0;
    pthread_mutex_unlock(&lock);
}

char *pspawn_program_path(prte_odls_spawn_caddy_t *cd)
{
    char *p = NULL;
    if ('/' == cd->cmd[0] || NULL == cd->wdir)
        return strdup(cd->cmd);
    if (pmix_asprintf(&p, "%s/%s", cd->wdir, cd->cmd) < 0)
        return NULL;
    return p;
}

/* Whether the program at CMD is still the one zygote Z started with. */
static int same_program(const struct zygote *z, const char *cmd)
{
    struct stat st;
    return 0 == stat(cmd, &st) && st.st_dev == z->prog.st_dev && st.st_ino == z->prog.st_ino &&
           st.st_mtim.tv_sec == z->prog.st_mtim.tv_sec &&
           st.st_mtim.tv_nsec == z->prog.st_mtim.tv_nsec;
}

/* The options of the MCA parameters as libpspawn's text, fanout first;
 * NULL when out of memory. */
static char *mca_options(void)
{
    char *options = NULL;
    const char *fanout = prte_mca_odls_pspawn_component.fanout;
    const char *more = prte_mca_odls_pspawn_component.options;
    static const char *const names[PSPAWN_MCA_KEYS] = { "subzygote", "start", "cgroup", "python",
                                                        "modules", "preload", "mode" };
    if (pmix_asprintf(&options, "fanout=%s", NULL != fanout && '\0' != fanout[0] ? fanout : "auto") < 0)
        options = NULL;
    for (int i = 0; NULL != options && i < PSPAWN_MCA_KEYS; i++) {
        const char *v = prte_mca_odls_pspawn_component.keys[i];
        char *longer = NULL;
        if (NULL == v || '\0' == v[0])
            continue;
        if (pmix_asprintf(&longer, "%s,%s=%s", options, names[i], v) < 0)
            longer = NULL;
        free(options);
        options = longer;
    }
    if (NULL != options && NULL != more && '\0' != more[0]) {
        char *longer = NULL;
        if (pmix_asprintf(&longer, "%s,%s", options, more) < 0)
            longer = NULL;
        free(options);
        options = longer;
    }
    return options;
}

/* What is wrong with the MCA parameters, into MSG; 0 if nothing. */
static int mca_check(const char *options, char *msg, size_t size)
{
    const char *reuse = prte_mca_odls_pspawn_component.reuse;
    if (NULL != reuse && '\0' != reuse[0] && 0 != strcmp(reuse, "job") && 0 != strcmp(reuse, "dvm")) {
        /* A typo must not quietly give the other sharing. */
        snprintf(msg, size, "odls_pspawn_reuse=%s: neither job nor dvm", reuse);
        return EINVAL;
    }
    return NULL != options ? pspawn_options_check(options, msg, size) : 0;
}

/* The user's table of programs worth a zygote, into DIR: 0, or -1. */
static int worth_table(char *dir, size_t len)
{
    char cache[PATH_MAX];
    return pspawn_cache_dir(cache, sizeof cache) == 0 &&
           snprintf(dir, len, "%s/worth", cache) < (int)len ? 0 : -1;
}

/* Where the auto rule applies to CD's program (a site's default, not
 * named by the job), why its ranks are exec'd, or NULL. */
static const char *auto_plain(struct zygote *z, prte_odls_spawn_caddy_t *cd, char *why,
                              size_t len)
{
    if (pspawn_odls_named())
        return NULL;
    z->auto_rule = 1;
    if (cd->jdata->num_local_procs < 2 && !reuse_dvm())
        return "auto: one rank on this node (odls pspawn is the site's default)";
    char dir[PATH_MAX];
    char *argv0[2] = { z->cmd, NULL };
    char **argv = NULL != cd->argv ? cd->argv : argv0;
    int argc = 0;
    while (NULL != argv[argc])
        argc++;
    if (worth_table(dir, sizeof dir) < 0)
        return NULL;
    pspawn_worth_recall(&z->worth, dir, geteuid(), z->cmd, argc, argv, cd->env);
    int least = prte_mca_odls_pspawn_component.auto_objects;
    if (least < 0)
        least = reuse_dvm() ? PSPAWN_WORTH_KEPT_ZYGOTE : PSPAWN_WORTH_JOB_ZYGOTE;
    return pspawn_worth_verdict(&z->worth, least, why, len);
}

void pspawn_zygote_learn(struct zygote *z)
{
    char dir[PATH_MAX];
    int objects = z->plain || z->err ? 0 : pspawn_context_objects(&z->ctx);
    if (z->learned || !z->auto_rule || objects <= 0 || worth_table(dir, sizeof dir) < 0)
        return;
    z->learned = 1;
    if (pspawn_worth_learn(&z->worth, dir, geteuid(), objects, 0) < 0)
        VERBOSE(2, "%s odls:pspawn: %s: the auto rule learns nothing of %s: %s",
                PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), dir, z->cmd, strerror(errno));
}

/* Start Z's zygote.  It runs the constructors once, with the environment
 * of the first rank ENV: the ranks' loader variables are the same as its
 * own.  Parameters that do not parse are said once, and the ranks not
 * started.  Where the auto rule says a zygote does not pay, none: its
 * ranks are exec'd (Z->plain). */
static void start_zygote(struct zygote *z, prte_odls_spawn_caddy_t *cd)
{
    char msg[256];
    char **env = cd->env;
    const char *plain = auto_plain(z, cd, msg, sizeof msg);
    if (NULL != plain) {
        z->plain = strdup(plain);
        z->err = NULL == z->plain ? ENOMEM : 0;
        return;
    }
    char *options = mca_options();
    if (0 != mca_check(options, msg, sizeof msg)) {
        /* Said in each rank's "failed to start" message, which mpirun
         * shows from every node (prted's own output it does not). */
        if (pmix_asprintf(&z->why, "MCA parameters odls_pspawn_*: %s", msg) < 0)
            z->why = NULL;
        z->err = EINVAL;
    } else {
        z->err = NULL == options ? ENOMEM : pspawn_context_create_opts(&z->ctx, z->cmd, env, options);
    }
    free(options);
}

struct zygote *pspawn_zygote_for(prte_odls_spawn_caddy_t *cd, const pmix_nspace_t job)
{
    char *cmd = pspawn_program_path(cd);
    if (NULL == cmd)
        return NULL;
    int dvm = reuse_dvm();
    for (size_t i = 0; i < nzygotes; i++) {
        if (0 != strcmp(zygotes[i].cmd, cmd) || (!dvm && !PMIX_CHECK_NSPACE(zygotes[i].job, job)))
            continue;
        if (dvm && !zygotes[i].err && !same_program(&zygotes[i], cmd)) {
            drop(i, "the program changed on disk");
            break;
        }
        free(cmd);
        zygotes[i].last_used = now_s();
        return &zygotes[i];
    }
    /* The least recently used makes room. */
    while (dvm && nzygotes > 0 && nzygotes >= (size_t)prte_mca_odls_pspawn_component.zygotes) {
        size_t lru = 0;
        for (size_t i = 1; i < nzygotes; i++)
            if (zygotes[i].last_used < zygotes[lru].last_used)
                lru = i;
        drop(lru, "odls_pspawn_zygotes reached: the least recently used");
    }
    if (nzygotes == capzygotes) {
        size_t cap = capzygotes ? 2 * capzygotes : 4;
        struct zygote *v = realloc(zygotes, cap * sizeof *v);
        if (NULL == v) {
            free(cmd);
            return NULL;
        }
        zygotes = v;
        capzygotes = cap;
    }
    struct zygote *z = &zygotes[nzygotes];
    memset(z, 0, sizeof *z);
    z->cmd = cmd;
    PMIX_LOAD_NSPACE(z->job, job);
    z->last_used = now_s();
    if (0 != stat(cmd, &z->prog))
        memset(&z->prog, 0, sizeof z->prog);
    start_zygote(z, cd);
    nzygotes++;
    if (dvm && !timer_armed)
        timer_armed = 0 == pspawn_after((unsigned)prte_mca_odls_pspawn_component.idle * 1000,
                                        idle_timer);
    if (z->err) {
        VERBOSE(2, "%s odls:pspawn: %s: %s", PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), cmd,
                strerror(z->err));
    } else if (z->plain) {
        VERBOSE(1, "%s odls:pspawn: %s: every rank by exec: %s",
                PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), cmd, z->plain);
    } else if (pspawn_context_uses_zygote(&z->ctx)) {
        VERBOSE(2, "%s odls:pspawn: zygote of %s for job %s is pid %ld (%s)",
                PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), cmd, job,
                (long)pspawn_context_zygote_pid(&z->ctx), pspawn_context_topology(&z->ctx));
    } else {
        VERBOSE(1, "%s odls:pspawn: %s: every rank by exec: %s",
                PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), cmd,
                pspawn_context_reason(&z->ctx));
    }
    return z;
}

