/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pidfd system calls' numbers, and waitid's P_PIDFD, for C libraries
 * whose headers predate them (Linux 5.1-5.6; the same on every
 * architecture since 5.1).
 */
#ifndef PSPAWN_PIDFD_H
#define PSPAWN_PIDFD_H

#include <sys/syscall.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
/* waitid(2)'s idtype for a pidfd (Linux 5.4) */
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#endif
