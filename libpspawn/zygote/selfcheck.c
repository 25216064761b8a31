/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checks a zygote makes of itself when the program parks: what a fork
 * could not give each task as an exec would.  Threads (a fork copies only
 * its caller), POSIX timers (a fork keeps none), and the fds the program's
 * constructors left open (each task keeps them, up to MAX_CTOR_FDS).  Each
 * is found without /proc as well.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "zygote.h"

/* POSIX timers (timer_create) a constructor made: a fork does not keep
 * them, and their notification cannot be read back to make them again.
 * Without /proc/self/timers (no /proc, no CONFIG_CHECKPOINT_RESTORE): a
 * process numbers its timers 0, 1, 2... as it makes them, so a new one's
 * number says how many were made, and timer_gettime which still exist
 * (one made with a chosen number, which only checkpoint-restore tools
 * do, escapes that).  Returns the count, or -errno: cannot tell. */
static int count_posix_timers(void)
{
    FILE *f = fopen("/proc/self/timers", "re");
    char line[128];
    int n = 0, made = -1;
    struct sigevent none = { .sigev_notify = SIGEV_NONE };
    if (f) {
        while (fgets(line, sizeof line, f))
            n += strncmp(line, "ID:", 3) == 0;
        fclose(f);
        return n;
    }
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &none, &made) < 0)
        return -errno;
    syscall(SYS_timer_delete, made);
    if (made < 0 || made > 65536)
        return -E2BIG;  /* too many to look at */
    for (int id = 0; id < made; id++) {
        struct itimerspec left;
        n += syscall(SYS_timer_gettime, id, &left) == 0;
    }
    return n;
}

/* Threads at the park: a fork copies only the calling thread.  Without
 * /proc/self/task, unshare(CLONE_THREAD) fails with EINVAL exactly when
 * another thread shares our thread group, and does nothing otherwise.
 * Returns the count, or -errno: -EINVAL for more than one (uncounted),
 * another for "cannot tell". */
int zygote_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return syscall(SYS_unshare, CLONE_THREAD) == 0 ? 1 : -errno;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Ours, not the program's: what the launcher gave us and what we opened. */
static int own_fd(int fd)
{
    return fd <= 2 || fd == parked.sock || fd == parked.report || fd == parked.launcher_pidfd ||
           fd == parked.exec_fd || fd == parked.task_cgroup;
}

static int add_ctor_fd(int fd, int *total)
{
    if (own_fd(fd))
        return 0;
    if (parked.nctor_fds < MAX_CTOR_FDS)
        parked.ctor_fds[parked.nctor_fds++] = fd;
    return ++*total;
}

/* Without /proc/self/fd: poll() marks each fd number that is not open
 * POLLNVAL, up to a thousand numbers a call, up to the hard fd limit. */
static void probe_fds(int *total)
{
    struct rlimit rl;
    long max = 1L << 20, chunk = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_max != RLIM_INFINITY && (long)rl.rlim_max < max)
            max = (long)rl.rlim_max;
        if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < chunk)
            chunk = (long)rl.rlim_cur;     /* poll() takes no more */
    }
    struct pollfd p[1024];
    for (long base = 3; chunk > 0 && base < max; base += chunk) {
        int n = max - base < chunk ? (int)(max - base) : (int)chunk;
        for (int i = 0; i < n; i++)
            p[i] = (struct pollfd){ (int)(base + i), 0, 0 };
        if (poll(p, (nfds_t)n, 0) < 0)
            return;
        for (int i = 0; i < n; i++)
            if (!(p[i].revents & POLLNVAL))
                add_ctor_fd(p[i].fd, total);
    }
}

/* The fds the program's constructors left open, which a task keeps as
 * after an exec.  Returns how many; more than MAX_CTOR_FDS are refused
 * (a task would lose the rest). */
static int record_fds(void)
{
    int total = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        probe_fds(&total);
        return total;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            add_ctor_fd(atoi(e->d_name), &total);
    closedir(d);
    return total;
}

void zygote_check_forkable(void)
{
    int threads = zygote_thread_count();
    if (threads != 1) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_THREADED, threads);
        _exit(0);
    }
    int timers = count_posix_timers();
    if (timers != 0) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_POSIX_TIMERS, timers);
        _exit(0);
    }
    int fds = record_fds();
    if (fds > MAX_CTOR_FDS) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_TOO_MANY_FDS, fds);
        _exit(0);
    }
}
