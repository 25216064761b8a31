/* SPDX-License-Identifier: BSD-3-Clause */
/* Which file an exec would run (execpath.h). */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "execpath.h"
#include "nolibc.h"

/* The path that DIRFD and PATH (execveat's) stand for, into BUF: the
 * directory's or file's path through /proc/self/fd, checked to be the
 * same file still (a deleted file or a memfd has none).  0 if none. */
int exec_path_at(int dirfd, const char *path, int flags, char *buf, size_t len)
{
    if (flags & ~AT_EMPTY_PATH)
        return 0;   /* AT_SYMLINK_NOFOLLOW: exec's own answer */
    if (path[0] == '/' || (dirfd == AT_FDCWD && path[0])) {
        if (strlen(path) >= len)
            return 0;
        strcpy(buf, path);
        return 1;
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, buf, len - 1);
    if (n <= 0 || buf[0] != '/')
        return 0;
    buf[n] = 0;
    struct stat via_fd, via_path;
    if (fstat(dirfd, &via_fd) < 0 || stat(buf, &via_path) < 0 ||
        via_fd.st_dev != via_path.st_dev || via_fd.st_ino != via_path.st_ino)
        return 0;
    if (!path[0])
        return (flags & AT_EMPTY_PATH) && S_ISREG(via_fd.st_mode);
    size_t at = (size_t)n, plen = strlen(path);
    if (!S_ISDIR(via_fd.st_mode) || at + 1 + plen >= len)
        return 0;
    buf[at] = '/';
    memcpy(buf + at + 1, path, plen + 1);
    return 1;
}

/* The file execvp would run for FILE, as glibc searches PATH (the
 * caller's: execvpe too searches its caller's PATH, not ENVP's): the
 * first that exists and may be executed, into BUF; 0 if none. */
int exec_search_path(const char *file, char *buf, size_t len)
{
    if (file[nl_span_to(file, '/', '/')]) {
        size_t n = nl_len(file);
        if (n >= len)
            return 0;
        nl_copy(buf, file, n + 1);
        return 1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    size_t flen = nl_len(file);
    for (const char *p = path;; p++) {
        size_t dlen = nl_span_to(p, ':', ':');
        const char *end = p[dlen] ? p + dlen : NULL;
        if (dlen + flen + 2 <= len) {
            nl_copy(buf, p, dlen);
            if (dlen)
                buf[dlen++] = '/';
            nl_copy(buf + dlen, file, flen + 1);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
                faccessat(AT_FDCWD, buf, X_OK, AT_EACCESS) == 0)
                return 1;
        }
        if (!end)
            return 0;
        p = end;
    }
}
