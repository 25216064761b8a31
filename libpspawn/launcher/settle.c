/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launch engine's last stage: what becomes of each task.  Created (its
 * pid set by its report), failed, or exec'd instead (a plain exec, within
 * the step's budget); a task cancelled before main, reaped once it exits,
 * without waiting for it.  Nothing here calls back into the stages above
 * (vector.c, pipeline.c, servers.c, request.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "pidfd.h"

void pspawn_batch_call_free(struct batch_call *call)
{
    if (!call)
        return;
    if (call->dup_fds)
        for (int k = 0; k < call->c.nfds; k++)
            close(call->c.fds[k]);
    pspawn_strv_free(call->environ_copy);
    pspawn_attr_destroy(&call->attr);
    free(call);
}

void pspawn_batch_settle(struct batch *b, size_t i)
{
    struct batch_task *t = &b->task[i];
    if (t->state == T_DONE)
        return;
    if (t->state == T_EXEC)
        b->nexec--;
    t->state = T_DONE;
    b->unsettled--;
    free(t->zargv);
    t->zargv = NULL;
    /* The fds the call's tasks take: no task will take them any more. */
    struct batch_call *call = t->call;
    if (--call->unsettled == 0 && call->dup_fds) {
        for (int k = 0; k < call->c.nfds; k++)
            close(call->c.fds[k]);
        call->dup_fds = 0;
    }
    if (b->settled)
        b->settled(b->settled_arg, i);
}

void pspawn_batch_fail(struct batch *b, size_t i, int err, const char *reason)
{
    b->task[i].t.pid = -1;
    b->task[i].t.error = err;
    b->task[i].reason = reason;
    pspawn_batch_settle(b, i);
}

void pspawn_batch_to_exec(struct batch *b, size_t i)
{
    if (b->draining) {
        pspawn_batch_fail(b, i, ECANCELED, "cancelled before it was created");
        return;
    }
    if (b->task[i].state == T_EXEC || b->task[i].state == T_DONE)
        return;
    b->task[i].state = T_EXEC;
    b->nexec++;
    if (i < b->next_exec)
        b->next_exec = i;
}

/* A plain exec of task I. */
static void exec_task(struct batch *b, size_t i)
{
    pspawn_task_t *t = &b->task[i].t;
    const struct call *c = &b->task[i].call->c;
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    const unsigned char *cs = NULL;
    if (t->cpuset) {
        memset(cpuset, 0, sizeof cpuset);
        memcpy(cpuset, t->cpuset, t->cpusetsize < sizeof cpuset ? t->cpusetsize : sizeof cpuset);
        cs = cpuset;
    }
    int err = pspawn_exec_task(&t->pid, b->z->prog.path, c, i, cs, t->argv, task_envp(b, i));
    if (err) {
        pspawn_batch_fail(b, i, err, "its exec failed (or its setup before the exec)");
        return;
    }
    if (c->user_flags & PSPAWN_PIDFD) {
        t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
        if (t->pidfd >= 0)
            fcntl(t->pidfd, F_SETFD, FD_CLOEXEC);
    }
    pspawn_batch_settle(b, i);
}

int pspawn_batch_exec(struct batch *b)
{
    double stop = b->exec_budget_ms > 0 ? pspawn_now_ms() + b->exec_budget_ms : 0;
    size_t i = b->next_exec;
    for (; b->nexec > 0 && i < b->n; i++) {
        if (b->task[i].state != T_EXEC)
            continue;
        exec_task(b, i);
        if (stop && pspawn_now_ms() >= stop) {
            i++;
            break;
        }
    }
    b->next_exec = i;
    return b->nexec > 0;
}

static void reap_blocking(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

void pspawn_batch_reap_later(struct batch *b, pid_t pid)
{
    int fd = pspawn_pidfd_open_reapable(pid);
    if (fd >= 0 && b->ncancelled == b->capcancelled) {
        size_t cap = b->capcancelled ? 2 * b->capcancelled : 16;
        struct cancelled_task *v = realloc(b->cancelled, cap * sizeof *v);
        if (v) {
            b->cancelled = v;
            b->capcancelled = cap;
        }
    }
    if (fd < 0 || b->ncancelled == b->capcancelled) {
        /* No pidfd (or no memory to keep it): it exits right after its
         * setup, wait for that here. */
        if (fd >= 0)
            close(fd);
        reap_blocking(pid);
        return;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    double limit = b->z->timeout_ms > 2000 ? b->z->timeout_ms : 2000;
    b->cancelled[b->ncancelled++] = (struct cancelled_task){ pid, fd, pspawn_now_ms() + limit };
    b->fdgen++;
}

void pspawn_batch_reap_cancelled(struct batch *b)
{
    double now = pspawn_now_ms();
    for (size_t i = 0; i < b->ncancelled;) {
        struct cancelled_task *c = &b->cancelled[i];
        int status;
        /* By its pidfd: a caller that reaps every child itself may have
         * reaped it, and its pid be another's now. */
        if (pspawn_pidfd_try_reap(c->pidfd, &status) == 0 && now < c->deadline) {
            i++;
            continue;
        }
        close(c->pidfd);
        b->cancelled[i] = b->cancelled[--b->ncancelled];
        b->fdgen++;
    }
}
