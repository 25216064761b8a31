/* SPDX-License-Identifier: BSD-3-Clause */
/* What this kernel lacks of what libpspawn uses (kernel.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel.h"
#include "pidfd.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* Whether the kernel keeps a reaped child's exit status for its pidfd:
 * ask about a child of our own that has exited and been reaped (a live
 * process tells nothing: no kernel has its status yet). */
static int keeps_exit_status(int self_pidfd)
{
    struct pspawn_pidfd_info info = { .mask = PSPAWN_PIDFD_INFO_EXIT };
    if (ioctl(self_pidfd, PSPAWN_PIDFD_GET_INFO, &info) < 0)
        return 0;   /* ENOTTY: no PIDFD_GET_INFO (before 6.13) */
    pid_t child = fork();
    if (child < 0)
        return 1;   /* cannot tell: not said to cost anything */
    if (child == 0)
        _exit(0);
    int fd = (int)syscall(SYS_pidfd_open, child, 0);
    int st;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
    if (fd < 0)
        return 1;
    info = (struct pspawn_pidfd_info){ .mask = PSPAWN_PIDFD_INFO_EXIT };
    int kept = ioctl(fd, PSPAWN_PIDFD_GET_INFO, &info) == 0 && (info.mask & PSPAWN_PIDFD_INFO_EXIT);
    close(fd);
    return kept;   /* ESRCH on 6.13-6.14 */
}

/* Whether clone3 takes CLONE_INTO_CGROUP (5.7): asked with a cgroup fd
 * that cannot be one (EBADF from 5.7; ENOSYS, or E2BIG for the longer
 * struct, before), so nothing is ever created. */
static int clones_into_cgroup(void)
{
    struct {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
            set_tid, set_tid_size, cgroup;
    } args = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = INT_MAX };
    long r = syscall(SYS_clone3, &args, sizeof args);
    if (r == 0)
        _exit(0);   /* a kernel that took fd INT_MAX (none does) */
    if (r > 0) {
        int st;
        waitpid((pid_t)r, &st, 0);
        return 1;
    }
    return errno == EBADF;
}

size_t pspawn_kernel_gaps(const char *gaps[], size_t max)
{
    size_t n = 0;
#define GAP(text)            \
    do {                     \
        if (n < max)         \
            gaps[n] = text;  \
        n++;                 \
    } while (0)
    int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (self < 0 && errno == ENOSYS) {
        GAP("no pidfd_open (Linux 5.3): processes are pinned by pid and start time, which "
            "cannot tell a pid reused within one clock tick; a task whose zygote dies while "
            "it runs is waited for through the zygote's keeper alone, by pid and start time");
    } else if (self >= 0) {
        siginfo_t si;
        if (waitid((idtype_t)P_PIDFD, (id_t)INT_MAX, &si, WEXITED | WNOHANG) < 0 &&
            errno == EINVAL)
            GAP("no waitid P_PIDFD (Linux 5.4): tasks and zygotes are reaped by pid");
        if (!keeps_exit_status(self))
            GAP("no PIDFD_INFO_EXIT (Linux 6.15): a task whose zygote dies while it runs "
                "has its exit status from the zygote's keeper alone");
        close(self);
    }
    if (syscall(SYS_close_range, ~0U, ~0U, 0) < 0 && errno == ENOSYS)
        GAP("no close_range (Linux 5.9): each task closes what /proc/self/fd lists");
    if (!clones_into_cgroup())
        GAP("no clone3 CLONE_INTO_CGROUP (Linux 5.7): subzygote=cgroup execs its tasks");
#undef GAP
    return n < max ? n : max;
}
