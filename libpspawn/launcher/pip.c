/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode=pip, launcher side: what a context's root makes.  (The calls a PiP
 * task makes are in pip-peer.c.)
 */
#include "config.h"

#include "internal.h"

int pspawn_context_mode(const pspawn_context_t *ctx, const char **why)
{
    const struct pspawn_zygote *z = ctx ? ctx->impl : NULL;
    if (why)
        *why = NULL;
    if (!z)
        return PSPAWN_MODE_FORK;
    if (z->pip)
        return PSPAWN_MODE_PIP;
    if (why && z->opts.pip)
        *why = z->fallback ? (z->have_reason ? z->reason : "the context execs its tasks")
               : z->pip_refusal ? pspawn_pip_refusal_text((unsigned)z->pip_refusal)
                                : "its zygote has not started";
    return PSPAWN_MODE_FORK;
}

