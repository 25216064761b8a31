/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component: version, open/close, the priority parameter, query.
 * Loaded by PRRTE's MCA base as prte_mca_odls_pspawn.so from its component
 * directory; it looks up prte_mca_odls_pspawn_component, the only symbol
 * exported.
 */
#include "odls_pspawn.h"

#include "src/mca/base/pmix_base.h"
#include "src/mca/odls/base/base.h"
#include "src/runtime/prte_globals.h"
#include "src/util/name_fns.h"

#include "odls_pspawn_compat.h"
#include "worth.h"

static int pspawn_register(void);
static int pspawn_open(void);
static int pspawn_close(void);
static int pspawn_query(pmix_mca_base_module_t **module, int *priority);

prte_odls_pspawn_component_t prte_mca_odls_pspawn_component = {
    .super = {
        PSPAWN_ODLS_BASE_VERSION,
        .pmix_mca_component_name = "pspawn",
        PMIX_MCA_BASE_MAKE_VERSION(component, PRTE_MAJOR_VERSION, PRTE_MINOR_VERSION,
                                   PMIX_RELEASE_VERSION),
        .pmix_mca_open_component = pspawn_open,
        .pmix_mca_close_component = pspawn_close,
        .pmix_mca_query_component = pspawn_query,
        .pmix_mca_register_component_params = pspawn_register,
    },
    .priority = 5,
};
#ifdef PMIX_MCA_BASE_COMPONENT_INIT
/* PRRTE 5's components end with this (a pointer PRRTE's static component
 * lists use; the loader of a DSO looks up the structure itself). */
PMIX_MCA_BASE_COMPONENT_INIT(prte, odls, pspawn)
#endif

static int pspawn_register(void)
{
    pmix_mca_base_component_t *c = &prte_mca_odls_pspawn_component.super;
    prte_mca_odls_pspawn_component.priority = 5;
    (void)pmix_mca_base_component_var_register(
        c, "priority",
        "Priority of the pspawn ODLS component (the default component has 10: "
        "pspawn is used when selected with --mca odls pspawn, or when a site "
        "raises this above 10)",
        PMIX_MCA_BASE_VAR_TYPE_INT, &prte_mca_odls_pspawn_component.priority);
    prte_mca_odls_pspawn_component.fanout = "auto";
    (void)pmix_mca_base_component_var_register(
        c, "fanout",
        "How the node's CPUs are split among forking zygotes: auto (a zygote per few cores "
        "within each NUMA node and L3 cache where the node has more than 3 cores), none (one "
        "zygote), numa, l3, package, core, or a number of cores per zygote",
        PMIX_MCA_BASE_VAR_TYPE_STRING, &prte_mca_odls_pspawn_component.fanout);
    /* One parameter per key: PRRTE 3.0 forwards a parameter's value to
     * the prteds cut at its first '=', so "key=value" lists do not arrive. */
    static const char *const keys[PSPAWN_MCA_KEYS][2] = {
        { "subzygote", "How sub-zygotes are made: exec (default), fork, replicate, cgroup" },
        { "start", "When sub-zygotes are made: eager (default) or lazy" },
        { "cgroup", "The cgroup v2 directory under which subzygote=cgroup makes its cgroups" },
        { "python", "auto (default): a Python interpreter's zygote imports the preload modules "
                    "and parks inside it; off: it parks before main" },
        { "modules", "The modules a warm Python zygote imports, colon-separated "
                     "(default: those earlier ranks of the script imported)" },
        { "preload", "What the zygote dlopens before it parks: off (default), auto (what earlier "
                     "ranks loaded after main), or the absolute path of a list" },
        { "mode", "fork (default): each rank a fork of the node's zygote; pip: Process-in-"
                  "Process, ranks in one address space, each with its own copy of the program "
                  "(at most 15 per node; programs that link an MPI library are refused: "
                  "pspawn(1))" },
    };
    for (int i = 0; i < PSPAWN_MCA_KEYS; i++) {
        prte_mca_odls_pspawn_component.keys[i] = "";
        (void)pmix_mca_base_component_var_register(c, keys[i][0], keys[i][1],
                                                   PMIX_MCA_BASE_VAR_TYPE_STRING,
                                                   &prte_mca_odls_pspawn_component.keys[i]);
    }
    prte_mca_odls_pspawn_component.options = "";
    (void)pmix_mca_base_component_var_register(
        c, "options",
        "libpspawn's options, comma-separated (pspawn(3)), after the other parameters; "
        "words only (on, off, auto): a KEY=VALUE here does not reach the prteds, use "
        "odls_pspawn_KEY",
        PMIX_MCA_BASE_VAR_TYPE_STRING, &prte_mca_odls_pspawn_component.options);
    prte_mca_odls_pspawn_component.reuse = "job";
    (void)pmix_mca_base_component_var_register(
        c, "reuse",
        "job (default): a zygote per program and job; dvm: the jobs of a persistent DVM "
        "(prte, prun) share a zygote per program (same path, inode and mtime)",
        PMIX_MCA_BASE_VAR_TYPE_STRING, &prte_mca_odls_pspawn_component.reuse);
    prte_mca_odls_pspawn_component.idle = 300;
    (void)pmix_mca_base_component_var_register(
        c, "idle", "odls_pspawn_reuse dvm: seconds without a rank after which a zygote stops",
        PMIX_MCA_BASE_VAR_TYPE_INT, &prte_mca_odls_pspawn_component.idle);
    prte_mca_odls_pspawn_component.zygotes = 4;
    (void)pmix_mca_base_component_var_register(
        c, "zygotes",
        "odls_pspawn_reuse dvm: zygotes kept per node (the least recently used stops first)",
        PMIX_MCA_BASE_VAR_TYPE_INT, &prte_mca_odls_pspawn_component.zygotes);
    prte_mca_odls_pspawn_component.verbose = 0;
    (void)pmix_mca_base_component_var_register(
        c, "verbose",
        "1: each node prints one line per job once its ranks are started: how many were "
        "forked, how many exec'd and why, and which zygote served them (pspawn-odls(7))",
        PMIX_MCA_BASE_VAR_TYPE_INT, &prte_mca_odls_pspawn_component.verbose);
    prte_mca_odls_pspawn_component.auto_objects = -1;
    (void)pmix_mca_base_component_var_register(
        c, "auto_objects",
        "Where pspawn is the site's default (this component's priority above the default's) "
        "and the job did not name it (odls pspawn): a program's ranks are forked only if it "
        "loaded at least this many objects in its last zygote, or is a Python interpreter, "
        "and only where a node runs 2 ranks or more (or odls_pspawn_reuse dvm); 0: always; "
        "-1 (default): as measured, 100 for a zygote of the job's own, 40 for a DVM's",
        PMIX_MCA_BASE_VAR_TYPE_INT, &prte_mca_odls_pspawn_component.auto_objects);
    return PRTE_SUCCESS;
}

static int pspawn_open(void)
{
    return PRTE_SUCCESS;
}

static int pspawn_close(void)
{
    prte_odls_pspawn_finalize();
    return PRTE_SUCCESS;
}

static int pspawn_query(pmix_mca_base_module_t **module, int *priority)
{
    /* The ODLS base opens its components in daemons only.  One built
     * against other PRRTE headers would read the wrong fields: not used. */
    const char *mismatch = pspawn_prte_abi_mismatch();
    if (NULL != mismatch) {
        pmix_output(0, "%s odls:pspawn: not used: %s; rebuild it against the installed PRRTE's "
                    "own source", PRTE_NAME_PRINT(PRTE_PROC_MY_NAME), mismatch);
        *module = NULL;
        *priority = -1;
        return PRTE_ERROR;
    }
    *priority = prte_mca_odls_pspawn_component.priority;
    *module = (pmix_mca_base_module_t *)&prte_odls_pspawn_module;
    return PRTE_SUCCESS;
}
