/* SPDX-License-Identifier: BSD-3-Clause */
/* The programs worth a zygote, learned (worth.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "identity.h"
#include "preload.h"
#include "worth.h"

/* The value of NAME in ENV, or NULL. */
static const char *env_get(char *const env[], const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

const char *pspawn_step_pwd(char *const env[])
{
    const char *dir = env_get(env, "PWD");
    return dir && dir[0] == '/' ? dir : NULL;
}

int pspawn_step_program(const char *argv0, char *const env[], int pwd, char *path, size_t len,
                        char *why, size_t wlen)
{
    if (argv0[0] == '/') {
        snprintf(path, len, "%s", argv0);
        return 0;
    }
    const char *dir = pwd ? pspawn_step_pwd(env) : NULL;
    if (strchr(argv0, '/') && dir &&
        snprintf(path, len, "%s/%s", dir, argv0) < (int)len)
        return 0;
    if (strchr(argv0, '/')) {
        snprintf(why, wlen, "the program %s is relative to the working directory", argv0);
        return -1;
    }
    const char *p = env_get(env, "PATH");
    for (; p && *p;) {
        const char *colon = strchrnul(p, ':');
        struct stat st;
        if (p[0] == '/' && snprintf(path, len, "%.*s/%s", (int)(colon - p), p, argv0) < (int)len &&
            stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
            return 0;
        p = *colon ? colon + 1 : colon;
    }
    snprintf(why, wlen, "%s is not in the step's PATH", argv0);
    return -1;
}

/* DIR, a directory of our effective uid that no one else may read or
 * write, opened; made if missing (its parent 0711, as /run/pspawn is,
 * any above it 0700).  -1 with errno. */
static int open_table(const char *dir, int make)
{
    if (make && mkdir(dir, 0700) < 0 && errno == ENOENT) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", dir);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            if (pspawn_preload_mkdirs(parent) < 0 ||
                (mkdir(parent, 0711) < 0 && errno != EEXIST))
                return -1;
        }
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static void entry_name(char *name, size_t len, uid_t uid, uint64_t id)
{
    snprintf(name, len, "%u.%016llx", (unsigned)uid, (unsigned long long)id);
}

void pspawn_worth_recall(struct pspawn_worth *w, const char *dir, uid_t uid, const char *path,
                         int argc, char **argv, char **env)
{
    memset(w, 0, sizeof *w);
    char why[PATH_MAX + 64];
    struct stat st;
    if (argc < 1 || !argv || !argv[0] ||
        (path ? snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path
              : pspawn_step_program(argv[0], env, 1, w->path, sizeof w->path, why,
                                    sizeof why) < 0) ||
        stat(w->path, &st) < 0)
        return;
    /* The options are left out: they do not change what the loader maps
     * (preload=auto's objects are counted too, which only makes a program
     * look more worth it). */
    w->id = pspawn_program_identity(uid, w->path, &st, argc > 1 ? argv : NULL, env, "");
    w->identified = 1;
    w->python = pspawn_python_program(w->path);
    int dfd = open_table(dir, 0);
    if (dfd < 0)
        return;
    char name[48], text[64];
    entry_name(name, sizeof name, uid, w->id);
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    close(dfd);
    if (fd < 0)
        return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    int objects, python;
    if (sscanf(text, "objects=%d python=%d", &objects, &python) == 2 && objects > 0) {
        w->known = 1;
        w->objects = objects;
        w->python |= python == 1;
    }
}

const char *pspawn_worth_verdict(const struct pspawn_worth *w, int min_objects, char *why,
                                 size_t len)
{
    if (!w->identified || !w->known || w->python || w->objects >= min_objects)
        return NULL;
    /* The program's name, not its path: the reason goes into the step's
     * line, which keeps PSPAWN_TALLY_WHY bytes of it. */
    const char *slash = strrchr(w->path, '/');
    snprintf(why, len, "auto: %.48s loaded %d objects in its last zygote, fewer than "
             "auto_objects=%d", slash ? slash + 1 : w->path, w->objects, min_objects);
    return why;
}

/* A new entry of UID's in DFD: remove the oldest of UID's beyond
 * PSPAWN_WORTH_PER_USER. */
static void evict(int dfd, uid_t uid)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char prefix[16], oldest[64] = "";
    int n = snprintf(prefix, sizeof prefix, "%u.", (unsigned)uid), count = 0;
    struct timespec when = { 0, 0 };
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (strncmp(e->d_name, prefix, (size_t)n) != 0 || strlen(e->d_name) >= sizeof oldest ||
            strchr(e->d_name + n, '.') ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        count++;
        if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
            (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec)) {
            when = st.st_mtim;
            snprintf(oldest, sizeof oldest, "%s", e->d_name);
        }
    }
    closedir(d);
    if (count > PSPAWN_WORTH_PER_USER && oldest[0])
        unlinkat(dfd, oldest, 0);
}

int pspawn_worth_learn(const struct pspawn_worth *w, const char *dir, uid_t uid, int objects,
                       int python)
{
    if (!w->identified || objects <= 0) {
        errno = EINVAL;
        return -1;
    }
    if (w->known && w->objects == objects && w->python == (python || w->python))
        return 0;   /* nothing new */
    int dfd = open_table(dir, 1);
    if (dfd < 0)
        return -1;
    char name[48], tmp[80], text[64];
    entry_name(name, sizeof name, uid, w->id);
    /* Written whole, then renamed: a step that reads it meanwhile sees
     * the old entry or the new one, never a part. */
    snprintf(tmp, sizeof tmp, "%s.%ld", name, (long)getpid());
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int n = snprintf(text, sizeof text, "objects=%d python=%d\n", objects, python != 0);
    int err = 0;
    if (fd < 0 || write(fd, text, (size_t)n) != n)
        err = fd < 0 ? errno : EIO;
    if (fd >= 0)
        close(fd);
    struct stat st;
    int fresh = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0;
    if (!err && renameat(dfd, tmp, dfd, name) < 0)
        err = errno;
    if (err)
        unlinkat(dfd, tmp, 0);
    else if (fresh)
        evict(dfd, uid);
    close(dfd);
    errno = err;
    return err ? -1 : 0;
}
