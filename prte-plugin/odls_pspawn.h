/*
 * prte_mca_odls_pspawn: a PRRTE ODLS component that creates each local
 * rank by forking a zygote of the program (libpspawn, direct mode) instead
 * of fork+exec.  Selected with `mpirun --mca odls pspawn`, `--prtemca odls
 * pspawn` or PRTE_MCA_odls=pspawn; its priority (odls_pspawn_priority,
 * default 5) is below the default component's 10, so it is never picked
 * unless asked for or raised by the site.
 */
#ifndef PRTE_ODLS_PSPAWN_H
#define PRTE_ODLS_PSPAWN_H

#include "prte_config.h"

#include "src/mca/mca.h"
#include "src/mca/odls/odls.h"

typedef struct {
    prte_odls_base_component_t super;
    int priority;
} prte_odls_pspawn_component_t;

extern prte_odls_pspawn_component_t prte_mca_odls_pspawn_component;
extern prte_odls_base_module_t prte_odls_pspawn_module;

/* Kill every zygote (component close). */
void prte_odls_pspawn_finalize(void);

#endif
