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

void shim_report(int fd, const char *token, int forked, int zygote, long long zygote_start_ms,
                 int objects, int python, const char *why, int verbose)
{
    if (fd < 0)
        return;
    struct pspawn_mover_report r = { PSPAWN_REPORT_MAGIC, forked, zygote, verbose,
                                     zygote_start_ms, objects, python, { 0 }, { 0 } };
    snprintf(r.token, sizeof r.token, "%s", token ? token : "");
    snprintf(r.why, sizeof r.why, "%s", why ? why : "");
    if (send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof r || !verbose)
        return;
    /* The mover answers at once; it is slurmstepd, which never waits on
     * us, so a second is far more than it takes. */
    struct pspawn_mover_line l;
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, 1000) == 1 && recv(fd, &l, sizeof l, MSG_DONTWAIT) == (ssize_t)sizeof l &&
        l.magic == PSPAWN_REPORT_MAGIC && l.line[0]) {
        l.line[sizeof l.line - 1] = '\0';
        fprintf(stderr, "%s\n", l.line);
    }
}
