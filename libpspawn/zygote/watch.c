/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a zygote loaded, watched on disk from the park on: a task forked
 * from it runs what it loaded, an exec'd one what is on disk.
 *
 * At the park, every object the loader lists (the libraries, the preloads,
 * the loader itself; the program's own file is the launcher's to check)
 * is recorded with the identity of the file it mapped (device and inode
 * from /proc/self/maps; size, mtime) under two names: the one the loader
 * opened, and the mapped file's own (where the first is a symbolic link).
 * What can change a name's file happens in its directory, which inotify
 * watches (a few watches, whatever the number of libraries): a file
 * written in place (IN_MODIFY), renamed over or linked anew
 * (IN_MOVED_TO, IN_CREATE), removed (IN_DELETE, IN_MOVED_FROM) or touched
 * (IN_ATTRIB).  An event on one of our names whose file is still the one
 * mapped (a chmod, a new hard link) is no change; one on another name is
 * none of ours.  Where inotify cannot be had (no instance or watch left),
 * the directories are stat'ed instead, once per request (a rename or a
 * new link changes a directory's mtime), and the objects themselves only
 * when one did; so do sub-zygotes (a forked one shares its root's
 * inotify instance, whose events only one reader gets).
 * Not seen: a new library put earlier in the search path, a directory on
 * the way that changes, and without inotify a library written in place
 * (which breaks the processes that map it anyway). */
#include "config.h"

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "zygote.h"

struct watched_lib {
    const char *name;           /* the loader's l_name, valid while loaded */
    char *real;                 /* the mapped file's name, or NULL */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};
struct lib_dir {
    char *path;
    int wd;
    struct timespec mtime;
};
static struct {
    struct watched_lib *v;
    int n, cap;
    struct lib_dir *dirs;
    int ndirs;
    int fd;                     /* inotify, or -1: the directories' mtimes */
    const char *stale;          /* the object found replaced */
} libs = { NULL, 0, 0, NULL, 0, -1, NULL };

struct mapped_file {
    uintptr_t start, end;
    dev_t dev;
    ino_t ino;
    char *path;
};

struct maps {
    struct mapped_file *m;
    int n;
};

/* File mappings of /proc/self/maps (none without /proc: the names are
 * trusted at the park). */
static void read_maps(struct maps *maps)
{
    FILE *f = fopen("/proc/self/maps", "re");
    int cap = 0;
    char line[PATH_MAX + 128];
    maps->m = NULL;
    maps->n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long start, end, maj, min, ino;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %lx:%lx %lu %n", &start, &end, &maj, &min, &ino, &at) < 5 ||
            !ino || line[at] != '/')
            continue;
        line[strcspn(line, "\n")] = 0;
        if (maps->n == cap) {
            cap = cap ? 2 * cap : 256;
            struct mapped_file *t = realloc(maps->m, (size_t)cap * sizeof *t);
            if (!t)
                break;
            maps->m = t;
        }
        maps->m[maps->n++] = (struct mapped_file){ start, end, makedev(maj, min), (ino_t)ino,
                                                   strdup(line + at) };
    }
    if (f)
        fclose(f);
}

static void free_maps(struct maps *maps)
{
    for (int i = 0; i < maps->n; i++)
        free(maps->m[i].path);
    free(maps->m);
}

/* A new entry for NAME, or NULL (no memory). */
static struct watched_lib *append_lib(const char *name)
{
    if (libs.n == libs.cap) {
        int cap = libs.cap ? 2 * libs.cap : 64;
        struct watched_lib *t = realloc(libs.v, (size_t)cap * sizeof *t);
        if (!t)
            return NULL;
        libs.v = t;
        libs.cap = cap;
    }
    struct watched_lib *l = &libs.v[libs.n++];
    *l = (struct watched_lib){ .name = name };
    return l;
}

/* Set once the park has recorded what was loaded then: a zygote that
 * imports more between steps (python-embed.c) adds what it loaded since. */
static int parked_once;

static int add_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const struct maps *maps = data;
    if (!info->dlpi_name || info->dlpi_name[0] != '/')
        return 0;   /* the program, the vDSO */
    for (int i = 0; parked_once && i < libs.n; i++)
        if (strcmp(libs.v[i].name, info->dlpi_name) == 0)
            return 0;
    struct watched_lib *l = append_lib(info->dlpi_name);
    if (!l)
        return 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_LOAD)
            continue;
        uintptr_t at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        for (int k = 0; k < maps->n; k++)
            if (at >= maps->m[k].start && at < maps->m[k].end) {
                l->dev = maps->m[k].dev;
                l->ino = maps->m[k].ino;
                if (maps->m[k].path && strcmp(maps->m[k].path, l->name) != 0)
                    l->real = strdup(maps->m[k].path);
            }
        break;
    }
    return 0;
}

static int same_lib(const struct watched_lib *l)
{
    struct stat st;
    return stat(l->name, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino &&
           st.st_size == l->size && st.st_mtim.tv_sec == l->mtime.tv_sec &&
           st.st_mtim.tv_nsec == l->mtime.tv_nsec;
}

/* The directory of NAME, watched once. */
static void watch_dir_of(const char *name)
{
    const char *slash = name ? strrchr(name, '/') : NULL;
    struct stat st;
    if (!slash)
        return;
    size_t len = slash > name ? (size_t)(slash - name) : 1;
    for (int i = 0; i < libs.ndirs; i++)
        if (strlen(libs.dirs[i].path) == len && strncmp(libs.dirs[i].path, name, len) == 0)
            return;
    char *dir = strndup(name, len);
    struct lib_dir *t = dir ? realloc(libs.dirs, (size_t)(libs.ndirs + 1) * sizeof *t) : NULL;
    if (!t) {
        free(dir);
        return;
    }
    libs.dirs = t;
    struct lib_dir *d = &libs.dirs[libs.ndirs++];
    *d = (struct lib_dir){ dir, -1, { 0, 0 } };
    if (libs.fd >= 0 &&
        (d->wd = inotify_add_watch(libs.fd, dir, IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM |
                                   IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF |
                                   IN_MOVE_SELF | IN_ONLYDIR)) < 0) {
        close(libs.fd);     /* out of watches: the mtimes instead */
        libs.fd = -1;
    }
    if (stat(dir, &st) == 0)
        d->mtime = st.st_mtim;
}

/* Files the program read its code from besides the loader's objects (a
 * warm interpreter's modules), named before the park. */
static struct {
    char **v;
    int n, watched;             /* those up to WATCHED are in libs */
} code_files;

void zygote_watch_code_file(const char *path)
{
    char *copy = path && path[0] == '/' ? strdup(path) : NULL;
    char **t = copy ? realloc(code_files.v, (size_t)(code_files.n + 1) * sizeof *t) : NULL;
    if (!t) {
        free(copy);
        return;
    }
    code_files.v = t;
    code_files.v[code_files.n++] = copy;
}

void zygote_libraries_watch(void)
{
    int first = libs.n;
    struct maps maps;
    read_maps(&maps);
    dl_iterate_phdr(add_lib, &maps);
    free_maps(&maps);
    for (; code_files.watched < code_files.n; code_files.watched++)
        append_lib(code_files.v[code_files.watched]);   /* identity from the stat below */
    /* Only the root reads events (they go to one reader): an exec'd
     * sub-zygote, and a forked one after its fork, look at the
     * directories. */
    if (parked.root == 0 && !parked_once)
        libs.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    parked_once = 1;
    for (int i = first; i < libs.n; i++) {
        watch_dir_of(libs.v[i].name);
        watch_dir_of(libs.v[i].real);
    }
    /* Identities from the names once watched: a replacement before the
     * watch shows as another file than the one mapped, one after it as an
     * event. */
    for (int i = first; i < libs.n && !libs.stale; i++) {
        struct watched_lib *l = &libs.v[i];
        struct stat st;
        if (stat(l->name, &st) < 0 || (l->ino && (st.st_dev != l->dev || st.st_ino != l->ino))) {
            libs.stale = l->name;
            break;
        }
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        l->size = st.st_size;
        l->mtime = st.st_mtim;
    }
}

int zygote_libraries_fd(void)
{
    return parked.root > 0 ? -1 : libs.fd;
}

/* Whether NAME is DIR/BASE. */
static int named(const char *name, const char *dir, const char *base)
{
    size_t len = strlen(dir);
    if (!name || strncmp(name, dir, len) != 0)
        return 0;
    name += len;
    if (len > 1 || *name == '/')
        name += *name == '/';
    return strcmp(name, base) == 0;
}

static void check_event(const struct inotify_event *e)
{
    const struct lib_dir *d = NULL;
    for (int i = 0; i < libs.ndirs && !d; i++)
        if (libs.dirs[i].wd == e->wd)
            d = &libs.dirs[i];
    /* An event on the directory itself, or lost ones: look at them all. */
    int all = (e->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) || !e->len;
    if (!d && !(e->mask & IN_Q_OVERFLOW))
        return;
    for (int i = 0; i < libs.n && !libs.stale; i++) {
        const struct watched_lib *l = &libs.v[i];
        if ((all || named(l->name, d->path, e->name) || named(l->real, d->path, e->name)) &&
            ((e->mask & IN_MODIFY) || !same_lib(l)))
            libs.stale = l->name;
    }
}

/* Without inotify: whether a directory changed since we looked. */
static int dirs_changed(void)
{
    int changed = 0;
    for (int i = 0; i < libs.ndirs; i++) {
        struct stat st;
        if (stat(libs.dirs[i].path, &st) < 0 ||
            st.st_mtim.tv_sec != libs.dirs[i].mtime.tv_sec ||
            st.st_mtim.tv_nsec != libs.dirs[i].mtime.tv_nsec) {
            changed = 1;
            libs.dirs[i].mtime = st.st_mtim;
        }
    }
    return changed;
}

const char *zygote_libraries_stale(int thorough)
{
    if (libs.stale)
        return libs.stale;
    if (zygote_libraries_fd() >= 0) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t got;
        while (!libs.stale && (got = read(libs.fd, buf, sizeof buf)) > 0)
            for (char *p = buf; p < buf + got && !libs.stale;) {
                const struct inotify_event *e = (const struct inotify_event *)p;
                check_event(e);
                p += sizeof *e + e->len;
            }
    } else if (libs.n > 0 && thorough && dirs_changed()) {
        for (int i = 0; i < libs.n && !libs.stale; i++)
            if (!same_lib(&libs.v[i]))
                libs.stale = libs.v[i].name;
    }
    return libs.stale;
}

