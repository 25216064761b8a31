/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 64-bit FNV-1a, fed piece by piece: what names zygotes and cache files
 * after the identity of a program (a name, never a secret).
 */
#ifndef PSPAWN_HASH_H
#define PSPAWN_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PSPAWN_HASH_INIT UINT64_C(14695981039346656037)

static inline void pspawn_hash(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= UINT64_C(1099511628211);
    }
}

#endif
