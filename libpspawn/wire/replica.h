/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subzygote=replicate: the copies of a program's libraries that a
 * sub-zygote loads, one directory per group.  The sub-zygote removes its
 * own when it exits; the launcher removes what is left at destroy.
 */
#ifndef PSPAWN_REPLICA_H
#define PSPAWN_REPLICA_H

/* Remove the files in DIR (one level: the copies) and DIR itself. */
void pspawn_replica_remove(const char *dir);

#endif
