/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pspawn-shim --job-zygote: start a job's zygote and leave it running.
 *
 * The plugin (spank/pspawn_jobzygote.c, in slurmstepd as root) has put
 * this process into the job's extern step, dropped it to the user's
 * credentials, bound the zygote's lock name as that user and exec'd it.
 * The zygote forked here outlives it: reparented, in the extern step, it
 * serves the stand-ins of this and later steps until it has been idle for
 * the job's limit, is evicted (SIGTERM), or the job ends.
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "shim.h"

int shim_start_job(struct pspawn_standin_client *c, const char *lock_fd, const char *idle_ms)
{
    char *end;
    long fd = lock_fd ? strtol(lock_fd, &end, 10) : -1;
    if (!lock_fd || *end || fd < 3) {
        if (c->log)
            c->log("--job-zygote: no lock (PSPAWN_SHIM_LOCK_FD)");
        return 1;
    }
    long idle = idle_ms ? strtol(idle_ms, &end, 10) : 0;
    c->idle_ms = idle_ms && !*end && idle > 0 ? idle : PSPAWN_DEFAULT_IDLE_S * 1000L;
    /* No task count: it serves every step until it is idle. */
    c->local_tasks = "0";
    return pspawn_standin_start_job(c, (int)fd) == 0 ? 0 : 1;
}
