/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A spawn site (Kim, Ahn and Chung 2011: the calling binary and the
 * return address of the spawn call), made stable across runs and
 * refined by what is spawned:
 *  - the launcher's executable: device, inode and mtime of /proc/self/exe;
 *  - where the call returns to: its offset in the main executable (ASLR
 *    moves the base, not the offset), or "in a library" (a shared
 *    library's base is not worth recording: libc's system() and Python's
 *    _posixsubprocess start everything from one place anyway);
 *  - the program spawned: its device and inode, since make, xargs and
 *    parallel start every child from one call;
 *  - for a shell or an interpreter (sh, dash, bash, python*, perl): the
 *    first word of the command after -c (perl: -e, -E), else the module
 *    after -m (python), else the first argument that is not an option
 *    (the script).  Leading NAME=VALUE words and "exec" are skipped.
 * The result is a 64-bit hash, never 0.
 */
#ifndef PSPAWN_SITE_H
#define PSPAWN_SITE_H

#include <stdint.h>

/* Read the launcher's executable and the main program's load range
 * (constructor time: getenv, dl_iterate_phdr).  0, or -1. */
int site_init(void);
/* The site of a spawn of PATH with ARGV, called from RET (the spawn
 * call's return address).  System calls only: may run between vfork and
 * exec.  0 when PATH is not there (exec will fail). */
uint64_t site_of(const void *ret, const char *path, char *const argv[]);

#endif
