/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A process pinned before anything is read of it or done to it.  A pid is
 * only a number, which the kernel gives to a new process once the one it
 * named is reaped; code that acts on a pid it did not fork (root's mover,
 * its job zygote manager, its starter) pins it first:
 *  - with a pidfd (Linux 5.3), which names that one process whatever its
 *    number becomes: what was read of /proc/PID was that process's if it
 *    is still alive after the read, and a signal sent through the pidfd
 *    reaches it or nobody;
 *  - before 5.3, with the pid and its start time (field 22 of
 *    /proc/PID/stat), checked again after every read.  A signal then has a
 *    window of microseconds between that check and kill(2).
 * SECURITY.md lists every place that acts on a pid, and how it is pinned.
 */
#ifndef PSPAWN_PIN_H
#define PSPAWN_PIN_H

#include <sys/socket.h>
#include <sys/types.h>

struct pspawn_pin {
    pid_t pid;
    int pidfd;                  /* -1 where the kernel has none */
    unsigned long long start;   /* start time, clock ticks after boot */
};

#define PSPAWN_PIN_NONE ((struct pspawn_pin){ -1, -1, 0 })

/* Pin PID (which may already be another process than the caller meant:
 * check what it is with pspawn_pin_read).  0, or -1 with errno (ESRCH: no
 * such process). */
int pspawn_pin_pid(struct pspawn_pin *p, pid_t pid);

/*
 * Pin the peer of the connected AF_UNIX socket FD, with its credentials
 * in *CRED.  Linux 6.5 and later (SO_PEERPIDFD): the very process that
 * connected (or listened), and ESRCH if it is gone, whatever took its pid.
 * Before: its SO_PEERCRED pid, pinned as pspawn_pin_pid does, which may be
 * a new process by now: the caller must check what it is (its parent, its
 * uids, its cgroup) before it trusts it.  0, or -1 with errno.
 */
int pspawn_pin_peer(struct pspawn_pin *p, int fd, struct ucred *cred);

/* Whether P's process still exists (a zombie does: its pid is not free),
 * so that what was read of /proc/P->pid before this call was its. */
int pspawn_pin_alive(const struct pspawn_pin *p);

/* /proc/PID/WHAT of P's process (status, cgroup, comm...), NUL-terminated
 * and malloc'd, read while it was pinned: NULL (errno ESRCH) if it ended
 * before the read was over. */
char *pspawn_pin_read(const struct pspawn_pin *p, const char *what);

/* Send SIG to P's process: 0, or -1 with errno (ESRCH: it is gone). */
int pspawn_pin_signal(const struct pspawn_pin *p, int sig);

void pspawn_pin_close(struct pspawn_pin *p);

#endif
