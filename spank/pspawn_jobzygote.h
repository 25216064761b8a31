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
    const char *job_extern; /* the job's extern step's cgroups (pspawn_job_extern) */
};

/* The job's extern step, as this slurmstepd's own cgroups show it
 * (pspawn_cg_job_extern: never found by a job number, so a job folder
 * named by Slurm 26.05's SLUID does as well), malloc'd; NULL where they
 * name no step of a job. */
char *pspawn_job_extern(void);

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
 * with WHY.  MADE (MLEN bytes): the cgroup folder it had to make in the
 * extern step (Slurm 26.05 on cgroup v2), which the job's end removes;
 * "" where it made none. */
int pspawn_job_start(const struct pspawn_job_step *s, const char *key, const char *token,
                     char *made, size_t mlen, char *why, size_t wlen);

/* The job's end on this node (its extern step's slurm_spank_exit, as
 * root): kill what is left of its zygotes and remove its state. */
void pspawn_job_end(uint32_t jobid);

/* pspawn_jobstate.c: the job's state and the manager's answer, as text.
 * A zygote's key "job.UID.JOBID.NONCE.HASH" (16 hex digits each): 0 with
 * *UID and *JOBID, or -1. */
int pspawn_job_key_parse(const char *key, uid_t *uid, uint32_t *jobid);
/* An entry's file (z.HASH): its first line, a key, into KEY (LEN bytes):
 * 0 with *UID, or -1. */
int pspawn_job_entry_parse(const char *text, char *key, size_t len, uid_t *uid);
/* The job's secret file, "NONCE TOKEN" (16 and 32 hex digits): 0, or -1. */
int pspawn_job_secret_parse(const char *text, char nonce[17], char token[33]);
/* The manager's answer: "ok KEY TOKEN HOW" gives 0 with them; anything
 * else -1, with *WHY what "no WHY" says, or the text itself. */
int pspawn_job_answer_parse(const char *text, char *key, size_t keylen, char *token,
                            size_t toklen, char *how, size_t howlen, const char **why);

#endif
