/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pidfd.h"

uint64_t pspawn_sigset_to_u64(const sigset_t *s)
{
    uint64_t m = 0;
    for (int sig = 1; sig <= 64; sig++)
        if (sigismember(s, sig) == 1)
            m |= UINT64_C(1) << (sig - 1);
    return m;
}

int pspawn_env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

double pspawn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether waitid takes P_PIDFD: EBADF for no fd from 5.4, EINVAL before. */
static int waitid_takes_pidfd(void)
{
    static int known;   /* 0: not asked yet, 1: yes, -1: no */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (!k) {
        siginfo_t si;
        k = waitid((idtype_t)P_PIDFD, (id_t)INT_MAX, &si, WEXITED | WNOHANG) < 0 &&
                    errno == EINVAL ? -1 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k > 0;
}

int pspawn_pidfd_open_reapable(pid_t pid)
{
    if (!waitid_takes_pidfd()) {
        errno = ENOSYS;
        return -1;
    }
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int pspawn_pidfd_try_reap(int pidfd, int *status)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r;
    while ((r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG)) < 0 &&
           errno == EINTR)
        ;
    if (r < 0)
        return -1;
    if (si.si_pid == 0)
        return 0;
    if (si.si_code == CLD_EXITED)
        *status = (si.si_status & 0xff) << 8;
    else
        *status = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
    return 1;
}
