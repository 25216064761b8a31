/* SPDX-License-Identifier: BSD-3-Clause */
/* odls_pspawn_verbose: the node's line per job (odls_pspawn_tally.c). */
#ifndef PRTE_ODLS_PSPAWN_TALLY_H
#define PRTE_ODLS_PSPAWN_TALLY_H

/* One of JOB's LOCAL_RANKS ranks on this node started: FORKED by a zygote
 * of KIND (tally.h) that started at ZYGOTE_START_MS, or exec'd (or failed)
 * for WHY.  With odls_pspawn_verbose, the last sends the job's line to
 * mpirun, which prints it. */
void pspawn_job_tally(const pmix_nspace_t job, unsigned local_ranks, int forked, int kind,
                      long long zygote_start_ms, const char *why);

#endif
