/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What this kernel lacks of what libpspawn uses, each with what it costs,
 * asked of the kernel itself (never of uname: a seccomp filter, a
 * container or a vendor kernel with backports answers for itself).  Said
 * by the Slurm plugin when slurmd starts (README.md, "Requirements").
 */
#ifndef PSPAWN_KERNEL_H
#define PSPAWN_KERNEL_H

#include <stddef.h>

/* Up to MAX sentences, one per missing feature, into GAPS (static text:
 * "no pidfd_open (Linux 5.3): ..."); returns how many. */
size_t pspawn_kernel_gaps(const char *gaps[], size_t max);

#endif
