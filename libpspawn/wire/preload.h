/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Learned library preloads: the per-user cache of what a program's tasks
 * dlopen'ed after main, read by its next zygote (zygote/preload.c) and
 * written by tasks as they load (libpspawn-record.so, through the proxy).
 *
 * The cache file of a program is CACHE/preload/NAME-HASH, CACHE being
 * $PSPAWN_CACHE_DIR, else $XDG_CACHE_HOME/pspawn, else ~/.cache/pspawn.
 * Its first line is the key: the program's path, device, inode and mtime
 * and the loader's variables.  Each other line is an entry:
 *   VERDICT MODE LMID DEV INO MTIME PATH
 * VERDICT: "ok" (the zygote loads it, bound now where the task bound
 * lazily), "lazy=SYMBOL" (loaded with the task's flags: binding SYMBOL
 * now fails, or a later RTLD_GLOBAL preload defines it), "untried"
 * (recorded, not yet tried in a zygote), or why the object is left out,
 * in one word: thread, fd, device, fails, namespace, or "denied=NAME"
 * (NAME, the object or one it needs, is on the zygote's deny list).
 */
#ifndef PSPAWN_PRELOAD_H
#define PSPAWN_PRELOAD_H

#include <limits.h>
#include <stddef.h>

#define VERDICT_SIZE 96
#define VERDICT_SCAN "95"       /* VERDICT_SIZE - 1, for scanf */

struct preload_entry {
    char verdict[VERDICT_SIZE];
    int mode;                   /* the dlopen flags the task used */
    long lmid;                  /* its namespace (0: the base one) */
    unsigned long long dev, ino;
    long long mtime_ns;
    char path[PATH_MAX];
};

/* "VERDICT MODE LMID DEV INO MTIME PATH" (a newline or not).  0 or -1. */
int pspawn_preload_parse(const char *line, struct preload_entry *e);
/* The same, formatted, with a newline.  The length, or -1 if too long. */
int pspawn_preload_format(const struct preload_entry *e, char *buf, size_t size);
/* This process's program's cache file (PATH) and key (KEY, one line, no
 * newline).  0, or -1 (no home, no /proc). */
int pspawn_preload_cache(char *path, size_t size, char *key, size_t keysize);
/* The user's pspawn cache directory, into BUF: $PSPAWN_CACHE_DIR, else
 * $XDG_CACHE_HOME/pspawn, else ~/.cache/pspawn.  0, or -1 (no home, or
 * too long). */
int pspawn_cache_dir(char *buf, size_t size);
/* Create the directories above PATH (mode 0700).  0 or -1. */
int pspawn_preload_mkdirs(const char *path);

#endif
