/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pidfd system calls' numbers, and waitid's P_PIDFD, for C libraries
 * whose headers predate them (Linux 5.1-5.6; the same on every
 * architecture since 5.1).
 */
#ifndef PSPAWN_PIDFD_H
#define PSPAWN_PIDFD_H

#include <stdint.h>
#include <sys/ioctl.h>
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

/* PIDFD_GET_INFO (Linux 6.13), and in its mask a reaped process's exit
 * status (PIDFD_INFO_EXIT, 6.15): the struct's first version, which every
 * later kernel takes. */
struct pspawn_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define PSPAWN_PIDFD_GET_INFO _IOWR(0xFF, 11, struct pspawn_pidfd_info)
#define PSPAWN_PIDFD_INFO_EXIT 8u

#endif
