/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memfds a launcher sends its zygote (a request, its go block, a
 * fan-out): sealed against shrinking and growing, so that a receiver that
 * checked their size can map them without a SIGBUS.
 */
#ifndef PSPAWN_MEMFD_H
#define PSPAWN_MEMFD_H

#include <stddef.h>

/* A new memfd NAME of SIZE bytes (close-on-exec), sealed against resizing,
 * mapped shared and writable.  Returns the mapping with its fd in *FD, or
 * NULL with errno set. */
void *pspawn_memfd_create(const char *name, size_t size, int *fd);

/* Whether FD is sealed against resizing and holds SIZE bytes (exactly, or
 * at least with EXACT 0): 0, or EINVAL. */
int pspawn_memfd_check(int fd, size_t size, int exact);

#endif
