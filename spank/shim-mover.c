/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's side of the step's mover (spank/pspawn_mover.c, a thread in
 * slurmstepd, root): the held task, moved into the shim's own cgroups.
 * Our end of the socket pair is the only way to the mover: it has no
 * name another process could reach, and serves this end only while the
 * process slurmstepd forked for our task, us, lives.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pspawn_cgroup.h"
#include "shim.h"

#define say shim_say

int shim_move_task(int fd, pid_t task, const char *token, int wait_ms)
{
    struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, (int32_t)task, { 0 } };
    snprintf(q.token, sizeof q.token, "%s", token);
    struct pspawn_mover_reply r;
    struct pollfd p = { fd, POLLIN, 0 };
    if (send(fd, &q, sizeof q, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof q)
        return errno == EAGAIN ? ETIMEDOUT : errno;
    if (poll(&p, 1, wait_ms) != 1 || recv(fd, &r, sizeof r, MSG_DONTWAIT) != (ssize_t)sizeof r ||
        r.magic != PSPAWN_MOVER_MAGIC)
        return ETIMEDOUT;
    if (r.err)
        return r.err;
    say("task %d moved into our cgroups (%d hierarch%s)", (int)task, r.moved,
        r.moved == 1 ? "y" : "ies");
    return 0;
}
