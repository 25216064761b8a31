/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Is a program worth a zygote?  The question a front door asks where the
 * user did not ask for pspawn by name: Slurm's `default=auto` (and
 * `--pspawn=auto`), and the ODLS component where a site made it the
 * default (odls_pspawn_priority above the default component's).
 *
 * A zygote saves what the loader does for each task (mapping and
 * relocating every object) and costs a stand-in or a request, and under
 * Slurm a cgroup move, per task.  For a program that loads a few objects
 * the exec is the cheaper: bench/srun --steps measured where the two cross
 * (bench/README.md, "Which steps default=auto serves").
 *
 * A program's objects are known only once it has been loaded, and root
 * never runs the loader on a user's program.  So it is learned from the
 * program's zygote, which counts its link map when it parks (protocol.h:
 * HELLO_OBJECTS, zygote_ready.objects).  Under Slurm each shim reports the
 * count to the step's mover and the step's end writes it into root's
 * table on the node (PSPAWN_WORTH_DIR); prted writes it into the user's
 * own cache (pspawn_cache_dir()/worth).  One small file per user and
 * program identity (pspawn_program_identity: the file, its mtime and
 * ctime, and the loader's variables).  The first launch of a program not
 * in the table uses pspawn and teaches it; a later launch of the same
 * program is exec'd when it loaded fewer objects than the site's least.
 * A Python interpreter is always worth it (a warm zygote's gain comes
 * after main, which no count of objects shows).
 *
 * What a user can do to root's table: only teach it wrong counts about
 * their own programs (the count comes from their zygote), which decides
 * nothing but whether their own steps are forked or exec'd.  The keys are
 * computed by slurmstepd, never taken from a user.
 */
#ifndef PSPAWN_WORTH_H
#define PSPAWN_WORTH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Root's table on each node (slurmstepd). */
#define PSPAWN_WORTH_DIR "/run/pspawn/worth"
/* Programs kept per user; a new one beyond them evicts the oldest. */
#define PSPAWN_WORTH_PER_USER 256
/* The least objects for which a task from a zygote beat an exec, measured
 * (bench/README.md, "Which steps default=auto serves": 4 tasks per node,
 * programs of 4, 14, 54, 104, 204 and 504 objects), where the site sets
 * none (auto_objects=, odls_pspawn_auto_objects): where the zygote is
 * already running when the launch comes (reuse=job, odls_pspawn_reuse
 * dvm), only the tasks' forks and stand-ins weigh against their execs;
 * where the launch starts it, its own exec and park do too. */
#define PSPAWN_WORTH_KEPT_ZYGOTE 40     /* srun reuse=job, a DVM's zygote */
#define PSPAWN_WORTH_STEP_ZYGOTE 200    /* a zygote of the step's own */
#define PSPAWN_WORTH_JOB_ZYGOTE 100     /* prted's zygote of the job's own */

struct pspawn_worth {
    int identified;             /* id and path are the step's program's */
    uint64_t id;                /* pspawn_program_identity */
    char path[PATH_MAX];        /* argv[0] as slurmstepd will find it */
    int python;                 /* a Python interpreter */
    int known;                  /* the table has it: */
    int objects;                /* the objects its zygote held */
};

/* ARGV0 as slurmstepd will find it: absolute, or the first file of that
 * name in the step's PATH (from ENV).  A relative path with a slash
 * depends on the step's working directory, which root does not know
 * before the step runs: with PWD, it is taken under ENV's PWD (srun's,
 * which is the step's unless srun --chdir), else refused.  0 with PATH
 * (LEN bytes), or -1 with WHY. */
int pspawn_step_program(const char *argv0, char *const env[], int pwd, char *path, size_t len,
                        char *why, size_t wlen);
/* The step's working directory as ENV's PWD names it (srun's, which is
 * the step's unless srun --chdir): absolute, or NULL. */
const char *pspawn_step_pwd(char *const env[]);

/* What the table in DIR knows of user UID's program ARGV (ARGC words,
 * environment ENV) at PATH (NULL: ARGV[0] as pspawn_step_program finds
 * it), into *W: identified where the program can be found, known where a
 * launch of it has taught the table.  Reads one file. */
void pspawn_worth_recall(struct pspawn_worth *w, const char *dir, uid_t uid, const char *path,
                         int argc, char **argv, char **env);

/* NULL where the program is worth a zygote (or not known yet: its step
 * teaches the table), else why not, into WHY (LEN bytes): it loaded fewer
 * than MIN_OBJECTS objects. */
const char *pspawn_worth_verdict(const struct pspawn_worth *w, int min_objects, char *why,
                                 size_t len);

/* A launch of W's program (identified) was served by zygotes that held
 * OBJECTS objects (>0) and were, or were not, warm Pythons: remember it in
 * DIR, the caller's (root's for slurmstepd) and 0700, made with the
 * directories above it if need be.  0, or -1 with errno (nothing learned;
 * launches go on asking). */
int pspawn_worth_learn(const struct pspawn_worth *w, const char *dir, uid_t uid, int objects,
                       int python);

#endif
