/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spawn-site priorities (opt-in): how a child predicted long is started
 * with a lower priority, through what an unprivileged user may do to his
 * own processes.  Shared by the interception library (which predicts,
 * and applies in the child before exec or to the pid after posix_spawn),
 * the stand-in (which applies what a routed posix_spawn told it, before
 * it asks for a zygote) and pspawn --intercept --priority (which checks
 * the mode).  pspawn(1), "SPAWN-SITE PRIORITIES".
 */
#ifndef PSPAWN_PRIORITY_H
#define PSPAWN_PRIORITY_H

#include <stdint.h>
#include <sys/types.h>

#define PRIORITY_ENV_MODE "PSPAWN_INTERCEPT_PRIORITY" /* off (default), nice, batch, slice */
#define PRIORITY_ENV_NICE "PSPAWN_INTERCEPT_NICE"     /* the nice increment, 1-19 (10) */
#define PRIORITY_ENV_LONG "PSPAWN_INTERCEPT_LONG"     /* s: a longer mean is long (1) */
/* Given by a routed posix_spawn to its stand-in: "long" or "short". */
#define PRIORITY_ENV_STANDIN "PSPAWN_STANDIN_PRIORITY"

enum priority_mode {
    PRIORITY_OFF = 0,
    PRIORITY_NICE,          /* long: nice +N */
    PRIORITY_BATCH,         /* long: SCHED_BATCH */
    PRIORITY_SLICE,         /* long: a long EEVDF slice; short: a short one */
};

enum priority_verdict {
    VERDICT_NONE = 0,       /* no history: left as it is */
    VERDICT_SHORT = 1,
    VERDICT_LONG = 2,
};

/* The slices the slice mode requests (sched_attr.sched_runtime, Linux
 * 6.12+; the kernel clamps to 0.1-100 ms and its default is 0.7 ms times
 * 1 + log2(CPUs)): an earlier virtual deadline for a short child, a later
 * one (and fewer preemptions) for a long one. */
#define PRIORITY_SLICE_SHORT_NS 500000ULL
#define PRIORITY_SLICE_LONG_NS 20000000ULL

struct priority_config {
    enum priority_mode mode;
    int nice;               /* the increment for a long child */
    int base_nice;          /* ...over this: the scope's (a child of a long
                             * child is not lowered twice) */
    uint64_t long_ns;       /* a site whose mean reaches it is long */
};

/* MODE's value ("off", "nice", "batch", "slice"), or -1. */
int priority_mode_parse(const char *mode);
/* The configuration the environment gives (getenv: not in a vfork child),
 * over the scope's BASE_NICE. */
void priority_config_from_env(struct priority_config *c, int base_nice);
/* Start PID (0: the calling thread) as VERDICT says under C.  Only
 * system calls: may run between vfork and exec.  Never raises a
 * priority, and keeps errno. */
void priority_apply(pid_t pid, const struct priority_config *c, enum priority_verdict verdict);
/* The calling process's scheduling (policy, nice, slice), into H: a
 * zygote serves only stand-ins scheduled as the one that started it. */
void priority_hash_scheduling(uint64_t *h);

#endif
