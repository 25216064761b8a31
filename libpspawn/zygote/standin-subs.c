/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stand-in mode's fan-out: the root's sub-zygotes, one per CPU group,
 * made from the fan-out the root's starter sends, to which the root
 * forwards the stand-ins of their CPUs; what each has still to serve (the
 * root is idle only once none has); and, for a root that imports more
 * between steps (python.c), the sub-zygotes it forked made again from it,
 * so that they hold what it holds.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"
#include "zygote.h"

/* A sub-zygote's load, sent to the root on each change: the root is idle
 * only when every sub-zygote has received what it forwarded and has
 * nothing left to serve. */
#define STANDIN_LOAD_MAGIC 0x70736c64u  /* "psld" */
struct standin_load {
    uint32_t magic;
    uint32_t received;      /* stand-ins the root forwarded, so far */
    int32_t clients;        /* stand-ins connected or with a task running */
};

static struct {
    uint32_t received;                          /* a sub-zygote's */
    struct standin_load sent;                   /* what it last told the root */
    uint32_t forwarded[PSPAWN_FANOUT_MAX + 1];  /* the root's, per group */
    struct standin_load load[PSPAWN_FANOUT_MAX + 1];
    char *fanout;                               /* the root's fan-out, kept */
    size_t fanout_size;
} subs;

int standin_await_fanout(void)
{
    if (zygote_wait(parked.sock, -1, 30000) != 0)
        return 0;
    struct request_msg msg = { 0 };
    void *base;
    struct wire_go *go;
    int fds[ZYGOTE_MSG_FDS], nfds;
    if (zygote_recv_request(parked.sock, &msg, &base, &go, fds, &nfds) <= 0)
        return 0;
    close(fds[0]);
    if (msg.magic != PSPAWN_FANOUT_MAGIC) {
        zygote_drop_request(base, msg.size, go, fds + 1, nfds - 1);
        return 0;
    }
    /* Kept for sub-zygotes made again later (the stand-in fan-out passes
     * no fd: the root makes every channel itself). */
    if (nfds == 1 && (subs.fanout = malloc(msg.size))) {
        memcpy(subs.fanout, base, msg.size);
        subs.fanout_size = msg.size;
    }
    int sub = zygote_fanout(base, msg.size, fds + 1, nfds - 1, 1);
    munmap(base, msg.size);
    if (sub) {
        free(subs.fanout);
        subs.fanout = NULL;
    }
    return sub;
}

int standin_subs_alive(void)
{
    int n = 0;
    for (int g = 1; g < parked.ngroups; g++)
        n += parked.groups[g].pid > 0;
    return n;
}

int standin_subs_busy(void)
{
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0 &&
            (subs.load[g].clients > 0 || subs.load[g].received < subs.forwarded[g]))
            return 1;
    return 0;
}

void standin_sub_forwarded(int g)
{
    subs.forwarded[g]++;
}

void standin_sub_received(void)
{
    subs.received++;
}

void standin_tell_load(int clients)
{
    struct standin_load l = { STANDIN_LOAD_MAGIC, subs.received, clients };
    if (parked.sock < 0 || !memcmp(&l, &subs.sent, sizeof l))
        return;
    if (send(parked.sock, &l, sizeof l, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof l)
        subs.sent = l;
}

void standin_hear_sub(int g, short ev)
{
    union {
        struct zygote_ready ready;
        struct standin_load load;
    } m;
    ssize_t got = 0;
    while ((ev & POLLIN) &&
           (got = recv(parked.groups[g].fwd, &m, sizeof m, MSG_DONTWAIT)) > 0)
        if (got == (ssize_t)sizeof m.load && m.load.magic == STANDIN_LOAD_MAGIC)
            subs.load[g] = m.load;
    if (got == 0 || (got < 0 && errno != EAGAIN) || (ev & (POLLHUP | POLLERR))) {
        close(parked.groups[g].fwd);
        parked.groups[g].fwd = -1;
    }
}

void standin_subs_drain(void)
{
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0)
            shutdown(parked.groups[g].fwd, SHUT_WR);
}

void standin_sub_reaped(pid_t pid)
{
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].pid == pid) {
            parked.groups[g].pid = 0;
            if (parked.groups[g].fwd >= 0)
                close(parked.groups[g].fwd);
            parked.groups[g].fwd = -1;
        }
}

int standin_subs_remake(void)
{
    if (!subs.fanout || parked.ngroups < 2)
        return 0;
    /* They are idle (the root is): each ends at the end of its channel,
     * within 5 s, or is killed. */
    standin_subs_drain();
    for (int i = 0; i < 500 && standin_subs_alive(); i++) {
        for (int g = 1; g < parked.ngroups; g++) {
            pid_t pid = parked.groups[g].pid;
            if (pid > 0 && (waitpid(pid, NULL, WNOHANG) == pid || (i == 499 &&
                            kill(pid, SIGKILL) == 0 && waitpid(pid, NULL, 0) == pid)))
                standin_sub_reaped(pid);
        }
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    if (standin_subs_alive())
        return 0;
    memset(subs.forwarded, 0, sizeof subs.forwarded);
    memset(subs.load, 0, sizeof subs.load);
    /* zygote_fanout writes the new pids into the table it is given. */
    char *scratch = malloc(subs.fanout_size);
    if (!scratch)
        return 0;
    memcpy(scratch, subs.fanout, subs.fanout_size);
    int sub = zygote_fanout(scratch, subs.fanout_size, NULL, 0, 1);
    free(scratch);
    if (sub) {
        free(subs.fanout);
        subs.fanout = NULL;
        return 1;
    }
    /* As the first ones: a full or stopped sub-zygote never blocks us. */
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0)
            fcntl(parked.groups[g].fwd, F_SETFL, fcntl(parked.groups[g].fwd, F_GETFL) | O_NONBLOCK);
    return 0;
}
