/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prte_mca_odls_pspawn: a PRRTE ODLS component that creates each local
 * rank by forking a zygote of the program (libpspawn, direct mode) instead
 * of fork+exec.  Selected with `mpirun --mca odls pspawn`, `--prtemca odls
 * pspawn` or PRTE_MCA_odls=pspawn; its priority (odls_pspawn_priority,
 * default 5) is below the default component's 10, so it is never picked
 * unless asked for or raised by the site.
 *
 * MCA parameters: odls_pspawn_fanout (auto, none, numa, l3, package, core,
 * or N cores per zygote), one per other key of libpspawn's options
 * (odls_pspawn_subzygote, _start, _cgroup, _python, _modules, _preload,
 * _mode), and
 * odls_pspawn_options for words; odls_pspawn_reuse (job, or dvm: a DVM's
 * jobs share a zygote per program), odls_pspawn_idle and
 * odls_pspawn_zygotes for a DVM's, odls_pspawn_verbose (1: each node says
 * in one line how it started a job's ranks), e.g.
 * `mpirun --mca odls pspawn --mca odls_pspawn_fanout l3`.
 */
#ifndef PRTE_ODLS_PSPAWN_H
#define PRTE_ODLS_PSPAWN_H

/* odls_pspawn_subzygote, _start, _cgroup, _python, _modules, _preload, _mode */
#define PSPAWN_MCA_KEYS 7

#include "prte_config.h"

#include "src/mca/mca.h"
#include "src/mca/odls/odls.h"

typedef struct {
    prte_odls_base_component_t super;
    int priority;
    /* odls_pspawn_fanout and odls_pspawn_options: libpspawn's options
     * (pspawn(3), pspawn_context_create_opts), fanout=FANOUT first. */
    char *fanout;
    char *keys[PSPAWN_MCA_KEYS];
    char *options;
    /* odls_pspawn_reuse (job or dvm), _idle (s) and _zygotes: the zygotes
     * kept across the jobs of a DVM (odls_pspawn_zygotes.c). */
    char *reuse;
    int idle;
    int zygotes;
    /* odls_pspawn_verbose: each node's line per job (odls_pspawn_tally.c) */
    int verbose;
    /* odls_pspawn_auto_objects: where no one named the component (a site
     * made it the default by its priority), the least objects a program
     * must load for its ranks to be forked (odls_pspawn_zygotes.c). */
    int auto_objects;
} prte_odls_pspawn_component_t;

extern prte_odls_pspawn_component_t prte_mca_odls_pspawn_component;
extern prte_odls_base_module_t prte_odls_pspawn_module;

/* Kill every zygote (component close). */
void prte_odls_pspawn_finalize(void);

#endif
