/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote servers as the launch engine sees them: one that says it is
 * ready (start=lazy), dies or hangs.  A server that is gone loses no task
 * and runs none twice: what it released runs, what it still held is
 * cancelled (such a task exits 127 before main) and goes to another
 * server or to exec.  And what is sent to them: up to WINDOW requests in
 * flight per server (request.c builds each); one whose socket is closed
 * is gone.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "go.h"
#include "pidfd.h"

#define WINDOW 3 /* requests in flight per server: it always has the next one */

int pspawn_batch_servers_resize(struct batch *b)
{
    int ns = b->z->servers ? b->z->topo.ngroups : 0;
    /* Only with nothing in flight (a new zygote, or the first call): the
     * requests out count in the arrays.  Until they match, dispatch
     * sends every task to exec. */
    if (ns == b->nservers || b->nout > 0)
        return 0;
    int *inflight = calloc(ns ? (size_t)ns : 1, sizeof *inflight);
    size_t *cursor = calloc(ns ? (size_t)ns : 1, sizeof *cursor);
    if (!inflight || !cursor) {
        free(inflight);
        free(cursor);
        return ENOMEM;
    }
    free(b->inflight);
    free(b->cursor);
    b->inflight = inflight;
    b->cursor = cursor;
    b->nservers = ns;
    b->fdgen++;
    return 0;
}

/* Tasks still to do whose server is gone go to another, or to exec. */
static void redispatch(struct batch *b)
{
    for (int s = 0; s < b->nservers; s++)
        b->cursor[s] = b->n;
    for (size_t i = 0; i < b->n; i++) {
        struct batch_task *t = &b->task[i];
        if (t->state == T_TODO &&
            (t->server < 0 || t->server >= b->nservers || !b->z->servers ||
             b->z->servers[t->server].state == SERVER_LOST))
            pspawn_batch_dispatch(b, i);
        else if (t->state == T_TODO && b->cursor[t->server] > i)
            b->cursor[t->server] = i;
    }
}

/* Request O's server is gone: release what it reported, cancel what it
 * still holds (to be sent elsewhere). */
static void request_lost(struct batch *b, struct outstanding *o, double deadline)
{
    o->lost = 1;
    o->deadline = deadline;
    /* Its record may never come (the zygote died before it counted
     * itself out): a task whose slot says it is set up is the caller's. */
    pspawn_batch_take_ready(b, o);
    for (int j = 0; j < o->k; j++) {
        /* Reported: it is the caller's, released by us if the zygote
         * died before it could. */
        if (o->seen[j]) {
            if (!b->task[o->idx[j]].t.error)
                pspawn_go_swap(&o->req.go->go[j], GO_RUN);
            continue;
        }
        if (o->cancelled[j] || !pspawn_go_swap(&o->req.go->go[j], GO_CANCEL))
            continue;   /* cancelled by the caller, or released: it runs, and reports */
        o->cancelled[j] = 1;
        b->task[o->idx[j]].state = T_TODO;
    }
}

void pspawn_batch_server_gone(struct batch *b, int s, int kill_it, const char *why)
{
    struct pspawn_zygote *z = b->z;
    pspawn_server_lost(z, s, kill_it ? SERVER_KILL : 0, why);
    b->fdgen++;
    pspawn_batch_read_reports(b);
    double deadline = pspawn_now_ms() + (z->timeout_ms > 2000 ? z->timeout_ms : 2000);
    for (int i = 0; i < b->nout; i++) {
        struct outstanding *o = &b->out[i];
        if (!o->lost && z->servers[o->server].state == SERVER_LOST)
            request_lost(b, o, deadline);
    }
    /* pspawn_server_lost may have learnt better why (its exit status). */
    why = z->servers[s].why;
    if (z->stale)   /* not a fallback: a new zygote is started (pipeline.c) */
        pspawn_debug(z, "zygote %d ended: %s", s, why);
    else if (z->fallback)
        pspawn_fallback(z, 1, "%s", why);
    else
        pspawn_fallback(z, 0, "sub-zygote %d: %s; its tasks go to the other zygotes", s, why);
    redispatch(b);
}

/* Death shows on the pidfd, or (kernels without pidfds) as a hang-up of
 * the socket, which tasks close first thing.  A server asked for
 * (start=lazy) says it is ready on its socket. */
void pspawn_batch_check_servers(struct batch *b, const struct pollfd *p, const int *slot)
{
    struct pspawn_zygote *z = b->z;
    double now = pspawn_now_ms();
    for (int s = 0; s < b->nservers && z->servers; s++) {
        struct zygote_server *sv = &z->servers[s];
        if (!server_serving(sv))
            continue;
        short sock_ev = p && slot[s] >= 0 ? p[slot[s]].revents : 0;
        short pid_ev = p && slot[s] >= 0 ? p[slot[s] + 1].revents : 0;
        int starting = sv->state == SERVER_STARTING;
        if (starting && (sock_ev & POLLIN)) {
            int r = pspawn_server_ready(z, s);
            if (r != 0)
                b->fdgen++;     /* a pidfd to watch, or none */
            if (r < 0)
                pspawn_batch_server_gone(b, s, 0, sv->why);
        } else if ((pid_ev & POLLIN) || (sock_ev & (POLLHUP | POLLERR))) {
            /* Died: take what it said before dying, then cancel the rest. */
            pspawn_batch_server_gone(b, s, 0, "zygote died");
        } else if ((b->inflight[s] > 0 || starting) &&
                   now >= sv->progress_ms + (starting ? pspawn_start_timeout_ms(z)
                                                      : z->timeout_ms)) {
            char why[128];
            snprintf(why, sizeof why, "zygote stopped answering (no progress in %d ms)",
                     z->timeout_ms);
            pspawn_batch_server_gone(b, s, 1, why);
        }
    }
}

void pspawn_batch_send(struct batch *b)
{
    struct pspawn_zygote *z = b->z;
    for (int s = 0; s < b->nservers && z->servers; s++) {
        while (server_serving(&z->servers[s]) && b->inflight[s] < WINDOW) {
            int before = b->nout;
            int err = pspawn_batch_send_to(b, s);
            if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
                pspawn_batch_server_gone(b, s, 0, "zygote died (its socket is closed)");
                break;
            }
            if (err) {
                /* Not the zygote's fault (no memory for a request...):
                 * these tasks go by exec, the zygote stays. */
                pspawn_fallback(z, 0, "could not build a request: %s", strerror(err));
                for (size_t i = b->cursor[s]; i < b->n; i++)
                    if (b->task[i].state == T_TODO && b->task[i].server == s)
                        pspawn_batch_to_exec(b, i);
                break;
            }
            if (b->nout == before)
                break;  /* nothing more for it */
        }
    }
}
