/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node's zygotes in prted (odls_pspawn_zygotes.c): one per program and
 * job, or, with odls_pspawn_reuse dvm, one per program shared by the jobs
 * of a persistent DVM (prte; prun per job), at most odls_pspawn_zygotes
 * of them, each ending after odls_pspawn_idle seconds without a rank.
 */
#ifndef PRTE_ODLS_PSPAWN_ZYGOTES_H
#define PRTE_ODLS_PSPAWN_ZYGOTES_H

#include <sys/stat.h>
#include <time.h>

#include "pspawn.h"
#include "worth.h"

#include "src/mca/odls/base/base.h"

struct zygote {
    char *cmd;
    pmix_nspace_t job;      /* the job that started it */
    pspawn_context_t ctx;
    int err;                /* the program's exec error, or 0 */
    char *why;              /* what was wrong with the MCA parameters, or NULL */
    struct stat prog;       /* the program when it started (dev, ino, mtime) */
    double last_used;       /* CLOCK_MONOTONIC s: its last rank */
    /* Where the site made pspawn the default and the job did not name it:
     * why its ranks are exec'd (no context then), or NULL; and what the
     * user's table knew of the program, which its zygote then teaches. */
    char *plain;
    int auto_rule, learned;
    struct pspawn_worth worth;
};

/* prted spawns ranks from several threads (odls_base_num_threads) and a
 * libpspawn context serves one thread at a time: one lock for all, held
 * around each use of a zygote. */
void pspawn_zygotes_lock(void);
void pspawn_zygotes_unlock(void);

/* The program as execve in the rank's working directory finds it (a new
 * string, or NULL). */
char *pspawn_program_path(prte_odls_spawn_caddy_t *cd);

/* The zygote that forks CD's rank of JOB, started if need be (NULL: no
 * memory).  Locked. */
struct zygote *pspawn_zygote_for(prte_odls_spawn_caddy_t *cd, const pmix_nspace_t job);

/* After a rank of Z forked: its zygote's count of objects, taught to the
 * user's table where Z's program was chosen by the auto rule.  Locked. */
void pspawn_zygote_learn(struct zygote *z);

/* At each launch: stop the zygotes of jobs that are gone (odls_pspawn_reuse
 * job), or those idle for odls_pspawn_idle seconds (dvm).  Locked. */
void pspawn_zygotes_forget(void);

#endif
