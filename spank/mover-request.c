/* SPDX-License-Identifier: BSD-3-Clause */
/* A shim's request, as the mover reads it (pspawn_cgroup.h); fuzzed by
 * tests/fuzz/fuzz-mover.c. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "protocol.h"
#include "pspawn_cgroup.h"

int pspawn_mover_decode(const void *buf, size_t len, const char *token, pid_t *pid)
{
    struct pspawn_mover_req q;
    if (len != sizeof q)
        return EPROTO;
    memcpy(&q, buf, sizeof q);
    if (q.magic != PSPAWN_MOVER_MAGIC)
        return EPROTO;
    if (!pspawn_tokens_equal(q.token, token, PSPAWN_MOVER_TOKEN))
        return EPERM;
    *pid = (pid_t)q.pid;
    return 0;
}
