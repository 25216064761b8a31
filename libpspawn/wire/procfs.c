/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

int pspawn_proc_stat(pid_t pid, int first, int last, unsigned long long *out)
{
    char path[48], buf[2048];
    if (first < 3 || last < first) {
        errno = EINVAL;
        return -1;
    }
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            errno = ESRCH;
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n <= 0) {
        errno = n < 0 ? e : ESRCH;
        return -1;
    }
    buf[n] = 0;
    /* The command name may hold spaces and parentheses: fields restart
     * after its last ')'. */
    const char *p = strrchr(buf, ')');
    if (!p) {
        errno = EINVAL;
        return -1;
    }
    p++;
    for (int field = 3; field <= last; field++) {
        while (*p == ' ')
            p++;
        if (!*p || *p == '\n') {
            errno = EINVAL;
            return -1;
        }
        unsigned long long v = 0;
        if (field == 3) {
            v = (unsigned char)*p++;
        } else {
            int neg = *p == '-';
            if (neg)
                p++;
            for (; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (unsigned long long)(*p - '0');
            if (neg)
                v = (unsigned long long)-(long long)v;
        }
        while (*p && *p != ' ' && *p != '\n')
            p++;
        if (field >= first)
            out[field - first] = v;
    }
    return 0;
}

char *pspawn_read_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *more = realloc(buf, cap *= 2);
            if (!more)
                free(buf);
            buf = more;
            continue;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            buf = NULL;
        } else if (n == 0) {
            break;
        } else {
            len += (size_t)n;
        }
    }
    int e = errno;
    close(fd);
    if (buf)
        buf[len] = '\0';
    errno = e;
    return buf;
}
