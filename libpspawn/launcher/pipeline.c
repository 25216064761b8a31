/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One step of the launch engine, the same for the launch session (which
 * never lets it wait) and for the synchronous calls (which let it wait
 * until the zygotes say something or a deadline comes): send what can be
 * sent, take what the zygotes said, deal with those that died or hang,
 * start a new zygote after a replaced library, exec what none serves.
 * Every wait is bounded by the context's timeout.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

#define LOST_LOOK_MS 5

void pspawn_batch_init(struct batch *b, struct pspawn_zygote *z)
{
    memset(b, 0, sizeof *b);
    b->z = z;
}


static int restart_wanted(const struct batch *b);

int pspawn_batch_busy(const struct batch *b)
{
    return b->unsettled > 0 || b->nout > 0 || b->ncancelled > 0 || restart_wanted(b);
}

static int server_busy(const struct batch *b, int s)
{
    const struct zygote_server *sv = &b->z->servers[s];
    return server_serving(sv) && (b->inflight[s] > 0 || sv->state == SERVER_STARTING);
}

double pspawn_batch_deadline(const struct batch *b)
{
    const struct pspawn_zygote *z = b->z;
    double due = -1;
    if (b->nexec > 0 || restart_wanted(b))
        return 0;
    for (int s = 0; s < b->nservers && z->servers; s++) {
        if (!server_busy(b, s))
            continue;
        const struct zygote_server *sv = &z->servers[s];
        double limit = sv->progress_ms + (sv->state == SERVER_STARTING
                                          ? pspawn_start_timeout_ms(z) : z->timeout_ms);
        if (due < 0 || limit < due)
            due = limit;
    }
    /* A lost request's record may never come: its slots are looked at
     * every LOST_LOOK_MS until its deadline. */
    double look = b->nout ? pspawn_now_ms() + LOST_LOOK_MS : 0;
    for (int i = 0; i < b->nout; i++) {
        if (!b->out[i].lost)
            continue;
        double d = b->out[i].deadline < look ? b->out[i].deadline : look;
        if (due < 0 || d < due)
            due = d;
    }
    for (size_t i = 0; i < b->ncancelled; i++)
        if (due < 0 || b->cancelled[i].deadline < due)
            due = b->cancelled[i].deadline;
    return due;
}

size_t pspawn_batch_pollfds(struct batch *b)
{
    const struct pspawn_zygote *z = b->z;
    size_t need = 1 + 2 * (size_t)b->nservers + b->ncancelled;
    if (need > b->cappfd) {
        struct pollfd *p = realloc(b->pfd, need * sizeof *p);
        if (!p)
            return 0;
        b->pfd = p;
        b->cappfd = need;
    }
    if ((size_t)b->nservers > b->capslot) {
        int *slot = realloc(b->slot, (size_t)b->nservers * sizeof *slot);
        if (!slot)
            return 0;
        b->slot = slot;
        b->capslot = (size_t)b->nservers;
    }
    size_t np = 0;
    if (z->report_r >= 0 && !b->report_eof)
        b->pfd[np++] = (struct pollfd){ z->report_r, POLLIN, 0 };
    for (int s = 0; s < b->nservers && z->servers; s++) {
        const struct zygote_server *sv = &z->servers[s];
        b->slot[s] = -1;
        if (!server_serving(sv))
            continue;
        b->slot[s] = (int)np;
        b->pfd[np++] = (struct pollfd){ sv->sock, sv->state == SERVER_STARTING ? POLLIN : 0, 0 };
        b->pfd[np++] = (struct pollfd){ sv->pidfd, POLLIN, 0 };
    }
    for (size_t i = 0; i < b->ncancelled; i++)
        b->pfd[np++] = (struct pollfd){ b->cancelled[i].pidfd, POLLIN, 0 };
    return np;
}

/* A zygote exited because a library it loaded was replaced on disk: once
 * nothing is in flight (its released tasks still report on its pipe), a
 * new one, which loads the new library, for the tasks it did not create;
 * at most once per call.  Also when they were all created elsewhere, so
 * that the next call finds it ready. */
static int restart_wanted(const struct batch *b)
{
    return b->z->stale && !b->draining && b->nout == 0 && b->ncalls > 0 &&
           (b->awaiting_restart || !b->calls[b->ncalls - 1]->restarted);
}

static void restart_if_due(struct batch *b)
{
    if (!restart_wanted(b))
        return;
    for (size_t i = 0; i < b->n; i++)
        if (b->task[i].state == T_TODO)
            b->task[i].call->restarted = 1;
    b->calls[b->ncalls - 1]->restarted = 1;
    b->awaiting_restart = 0;
    struct pspawn_zygote *z = b->z;
    pspawn_zygote_restart(z);   /* if it fails, exec (the reason says why) */
    b->report_eof = 0;
    b->fdgen++;
    if (pspawn_batch_servers_resize(b))
        pspawn_zygote_lost(z, 1);
    for (size_t i = 0; i < b->n; i++)
        if (b->task[i].state == T_TODO)
            pspawn_batch_dispatch(b, i);
}

void pspawn_batch_step(struct batch *b, int wait_ms)
{
    if (!b->draining)
        pspawn_batch_send(b);
    size_t np = pspawn_batch_pollfds(b);
    if (wait_ms != 0) {
        double due = pspawn_batch_deadline(b);
        int left = -1;
        if (due >= 0) {
            double d = due - pspawn_now_ms() + 1;
            left = d > 0 ? (d < 1e9 ? (int)d : 1000000000) : 0;
        }
        if (wait_ms > 0 && (left < 0 || wait_ms < left))
            left = wait_ms;
        if (left < 0 || left > b->z->timeout_ms)
            left = b->z->timeout_ms;
        wait_ms = left;
    }
    int r = poll(b->pfd, (nfds_t)np, wait_ms);
    if (r <= 0)
        for (size_t i = 0; i < np; i++)
            b->pfd[i].revents = 0;
    if (np && b->pfd[0].fd == b->z->report_r && (b->pfd[0].revents & (POLLIN | POLLHUP)))
        pspawn_batch_read_reports(b);
    pspawn_batch_check_servers(b, np ? b->pfd : NULL, b->slot);
    pspawn_batch_retire(b);
    pspawn_batch_reap_cancelled(b);
    restart_if_due(b);
    if (!b->draining) {
        pspawn_batch_send(b);
        pspawn_batch_exec(b);
    }
}

void pspawn_batch_free(struct batch *b)
{
    b->draining = 1;
    pspawn_batch_cancel(b);
    /* Released tasks report, cancelled ones exit: each wait is bounded by
     * the context's timeout. */
    while (pspawn_batch_busy(b))
        pspawn_batch_step(b, -1);
    for (size_t i = 0; i < b->n; i++)
        free(b->task[i].zargv);     /* its strings are the task's and the program's */
    for (size_t i = 0; i < b->ncalls; i++)
        pspawn_batch_call_free(b->calls[i]);
    free(b->calls);
    free(b->task);
    free(b->out);
    free(b->inflight);
    free(b->cursor);
    free(b->cancelled);
    free(b->pfd);
    free(b->slot);
    memset(b, 0, sizeof *b);
}
