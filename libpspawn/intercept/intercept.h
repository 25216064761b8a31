/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the interception library and its stand-in agree on beyond the
 * scope's table (route.h).
 */
#ifndef PSPAWN_INTERCEPT_H
#define PSPAWN_INTERCEPT_H

/* The value a launcher's kill() of a stand-in carries (sigqueue): such a
 * signal was meant for this one process, and is passed on to the task. */
#define PSPAWN_KILL_MARK 0x70736b6c    /* "pskl" */

/* The zygote's idle limit when PSPAWN_INTERCEPT_IDLE does not say. */
#define PSPAWN_INTERCEPT_IDLE_S 10

/* In the interception library (say.c): a line on stderr with
 * PSPAWN_DEBUG (snprintf and write(2) only: may run in a vfork child),
 * once the constructor has said so (intercept_say_on). */
void intercept_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void intercept_say_on(int on);
/* The next definition of NAME (RTLD_NEXT: libc's); aborts if there is
 * none.  Constructor time. */
void *intercept_next(const char *name);

#endif
