/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one launch did on one node, counted and said in one line that
 * every front door prints the same way: `srun --pspawn=on,verbose` (one
 * line per node on the user's stderr, and the same line in slurmd's log
 * at info level for every step that asked for pspawn), `pspawn -v`, and
 * `mpirun --prtemca odls_pspawn_verbose 1`.  The line's format is stable,
 * for sites that count adoption and fallbacks with grep:
 *
 *   pspawn: node=NODE [SCOPE ]tasks=T forked=F exec=E unknown=U zygote=KIND zygote_start=TIME why="..."
 *
 * SCOPE: step=J.S (Slurm), job=ID (Open MPI), nothing (pspawn).
 * unknown: tasks whose stand-in did not say (it died first, or had no way
 * to tell).  KIND: new (started for this launch), job (a job's zygote,
 * reuse=job, started by this or an earlier step), mixed, or none (no task
 * forked).  TIME: the zygote's start, local time to the ms
 * (2026-11-28T12:00:01.234), or - .  why: the reasons tasks were exec'd,
 * the first two with their counts ("static program (2); ..."), "" if none.
 */
#ifndef PSPAWN_TALLY_H
#define PSPAWN_TALLY_H

#include <stddef.h>
#include <sys/types.h>

#define PSPAWN_TALLY_WHY 120    /* bytes of one reason kept, NUL included */

enum pspawn_zygote_kind {
    PSPAWN_ZYGOTE_NONE,
    PSPAWN_ZYGOTE_NEW,      /* started for this launch (step) */
    PSPAWN_ZYGOTE_JOB,      /* a job's zygote: reuse=job, odls_pspawn_reuse */
    PSPAWN_ZYGOTE_MIXED,    /* tasks of one launch from zygotes of both kinds */
};

struct pspawn_tally {
    unsigned tasks, forked, exec;
    int zygote;                     /* enum pspawn_zygote_kind */
    long long zygote_start_ms;      /* the earliest, ms since the epoch; 0: unknown */
    char why[2][PSPAWN_TALLY_WHY];  /* the first two distinct reasons */
    unsigned why_count[2];
    unsigned why_other;             /* exec'd for yet other reasons */
    /* Not in the line: what the zygotes said of the program they hold
     * (the most objects loaded; 0: none said; a warm Python), which
     * `default=auto` learns from (wire/worth.h). */
    int objects;
    int python;
};

/* A launch of TASKS tasks, none said yet. */
void pspawn_tally_init(struct pspawn_tally *t, unsigned tasks);
/* One task forked by a zygote of KIND that started at START_MS (0:
 * unknown). */
void pspawn_tally_forked(struct pspawn_tally *t, int kind, long long start_ms);
/* A task's zygote said it loaded OBJECTS objects (0: not said) and is a
 * warm Python (PYTHON) or not. */
void pspawn_tally_zygote_program(struct pspawn_tally *t, int objects, int python);
/* COUNT tasks exec'd for the reason WHY (NULL: none given).  The reason
 * may come from a user's process: it is kept to printable ASCII, quotes
 * and backslashes made '?', so the line stays one line that parses. */
void pspawn_tally_exec(struct pspawn_tally *t, unsigned count, const char *why);
/* T as the line above (no newline) into BUF (SIZE bytes, always
 * terminated when SIZE > 0).  NODE: the node's name; SCOPE: "step=12.0",
 * "job=...", or NULL. */
void pspawn_tally_format(const struct pspawn_tally *t, const char *node, const char *scope,
                         char *buf, size_t size);
/* "new", "job", "mixed", "none"; "?" for another value. */
const char *pspawn_zygote_kind_name(int kind);
/* When process PID started, in ms since the epoch (to the clock tick of
 * its start time, /proc/PID/stat), or 0 when it cannot be read. */
long long pspawn_proc_start_ms(pid_t pid);

#endif
