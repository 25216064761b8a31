/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode=pip, in a PiP task: its rank, and the address of another task's
 * variable, through its root's registry (wire/pipreg.h).  It runs in the
 * task's own copy of libpspawn, in the task's namespace.  Needs nothing
 * else of the library: the tests build it into a task program as is.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pipreg.h"
#include "protocol.h"
#include "pspawn.h"

/* This task's rank and its root's registry, from PSPAWN_ENV_PIP_TASK;
 * NULL when this process is not a PiP task. */
static struct pip_registry *registry(int *rank)
{
    const char *v = getenv(PSPAWN_ENV_PIP_TASK);
    unsigned long long addr = 0;
    int r = -1, end = 0;
    if (!v || sscanf(v, "%d:%llx%n", &r, &addr, &end) != 2 || v[end] || r < 0 || !addr)
        return NULL;
    struct pip_registry *reg = (struct pip_registry *)(uintptr_t)addr;
    /* The variable names an address in our own address space only if we
     * are that root's task; a copied environment would point elsewhere. */
    if (r >= PSPAWN_PIP_SLOTS || atomic_load(&reg->slot[r].pid) != (int32_t)getpid() ||
        reg->magic != PSPAWN_PIP_MAGIC)
        return NULL;
    *rank = r;
    return reg;
}

int pspawn_pip_rank(void)
{
    int rank = -1;
    return registry(&rank) ? rank : -1;
}

void *pspawn_pip_get_addr(int rank, const char *symbol)
{
    int me = -1;
    struct pip_registry *reg = registry(&me);
    if (!reg) {
        errno = ENOTSUP;
        return NULL;
    }
    if (!symbol || rank < 0 || rank >= PSPAWN_PIP_SLOTS || (uint32_t)rank >= atomic_load(&reg->next)) {
        errno = EINVAL;
        return NULL;
    }
    switch (atomic_load(&reg->slot[rank].state)) {
    case PIP_SLOT_RUNNING:
        break;
    case PIP_SLOT_LOADING:
        errno = EAGAIN;
        return NULL;
    default:
        errno = ESRCH;
        return NULL;
    }
    void *h = atomic_load(&reg->slot[rank].handle);
    dlerror();
    void *addr = dlsym(h, symbol);
    if (!addr && dlerror())
        errno = ENOENT;
    return addr;
}
