/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's setup as the default component's child makes it (binding,
 * memory policy, stdio), turned into libpspawn attributes, and the
 * default's messages and states when a rank cannot start.
 */
#include "odls_pspawn_rank.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include "odls_pspawn_compat.h"

#include "src/hwloc/hwloc-internal.h"
#include "src/mca/rmaps/rmaps_types.h"
#include "src/runtime/prte_globals.h"
#include "src/util/attr.h"
#include "src/util/pmix_show_help.h"

/* The default's child reports bindings with pmix_output(0) on its stderr,
 * which is the rank's stderr by then, with the prefix prted's output
 * stream has (node and prted's pid): write the same line there. */
static void report_binding(prte_odls_spawn_caddy_t *cd, int fd, hwloc_const_cpuset_t bound)
{
    if (!prte_get_attribute(&cd->jdata->attributes, PRTE_JOB_REPORT_BINDINGS, NULL, PMIX_BOOL))
        return;
    if (NULL == bound) {
        dprintf(fd, "[%s:%05d] Rank %d is not bound (or bound to all available processors)\n",
                prte_process_info.nodename, (int)getpid(), (int)cd->child->name.rank);
        return;
    }
    bool hwt = prte_get_attribute(&cd->jdata->attributes, PRTE_JOB_HWT_CPUS, NULL, PMIX_BOOL);
    char *s = pspawn_cset2str(cd->jdata, (hwloc_cpuset_t)bound, hwt);
    dprintf(fd, "[%s:%05d] Rank %d bound to %s\n", prte_process_info.nodename, (int)getpid(),
            (int)cd->child->name.rank, s ? s : "?");
    free(s);
}

/* What the default's child does once bound to CS (rtc/hwloc, through
 * prte_hwloc_base_set_process_membind_policy): set its memory policy,
 * DEFAULT, or BIND to CS's NUMA nodes with hwloc_default_mem_alloc_policy
 * local_only.  hwloc sets it here, on this thread only, where the policy
 * the kernel then holds is read back for the rank and this thread's own is
 * put back.  Where it fails, the default's child warns or fails, and so
 * does this.  Returns -1 when the rank must not start. */
static int rank_mempolicy(prte_odls_spawn_caddy_t *cd, hwloc_const_cpuset_t cs, pspawn_attr_t *attr)
{
    unsigned long own[1024 / (8 * sizeof(unsigned long))], got[1024 / (8 * sizeof(unsigned long))];
    int own_mode, mode, rc, err;
    hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
    int flags = HWLOC_MEMBIND_THREAD;
    if (PRTE_HWLOC_BASE_MAP_LOCAL_ONLY == prte_hwloc_base_map) {
        policy = HWLOC_MEMBIND_BIND;
        flags |= HWLOC_MEMBIND_STRICT;
    }
    if (0 != syscall(SYS_get_mempolicy, &own_mode, own, 1024UL, NULL, 0UL)) {
        rc = -1;
        err = errno;
    } else {
        rc = hwloc_set_membind(prte_hwloc_topology, cs, policy, flags);
        err = errno;
        if (0 == rc && 0 != syscall(SYS_get_mempolicy, &mode, got, 1024UL, NULL, 0UL)) {
            rc = -1;
            err = errno;
        }
        /* (set_mempolicy reads one bit less than it is told) */
        syscall(SYS_set_mempolicy, own_mode, own, 1025UL);
    }
    if (0 == rc)
        return 0 == pspawn_attr_setmempolicy(attr, mode, got, 1024) ? 0 : -1;
    if (ENOSYS == err && PRTE_HWLOC_BASE_MAP_NONE == prte_hwloc_base_map)
        return 0;
    if (!PRTE_BINDING_POLICY_IS_SET(cd->jdata->map->binding))
        return 0;
    const char *msg = ENOSYS == err  ? "hwloc indicates memory binding not supported"
                      : EXDEV == err ? "hwloc indicates memory binding cannot be enforced"
                                     : "failed to bind memory";
    if (PRTE_HWLOC_BASE_MBFA_ERROR == prte_hwloc_base_mbfa) {
        pmix_show_help("help-prte-odls-default.txt", "memory binding error", true,
                       prte_process_info.nodename, cd->app->app, msg, __FILE__, __LINE__);
        return -1;
    }
    pmix_show_help("help-prte-odls-default.txt", "memory not bound", true,
                   prte_process_info.nodename, cd->app->app, msg, __FILE__, __LINE__);
    return 0;
}

/* The rank's CPU set, from child->cpuset (a hwloc list).  Returns 0 and
 * *have = 1 with SET to bind to, *have = 0 to leave the binding as it is,
 * or -1 after the error message when binding is required and impossible.
 * A rank bound to its own cpuset also gets the default's memory policy. */
int pspawn_rank_cpuset(prte_odls_spawn_caddy_t *cd, int out_fd, cpu_set_t *set, int *have,
                       pspawn_attr_t *attr)
{
    prte_proc_t *child = cd->child;
    prte_job_t *jdata = cd->jdata;
    hwloc_cpuset_t cs;
    *have = 0;
#if PSPAWN_PRTE_BINDS_IN_PARENT
    (void)out_fd;   /* PRRTE 5's base has reported it */
    return pspawn_prepared_binding(cd, set, have, attr);
#endif
    if (NULL == child->cpuset || '\0' == child->cpuset[0]) {
        if (NULL == prte_daemon_cores) {
            report_binding(cd, out_fd, NULL);
            return 0;
        }
        /* the daemon is bound: free the rank, as the default does */
        hwloc_obj_t root = hwloc_get_root_obj(prte_hwloc_topology);
        if (NULL == root->userdata)
            pmix_show_help("help-prte-odls-default.txt", "incorrectly bound", true,
                           prte_process_info.nodename, cd->app->app, __FILE__, __LINE__);
        hwloc_const_cpuset_t all = hwloc_topology_get_allowed_cpuset(prte_hwloc_topology);
        if (0 == hwloc_cpuset_to_glibc_sched_affinity(prte_hwloc_topology, all, set, sizeof *set))
            *have = 1;
        report_binding(cd, out_fd, all);
        return 0;
    }
    cs = hwloc_bitmap_alloc();
    if (NULL == cs || 0 != hwloc_bitmap_list_sscanf(cs, child->cpuset) ||
        0 != hwloc_cpuset_to_glibc_sched_affinity(prte_hwloc_topology, cs, set, sizeof *set)) {
        char *msg = NULL;
        if (pmix_asprintf(&msg, "hwloc_bitmap_sscanf failed for the string \"%s\"",
                          child->cpuset) < 0)
            msg = NULL;
        if (PRTE_BINDING_REQUIRED(jdata->map->binding) &&
            PRTE_BINDING_POLICY_IS_SET(jdata->map->binding)) {
            pmix_show_help("help-prte-odls-default.txt", "binding generic error", true,
                           prte_process_info.nodename, cd->app->app,
                           msg ? msg : "bad cpuset", __FILE__, __LINE__);
            free(msg);
            hwloc_bitmap_free(cs);
            return -1;
        }
        pmix_show_help("help-prte-odls-default.txt", "not bound", true,
                       prte_process_info.nodename, cd->app->app, msg ? msg : "bad cpuset",
                       __FILE__, __LINE__);
        free(msg);
        hwloc_bitmap_free(cs);
        return 0;
    }
    *have = 1;
    report_binding(cd, out_fd, cs);
    int rc = rank_mempolicy(cd, cs, attr);
    hwloc_bitmap_free(cs);
    return rc;
}

/* What prte_iof_base_setup_child does in the default's child, as file
 * actions: the child ends of the pipes (or the pty) at 0, 1 and 2. */
int pspawn_rank_stdio(prte_odls_spawn_caddy_t *cd, pspawn_attr_t *attr)
{
    prte_iof_base_io_conf_t *o = &cd->opts;
    if (o->usepty) {
        /* the pty's modes belong to the pty: set them here as the child would */
        struct termios t;
        if (tcgetattr(o->p_stdout[1], &t) < 0)
            return -1;
        t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | ECHONL);
        t.c_iflag &= ~(tcflag_t)(ICRNL | INLCR | ISTRIP | INPCK | IXON);
        t.c_oflag &= ~(tcflag_t)(OCRNL | ONLCR);
        if (tcsetattr(o->p_stdout[1], TCSANOW, &t) < 0)
            return -1;
    }
    int err = o->connect_stdin ? pspawn_attr_adddup2(attr, o->p_stdin[0], 0)
                               : pspawn_attr_addopen(attr, 0, "/dev/null", O_RDONLY, 0);
    if (0 == err)
        err = pspawn_attr_adddup2(attr, o->p_stdout[1], 1);
    if (0 == err)
        err = pspawn_attr_adddup2(attr, o->p_stderr[1], 2);
    return 0 == err ? 0 : -1;
}

/* The parent's side of the pipes, closed as the default's parent does. */
void pspawn_rank_close_child_ends(prte_odls_spawn_caddy_t *cd)
{
    if (NULL == cd->child || !PRTE_FLAG_TEST(cd->jdata, PRTE_JOB_FLAG_FORWARD_OUTPUT))
        return;
    if (cd->opts.connect_stdin)
        close(cd->opts.p_stdin[0]);
    close(cd->opts.p_stdout[1]);
    close(cd->opts.p_stderr[1]);
}

int pspawn_rank_failed(prte_odls_spawn_caddy_t *cd)
{
    pspawn_rank_close_child_ends(cd);
    if (NULL != cd->child) {
        cd->child->state = PRTE_PROC_STATE_FAILED_TO_START;
        PRTE_FLAG_UNSET(cd->child, PRTE_PROC_FLAG_ALIVE);
    }
    return PRTE_ERR_FAILED_TO_START;
}

/* The default's message when execve fails. */
int pspawn_rank_exec_failed(prte_odls_spawn_caddy_t *cd, int err, const char *why)
{
    char dir[PATH_MAX], *msg = NULL;
    struct stat st;
    if (NULL != cd->wdir)
        snprintf(dir, sizeof dir, "%s", cd->wdir);
    else if (NULL == getcwd(dir, sizeof dir))
        dir[0] = '\0';
    if (NULL != why) {
        msg = strdup(why);
    } else if (ENOENT == err && 0 == stat(cd->app->app, &st)) {
        if (pmix_asprintf(&msg, "%s has a bad interpreter on the first line.", cd->app->app) < 0)
            msg = NULL;
    } else {
        msg = strdup(strerror(err));
    }
    pmix_show_help("help-prte-odls-default.txt", "execve error", true,
                   prte_process_info.nodename, dir, cd->app->app, msg ? msg : strerror(err));
    free(msg);
    return pspawn_rank_failed(cd);
}
