/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The warm Python zygote's C side.  A zygote whose program turns out to be
 * a CPython interpreter (and whose launcher allows it) does not park before
 * main: python-embed.c starts the interpreter itself and runs the
 * bootstrap (warm-learn.py, warm.py), which imports the preload modules;
 * then the zygote parks here: the same park and the same serving as before
 * main, with os.fork's interpreter hooks around each clone (the mode's
 * hooks, which python-embed.c plugs into the park: parked.mode).  The functions
 * the bootstrap calls (through ctypes) are the proxy's only exports
 * besides __libc_start_main.
 */
#include "config.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "python.h"
#include "zygote.h"

#define EXPORT __attribute__((visibility("default")))

static int find_pool(struct dl_phdr_info *info, size_t size, void *data);
static void (*before_fork)(void), (*after_fork_parent)(void), (*after_fork_child)(void);
static struct task_start task;
/* Signals whose disposition is still the one the interpreter chose at its
 * start (no preloaded module changed it), and those the task's caller
 * ignores (bit n-1 = signal n). */
static uint64_t interpreter_sigs, task_sigign;

int zygote_python_detect(void)
{
    /* Exported by the interpreter (statically linked) or by libpython. */
    return dlsym(RTLD_DEFAULT, "Py_BytesMain") && dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child");
}

void zygote_python_find_fork_hooks(void)
{
    before_fork = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_BeforeFork");
    after_fork_parent = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent");
    after_fork_child = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child");
}

void zygote_python_before_fork(void)
{
    if (before_fork)
        before_fork();
}

void zygote_python_after_fork_parent(void)
{
    if (after_fork_parent)
        after_fork_parent();
}

/* Before the park: a preloaded module's file (its source, or its
 * extension object), watched on disk as the libraries are: a change makes
 * the zygote stale, and its tasks exec'd. */
EXPORT void pspawn_python_watch(const char *path)
{
    zygote_watch_code_file(path);
}

void zygote_python_park(uint64_t own_sigs, const struct zygote_mode *mode)
{
    parked.python_warm = 1;
    parked.mode = mode;
    interpreter_sigs = own_sigs;
    dl_iterate_phdr(find_pool, NULL);
    task = zygote_park();
    if (after_fork_child)
        after_fork_child();
}

/* In a task, before its release (async-signal-safe): an exec'd
 * interpreter reads each signal's disposition at its start and keeps one
 * that its caller ignored ignored, SIGINT included (it then installs no
 * KeyboardInterrupt handler).  Child setup already ignored those the
 * zygote had at their default; the interpreter's own (SIGINT's handler)
 * are ignored here, so that no SIGINT trips it before the bootstrap makes
 * the signal module's table say SIG_IGN too. */
void zygote_python_task_signals(uint64_t sigign)
{
    task_sigign = sigign;
    for (int sig = 1; sig <= 64; sig++) {
        uint64_t bit = UINT64_C(1) << (sig - 1);
        if ((sigign & interpreter_sigs & parked.ctor_sigs & bit) && sig != SIGKILL &&
            sig != SIGSTOP)
            pspawn_child_sigdisp(sig, 1);
    }
}

/* The signals the task's caller ignores, for the bootstrap. */
EXPORT uint64_t pspawn_python_task_sigign(void)
{
    return task_sigign;
}

/* The interpreter cannot be made warm: tell the launcher why, and end. */
EXPORT void pspawn_python_refuse(int why)
{
    if (parked.sock >= 0)
        zygote_send_ready(parked.sock, ZYGOTE_PYTHON_REFUSED, why);
    _exit(0);
}

EXPORT int pspawn_python_task_argc(void)
{
    return task.argc;
}

EXPORT char **pspawn_python_task_argv(void)
{
    return task.argv;
}

/* The path the zygote was exec'd with, for a task that must be exec'd
 * after all (what it runs is not a file, say). */
EXPORT const char *pspawn_python_exec_path(void)
{
    return (const char *)getauxval(AT_EXECFN);
}

/* ---- thread pools --------------------------------------------------------
 *
 * The zygote loaded the BLAS and OpenMP runtimes with one thread (a
 * threaded zygote cannot fork).  Each task sizes their pools from its own
 * environment, as each runtime does at load: OpenBLAS from
 * OPENBLAS_NUM_THREADS, then GOTO_NUM_THREADS, then OMP_NUM_THREADS, else
 * the CPUs it may use; libgomp from OMP_NUM_THREADS's first value, else
 * the CPUs in its affinity. */

static long env_threads(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    long n = strtol(v, NULL, 10);
    return n > 0 ? n : 0;
}

static long affinity_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) < 0)
        return 1;
    return CPU_COUNT(&set);
}

/* The runtimes' setters, found once when the zygote parks (what is
 * loaded then is what every task has): walking every object in each task
 * would put ~700 dlopen/dlsym calls on a task's start. */
#define MAX_POOLS 8
static struct pool {
    void (*openblas_set)(int);
    int (*openblas_procs)(void);
    void (*omp_set)(int);
} pools[MAX_POOLS];
static int npools;

static int find_pool(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!info->dlpi_name || !info->dlpi_name[0] || npools == MAX_POOLS)
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return 0;
    struct pool p = {
        (void (*)(int))dlsym(h, "openblas_set_num_threads"),
        (int (*)(void))dlsym(h, "openblas_get_num_procs"),
        (void (*)(int))dlsym(h, "omp_set_num_threads"),
    };
    /* Only the library that defines it: dlsym also finds its dependencies'. */
    Dl_info where;
    if (p.openblas_set && !(dladdr((void *)p.openblas_set, &where) &&
                            strcmp(where.dli_fname, info->dlpi_name) == 0))
        p.openblas_set = NULL;
    if (p.omp_set && !(dladdr((void *)p.omp_set, &where) &&
                       strcmp(where.dli_fname, info->dlpi_name) == 0))
        p.omp_set = NULL;
    if (p.openblas_set || p.omp_set)
        pools[npools++] = p;
    dlclose(h);
    return 0;
}

/* Returns how many pools it sized. */
EXPORT int pspawn_python_size_pools(void)
{
    int sized = 0;
    for (int i = 0; i < npools; i++) {
        if (pools[i].openblas_set) {
            long n = env_threads("OPENBLAS_NUM_THREADS");
            if (!n)
                n = env_threads("GOTO_NUM_THREADS");
            if (!n)
                n = env_threads("OMP_NUM_THREADS");
            long max = pools[i].openblas_procs ? pools[i].openblas_procs() : affinity_cpus();
            if (!n || n > max)
                n = max;
            pools[i].openblas_set((int)n);
            sized++;
        }
        if (pools[i].omp_set) {
            long n = env_threads("OMP_NUM_THREADS");
            pools[i].omp_set((int)(n ? n : affinity_cpus()));
            sized++;
        }
    }
    return sized;
}

/* ---- between steps ------------------------------------------------------ */

void zygote_python_record_again(uint64_t own_sigs)
{
    interpreter_sigs = own_sigs;
    zygote_record_handlers();
    npools = 0;
    dl_iterate_phdr(find_pool, NULL);
}
