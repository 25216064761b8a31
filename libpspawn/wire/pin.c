/* SPDX-License-Identifier: BSD-3-Clause */
/* Processes pinned by pidfd, or by pid and start time (pin.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pidfd.h"
#include "pin.h"
#include "procfs.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77         /* Linux 6.5, the same on every architecture */
#endif

static int start_time(pid_t pid, unsigned long long *start)
{
    return pspawn_proc_stat(pid, 22, 22, start);
}

/* Without a pidfd, the start time of the process the pid names now, the
 * pin's other half; with one, its process is still there. */
static int finish_pin(struct pspawn_pin *p)
{
    if (p->pidfd >= 0 ? pspawn_pin_alive(p) : start_time(p->pid, &p->start) == 0)
        return 0;
    pspawn_pin_close(p);
    errno = ESRCH;
    return -1;
}

int pspawn_pin_pid(struct pspawn_pin *p, pid_t pid)
{
    *p = PSPAWN_PIN_NONE;
    if (pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    p->pid = pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    /* Only a kernel without pidfds goes on without one (ENOSYS); for any
     * other failure (ESRCH: gone; EMFILE) the process is not pinned. */
    if (p->pidfd < 0 && errno != ENOSYS) {
        int e = errno;
        *p = PSPAWN_PIN_NONE;
        errno = e;
        return -1;
    }
    return finish_pin(p);
}

int pspawn_pin_peer(struct pspawn_pin *p, int fd, struct ucred *cred)
{
    *p = PSPAWN_PIN_NONE;
    socklen_t len = sizeof *cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0)
        return -1;
    int pidfd = -1;
    len = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
        p->pid = cred->pid;
        p->pidfd = pidfd;
        return finish_pin(p);
    }
    /* ENOPROTOOPT (before 6.5) or EINVAL: by the number, which the
     * caller checks.  Anything else (ESRCH: the peer is gone) is final. */
    if (errno != ENOPROTOOPT && errno != EINVAL && errno != EOPNOTSUPP)
        return -1;
    return pspawn_pin_pid(p, cred->pid);
}

int pspawn_pin_alive(const struct pspawn_pin *p)
{
    if (p->pid <= 0)
        return 0;
    if (p->pidfd >= 0)
        return syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) == 0;
    unsigned long long start;
    return start_time(p->pid, &start) == 0 && start == p->start;
}

char *pspawn_pin_read(const struct pspawn_pin *p, const char *what)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)p->pid, what);
    char *text = p->pid > 0 ? pspawn_read_file(path) : NULL;
    if (text && pspawn_pin_alive(p))
        return text;
    free(text);
    errno = ESRCH;
    return NULL;
}

int pspawn_pin_signal(const struct pspawn_pin *p, int sig)
{
    if (p->pidfd >= 0)
        return (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
    if (!pspawn_pin_alive(p)) {
        errno = ESRCH;
        return -1;
    }
    return kill(p->pid, sig);
}

void pspawn_pin_close(struct pspawn_pin *p)
{
    if (p->pidfd >= 0)
        close(p->pidfd);
    *p = PSPAWN_PIN_NONE;
}
