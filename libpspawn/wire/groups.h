/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Dispatch by CPU binding, the same in the launcher and in a stand-in
 * root zygote: a task goes to the group of CPUs its binding falls in; a
 * binding over several groups (an unbound task has its launcher's whole
 * set) is spread over them in turn; one outside every group, over all.
 */
#ifndef PSPAWN_GROUPS_H
#define PSPAWN_GROUPS_H

#include <stddef.h>

/* Whether the CPU masks A and B (PSPAWN_CPUSET_BYTES each) share a CPU. */
int pspawn_cpus_intersect(const unsigned char *a, const unsigned char *b);

/* The group for a task bound to WANT among N groups whose masks are at
 * MASKS, MASKS + STRIDE, ...; *TURN advances for the spreading. */
int pspawn_pick_group(const unsigned char *want, const unsigned char *masks, size_t stride,
                      int n, unsigned *turn);

#endif
