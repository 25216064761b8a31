/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's side of the step's mover (spank/pspawn_mover.c, a thread in
 * slurmstepd, root): the held task, moved into the shim's own cgroups.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pspawn_cgroup.h"
#include "shim.h"

#define say shim_say
#include "unixsock.h"

int shim_move_task(const char *mover, pid_t task, const char *token, int wait_ms)
{
    /* Only slurmstepd, as root, may hear our token.  A listen queue that is
     * full (every task of a big node asking at once) is retried, within
     * the same WAIT_MS as the answer; unless the kernel says the name is
     * another user's (squatted: said at once). */
    int fd, waited = 0;
    uid_t owner;
    if ((fd = pspawn_connect_abstract(mover, 0)) < 0 && errno == EAGAIN &&
        pspawn_abstract_owner(mover, &owner) == 0 && owner != 0) {
        say("mover @%s is uid %d's, not root's", mover, (int)owner);
        return EPERM;
    }
    while (fd < 0 && errno == EAGAIN && waited < wait_ms) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        waited += 5;
        fd = pspawn_connect_abstract(mover, 0);
    }
    if (fd < 0)
        return errno == EAGAIN ? ETIMEDOUT : errno;
    struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, (int32_t)task, { 0 } };
    snprintf(q.token, sizeof q.token, "%s", token);
    struct pspawn_mover_reply r;
    struct pollfd p = { fd, POLLIN, 0 };
    int err = 0;
    if (send(fd, &q, sizeof q, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof q &&
        errno != EPIPE && errno != ECONNRESET)
        err = errno;    /* (after those, the mover's refusal is still to read) */
    else if (poll(&p, 1, wait_ms > waited ? wait_ms - waited : 0) != 1 ||
             recv(fd, &r, sizeof r, MSG_DONTWAIT) != (ssize_t)sizeof r ||
             r.magic != PSPAWN_MOVER_MAGIC)
        err = ETIMEDOUT;
    else if (r.err)
        err = r.err;
    else
        say("task %d moved into our cgroups (%d hierarch%s)", (int)task, r.moved,
            r.moved == 1 ? "y" : "ies");
    close(fd);
    return err;
}

