/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "groups.h"
#include "protocol.h"

int pspawn_cpus_intersect(const unsigned char *a, const unsigned char *b)
{
    for (size_t i = 0; i < PSPAWN_CPUSET_BYTES; i += sizeof(uint64_t)) {
        uint64_t x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        if (x & y)
            return 1;
    }
    return 0;
}

int pspawn_pick_group(const unsigned char *want, const unsigned char *masks, size_t stride,
                      int n, unsigned *turn)
{
    int hits = 0, last = 0;
    for (int g = 0; g < n; g++)
        if (pspawn_cpus_intersect(want, masks + (size_t)g * stride)) {
            hits++;
            last = g;
        }
    if (hits == 1 || n <= 1)
        return last;
    unsigned k = (*turn)++ % (unsigned)(hits ? hits : n);
    for (int g = 0; g < n; g++)
        if ((!hits || pspawn_cpus_intersect(want, masks + (size_t)g * stride)) && k-- == 0)
            return g;
    return 0;
}
