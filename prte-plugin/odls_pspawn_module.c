/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module: PRRTE's base builds the child list, the environment of each
 * rank (with its PMIx variables), its stdio pipes or pty and its cpuset, and
 * calls our fork function once per rank.  Where the default component forks
 * and sets the rank up in the child before execve, this one turns the same
 * setup into libpspawn attributes and asks the node's zygote of the program
 * for the rank, in direct mode: the zygote is prted's child, the rank a
 * clone(CLONE_PARENT) of it, hence prted's child too (prted reaps it with
 * waitpid, signals its process group), and prted has its pid before it runs.
 *
 * One zygote per program and job (MPMD: one per program; with
 * odls_pspawn_reuse dvm, per program across the jobs of a DVM:
 * odls_pspawn_zygotes.c), started with the environment of the first rank
 * on this node; a rank whose loader
 * variables differ, a program the zygote cannot serve (static, set-id...),
 * a zygote that died: libpspawn execs that rank instead, with the same
 * setup.  Messages for errors are the default component's own
 * (help-prte-odls-default.txt, help-prun.txt).
 */
#include "odls_pspawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include "procfs.h"
#include "pspawn.h"
#include "tally.h"

#include "odls_pspawn_compat.h"
#include "odls_pspawn_rank.h"
#include "odls_pspawn_tally.h"
#include "odls_pspawn_zygotes.h"

#include "src/hwloc/hwloc-internal.h"
#include "src/mca/errmgr/errmgr.h"
#include "src/mca/iof/base/iof_base_setup.h"
#include "src/mca/odls/base/base.h"
#include "src/mca/rmaps/rmaps_types.h"
#include "src/mca/state/state.h"
#include "src/runtime/prte_globals.h"
#include "src/util/attr.h"
#include "src/util/name_fns.h"
#include "src/util/pmix_show_help.h"

#define VERBOSE(level, ...) \
    pmix_output_verbose(level, prte_odls_base_framework.framework_output, __VA_ARGS__)

/* ---- the fork function -------------------------------------------------- */

/* What the default component's child does before execve, as attributes of
 * the rank; -1 after the default's message where it would have failed. */
static int rank_attr(prte_odls_spawn_caddy_t *cd, pspawn_attr_t *attr)
{
    prte_proc_t *child = cd->child;
    int forward = PRTE_FLAG_TEST(cd->jdata, PRTE_JOB_FLAG_FORWARD_OUTPUT);
    sigset_t set;

    /* its own process group, so that signals reach what it starts */
    int err = pspawn_attr_setpgroup(attr, 0);
    /* the signals the default resets, and none blocked */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTRAP);
    if (0 == err)
        err = pspawn_attr_setsigdefault(attr, &set);
    sigemptyset(&set);
    if (0 == err)
        err = pspawn_attr_setsigmask(attr, &set);
    if (0 != err)
        return -1;

    if (NULL != child && forward) {
        if (0 != pspawn_rank_stdio(cd, attr)) {
            pmix_show_help("help-prte-odls-default.txt", "iof setup failed", true,
                           prte_process_info.nodename, cd->app->app);
            return -1;
        }
    } else if (NULL == child && !forward) {
        for (int fd = 0; fd < 3; fd++)
            if (0 != pspawn_attr_addopen(attr, fd, "/dev/null", O_RDONLY, 0))
                return -1;
    }

    if (NULL != child) {
        cpu_set_t cpus;
        int have = 0;
        if (0 != pspawn_rank_cpuset(cd, forward ? cd->opts.p_stderr[1] : 2, &cpus, &have, attr))
            return -1;
        if (have && 0 != pspawn_attr_setcpuset(attr, sizeof cpus, &cpus))
            return -1;
    }

    if (NULL != cd->wdir) {
        struct stat st;
        if (0 != stat(cd->wdir, &st) || !S_ISDIR(st.st_mode) || 0 != access(cd->wdir, X_OK)) {
            pmix_show_help("help-prun.txt", "prun:wdir-not-found", true, "prted", cd->wdir,
                           prte_process_info.nodename, (NULL == child) ? 0 : child->app_rank);
            return -1;
        }
        if (0 != pspawn_attr_setcwd(attr, cd->wdir))
            return -1;
    }
    return 0;
}

/* prted reaps with waitpid(-1) on its progress thread and finds each rank
 * by child->pid, while this fork function runs on a launch thread: a rank
 * that exited before child->pid was set would be reaped as an unknown pid
 * and its job would never end.  libpspawn calls this before the rank can
 * run, so the pid is always there first.  The rank is marked running and
 * alive here too, not after the launch returns: by then the progress
 * thread may have taken the rank's exit (cleared ALIVE), and marking it
 * alive again would leave its job waiting for ever.  (PRRTE 3.0.8's
 * default component does mark it after its exec, and hangs so now and
 * then with ranks that exit at once: 2 jobs in 76 of /bin/true here.) */
/* How long a rank's stdout stays open after its launch (compat.h,
 * pspawn_hold_output: PRRTE's late RUNNING). */
#define HOLD_OUTPUT_MS 20

static void store_pid(void *arg, size_t index, pid_t pid)
{
    (void)index;
    prte_proc_t *child = arg;
    child->state = PRTE_PROC_STATE_RUNNING;
    PRTE_FLAG_SET(child, PRTE_PROC_FLAG_ALIVE);
    __atomic_store_n(&child->pid, pid, __ATOMIC_RELEASE);
}

/* --stop-on-exec: a debugger attaches to ranks stopped at their first
 * instruction.  Only an exec has one, so such a job's ranks are exec'd by
 * libpspawn with PSPAWN_TRACEME (ptrace(PTRACE_TRACEME) before execve, as
 * the default's child does); then, as the default's parent does: wait for
 * the exec's SIGTRAP stop, detach leaving the rank stopped, and tell PRRTE
 * it is ready for the debugger.
 *
 * The stop is watched in /proc, not with waitpid(): the exec path's vfork
 * holds this thread until the exec, so the rank may stop before we could
 * wait, and prted's SIGCHLD handler (waitpid(-1) in another thread) may
 * take the stop's report first: a waitpid() here would then block for
 * ever.  Detaching needs the tracee stopped, not its report collected.
 * And prted learns the rank's pid only once it is detached (stopped, not
 * traced, so its stop is no longer reported): the handler would take the
 * stop report for the rank's death.  We collect the report ourselves where
 * the handler has not; where it has, it may not have looked the pid up yet,
 * so the pid is given a quarter of a second later.  (The default component
 * has the same race, wider: it gives the pid before the exec; seen to lose
 * it in e2e runs, mpirun then exits 255.) */
static int stop_on_exec(const prte_odls_spawn_caddy_t *cd)
{
#if PRTE_HAVE_STOP_ON_EXEC
    return pspawn_job_bool(cd->jdata, PRTE_JOB_STOP_ON_EXEC);
#else
    (void)cd;
    return 0;
#endif
}

#if PRTE_HAVE_STOP_ON_EXEC && !PSPAWN_PRTE_BASE_DETACHES
/* PID's state letter ('t': stopped by its tracer), or 0 once it is gone. */
static char proc_state(pid_t pid)
{
    unsigned long long state;
    return 0 == pspawn_proc_stat(pid, 3, 3, &state) ? (char)state : 0;
}
#endif

static int stopped_for_debugger(prte_proc_t *child, pid_t pid)
{
#if PSPAWN_PRTE_BASE_DETACHES
    /* PRRTE 5's waitpid callback takes the stop and detaches (its child
     * pid must be known by then: set with the others). */
    (void)child;
    (void)pid;
#elif PRTE_HAVE_STOP_ON_EXEC
    /* The exec is done (libpspawn returned): the stop is microseconds
     * away; 10 s is for a machine under heavy load. */
    char state = 0;
    for (int i = 0; i < 10000 && 't' != (state = proc_state(pid)); i++) {
        if (0 == state || 'Z' == state || 'X' == state)
            return PRTE_ERR_FAILED_TO_START;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    int status;
    int ours = 't' == state && waitpid(pid, &status, WNOHANG | WUNTRACED) == pid;
    errno = 0;
    if ('t' == state && 0 == kill(pid, SIGSTOP))
        ptrace(PTRACE_DETACH, pid, 0, (void *)SIGSTOP);
    if ('t' != state || 0 != errno) {
        kill(pid, SIGKILL);     /* nothing half-started left behind */
        return PRTE_ERR_FAILED_TO_START;
    }
    if (!ours) {
        struct timespec quarter = { 0, 250000000 };
        nanosleep(&quarter, NULL);
    }
    if (NULL != child) {
        child->pid = pid;
        PRTE_ACTIVATE_PROC_STATE(&child->name, PRTE_PROC_STATE_READY_FOR_DEBUG);
    }
#else
    (void)child;
    (void)pid;
#endif
    return PRTE_SUCCESS;
}

static int pspawn_fork_local_proc(void *cdptr)
{
    prte_odls_spawn_caddy_t *cd = (prte_odls_spawn_caddy_t *)cdptr;
    prte_proc_t *child = cd->child;
    pspawn_attr_t attr;
    int err;
    int traced = stop_on_exec(cd);

    if (0 != pspawn_attr_init(&attr))
        return pspawn_rank_failed(cd);
    if (0 != rank_attr(cd, &attr) || (traced && 0 != pspawn_attr_setflags(&attr, PSPAWN_TRACEME)) ||
        (NULL != child && !traced && 0 != pspawn_attr_setpidhook(&attr, store_pid, child))) {
        pspawn_attr_destroy(&attr);
        return pspawn_rank_failed(cd);
    }

    char *argv0[2] = { cd->app->app, NULL };
    char **argv = NULL != cd->argv ? cd->argv : argv0;
    pmix_nspace_t job;
    PMIX_LOAD_NSPACE(job, NULL != child ? child->name.nspace : cd->jdata->nspace);
    pid_t pid = -1;
    char *why = NULL;       /* the zygote's own error, said in the rank's */
    /* odls_pspawn_verbose: how this rank was made, for the node's line */
    int forked = 0, kind = PSPAWN_ZYGOTE_NEW;
    long long zstart = 0;
    char how[160] = "stop-on-exec: a debugger's rank is exec'd";
    if (traced) {
        /* No zygote for a job that stops at exec. */
        char *path = pspawn_program_path(cd);
        VERBOSE(5, "%s odls:pspawn: stop-on-exec: %s by exec (a fork of a zygote has no exec "
                "to stop at)", PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), cd->app->app);
        err = NULL == path ? ENOMEM : pspawn_exec(&pid, path, &attr, argv, cd->env);
        free(path);
    } else {
        pspawn_zygotes_lock();
        struct zygote *z = pspawn_zygote_for(cd, job);
        if (NULL == z)
            err = ENOMEM;
        else if (z->err) {
            err = z->err;
            why = NULL != z->why ? strdup(z->why) : NULL;
        } else if (z->plain) {
            /* The auto rule: a zygote would not pay for this program. */
            err = pspawn_exec(&pid, z->cmd, &attr, argv, cd->env);
            snprintf(how, sizeof how, "%s", z->plain);
        } else {
            err = pspawn_ex(&pid, &z->ctx, &attr, argv, cd->env);
            if (0 == err)
                pspawn_zygote_learn(z);
        }
        if (0 == err && NULL != z && !z->plain && NULL != pspawn_context_reason(&z->ctx)) {
            VERBOSE(5, "%s odls:pspawn: %s: %s", PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), z->cmd,
                    pspawn_context_reason(&z->ctx));
        }
        if (prte_mca_odls_pspawn_component.verbose && NULL != z && !z->plain) {
            pspawn_zygote_info_t root;
            forked = 0 == err && pspawn_context_uses_zygote(&z->ctx);
            kind = PMIX_CHECK_NSPACE(z->job, job) ? PSPAWN_ZYGOTE_NEW : PSPAWN_ZYGOTE_JOB;
            zstart = forked && pspawn_context_zygotes(&z->ctx, &root, 1) >= 1
                         ? pspawn_proc_start_ms(root.pid) : 0;
            snprintf(how, sizeof how, "%s", 0 != err ? strerror(err)
                     : NULL != pspawn_context_reason(&z->ctx) ? pspawn_context_reason(&z->ctx)
                     : "no zygote");
        }
        pspawn_zygotes_unlock();
    }
    pspawn_attr_destroy(&attr);
    pspawn_job_tally(job, (unsigned)cd->jdata->num_local_procs, forked, kind, zstart, how);
    if (NULL != child)
        child->pid = 0 == err && (!traced || PSPAWN_PRTE_BASE_DETACHES) ? pid : 0;
    if (0 != err) {
        int rc = pspawn_rank_exec_failed(cd, err, why);
        free(why);
        return rc;
    }
    if (traced && PRTE_SUCCESS != stopped_for_debugger(child, pid))
        return pspawn_rank_failed(cd);
    if (!traced)
        pspawn_hold_output(cd, HOLD_OUTPUT_MS);
    pspawn_rank_close_child_ends(cd);
    /* With the pid hook, store_pid did this before the rank could run. */
    if (NULL != child && traced) {
        child->state = PRTE_PROC_STATE_RUNNING;
        PRTE_FLAG_SET(child, PRTE_PROC_FLAG_ALIVE);
    }
    return PRTE_SUCCESS;
}

/* ---- module functions --------------------------------------------------- */

static int pspawn_launch_local_procs(pmix_data_buffer_t *data)
{
    pmix_nspace_t job;
    int rc;

    pspawn_zygotes_lock();
    pspawn_zygotes_forget();
    pspawn_zygotes_unlock();
    rc = pspawn_construct_and_launch(data, &job, pspawn_fork_local_proc);
    if (PRTE_SUCCESS != rc) {
        VERBOSE(2, "%s odls:pspawn: failed to construct the child list: %s",
                PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), PRTE_ERROR_NAME(rc));
        return rc;
    }
    return PRTE_SUCCESS;
}

/* Signals go to the rank's process group (it leads one), so that what it
 * started gets them too; a rank that is gone is not an error. */
static int kill_local(pid_t pid, int signum)
{
    pid_t pgrp = getpgid(pid);
    if (-1 != pgrp)
        pid = -pgrp;
    if (0 != kill(pid, signum) && ESRCH != errno)
        return errno;
    return 0;
}

static int pspawn_kill_local_procs(pmix_pointer_array_t *procs)
{
    int rc = prte_odls_base_default_kill_local_procs(procs, kill_local);
    if (PRTE_SUCCESS != rc)
        PRTE_ERROR_LOG(rc);
    return rc;
}

static int send_signal(pid_t pid, int sig)
{
    if (!pspawn_signal_direct_children_only())
        pid = -pid;
    if (0 == kill(pid, sig))
        return PRTE_SUCCESS;
    switch (errno) {
    case ESRCH:
        return PRTE_SUCCESS;
    case EINVAL:
        return PRTE_ERR_BAD_PARAM;
    case EPERM:
        return PRTE_ERR_PERM;
    default:
        return PRTE_ERROR;
    }
}

static int pspawn_signal_local_procs(const pmix_proc_t *proc, int32_t sig)
{
    int rc = prte_odls_base_default_signal_local_procs(proc, sig, send_signal);
    if (PRTE_SUCCESS != rc)
        PRTE_ERROR_LOG(rc);
    return rc;
}

static int pspawn_restart_proc(prte_proc_t *child)
{
    return prte_odls_base_default_restart_proc(child, pspawn_fork_local_proc);
}

prte_odls_base_module_t prte_odls_pspawn_module = {
    .get_add_procs_data = prte_odls_base_default_get_add_procs_data,
    .launch_local_procs = pspawn_launch_local_procs,
    .kill_local_procs = pspawn_kill_local_procs,
    .signal_local_procs = pspawn_signal_local_procs,
    .restart_proc = pspawn_restart_proc,
};
