/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scope's children whose run time is measured (route.h: struct
 * route_child), for spawn-site priorities.
 *
 * A child is registered by its launcher's posix_spawn (after it returns,
 * with the child's pid) or by its own exec (between fork or vfork and
 * exec, with its own pid); a process that execs again (a shell that execs
 * its command) adds its second site to the same registration, whoever
 * came first.  A registration found for the same pid that is older than
 * the process (/proc/PID/stat's start time) is a dead process's, which
 * its launcher reaped unseen (system(), a raw wait): it is reused.  A
 * child lives in one of CHILDREN_PROBE slots from the one its pid hashes
 * to; with none free, it takes one whose process is gone, and with none
 * of those either it is not measured.
 *
 * System calls and atomics only: everything may run in a vfork child.
 */
#ifndef PSPAWN_CHILDREN_H
#define PSPAWN_CHILDREN_H

#include <stdint.h>
#include <sys/types.h>

#define CHILDREN_PROBE 64

/* What children_register did, for children_undo. */
struct child_mark {
    int slot, site;         /* -1: nothing */
};

/* Read the clock tick (constructor time). */
void children_init(void);
/* Now, in ns of CLOCK_BOOTTIME (the clock /proc's start times count). */
uint64_t children_now(void);
/* Register PID (0: the calling process) as a child of SITE, with VERDICT
 * (the first verdict a process gets is the one it keeps).  The verdict
 * the process had before, or VERDICT_NONE; -1 if there is no room. */
int children_register(pid_t pid, uint64_t site, uint32_t verdict, struct child_mark *mark);
/* Take back what a registration added (its exec failed). */
void children_undo(const struct child_mark *mark);
/* Take PID's registration off, its sites into SITE and its start into
 * *START_NS.  0, or -1 if PID was not registered. */
int children_take(pid_t pid, uint64_t site[2], uint64_t *start_ns);

#endif
