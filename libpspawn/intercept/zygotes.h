/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygotes of an interception scope, found by the abstract socket each
 * listens on (@pspawn-iUID.SCOPE.KEY): for pspawn --intercept, which
 * stops them at its end, and for a launcher whose write of a program a
 * parked zygote holds was refused (textbusy.c).
 */
#ifndef PSPAWN_INTERCEPT_ZYGOTES_H
#define PSPAWN_INTERCEPT_ZYGOTES_H

#include <stddef.h>
#include <sys/types.h>

#define SCOPE_SOCKETS_MAX 256

/* The inodes of the sockets SCOPE's zygotes of user UID listen on (up to
 * SCOPE_SOCKETS_MAX), into INODES: how many. */
size_t scope_socket_inodes(uid_t uid, const char *scope, unsigned long *inodes);
/* Whether PID holds one of those N sockets: it is one of the zygotes. */
int holds_scope_socket(pid_t pid, const unsigned long *inodes, size_t n);

#endif
