/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zygotes.h"

size_t scope_socket_inodes(uid_t uid, const char *scope, unsigned long *inodes)
{
    char prefix[96], line[512];
    int plen = snprintf(prefix, sizeof prefix, "@pspawn-i%u.%s.", (unsigned)uid, scope);
    size_t n = 0;
    FILE *f = fopen("/proc/net/unix", "re");
    while (f && n < SCOPE_SOCKETS_MAX && fgets(line, sizeof line, f)) {
        unsigned long ino;
        char path[256];
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &ino, path) == 2 &&
            !strncmp(path, prefix, (size_t)plen))
            inodes[n++] = ino;
    }
    if (f)
        fclose(f);
    return n;
}

int holds_scope_socket(pid_t pid, const unsigned long *inodes, size_t n)
{
    char dir[64], link[PATH_MAX], target[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        unsigned long ino;
        if (k <= 0 || (target[k] = 0, sscanf(target, "socket:[%lu]", &ino) != 1))
            continue;
        for (size_t i = 0; i < n && !found; i++)
            found = inodes[i] == ino;
    }
    if (d)
        closedir(d);
    return found;
}
