/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What execve(2) refuses before it loads anything: argument and
 * environment lists too big for the new program's stack.  The library,
 * the stand-ins and the interception library (which runs it in a vfork
 * child: it calls nothing but strlen) check it before they promise a
 * launch that exec would have failed.
 */
#ifndef PSPAWN_EXECARGS_H
#define PSPAWN_EXECARGS_H

#include <stdint.h>

/* E2BIG if execve would refuse ARGV and ENVP for a program whose
 * RLIMIT_STACK is STACK_LIMIT (its soft limit), else 0.  EXTRA_BYTES and
 * EXTRA_PTRS: strings a caller will add (0 for none). */
int pspawn_args_too_big_plus(const char *filename, char *const argv[], char *const envp[],
                             uint64_t stack_limit, unsigned long extra_bytes,
                             unsigned long extra_ptrs);

#endif
