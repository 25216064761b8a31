/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry of a PiP root (mode=pip): one page in the root's address
 * space, which every PiP task shares, saying for each rank which process
 * it is and which link-map namespace holds its program.  The root's proxy
 * (zygote/pip.c) fills it; pspawn_pip_get_addr() in a task reads it, from
 * the task's own copy of libpspawn.  Each task finds it through
 * PSPAWN_ENV_PIP_TASK ("RANK:ADDRESS") in its environment.
 */
#ifndef PSPAWN_PIPREG_H
#define PSPAWN_PIPREG_H

#include <stdatomic.h>
#include <stdint.h>

#define PSPAWN_PIP_MAGIC 0x50695052u     /* "PiPR" */
/* Ranks a root hands out over its life; a root holds at most 15 loaded
 * namespaces, the rest of its tasks are exec'd (no address to find). */
#define PSPAWN_PIP_SLOTS 64

enum pip_slot_state {
    PIP_SLOT_FREE = 0,
    PIP_SLOT_LOADING = 1,   /* created, its program not loaded yet */
    PIP_SLOT_RUNNING = 2,   /* loaded: HANDLE is its namespace's program */
    PIP_SLOT_EXECD = 3,     /* fell back to exec: another address space */
};

struct pip_slot {
    _Atomic int state;
    _Atomic int32_t pid;
    void *_Atomic handle;   /* dlmopen's handle, set before state RUNNING */
};

struct pip_registry {
    uint32_t magic;
    _Atomic uint32_t next;          /* the next rank */
    _Atomic int32_t load_owner;     /* the pid of the task whose loader runs, or 0 */
    struct pip_slot slot[PSPAWN_PIP_SLOTS];
};

#endif
