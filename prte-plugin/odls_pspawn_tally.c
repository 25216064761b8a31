/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * odls_pspawn_verbose: once every local rank of a job has been started on
 * this node, prted sends mpirun the node's line (tally.h), the same line that
 * `srun --pspawn=verbose` and `pspawn -v` print: how many ranks were
 * forked, how many exec'd and why, and which zygote served them.
 */
#include "odls_pspawn.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tally.h"

#include "odls_pspawn_tally.h"

#include "src/runtime/prte_globals.h"
#include "src/util/pmix_show_help.h"

/* The jobs whose ranks are being started here; a job whose ranks are all
 * said leaves its slot. */
#define JOBS 16
static struct {
    int used;
    pmix_nspace_t job;
    struct pspawn_tally tally;
} jobs[JOBS];
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;

void pspawn_job_tally(const pmix_nspace_t job, unsigned local_ranks, int forked, int kind,
                      long long zygote_start_ms, const char *why)
{
    if (!prte_mca_odls_pspawn_component.verbose)
        return;
    pthread_mutex_lock(&jobs_lock);
    int at = -1;
    for (int i = 0; i < JOBS && at < 0; i++)
        if (jobs[i].used && PMIX_CHECK_NSPACE(jobs[i].job, job))
            at = i;
    for (int i = 0; i < JOBS && at < 0; i++)
        if (!jobs[i].used) {
            at = i;
            jobs[i].used = 1;
            PMIX_LOAD_NSPACE(jobs[i].job, job);
            pspawn_tally_init(&jobs[i].tally, local_ranks);
        }
    if (at >= 0) {
        struct pspawn_tally *t = &jobs[at].tally;
        if (forked)
            pspawn_tally_forked(t, kind, zygote_start_ms);
        else
            pspawn_tally_exec(t, 1, why);
        if (t->forked + t->exec >= t->tasks) {
            char scope[PMIX_MAX_NSLEN + 8], line[800];
            snprintf(scope, sizeof scope, "job=%s", jobs[at].job);
            pspawn_tally_format(t, prte_process_info.nodename, scope, line, sizeof line);
            /* prted's own stderr is dropped unless --leave-session-attached;
             * a rendered help message reaches mpirun.  Its topic is the
             * line's node and job: PRRTE folds messages of one topic from
             * several daemons into one. */
            char topic[PMIX_MAX_NSLEN + 300];
            snprintf(topic, sizeof topic, "verbose %s %s", prte_process_info.nodename, scope);
            size_t n = strlen(line);
            if (n + 1 < sizeof line) {
                line[n] = '\n';
                line[n + 1] = '\0';
            }
            pmix_show_help_norender("help-odls-pspawn.txt", topic, line);
            jobs[at].used = 0;
        }
    }
    pthread_mutex_unlock(&jobs_lock);
}
