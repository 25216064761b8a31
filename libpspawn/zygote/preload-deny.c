/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Objects never loaded in a zygote.  The trial (preload.c) refuses what
 * leaves a thread, an fd or a device mapping behind, but not what a
 * constructor does to the process's state otherwise: hooks into malloc
 * or mmap, signal handlers, a random seed, settings read from the
 * environment once.  Done in a zygote, every task shares the zygote's
 * instead of making its own, and the cluster's test nodes have none of
 * these libraries to show it.  So they are named here, each with what
 * its loading does; an object is left out when it, or anything it loads
 * with it, matches a rule.  A rule names a file up to ".so" (any version
 * suffix matches).  PSPAWN_PRELOAD_SKIP adds paths or names at a site.
 */
#include "config.h"

#include <link.h>
#include <string.h>

#include "zygote.h"

/* Read in UCX 1.22 and Open MPI 5.0.9's sources (2026-11-29). */
static const struct deny_rule {
    const char *name, *why;
} rules[] = {
    /* UCX, through Open MPI's pml_ucx, osc_ucx, spml_ucx, btl_uct, its
     * common_ucx library, and UCC's collectives. */
    { "libucs.so", "runs UCX's global init as it loads (ucs_init): it patches mmap and "
      "munmap (UCX_MEM_EVENTS, on by default), reads UCX_* and ucx.conf, installs a "
      "SIGHUP handler and seeds its random numbers for the process" },
    { "libucm.so", "is UCX's memory hook library: the malloc and mmap hooks a task sets "
      "up must be its own" },
    { "libuct.so", "loads UCX's transports and libucs" },
    { "libucp.so", "loads UCX (libucs, libucm)" },
    /* GPU runtimes: through Open MPI's accelerator components (cuda links
     * libcuda, rocm libamdhip64) and any GPU application library. */
    { "libcuda.so", "is the CUDA driver: a context made before a fork is unusable after it" },
    { "libcudart.so", "is the CUDA runtime: a context made before a fork is unusable after it" },
    { "libamdhip64.so", "is the ROCm HIP runtime, which opens the GPU's device files" },
    { "libhsa-runtime64.so", "is the ROCm HSA runtime, which opens the GPU's device files" },
    { "libze_loader.so", "is the Level Zero loader, which loads the GPU driver" },
    /* Named too, in case their libraries are found under other names. */
    { "mca_pml_ucx.so", "is Open MPI's UCX PML (UCX's memory hooks)" },
    { "mca_osc_ucx.so", "is Open MPI's UCX one-sided component (UCX's memory hooks)" },
    { "mca_btl_uct.so", "is Open MPI's UCT BTL (UCX)" },
    { "mca_accelerator_cuda.so", "is Open MPI's CUDA accelerator component (libcuda)" },
    { "mca_accelerator_rocm.so", "is Open MPI's ROCm accelerator component (HIP)" },
};

static const struct deny_rule *matching(const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        size_t len = strlen(rules[i].name);
        if (strncmp(base, rules[i].name, len) == 0 && (base[len] == 0 || base[len] == '.'))
            return &rules[i];
    }
    return NULL;
}

const char *zygote_preload_denied(struct link_map *last, const char **why)
{
    for (struct link_map *lm = last ? last->l_next : NULL; lm; lm = lm->l_next) {
        const struct deny_rule *r = lm->l_name ? matching(lm->l_name) : NULL;
        if (r) {
            if (why)
                *why = r->why;
            return r->name;
        }
    }
    return NULL;
}

const char *zygote_preload_deny_reason(const char *name)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].name, name) == 0)
            return rules[i].why;
    return "";
}
