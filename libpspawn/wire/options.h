/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One syntax for what a user asks of libpspawn, whatever the front door:
 * a comma-separated list of words and KEY=VALUE pairs.
 *
 *   srun --pspawn=on,fanout=l3      plugstack.conf: default=auto fanout=core
 *   pspawn --options fanout=4 ...   mpirun --mca odls_pspawn_fanout numa
 *   pspawn_context_create_opts(&ctx, path, envp, "fanout=l3,subzygote=exec")
 *
 * Words: on, off, auto (whether a step uses a zygote; front doors that
 * always ask for one ignore them); verbose (each node says in one line
 * how its tasks were made: tally.h).  Any KEY=VALUE, and verbose, implies
 * on.  Keys:
 *   fanout=auto|none|numa|l3|package|core|N
 *       how the CPUs the launcher may use are split among fork-serving
 *       processes (the root zygote and its sub-zygotes): one per NUMA node,
 *       L3 cache, package or core, N cores per group within each NUMA node
 *       and L3, or none (one zygote).  auto: NUMA node, then L3, then groups
 *       of PSPAWN_DEFAULT_GROUP_CORES cores; no fan-out where that is one.
 *   subzygote=fork|exec|replicate|cgroup
 *       how each sub-zygote is made: forked from the root (fork), exec'd
 *       of its own (exec), exec'd on per-group copies of the program's
 *       libraries (replicate), or that in a cpuset cgroup of its group
 *       (cgroup, with cgroup=DIR, cgroup v2).
 *   start=eager|lazy
 *       sub-zygotes made when the zygote parks, or at a group's first task.
 *   cgroup=DIR
 *       the cgroup v2 directory under which subzygote=cgroup makes one
 *       cgroup per group (its cpuset controller enabled for children).
 *   python=auto|off
 *       auto (the default): a zygote that is a Python interpreter starts
 *       it and parks inside it, warm, after importing the preload modules;
 *       off: it parks before main like any program.
 *   modules=MOD:MOD...
 *       the modules a warm Python zygote imports before it parks (colons,
 *       since commas separate items); otherwise PSPAWN_PRELOAD_MODULES, or
 *       what earlier tasks of the same script imported (learned).
 *   preload=off|auto|FILE
 *       what a zygote dlopens before it parks: nothing (off, the default),
 *       what earlier tasks of the program loaded after main (auto: tasks
 *       record it as they load), or the libraries a file lists.
 *   reuse=step|job
 *       (srun --pspawn) step: each step's zygote serves that step's tasks
 *       and ends with it; job: a node's zygotes live in the job's extern
 *       step and serve every later step of the same program and loader
 *       environment (spank/README.md, "Zygotes that serve a whole job").
 *   idle=SECONDS
 *       reuse=job: a zygote that served no task for this long ends (1 to
 *       86400, default PSPAWN_DEFAULT_IDLE_S).
 *   zygotes=K
 *       reuse=job: at most K zygotes per job and node (1 to 64, default
 *       PSPAWN_DEFAULT_JOB_ZYGOTES); a new program's evicts the one used
 *       least recently, which finishes its running tasks first.
 *   mode=fork|pip
 *       fork (the default): each task is a fork of the zygote.  pip:
 *       Process-in-Process, each task a process of its own (own pid, fds,
 *       signal handlers) in the root's address space, its program loaded
 *       into a link-map namespace of its own (dlmopen): own globals,
 *       shared page tables.  At most PSPAWN_PIP_MAX_TASKS tasks per root;
 *       programs must be PIE with main exported (pspawn(1), "PROCESS-IN-
 *       PROCESS").  Implies fanout=none and reuse=step, whatever else
 *       sets them.
 * Later features add their keys here.  Unknown keys are errors, so a typo
 * never silently does nothing.
 */
#ifndef PSPAWN_OPTIONS_H
#define PSPAWN_OPTIONS_H

#include <limits.h>
#include <stddef.h>

/* Cores per group that fanout=auto aims at: the serial-cost model (one
 * zygote's fork CPU against a task's total CPU, ~1.85 against ~6.2 ms per
 * task at 500 libraries) asks for one fork-serving process per ~3 cores. */
#define PSPAWN_DEFAULT_GROUP_CORES 3

/* reuse=job: a job's zygote ends after this long without a task, and a
 * node keeps at most this many per job. */
#define PSPAWN_DEFAULT_IDLE_S 300
#define PSPAWN_DEFAULT_JOB_ZYGOTES 4

enum pspawn_word { PSPAWN_WORD_UNSET = -1, PSPAWN_WORD_OFF = 0, PSPAWN_WORD_ON = 1,
                   PSPAWN_WORD_AUTO = 2 };

enum pspawn_fanout {
    PSPAWN_FANOUT_AUTO,
    PSPAWN_FANOUT_NONE,
    PSPAWN_FANOUT_NUMA,
    PSPAWN_FANOUT_L3,
    PSPAWN_FANOUT_PACKAGE,
    PSPAWN_FANOUT_CORE,
    PSPAWN_FANOUT_CORES,    /* cores_per_group cores per group */
};

enum pspawn_subzygote {
    PSPAWN_SUB_FORK,
    PSPAWN_SUB_EXEC,
    PSPAWN_SUB_REPLICATE,
    PSPAWN_SUB_CGROUP,
};

struct pspawn_options {
    int word;               /* enum pspawn_word, or UNSET */
    int fanout;             /* enum pspawn_fanout */
    int cores_per_group;    /* PSPAWN_FANOUT_CORES */
    int subzygote;          /* enum pspawn_subzygote */
    int lazy;               /* start=lazy */
    char cgroup[PATH_MAX];  /* cgroup=DIR, or "" */
    int python;             /* python=auto (1) or off (0) */
    char modules[1024];     /* modules=, comma-separated, or "" */
    char preload[PATH_MAX]; /* preload=: "auto", a file's path, or "" (off) */
    int reuse_job;          /* reuse=job (1) or step (0) */
    int idle_s;             /* idle=, seconds */
    int max_zygotes;        /* zygotes= */
    int pip;                /* mode=pip (1) or fork (0) */
    int verbose;            /* the word verbose */
    unsigned given;         /* PSPAWN_OPT_* bits: what the text set */
};
#define PSPAWN_OPT_WORD      0x1u
#define PSPAWN_OPT_FANOUT    0x2u
#define PSPAWN_OPT_SUBZYGOTE 0x4u
#define PSPAWN_OPT_START     0x8u
#define PSPAWN_OPT_CGROUP    0x10u
#define PSPAWN_OPT_PYTHON    0x20u
#define PSPAWN_OPT_MODULES   0x40u
#define PSPAWN_OPT_PRELOAD   0x80u
#define PSPAWN_OPT_REUSE     0x100u
#define PSPAWN_OPT_IDLE      0x200u
#define PSPAWN_OPT_ZYGOTES   0x400u
#define PSPAWN_OPT_MODE      0x800u
#define PSPAWN_OPT_VERBOSE   0x1000u

/* mode=pip: the most tasks one root makes.  Stock glibc has 16 link-map
 * namespaces (DL_NNS), the root's own is one of them. */
#define PSPAWN_PIP_MAX_TASKS 15

/* The defaults: word unset, fanout=auto, subzygote=PSPAWN_DEFAULT_SUBZYGOTE,
 * start=eager. */
void pspawn_options_defaults(struct pspawn_options *o);

/* Parse TEXT (NULL or "": nothing) on top of O: later keys win.  A key
 * implies on unless a word says otherwise.  Returns 0, or -1 with a
 * sentence in ERR (ERRLEN bytes, always terminated) naming what was wrong
 * and what is expected; O may then be partly updated. */
int pspawn_options_parse(struct pspawn_options *o, const char *text, char *err, size_t errlen);

/* Whether NAME (LEN bytes) is one of the options' keys (fanout, reuse...;
 * not a word: on, off, auto). */
int pspawn_options_is_key(const char *name, size_t len);

/* O as text that pspawn_options_parse reads back (every key, no word).
 * 0, or -1 if SIZE is too small. */
int pspawn_options_format(const struct pspawn_options *o, char *buf, size_t size);

/* "numa", "l3", ..., "4" (into BUF for N cores); "fork", "exec", ... */
const char *pspawn_fanout_name(const struct pspawn_options *o, char *buf, size_t size);
const char *pspawn_subzygote_name(int subzygote);

/* PSPAWN_TIMEOUT's value TEXT (seconds, fractions allowed, more than 0
 * and at most a day) as milliseconds in *MS: 0, or EINVAL for anything
 * else (not a number, trailing text, 0, negative, inf, nan). */
int pspawn_timeout_parse(const char *text, int *ms);

/* Write the message FMT into ERR (ERRLEN bytes, always terminated, when
 * ERRLEN > 0) and return -1: the parsers' way to say what is wrong. */
int pspawn_errmsg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
