/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The debug lines of the stand-ins (pspawn-shim, pspawn-standin): one line
 * on stderr, with the process's name and pid and the wall clock to the ms,
 * so that they line up with slurmd's log and with each other.
 */
#ifndef PSPAWN_SAYLINE_H
#define PSPAWN_SAYLINE_H

#include <stdarg.h>

/* "WHO[PID] HH:MM:SS.mmm: " and FMT's text on stderr. */
void pspawn_vsay_line(const char *who, const char *fmt, va_list ap);

#endif
