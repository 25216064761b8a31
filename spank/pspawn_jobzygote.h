/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse=job: a job's zygotes on a node (pspawn_jobzygote.c: which one a
 * step uses, eviction, the clean-up at the job's end; pspawn_jobstart.c: starting
 * one in the job's extern step with the user's credentials).
 */
#ifndef PSPAWN_JOBZYGOTE_H
#define PSPAWN_JOBZYGOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What user_init knows of the step. */
struct pspawn_job_step {
    uid_t uid;
    gid_t gid;
    const gid_t *gids;      /* supplementary groups */
    int ngids;
    uint32_t jobid;
    int argc;
    char **argv;            /* the step's argv, as the user gave it */
    char **env;             /* the step's environment (srun's) */
    const char *options;    /* the step's libpspawn options, as text */
    int max_zygotes;        /* zygotes= */
    int idle_s;             /* idle= */
    const char *shim;       /* pspawn-shim */
    int debug;
};

/*
 * In slurmstepd's user_init: the job's zygote for step S on this node,
 * started now (into the job's extern step) unless one is there.  0 with
 * KEY (what PSPAWN_SHIM_KEY names), TOKEN and WHAT ("reused" or
 * "started"); -1 with WHAT saying why not (the step then uses a zygote
 * of its own).  Never waits more than 10 s.
 */
int pspawn_job_zygote(const struct pspawn_job_step *s, char *key, size_t keylen, char *token,
                      size_t toklen, char *what, size_t wlen);

/* pspawn_jobstart.c, in the job zygote manager (root, one thread): fork
 * the starter of the zygote KEY into the job's extern step, as the user,
 * holding KEY's lock name, and exec it.  0 once it holds the lock, or -1
 * with WHY. */
int pspawn_job_start(const struct pspawn_job_step *s, const char *key, const char *token,
                     char *why, size_t wlen);

/* The job's end on this node (its extern step's slurm_spank_exit, as
 * root): kill what is left of its zygotes and remove its state. */
void pspawn_job_end(uint32_t jobid);

#endif
