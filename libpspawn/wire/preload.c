/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

int pspawn_preload_parse(const char *line, struct preload_entry *e)
{
    int at = 0;
    memset(e, 0, sizeof *e);
    if (sscanf(line, "%" VERDICT_SCAN "s %d %ld %llu %llu %lld %n", e->verdict, &e->mode, &e->lmid, &e->dev,
               &e->ino, &e->mtime_ns, &at) != 6 || !at || line[at] != '/')
        return -1;
    size_t len = strcspn(line + at, "\n");
    if (len >= sizeof e->path)
        return -1;
    memcpy(e->path, line + at, len);
    e->path[len] = 0;
    return 0;
}

int pspawn_preload_format(const struct preload_entry *e, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s %d %ld %llu %llu %lld %s\n", e->verdict, e->mode, e->lmid,
                     e->dev, e->ino, e->mtime_ns, e->path);
    return n > 0 && (size_t)n < size ? n : -1;
}

/* FNV-1a: names the file; the key line inside is what is checked. */
static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

int pspawn_preload_cache(char *path, size_t size, char *key, size_t keysize)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    struct stat st;
    if (n <= 0 || (exe[n] = 0, stat(exe, &st) < 0))
        return -1;
    const char *ld = getenv("LD_LIBRARY_PATH"), *pre = getenv("LD_PRELOAD"),
               *tun = getenv("GLIBC_TUNABLES");
    /* "bind-now": entries' "ok" means bound now since then; a cache of
     * before is started afresh. */
    int k = snprintf(key, keysize, "bind-now %s %llu %llu %lld LD_LIBRARY_PATH=%s LD_PRELOAD=%s "
                     "GLIBC_TUNABLES=%s", exe, (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino,
                     (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                     ld ? ld : "-", pre ? pre : "-", tun ? tun : "-");
    if (k < 0 || (size_t)k >= keysize)
        return -1;
    for (char *c = key; *c; c++)
        if (*c == '\n')
            *c = ' ';
    char dir[PATH_MAX];
    if (pspawn_cache_dir(dir, sizeof dir) < 0)
        return -1;
    k = snprintf(path, size, "%s/preload/%s-%016" PRIx64, dir, strrchr(exe, '/') + 1, hash(key));
    return k > 0 && (size_t)k < size ? 0 : -1;
}

int pspawn_cache_dir(char *buf, size_t size)
{
    const char *dir = getenv("PSPAWN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int k;
    if (dir && *dir)
        k = snprintf(buf, size, "%s", dir);
    else if (xdg && *xdg)
        k = snprintf(buf, size, "%s/pspawn", xdg);
    else if (home && *home)
        k = snprintf(buf, size, "%s/.cache/pspawn", home);
    else
        return -1;
    return k > 0 && (size_t)k < size ? 0 : -1;
}

int pspawn_preload_mkdirs(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *s = dir + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return 0;
}
