/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parts of the component that differ between PRRTE versions
 * (odls_pspawn_compat.h says which), and the check that the PRRTE it is
 * loaded into is the one its headers describe.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* dladdr1 */
#endif
#include "odls_pspawn_compat.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include "src/event/event-internal.h"
#include "src/hwloc/hwloc-internal.h"
#include "src/mca/base/pmix_mca_base_var.h"
#include "src/mca/rmaps/rmaps_types.h"
#include "src/runtime/prte_globals.h"
#include "src/util/attr.h"

int pspawn_construct_and_launch(pmix_data_buffer_t *data, pmix_nspace_t *job,
                                prte_odls_base_fork_local_proc_fn_t fork)
{
#if PSPAWN_PRTE_AT_LEAST(5, 0)
    return prte_odls_base_default_construct_child_list(data, job, fork);
#else
    int rc = prte_odls_base_default_construct_child_list(data, job);
    if (PRTE_SUCCESS == rc)
        PRTE_ACTIVATE_LOCAL_LAUNCH(*job, fork);
    return rc;
#endif
}

bool pspawn_job_bool(prte_job_t *jdata, prte_attribute_key_t key)
{
    /* PRRTE 5.0.0rc1 keeps boolean attributes apart: its prte_get_attribute
     * refuses PMIX_BOOL ("Bad parameter"), and prte_get_bool_attribute
     * answers 0 (unset), 1 (false) or 2 (true), as its callers read it.
     * Neither 3.0 nor the 5.0.0a1 source has that function: looked up. */
    int (*get_bool)(pmix_list_t *, prte_attribute_key_t);
    *(void **)&get_bool = dlsym(RTLD_DEFAULT, "prte_get_bool_attribute");
    if (NULL != get_bool)
        return 2 == get_bool(&jdata->attributes, key);
    return prte_get_attribute(&jdata->attributes, key, NULL, PMIX_BOOL);
}

bool pspawn_signal_direct_children_only(void)
{
#if PSPAWN_PRTE_AT_LEAST(5, 0)
    /* By the MCA variable's name: PRRTE 5.0.0rc1's prte_odls_globals is laid
     * out otherwise than in the nearest source there is (5.0.0a1). */
    const bool *value = NULL;
    int index = pmix_mca_base_var_find("prte", "odls", "base", "signal_direct_children_only");
    return index >= 0 && PMIX_SUCCESS == pmix_mca_base_var_get_value(index, &value, NULL, NULL) &&
           NULL != value && *value;
#else
    return prte_odls_globals.signal_direct_children_only;
#endif
}

#if PSPAWN_PRTE_BINDS_IN_PARENT
/* Whether set_mempolicy(MODE, MASK, MAXNODE) works here, tried on this
 * thread and undone: the default's child finds out in the child and may go
 * on without it (a container's seccomp answers EPERM), where a task's
 * refused policy would fail its spawn. */
static int try_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
    unsigned long own[1024 / (8 * sizeof(unsigned long))];
    int own_mode, err = 0;
    if (0 != syscall(SYS_get_mempolicy, &own_mode, own, 1024UL, NULL, 0UL))
        return errno;
    if (0 != syscall(SYS_set_mempolicy, mode, mask, maxnode))
        err = errno;
    /* (set_mempolicy reads one bit less than it is told) */
    syscall(SYS_set_mempolicy, own_mode, own, 1025UL);
    return err;
}

/* What the default's child does with the prepared binding
 * (prte_odls_base_set), turned into attributes; the messages are those
 * its parent renders from the child's report. */
int pspawn_prepared_binding(prte_odls_spawn_caddy_t *cd, cpu_set_t *set, int *have,
                            pspawn_attr_t *attr)
{
    prte_job_t *jdata = cd->jdata;
    *have = 0;
    if (cd->bind_fatal) {
        pspawn_show_help("help-prte-odls-default.txt", "binding generic error", true,
                         prte_process_info.nodename, cd->app->app, "bad cpuset");
        return -1;
    }
    if (NULL == cd->bind_cpuset)
        return 0;
    CPU_ZERO(set);
    if (0 != hwloc_cpuset_to_glibc_sched_affinity(prte_hwloc_topology, cd->bind_cpuset, set,
                                                  sizeof *set) ||
        0 == CPU_COUNT(set)) {
        if (PRTE_BINDING_POLICY_IS_SET(jdata->map->binding)) {
            if (PRTE_BINDING_REQUIRED(jdata->map->binding)) {
                pspawn_show_help("help-prte-odls-default.txt", "binding generic error", true,
                                 prte_process_info.nodename, cd->app->app, strerror(EINVAL));
                return -1;
            }
            pspawn_show_help("help-prte-odls-default.txt", "not bound", true,
                             prte_process_info.nodename, cd->app->app, strerror(EINVAL));
        }
        return 0;
    }
    *have = 1;
    if (!cd->do_membind)
        return 0;
    int err = cd->membind_prep_errno;
    if (0 == err)
        err = try_mempolicy(cd->membind_mode, cd->membind_nodemask, cd->membind_maxnode);
    /* membind_maxnode is what set_mempolicy(2) is given: one more than
     * the bits in membind_nodemask. */
    if (0 == err &&
        0 != pspawn_attr_setmempolicy(attr, cd->membind_mode, cd->membind_nodemask,
                                      cd->membind_maxnode ? cd->membind_maxnode - 1 : 0))
        err = EINVAL;
    if (0 == err || !PRTE_BINDING_POLICY_IS_SET(jdata->map->binding) ||
        PRTE_HWLOC_BASE_MAP_NONE == prte_hwloc_base_map ||
        PRTE_HWLOC_BASE_MBFA_SILENT == prte_hwloc_base_mbfa)
        return 0;
    if (PRTE_HWLOC_BASE_MBFA_ERROR == prte_hwloc_base_mbfa) {
        pspawn_show_help("help-prte-odls-default.txt", "memory binding error", true,
                         prte_process_info.nodename, cd->app->app, strerror(err));
        return -1;
    }
    pspawn_show_help("help-prte-odls-default.txt", "memory not bound", true,
                     prte_process_info.nodename, cd->app->app, strerror(err));
    return 0;
}
#endif

/* ---- the installed PRRTE against our headers ----------------------------- */

/* PRRTE records each class's instance size; a class it does not export
 * (3.0 keeps some hidden) is not checked. */
#pragma weak prte_odls_spawn_caddy_t_class
#pragma weak prte_proc_t_class
#pragma weak prte_job_t_class
#pragma weak prte_app_context_t_class
#pragma weak prte_job_map_t_class
#pragma weak prte_odls_launch_local_t_class

/* The size of the library's data object at ADDR, from its symbol; 0 if
 * unknown. */
static size_t object_size(const void *addr)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (NULL == addr || 0 == dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) ||
        NULL == sym || info.dli_saddr != addr)
        return 0;
    return (size_t)sym->st_size;
}

const char *pspawn_prte_abi_mismatch(void)
{
    static char why[256];
    const struct {
        const char *name;
        size_t ours, theirs;
    } shared[] = {
#define CLASS(t) { #t, sizeof(t), NULL != &t##_class ? t##_class.cls_sizeof : 0 }
        CLASS(prte_odls_spawn_caddy_t),
        CLASS(prte_proc_t),
        CLASS(prte_job_t),
        CLASS(prte_app_context_t),
        CLASS(prte_job_map_t),
        CLASS(prte_odls_launch_local_t),
#undef CLASS
#define GLOBAL(v) { #v, sizeof v, object_size(&v) }
        GLOBAL(prte_process_info),
#if !PSPAWN_PRTE_AT_LEAST(5, 0)     /* not read there */
        GLOBAL(prte_odls_globals),
#endif
#undef GLOBAL
    };
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        if (0 != shared[i].theirs && shared[i].ours != shared[i].theirs) {
            snprintf(why, sizeof why,
                     "%s is %zu bytes in the PRRTE %d.%d headers it was built against, %zu "
                     "in the PRRTE it is loaded into",
                     shared[i].name, shared[i].ours, PRTE_MAJOR_VERSION, PRTE_MINOR_VERSION,
                     shared[i].theirs);
            return why;
        }
    }
    return NULL;
}

/* A copy of the rank's stdout kept open for a moment after its launch.
 * The event lives in it (prte_event_assign: PRRTE 3.0.8's libprrte
 * declares prte_event_new but has none). */
struct held_output {
    prte_event_t ev;
    int fd;
};

static void release_output(int sd, short flags, void *arg)
{
    (void)sd;
    (void)flags;
    struct held_output *h = arg;
    close(h->fd);
    free(h);
}

void pspawn_hold_output(prte_odls_spawn_caddy_t *cd, unsigned ms)
{
    if (NULL == cd->child || !PRTE_FLAG_TEST(cd->jdata, PRTE_JOB_FLAG_FORWARD_OUTPUT))
        return;
    struct held_output *h = malloc(sizeof *h);
    if (NULL == h)
        return;
    h->fd = fcntl(cd->opts.p_stdout[1], F_DUPFD_CLOEXEC, 3);
    if (h->fd < 0) {
        free(h);
        return;
    }
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
    if (0 != prte_event_evtimer_set(prte_event_base, &h->ev, release_output, h) ||
        0 != prte_event_evtimer_add(&h->ev, &tv)) {
        close(h->fd);
        free(h);
    }
}

/* One timer for pspawn_after: odls_pspawn_reuse dvm's idle clock. */
static struct {
    prte_event_t ev;
    void (*fn)(void);
    int armed;
} after;

static void after_fired(int sd, short flags, void *arg)
{
    (void)sd;
    (void)flags;
    (void)arg;
    after.armed = 0;
    after.fn();
}

int pspawn_after(unsigned ms, void (*fn)(void))
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
    after.fn = fn;
    if (0 != prte_event_evtimer_set(prte_event_base, &after.ev, after_fired, NULL) ||
        0 != prte_event_evtimer_add(&after.ev, &tv))
        return -1;
    after.armed = 1;
    return 0;
}

void pspawn_after_cancel(void)
{
    if (after.armed)
        prte_event_evtimer_del(&after.ev);
    after.armed = 0;
}

int pspawn_odls_named(void)
{
    /* The framework's own selection variable (odls=...): PMIx's MCA base
     * keeps its value in the framework structure. */
    const char *sel = prte_odls_base_framework.framework_selection;
    if (NULL == sel || '^' == sel[0])
        return 0;
    for (const char *p = sel; *p;) {
        size_t n = strcspn(p, ",");
        if (6 == n && 0 == strncmp(p, "pspawn", 6))
            return 1;
        p += n + (',' == p[n]);
    }
    return 0;
}
