/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The identity of a program and of what a zygote of it keeps from its
 * exec: launches with the same identity may share one zygote.  The SPANK
 * plugin names a job's zygotes by it, the interception stand-in its
 * launcher's.
 */
#ifndef PSPAWN_IDENTITY_H
#define PSPAWN_IDENTITY_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A hash of: UID, PATH and the file ST says it is (device, inode, mtime),
 * OPTIONS (libpspawn's options, text), the loader's variables of ENV (in
 * any order) and, for a Python interpreter (PATH's name starts with
 * "python"), ARGV[1] (the script it warms, or its first option) and the
 * interpreter's start-up variables of ENV. */
/* Whether PATH names a Python interpreter (its file name starts with
 * "python"): its identity takes the script, and a zygote of it is always
 * worth it (worth.h). */
int pspawn_python_program(const char *path);

uint64_t pspawn_program_identity(uid_t uid, const char *path, const struct stat *st,
                                 char *const argv[], char *const env[], const char *options);

#endif
