/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote handle (internal.h): what the launch engine may change of a
 * context's zygotes, its only way to them: route a task, number a
 * request, note a server's life, check that the zygotes still stand for
 * the program and the caller, start a new root after a replaced library,
 * and hold them for one launch at a time.  It calls only the process mechanics (zygote.c, zygote-end.c),
 * never the engine or the context's API.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "internal.h"

int pspawn_zygote_restart(struct pspawn_zygote *z)
{
    pspawn_debug(z, "starting a new zygote: a library the last one loaded was replaced on disk");
    pspawn_zygote_stop(z);
    z->stale = 0;
    z->fallback = 0;
    z->python = 0;
    z->pip = 0;
    z->pip_refusal = 0;
    z->replica_dir[0] = 0;
    /* Its tasks get the caller's privileges of now (the new zygote's),
     * which later calls are checked against. */
    int err = pspawn_creds_get(&z->creds);
    if (err) {
        pspawn_fallback(z, 1, "cannot read the caller's credentials: %s", strerror(err));
        return 0;
    }
    err = pspawn_zygote_start(z, z->start_core, z->start_env);
    if (err) {
        pspawn_zygote_stop(z);
        pspawn_fallback(z, 1, "no new zygote: %s", strerror(err));
    }
    return err;
}


int pspawn_zygote_route(struct pspawn_zygote *z, const unsigned char *cpus)
{
    return z->servers && !z->fallback ? pspawn_server_for(z, cpus) : -1;
}

uint32_t pspawn_zygote_next_id(struct pspawn_zygote *z)
{
    return ++z->next_req;
}

void pspawn_zygote_heard(struct pspawn_zygote *z, int s, int created)
{
    z->servers[s].progress_ms = pspawn_now_ms();
    if (created)
        z->servers[s].tasks++;
}

int pspawn_zygote_current(struct pspawn_zygote *z)
{
    if (pspawn_program_changed(&z->prog)) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "binary changed on disk since the zygote started "
                        "(device, inode, size or mtime differ)");
        return 0;
    }
    /* A caller that gave up privileges (dropped root, groups, a
     * capability) must not get tasks that still have them. */
    struct pspawn_creds now;
    const char *what = NULL;
    if (pspawn_creds_get(&now) || (what = pspawn_creds_differ(&now, &z->creds))) {
        pspawn_zygote_lost(z, 1);
        pspawn_fallback(z, 1, "the caller's %s changed since the zygote started",
                        what ? what : "credentials (unreadable)");
        return 0;
    }
    return 1;
}

int pspawn_zygote_claim(struct pspawn_zygote *z, const void *launch)
{
    if (z->in_use && z->in_use != launch)
        return EBUSY;
    z->in_use = launch;
    return 0;
}

void pspawn_zygote_release(struct pspawn_zygote *z, const void *launch)
{
    if (z->in_use == launch)
        z->in_use = NULL;
}
