/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one printer of debug lines (PSPAWN_DEBUG) for every process of
 * libpspawn: the launcher, the zygote, the stand-ins (pspawn-shim,
 * pspawn-standin, and the stand-in client they share).  One line on
 * stderr, with the process's name and pid and the wall clock to the ms,
 * so that they line up with slurmd's log and with each other.
 */
#ifndef PSPAWN_SAYLINE_H
#define PSPAWN_SAYLINE_H

#include <stdarg.h>

/* Whether PSPAWN_DEBUG asks for these lines: set, and not "", "0" or
 * "no". */
int pspawn_debug_wanted(void);

/* "WHO[PID] HH:MM:SS.mmm: " and FMT's text on stderr. */
void pspawn_vsay_line(const char *who, const char *fmt, va_list ap);
void pspawn_say_line(const char *who, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
