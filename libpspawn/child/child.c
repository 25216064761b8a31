/* SPDX-License-Identifier: BSD-3-Clause */
/* What runs in a task between its creation and its main() or execve(): on
 * a vfork stack in the launcher, or in a fork of the zygote before the
 * program's own code.  No stack protector: its canary is the launcher's
 * (or the zygote's) and a check must not call into a libc that is half
 * set up.  Makefile.am says -fno-stack-protector, but a distribution's
 * CFLAGS (dpkg-buildflags: -fstack-protector-strong) come after it on the
 * command line and would win: the pragma keeps it whatever the flags. */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_stack_protector)), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC optimize("no-stack-protector")
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "child.h"

#include <sys/personality.h>

#define IOPRIO_WHO_PROCESS 1

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

int pspawn_child_sigdisp(int sig, int ignore)
{
    struct kernel_sigaction ksa;
    memset(&ksa, 0, sizeof ksa);
    ksa.handler = ignore ? (void *)SIG_IGN : (void *)SIG_DFL;
    if (syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(uint64_t)) < 0)
        return errno;
    return 0;
}

void pspawn_child_sigmask(uint64_t mask)
{
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, sizeof mask);
}

static int apply_signals(const struct child_setup *s)
{
    for (int sig = 1; sig <= 64; sig++) {
        uint64_t bit = UINT64_C(1) << (sig - 1);
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        if (s->sig_default & bit)
            pspawn_child_sigdisp(sig, 0);
        else if (s->sig_ignore & bit)
            pspawn_child_sigdisp(sig, 1);
    }
    return 0;
}

static int max_target(const struct child_setup *s)
{
    int hi = 2;
    for (int i = 0; i < s->nactions; i++)
        if (s->actions[i].fd > hi)
            hi = s->actions[i].fd;
    return hi;
}

static int is_target(const struct child_setup *s, int fd)
{
    for (int i = 0; i < s->nactions; i++)
        if (s->actions[i].fd == fd)     /* written, or closed */
            return 1;
    return 0;
}

/* Move every fd that must outlive the actions off the numbers the actions
 * write, so that no action clobbers a descriptor still to be used.  Above
 * all targets when the fd limit allows, else at the lowest free number
 * that is no target. */
static int move_fds_up(struct child_setup *s, int floor)
{
    for (int i = 0; i < s->nfds; i++) {
        if (s->fds[i] < 0 || !is_target(s, s->fds[i]))
            continue;
        int nfd = fcntl(s->fds[i], F_DUPFD_CLOEXEC, floor);
        for (int lo = 3; nfd < 0 && errno == EINVAL;) {
            int t = fcntl(s->fds[i], F_DUPFD_CLOEXEC, lo);
            if (t < 0)
                break;
            if (!is_target(s, t)) {
                nfd = t;
                break;
            }
            lo = t + 1; /* a target: an action overwrites or closes it */
        }
        if (nfd < 0)
            return errno;
        /* Other slots may name the same fd (one source, two targets). */
        int old = s->fds[i];
        for (int j = i; j < s->nfds; j++)
            if (s->fds[j] == old)
                s->fds[j] = nfd;
    }
    return 0;
}

static int apply_actions(struct child_setup *s)
{
    for (int i = 0; i < s->nactions; i++) {
        const struct child_action *a = &s->actions[i];
        switch (a->kind) {
        case FA_OPEN: {
            int fd = open(a->path, a->oflag, a->mode);
            if (fd < 0)
                return errno;
            if (fd != a->fd) {
                if (dup2(fd, a->fd) < 0) {
                    int e = errno;
                    close(fd);
                    return e;
                }
                close(fd);
            }
            if ((a->oflag & O_CLOEXEC) && s->emulate_cloexec)
                close(a->fd);
            break;
        }
        case FA_DUP2:
            if (a->src < 0 || a->src >= s->nfds)
                return EBADF;
            if (dup2(s->fds[a->src], a->fd) < 0)
                return errno;
            break;
        case FA_CLOSE:
            close(a->fd);
            break;
        default:
            return EINVAL;
        }
    }
    return 0;
}

int pspawn_child_setup(struct child_setup *s)
{
    int err;

    apply_signals(s);
    if (s->flags & REQ_SETSID) {
        if (setsid() < 0)
            return errno;
    } else if (s->flags & REQ_SETPGROUP) {
        if (setpgid(0, s->pgroup) < 0)
            return errno;
    }
    /* cwd first, so that relative paths of open actions resolve in the
     * task's working directory. */
    if ((s->flags & REQ_CWD) && chdir(s->cwd) < 0)
        return errno;
    if (s->flags & REQ_UMASK)
        umask(s->umask);
    if ((err = move_fds_up(s, max_target(s) + 1)))
        return err;
    if ((err = apply_actions(s)))
        return err;
    if ((s->flags & REQ_CTTY) && ioctl(s->ctty_fd, TIOCSCTTY, 0) < 0)
        return errno;
    for (int i = 0; i < s->nrlimits; i++) {
        struct rlimit rl = { s->rlimits[i].cur, s->rlimits[i].max };
        if (setrlimit(s->rlimits[i].resource, &rl) < 0)
            return errno;
    }
    if (s->flags & REQ_SCHED) {
        struct sched_param sp = { .sched_priority = s->sched_priority };
        if (sched_setscheduler(0, s->sched_policy, &sp) < 0)
            return errno;
    }
    if ((s->flags & REQ_NICE) && setpriority(PRIO_PROCESS, 0, s->nice) < 0)
        return errno;
    if (s->cpuset && sched_setaffinity(0, PSPAWN_CPUSET_BYTES,
                                       (const cpu_set_t *)s->cpuset) < 0 &&
        !s->placement_optional)
        return errno;
    /* set_mempolicy reads one bit less than it is told (the kernel's
     * get_nodes() decrements maxnode, as libnuma knows). */
    if ((s->flags & REQ_MEMPOLICY) &&
        syscall(SYS_set_mempolicy, s->mempolicy, s->nodemask,
                (unsigned long)PSPAWN_NODEMASK_BYTES * 8 + 1) < 0 &&
        !s->placement_optional)
        return errno;
    if ((s->flags & REQ_NO_NEW_PRIVS) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return errno;
    const struct wire_procstate *ps = &s->proc;
    if ((s->flags & REQ_PERSONALITY) && personality((unsigned long)(uint32_t)ps->personality) < 0)
        return errno;
    if ((s->flags & REQ_THP_DISABLE) &&
        prctl(PR_SET_THP_DISABLE, (unsigned long)ps->thp_disable, 0, 0, 0) < 0)
        return errno;
    if ((s->flags & REQ_IOPRIO) && syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, ps->ioprio) < 0)
        return errno;
    if ((s->flags & REQ_TIMERSLACK) && prctl(PR_SET_TIMERSLACK, (unsigned long)ps->timerslack,
                                             0, 0, 0) < 0)
        return errno;
    if ((s->flags & REQ_MDWE) && prctl(PR_SET_MDWE, (unsigned long)ps->mdwe, 0, 0, 0) < 0)
        return errno;
    return 0;
}

void pspawn_procstate_get(struct wire_procstate *ps)
{
    ps->personality = personality(0xffffffff);
    ps->thp_disable = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    ps->ioprio = (int32_t)syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
    ps->mdwe = prctl(PR_GET_MDWE, 0, 0, 0, 0);
    long slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    ps->timerslack = slack > 0 ? slack : -1;
    if (ps->personality < 0)
        ps->personality = -1;
    if (ps->thp_disable < 0)
        ps->thp_disable = -1;
    if (ps->ioprio < 0)
        ps->ioprio = -1;
    if (ps->mdwe < 0)
        ps->mdwe = -1;
}

int pspawn_mempolicy_get(int *mode, unsigned char *nodemask)
{
    unsigned long mask[PSPAWN_NODEMASK_BYTES / sizeof(unsigned long)] = { 0 };
    int m = 0;
    if (syscall(SYS_get_mempolicy, &m, mask, (unsigned long)PSPAWN_NODEMASK_BYTES * 8,
                NULL, 0UL) < 0)
        return errno;
    *mode = m;
    memcpy(nodemask, mask, sizeof mask);
    return 0;
}

/* The value of FIELD ("Umask") in /proc/self/status, in BUF; NULL where
 * the kernel does not give it. */
static const char *status_field(const char *field, char *buf, size_t size)
{
    char text[4096], key[40];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0)
        close(fd);
    text[n < 0 ? 0 : n] = 0;
    snprintf(key, sizeof key, "\n%s:", field);
    const char *f = strstr(text, key);
    if (!f)
        return NULL;
    for (f += strlen(key); *f == ' ' || *f == '\t'; f++)
        ;
    snprintf(buf, size, "%.*s", (int)strcspn(f, "\n"), f);
    return buf;
}

int pspawn_seccomp_filters(void)
{
    /* The common case, no filter, costs one system call. */
    int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    if (mode <= 0)
        return 0;
    if (mode == 1)
        return -1;
    char v[32];
    int count = status_field("Seccomp_filters", v, sizeof v) ? atoi(v) : 0;
    return count > 0 ? count : 1;
}

int pspawn_child_keep_list(const struct child_setup *s, const int *extra,
                           int nextra, int *keep)
{
    int n = 0;
    /* A target is kept unless a later action closed it. */
    for (int i = 0; i < s->nactions; i++) {
        const struct child_action *a = &s->actions[i];
        int dup = 0;
        for (int k = 0; k < n; k++)
            if (keep[k] == a->fd)
                dup = 1;
        if (a->kind == FA_CLOSE || ((a->kind == FA_OPEN) &&
                                    (a->oflag & O_CLOEXEC) && s->emulate_cloexec)) {
            for (int k = 0; k < n; k++)
                if (keep[k] == a->fd)
                    keep[k] = keep[--n];
            continue;
        }
        if (!dup)
            keep[n++] = a->fd;
    }
    for (int i = 0; i < nextra; i++) {
        int dup = 0;
        for (int k = 0; k < n; k++)
            if (keep[k] == extra[i])
                dup = 1;
        if (!dup && extra[i] >= 0)
            keep[n++] = extra[i];
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    return n;
}

/* The fds in [LO, HI] that /proc/self/fd lists, closed; -1 without /proc.
 * getdents64 into the stack: nothing allocated between fork and exec.
 * Closing one already listed moves nothing (the listing goes by number). */
static int close_listed(unsigned lo, unsigned hi)
{
    int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return -1;
    char buf[2048] __attribute__((aligned(8)));
    long n;
    while ((n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            /* struct linux_dirent64: ino, off, reclen, type, name */
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            const char *name = buf + off + 19;
            off += reclen;
            unsigned fd = 0;
            if (*name < '0' || *name > '9')
                continue;
            while (*name >= '0' && *name <= '9')
                fd = fd * 10 + (unsigned)(*name++ - '0');
            if (fd >= lo && fd <= hi && (int)fd != d)
                close((int)fd);
        }
    }
    close(d);
    return n < 0 ? -1 : 0;
}

static void close_span(unsigned lo, unsigned hi)
{
    if (lo > hi)
        return;
    if (syscall(SYS_close_range, lo, hi, 0) == 0)
        return;
    /* Kernels before 5.9: what /proc lists, not up to the fd limit alone,
     * which the task's own RLIMIT_NOFILE (set above) may have lowered
     * below an fd the zygote holds. */
    if (close_listed(lo, hi) == 0)
        return;
    /* No /proc: close one by one up to the fd limit. */
    struct rlimit rl;
    unsigned max = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < max)
        max = (unsigned)rl.rlim_cur;
    for (unsigned fd = lo; fd <= hi && fd < max; fd++)
        close((int)fd);
}

void pspawn_child_close_others(const int *keep, int nkeep)
{
    unsigned lo = 0;
    for (int i = 0; i < nkeep; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < lo)
            continue;
        if ((unsigned)keep[i] > lo)
            close_span(lo, (unsigned)keep[i] - 1);
        lo = (unsigned)keep[i] + 1;
    }
    close_span(lo, ~0u);
}

static void report_int(int fd, int v)
{
    while (write(fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
}

int pspawn_child_exec(void *arg)
{
    struct child_exec *a = arg;
    int keep[PSPAWN_FD_MAX + 8];
    int err = pspawn_child_setup(a->setup);
    /* Held: the setup moved our two pipes where it moved every fd it kept. */
    const int *pipes = a->held ? a->setup->fds + a->setup->nfds - 2 : NULL;
    if (!err) {
        int nkeep = pspawn_child_keep_list(a->setup, pipes, pipes ? 2 : 0, keep);
        pspawn_child_close_others(keep, nkeep);
        if (pipes) {
            /* Set up: the caller gives our pid to its hook, then lets us
             * go.  No go (the caller died): we never ran. */
            char go;
            ssize_t n;
            report_int(pipes[1], 0);
            while ((n = read(pipes[0], &go, 1)) < 0 && errno == EINTR)
                ;
            if (n != 1)
                _exit(127);
            close(pipes[0]);
        }
        pspawn_child_sigmask(a->sigmask);
        if (a->setup->traceme && ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
            err = errno;
        } else {
            execve(a->path, a->argv, a->envp);
            err = errno;
        }
    }
    if (pipes)
        report_int(pipes[1], err);
    else
        a->err = err;
    _exit(127);
}

mode_t pspawn_umask_get(void)
{
    char v[32];
    if (status_field("Umask", v, sizeof v))
        return (mode_t)(strtoul(v, NULL, 8) & 0777);
    mode_t old = umask(022);
    umask(old);
    return old;
}

void pspawn_base_get(struct pspawn_base *b)
{
    memset(b, 0, sizeof *b);
    b->umask = pspawn_umask_get();
    b->nice = getpriority(PRIO_PROCESS, 0);
    b->seccomp = pspawn_seccomp_filters();
    for (int r = 0; r < RLIM_NLIMITS; r++)
        getrlimit(r, &b->rl[r]);
}

int pspawn_base_format(const struct pspawn_base *b, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "%o,%d,%d", b->umask, b->nice, b->seccomp);
    for (int r = 0; r < RLIM_NLIMITS && k < size; r++)
        k += (size_t)snprintf(buf + k, size - k, ";%llu:%llu",
                              (unsigned long long)b->rl[r].rlim_cur,
                              (unsigned long long)b->rl[r].rlim_max);
    return k < size ? 0 : ENOSPC;
}

int pspawn_base_parse(const char *s, struct pspawn_base *b)
{
    char *end;
    memset(b, 0, sizeof *b);
    b->umask = (unsigned)strtoul(s, &end, 8);
    if (*end != ',')
        return 0;
    b->nice = (int)strtol(end + 1, &end, 10);
    if (*end != ',')
        return 0;
    b->seccomp = (int)strtol(end + 1, &end, 10);
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        if (*end != ';')
            return 0;
        b->rl[r].rlim_cur = (rlim_t)strtoull(end + 1, &end, 10);
        if (*end != ':')
            return 0;
        b->rl[r].rlim_max = (rlim_t)strtoull(end + 1, &end, 10);
    }
    return *end == 0;
}

#if defined(__clang__)
#pragma clang attribute pop
#endif
