/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the PRRTE versions the component builds against:
 * 3.0 (Open MPI 5.0's, Debian 13), 4.x, and 5.0 (Debian sid's external
 * PRRTE 5.0.0~rc1).  Read from their sources (openpmix/prrte v3.0.8,
 * v4.0.0, v4.1.0, and master of 2026-08-22, 5.0.0a1):
 *
 *   4.0  the default component is "pdefault" (was "default");
 *   4.1  prte_hwloc_base_cset2str() takes a "physical" flag;
 *   5.0  a component is stamped with PRTE_MCA_BASE_VERSION(odls) (the
 *        framework's version stated in odls.h) and closed with
 *        PMIX_MCA_BASE_COMPONENT_INIT; the base computes each rank's binding
 *        in the parent before the fork function (prte_odls_base_prepare_
 *        binding: cd->bind_cpuset, ->membind_*) and prints --report-bindings
 *        itself; prte_odls_base_default_construct_child_list() takes the
 *        fork function and launches by itself (once this daemon has its
 *        ranks' cpusets); the base's waitpid callback detaches a rank
 *        stopped at exec (--stop-on-exec); a daemon's help messages reach
 *        mpirun through prte_show_help().
 */
#ifndef PRTE_ODLS_PSPAWN_COMPAT_H
#define PRTE_ODLS_PSPAWN_COMPAT_H

#include "prte_config.h"

#include "src/mca/odls/base/base.h"

#define PSPAWN_PRTE_AT_LEAST(major, minor) \
    (PRTE_MAJOR_VERSION > (major) ||       \
     (PRTE_MAJOR_VERSION == (major) && PRTE_MINOR_VERSION >= (minor)))

/* The first member of the component structure. */
#if PSPAWN_PRTE_AT_LEAST(5, 0)
#define PSPAWN_ODLS_BASE_VERSION PRTE_MCA_BASE_VERSION(odls)
#else
#define PSPAWN_ODLS_BASE_VERSION PRTE_ODLS_BASE_VERSION_2_0_0
#endif

/* PRRTE 5: the binding is prepared (and reported) by the base, the
 * stop at exec taken by the base, help relayed to mpirun. */
#define PSPAWN_PRTE_BINDS_IN_PARENT PSPAWN_PRTE_AT_LEAST(5, 0)
#define PSPAWN_PRTE_BASE_DETACHES   PSPAWN_PRTE_AT_LEAST(5, 0)

#if PSPAWN_PRTE_AT_LEAST(5, 0)
#include "src/util/prte_show_help.h"
#define pspawn_show_help prte_show_help
#else
#include "src/util/pmix_show_help.h"
#define pspawn_show_help pmix_show_help
#endif

/* CS as --report-bindings shows it for JDATA. */
#if PSPAWN_PRTE_AT_LEAST(4, 1)
#define pspawn_cset2str(jdata, cs, hwt)                                                        \
    prte_hwloc_base_cset2str((cs), (hwt),                                                  \
                             prte_get_attribute(&(jdata)->attributes,                      \
                                                PRTE_JOB_REPORT_PHYSICAL_CPUS, NULL, PMIX_BOOL), \
                             prte_hwloc_topology)
#else
#define pspawn_cset2str(jdata, cs, hwt) prte_hwloc_base_cset2str((cs), (hwt), prte_hwloc_topology)
#endif

/* Whether the boolean attribute KEY of JDATA is set and true. */
bool pspawn_job_bool(prte_job_t *jdata, prte_attribute_key_t key);

/* odls_base_signal_direct_children_only: whether a signal goes to a rank
 * alone rather than to its process group. */
bool pspawn_signal_direct_children_only(void);

/* Build this daemon's child list from the launch message and have FORK
 * called for each local rank.  Returns a PRTE status. */
int pspawn_construct_and_launch(pmix_data_buffer_t *data, pmix_nspace_t *job,
                                prte_odls_base_fork_local_proc_fn_t fork);

#if PSPAWN_PRTE_BINDS_IN_PARENT
#include <sched.h>

#include "pspawn.h"

/* The rank's binding as the base prepared it in CD, as attributes: the CPU
 * set in SET (*have = 1) and the memory policy in ATTR, or the default's
 * message where its child would have warned, or -1 after the message where
 * its child would have failed. */
int pspawn_prepared_binding(prte_odls_spawn_caddy_t *cd, cpu_set_t *set, int *have,
                            pspawn_attr_t *attr);
#endif

/* PRRTE's prted takes a rank's RUNNING state whenever it arrives, even
 * after the rank's exit was taken (state_prted.c's track_procs sets the
 * state unconditionally), and then reports the rank as running for ever:
 * mpirun hangs.  The base activates RUNNING on the launch thread after the
 * fork function returns, while the exit is taken on the progress thread;
 * a rank that exits at once (seen with /bin/true: 1 job in 250 to 500)
 * can finish first.  The exit counts only once the rank's output is
 * closed too, so a copy of its stdout is kept open for MS ms after the
 * launch, closed by a timer on PRRTE's event base: RUNNING, activated
 * microseconds after the return, is queued long before.  Costs a rank
 * that ends within MS ms of its launch that much in its job's end.
 * Without forwarded output (no IOF), nothing is held. */
void pspawn_hold_output(prte_odls_spawn_caddy_t *cd, unsigned ms);

/* Whether the structures this component shares with PRRTE have the sizes
 * the installed PRRTE gives them (its classes record them).  A component
 * is loaded by PRRTE's MCA version alone, so one built against another
 * PRRTE's headers would be loaded and read fields at the wrong offsets:
 * it refuses to run instead.  Returns NULL or what differs. */
const char *pspawn_prte_abi_mismatch(void);

/* Call FN once, MS ms from now, on PRRTE's event base (one such timer:
 * a later call replaces an earlier one's function).  0, or -1. */
int pspawn_after(unsigned ms, void (*fn)(void));
/* Whether the job named this component (odls pspawn, a list with it):
 * 1; 0 where it was chosen by its priority (a site's default) or by a
 * list that only excludes others ("^default"). */
int pspawn_odls_named(void);

/* The timer of pspawn_after, not to fire (the component's close: its code
 * may be unloaded next). */
void pspawn_after_cancel(void);

#endif
