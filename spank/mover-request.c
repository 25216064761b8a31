/* SPDX-License-Identifier: BSD-3-Clause */
/* A shim's request and report, as the mover reads them (pspawn_cgroup.h);
 * fuzzed by tests/fuzz/fuzz-mover.c. */
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

int pspawn_report_decode(const void *buf, size_t len, const char *token,
                         struct pspawn_mover_report *r)
{
    if (len != sizeof *r)
        return EPROTO;
    memcpy(r, buf, sizeof *r);
    if (r->magic != PSPAWN_REPORT_MAGIC || (r->forked != 0 && r->forked != 1) ||
        (r->verbose != 0 && r->verbose != 1) ||
        (r->forked && r->zygote != PSPAWN_ZYGOTE_NEW && r->zygote != PSPAWN_ZYGOTE_JOB) ||
        r->objects < 0 || r->objects > 0x7fff || (r->python != 0 && r->python != 1))
        return EPROTO;
    if (!pspawn_tokens_equal(r->token, token, PSPAWN_MOVER_TOKEN))
        return EPERM;
    r->why[sizeof r->why - 1] = '\0';
    if (r->zygote_start_ms < 0)
        r->zygote_start_ms = 0;
    return 0;
}
