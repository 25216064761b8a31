/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether routing a program through a zygote pays, learnt per program in
 * the scope's table (route.h) from what its starts cost.
 *
 * A routed start is not free: the launcher's process execs the stand-in
 * (a small static program), which reaches the zygote over a socket and
 * has it fork the task.  That beats an exec only where the exec costs
 * more: a program with many libraries to map and relocate.  For sed,
 * grep or gzip the stand-in's own exec costs about what theirs does, and
 * routing makes every start slower.  So a program is routed only once
 * its starts have been measured to cost more, exec'd, than a routed start
 * does:
 *  - an exec'd start: the program's own CPU time when the interception
 *    library's constructor runs in it, after the loader has mapped and
 *    relocated everything (what a zygote saves; the process's CPU before
 *    the exec, a fork child's, is in it too);
 *  - a routed start: the stand-in's CPU time at its main, plus the time
 *    from there until its task is set up to run (the zygote's fork and
 *    the task's own setup), measured by the stand-in, only where the
 *    zygote was running already (its own start is not a start's cost).
 * Each program keeps the cheapest of its exec'd starts, routed only once
 * GAIN_EXEC_SAMPLES of them were measured, and the cheapest of its routed
 * starts, which decide once GAIN_ROUTED_SAMPLES were measured (a busy
 * machine slows some starts, a routed one's wall time more than an
 * exec'd one's CPU time: the cheapest of a few is the start's own cost);
 * a program not routed
 * yet is compared with the cheapest routed start of any program in the
 * scope, or, before there is one, with a guess from the cheapest start
 * of any process (GAIN_GUESS_PCT).  A Python
 * interpreter is routed whatever its exec costs: its warm zygote keeps
 * the interpreter's start-up, which runs after main.
 *
 * A program that is not routed still pays for the interception library
 * in every start: loading it, its constructor, its wrappers.  For a
 * program that costs about 1 ms to start that is a tenth of it, and such
 * programs are most of what a build or a shell loop starts.  So a program
 * whose runs are seen to launch nothing (a leaf: gzip, grep, cc1) is
 * started without the library once GAIN_LEAF_ENDS of its runs have ended
 * without exec'ing or spawning anything: LD_PRELOAD loses the library's
 * entry, which gives it the environment a run without interception
 * would have.  A leaf that would have launched something after all (find
 * without -exec before, with it now) launches it unrouted.  Shells, make,
 * env and interpreters are never taken for leaves (a run of builtins only
 * says nothing of the next), nor are cp, install, dd, tee and truncate
 * (the library lifts a parked zygote's ETXTBSY for their writes).
 *
 * PSPAWN_INTERCEPT_ROUTE=all routes every program a zygote can serve,
 * from its Nth start, as before there was a measure (tests of the
 * routing itself; a user who knows better).
 */
#ifndef PSPAWN_GAIN_H
#define PSPAWN_GAIN_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"

#define ROUTE_ENV_ROUTE "PSPAWN_INTERCEPT_ROUTE"   /* "gain" (default) or "all" */

/* What a routed start is taken to cost before one is measured in the
 * scope: GAIN_GUESS_PCT percent of the cheapest start of any process of
 * the scope (the launcher's own, at the latest: its constructor runs
 * first), which is about what a routed start of a small program costs
 * against the exec of one (on the 2-core VMs here /bin/echo 1.6-1.9 ms
 * routed, 1.2-1.5 ms exec'd).  So the guess follows the machine's speed
 * (an emulated guest is ten times slower at both).  GAIN_ROUTED_GUESS_US
 * only where nothing at all was measured. */
#define GAIN_GUESS_PCT 150
#define GAIN_ROUTED_GUESS_US 2000
/* An exec'd start must cost this much more than a routed one, in percent
 * of the routed one: a routed start's time is a wall time (it waits for
 * the zygote to be scheduled), an exec'd one's a CPU time. */
#define GAIN_MARGIN_PCT 25

#define GAIN_LEAF_ENDS 3
#define GAIN_EXEC_SAMPLES 2
#define GAIN_ROUTED_SAMPLES 3

/* The calling process's CPU time so far, in µs. */
uint64_t gain_cpu_us(void);
/* Now, in µs of CLOCK_MONOTONIC. */
uint64_t gain_now_us(void);
/* In an exec'd program (the interception library's constructor): its
 * start's cost into its program's entry, where its launcher counted the
 * start (the entry exists).  ENVP: the environment it was given. */
void gain_note_exec(char *const envp[]);
/* In a stand-in: a routed start of the program KEY cost US. */
void gain_note_routed(uint64_t key, uint64_t us);
/* Why the program PATH, with entry E, is not routed, with its figures
 * into BUF (LEN) unless BUF is NULL; NULL when it is routed (routing
 * pays, or ALL).  No allocation: may run in a vfork child. */
const char *gain_refusal(const struct route_program *e, const char *path, int all, char *buf,
                         size_t len);

/* Before the calling process execs or spawns a program: the program it
 * runs is no leaf.  System calls and atomics only. */
void gain_note_launch(void);
/* Whether PATH, with entry E, is a leaf, to be started without the
 * interception library. */
int gain_leaf(const struct route_program *e, const char *path);
/* ENVP (ENVC entries) with the interception library taken out of
 * LD_PRELOAD (the variable dropped if nothing is left), into OUT (ENVC +
 * 1 slots) and, for the variable, BUF (LEN): 1, or 0 if ENVP has no such
 * entry or it does not fit.  No allocation: may run in a vfork child. */
int gain_env_bare(char **out, char *buf, size_t len, char *const envp[], size_t envc);

#endif
