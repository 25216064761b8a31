/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which file an exec would run, for the interception library's wrappers
 * of execveat, fexecve and the execvp family.  These run between fork
 * and exec: no allocation, and few of libc's pages (nolibc.h).
 */
#ifndef PSPAWN_EXECPATH_H
#define PSPAWN_EXECPATH_H

#include <stddef.h>

/* The path that DIRFD and PATH (execveat's, with FLAGS) stand for, into
 * BUF (LEN): the directory's or file's path through /proc/self/fd,
 * checked to be the same file still (a deleted file or a memfd has
 * none).  0 if none. */
int exec_path_at(int dirfd, const char *path, int flags, char *buf, size_t len);
/* The file execvp would run for FILE, as glibc searches PATH (the
 * caller's: execvpe too searches its caller's PATH, not ENVP's): the
 * first that exists and may be executed, into BUF (LEN); 0 if none. */
int exec_search_path(const char *file, char *buf, size_t len);

#endif
