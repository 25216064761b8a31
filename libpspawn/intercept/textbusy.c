/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writing a program that a parked zygote holds.  A zygote is the program
 * exec'd, so the kernel refuses to open its file for writing (ETXTBSY)
 * while the zygote lives, where an exec'd task's hold ends with the task:
 * `./t; cp new ./t` would fail until the zygote's idle end.  So when an
 * open for writing, or a truncate, of a launcher in the scope fails with
 * ETXTBSY, the scope's zygotes of that file that run no task are told to
 * end (SIGTERM through a pidfd: each is pinned before it is checked),
 * and the call is made once more.  A zygote with a task running is left
 * alone: its task holds the file as an exec'd one would, and ETXTBSY is
 * what the writer would get without interception too.  A later start of
 * the rewritten program gets a new zygote (its name has the file's
 * identity: inode, mtime, ctime).  Only calls through these wrappers are
 * helped: a writer that makes the system call itself, or a process
 * outside the scope, waits for the zygote's idle end.
 *
 * A call that succeeds, or fails otherwise, costs one comparison.
 */
#include "config.h"
#undef _FORTIFY_SOURCE      /* its inline open() would clash with ours */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "intercept.h"
#include "pidfd.h"
#include "procfs.h"
#include "route.h"
#include "zygotes.h"

#define EXPORT __attribute__((visibility("default")))

/* How long a zygote told to end may take (it ends at once: none of its
 * tasks runs). */
#define ZYGOTE_END_MS 2000

/* Whether PID has a child that still runs: a parked zygote's only
 * children are its tasks.  One that has exited and is not reaped yet (its
 * stand-in can learn its status from its pidfd first) holds nothing. */
static int runs_a_task(pid_t pid)
{
    char p[64], kids[4096];
    snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t k = read(fd, kids, sizeof kids - 1);
    close(fd);
    if (k < 0 || k == (ssize_t)sizeof kids - 1)
        return 1;
    kids[k] = 0;
    char *end;
    for (char *c = kids; *c; c = end) {
        long kid = strtol(c, &end, 10);
        if (end == c)
            break;
        unsigned long long state;
        if (pspawn_proc_stat((pid_t)kid, 3, 3, &state) < 0 || state != 'Z')
            return 1;
    }
    return 0;
}

/* Whether PID's program is the file ST. */
static int runs_file(pid_t pid, const struct stat *st)
{
    char p[64];
    struct stat exe;
    snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
    return stat(p, &exe) == 0 && exe.st_dev == st->st_dev && exe.st_ino == st->st_ino;
}

/* Whether PID's program is the file ST, and PID runs no task. */
static int idle_zygote_of(pid_t pid, const struct stat *st)
{
    return runs_file(pid, st) && !runs_a_task(pid);
}

/* End the scope's idle zygotes of the file ST: how many ended. */
static int end_zygotes_of(const struct stat *st)
{
    const char *scope = getenv(ROUTE_ENV_SCOPE);
    unsigned long inodes[SCOPE_SOCKETS_MAX];
    size_t n = scope && *scope ? scope_socket_inodes(geteuid(), scope, inodes) : 0;
    DIR *d = n ? opendir("/proc") : NULL;
    struct dirent *e;
    int ended = 0;
    while (d && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        /* Only a process of that program is pinned (one stat of each
         * process; a pidfd for a few), then checked again through the pin. */
        if (*end || pid <= 1 || pid == getpid() || !runs_file((pid_t)pid, st))
            continue;
        /* Pinned: what is checked below is this process, if the pidfd
         * says it still runs once the checks are done. */
        int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        if (pidfd < 0)
            continue;
        struct pollfd pfd = { pidfd, POLLIN, 0 };
        if (idle_zygote_of((pid_t)pid, st) && holds_scope_socket((pid_t)pid, inodes, n) &&
            poll(&pfd, 1, 0) == 0 &&
            syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) == 0) {
            intercept_say("%ld (a parked zygote) holds a program being "
                          "written: told to end", pid);
            ended += poll(&pfd, 1, ZYGOTE_END_MS) == 1;
        }
        close(pidfd);
    }
    if (d)
        closedir(d);
    return ended;
}

/* After a call on DIRFD/PATH failed with ERR: whether to make it again
 * (a zygote that held the file has ended).  errno is ERR on return. */
static int released(int err, int dirfd, const char *path)
{
    struct stat st;
    int again = err == ETXTBSY && route_table && path &&
                fstatat(dirfd, path, &st, 0) == 0 && S_ISREG(st.st_mode) && end_zygotes_of(&st);
    errno = err;
    return again;
}

static int for_writing(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int mode_writes(const char *mode)
{
    return mode && strpbrk(mode, "wa+") != NULL;
}

/* The next definition of NAME, of TYPE, found on first use: a constructor
 * that runs before ours may open files. */
#define NEXT(type, name) \
    static type next_##name; \
    if (!next_##name) \
        next_##name = (type)intercept_next(#name)

/* The mode of an open with O_CREAT or O_TMPFILE, from its variadic tail. */
#define OPEN_MODE(flags, mode) \
    do { \
        if ((flags) & (O_CREAT | O_TMPFILE)) { \
            va_list ap; \
            va_start(ap, flags); \
            mode = (mode_t)va_arg(ap, unsigned); \
            va_end(ap); \
        } \
    } while (0)

/* open and its kin: once more when the first attempt met a parked zygote. */
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

#define OPEN(name) \
    EXPORT int name(const char *path, int flags, ...) \
    { \
        mode_t mode = 0; \
        OPEN_MODE(flags, mode); \
        NEXT(open_fn, name); \
        int fd = next_##name(path, flags, mode); \
        if (fd < 0 && for_writing(flags) && released(errno, AT_FDCWD, path)) \
            fd = next_##name(path, flags, mode); \
        return fd; \
    }
#define OPENAT(name) \
    EXPORT int name(int dirfd, const char *path, int flags, ...) \
    { \
        mode_t mode = 0; \
        OPEN_MODE(flags, mode); \
        NEXT(openat_fn, name); \
        int fd = next_##name(dirfd, path, flags, mode); \
        if (fd < 0 && for_writing(flags) && released(errno, dirfd, path)) \
            fd = next_##name(dirfd, path, flags, mode); \
        return fd; \
    }
OPEN(open)
OPEN(open64)
OPENAT(openat)
OPENAT(openat64)

/* What a program built with _FORTIFY_SOURCE calls for an open without a
 * mode. */
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
#define OPEN_2(name) \
    EXPORT int name(const char *path, int flags) \
    { \
        NEXT(open2_fn, name); \
        int fd = next_##name(path, flags); \
        if (fd < 0 && for_writing(flags) && released(errno, AT_FDCWD, path)) \
            fd = next_##name(path, flags); \
        return fd; \
    }
#define OPENAT_2(name) \
    EXPORT int name(int dirfd, const char *path, int flags) \
    { \
        NEXT(openat2_fn, name); \
        int fd = next_##name(dirfd, path, flags); \
        if (fd < 0 && for_writing(flags) && released(errno, dirfd, path)) \
            fd = next_##name(dirfd, path, flags); \
        return fd; \
    }
OPEN_2(__open_2)
OPEN_2(__open64_2)
OPENAT_2(__openat_2)
OPENAT_2(__openat64_2)

EXPORT int creat(const char *path, mode_t mode)
{
    return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int creat64(const char *path, mode_t mode)
{
    return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* stdio opens through libc's own open, which no wrapper sees.  (freopen
 * is left: a failed one has closed its stream, which a retry cannot
 * reopen.) */
typedef FILE *(*fopen_fn)(const char *, const char *);
#define FOPEN(name) \
    EXPORT FILE *name(const char *path, const char *mode) \
    { \
        NEXT(fopen_fn, name); \
        FILE *f = next_##name(path, mode); \
        if (!f && mode_writes(mode) && released(errno, AT_FDCWD, path)) \
            f = next_##name(path, mode); \
        return f; \
    }
FOPEN(fopen)
FOPEN(fopen64)

typedef int (*truncate_fn)(const char *, off_t);
EXPORT int truncate(const char *path, off_t length)
{
    NEXT(truncate_fn, truncate);
    int r = next_truncate(path, length);
    if (r < 0 && released(errno, AT_FDCWD, path))
        r = next_truncate(path, length);
    return r;
}
