/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one encoder of the wire format (protocol.h): a call's state and its
 * tasks into a request memfd, sent with the fds the tasks take.  Used by
 * the request pipeline (direct mode) and by the stand-in client alike.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "go.h"
#include "internal.h"
#include "memfd.h"
#include "unixsock.h"

static size_t strv_bytes(char *const *v, uint32_t *count)
{
    size_t bytes = 0;
    uint32_t n = 0;
    for (; v && v[n]; n++)
        bytes += strlen(v[n]) + 1;
    *count = n;
    return bytes;
}

static char *put_strv(char *p, char *const *v)
{
    for (size_t i = 0; v && v[i]; i++) {
        size_t l = strlen(v[i]) + 1;
        memcpy(p, v[i], l);
        p += l;
    }
    return p;
}

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Where each part of a request goes in its memfd. */
struct request_layout {
    size_t size, cwd_off, rl_off, act_off, task_off;
};

static void request_layout(const struct call *c, const struct encode_task *t, int k,
                           struct request_layout *l)
{
    size_t size = sizeof(struct wire_request);
    l->cwd_off = size;
    size = round8(size + strlen(c->cwd) + 1);
    l->rl_off = size;
    size += c->nrlimits * sizeof(struct wire_rlimit);
    l->act_off = size;
    size += c->nactions * sizeof(struct wire_action);
    for (int i = 0; i < c->nactions; i++)
        if (c->actions[i].kind == FA_OPEN)
            size += strlen(c->actions[i].path) + 1;
    size = round8(size);
    l->task_off = size;
    size += k * sizeof(struct wire_task);
    for (int j = 0; j < k; j++) {
        uint32_t cnt;
        size += strv_bytes(t[j].argv, &cnt) + strv_bytes(t[j].envp, &cnt);
    }
    l->size = size;
}

/* The call's state every task of the request starts from. */
static void put_call_state(struct wire_request *w, const struct call *c, pid_t pgroup,
                           const char *token)
{
    w->flags = c->flags;
    w->umask = c->umask;
    w->pgroup = c->pgroup;
    w->ctty_fd = c->ctty_fd;
    if (pgroup > 0) {
        w->flags |= REQ_SETPGROUP;
        w->pgroup = pgroup;
    }
    w->nice = c->nice;
    w->sched_policy = c->sched_policy;
    w->sched_priority = c->sched_priority;
    w->launcher_pid = (uint32_t)getpid();
    w->sigmask = c->sigmask;
    w->sigign = c->ignored;
    w->mempolicy = c->mempolicy;
    memcpy(w->nodemask, c->nodemask, sizeof w->nodemask);
    w->seccomp = c->seccomp;
    w->proc = c->proc;
    if (c->have_cpuset) {
        memcpy(w->cpuset, c->cpuset, sizeof w->cpuset);
        w->flags |= REQ_CPUSET;
    }
    if (token)
        snprintf(w->token, sizeof w->token, "%s", token);
}

/* The call's cwd, rlimits and file actions, at L's offsets in BASE. */
static void put_call_data(char *base, const struct call *c, const struct request_layout *l)
{
    struct wire_request *w = (struct wire_request *)base;
    w->cwd = (uint32_t)l->cwd_off;
    strcpy(base + l->cwd_off, c->cwd);
    w->nrlimits = (uint32_t)c->nrlimits;
    w->rlimits = (uint32_t)l->rl_off;
    memcpy(base + l->rl_off, c->rlimits, c->nrlimits * sizeof(struct wire_rlimit));
    w->nactions = (uint32_t)c->nactions;
    w->actions = (uint32_t)l->act_off;
    struct wire_action *wa = (struct wire_action *)(base + l->act_off);
    char *p = (char *)(wa + c->nactions);
    for (int i = 0; i < c->nactions; i++) {
        const struct child_action *a = &c->actions[i];
        wa[i] = (struct wire_action){ a->kind, a->fd, a->src, a->oflag, a->mode, 0 };
        if (a->kind == FA_OPEN) {
            wa[i].path = (uint32_t)(p - base);
            p = stpcpy(p, a->path) + 1;
        }
    }
}

/* The K tasks T (argv, envp, cpuset), from TASK_OFF in BASE. */
static void put_tasks(char *base, const struct encode_task *t, int k, size_t task_off)
{
    struct wire_request *w = (struct wire_request *)base;
    w->ntasks = (uint32_t)k;
    w->tasks = (uint32_t)task_off;
    struct wire_task *wt = (struct wire_task *)(base + task_off);
    char *p = (char *)(wt + k);
    for (int j = 0; j < k; j++) {
        char *start = p;
        wt[j].strings = (uint32_t)(p - base);
        p = put_strv(p, t[j].argv);
        wt[j].strings_len = (uint32_t)(p - start);
        start = p;
        p = put_strv(p, t[j].envp);
        wt[j].env_len = (uint32_t)(p - start);
        strv_bytes(t[j].argv, &wt[j].argc);
        strv_bytes(t[j].envp, &wt[j].envc);
        if (t[j].cpuset) {
            wt[j].has_cpuset = 1;
            memcpy(wt[j].cpuset, t[j].cpuset, PSPAWN_CPUSET_BYTES);
        }
    }
}

int pspawn_encode_request(struct encoded_request *r, const struct call *c,
                          const struct encode_task *t, int k, pid_t pgroup, const char *token)
{
    struct request_layout l;
    request_layout(c, t, k, &l);
    if (l.size > UINT32_MAX)
        return E2BIG;

    int fd, gofd;
    char *base = pspawn_memfd_create("pspawn-request", l.size, &fd);
    if (!base)
        return errno;
    struct wire_go *go = pspawn_memfd_create("pspawn-go", sizeof *go, &gofd);
    if (!go) {
        int e = errno;
        munmap(base, l.size);
        close(fd);
        return e;
    }
    /* Its K tasks and its zygote count themselves out (protocol.h). */
    go->left = (uint32_t)k + 1;
    struct wire_request *w = (struct wire_request *)base;
    put_call_state(w, c, pgroup, token);
    put_call_data(base, c, &l);
    put_tasks(base, t, k, l.task_off);
    munmap(base, l.size);     /* the zygote reads it from the memfd */
    *r = (struct encoded_request){ go, l.size, fd, gofd };
    return 0;
}

int pspawn_send_request(int sock, uint32_t id, const struct encoded_request *r,
                        const struct call *c)
{
    struct request_msg msg = { PSPAWN_MAGIC, id, (uint32_t)r->size, (uint32_t)c->nfds };
    int fds[PSPAWN_FD_MAX + 2];
    fds[0] = r->memfd;
    fds[1] = r->gofd;
    memcpy(fds + 2, c->fds, c->nfds * sizeof(int));
    return pspawn_send_fds(sock, &msg, sizeof msg, fds, 2 + c->nfds);
}

void pspawn_encoded_release(struct encoded_request *r)
{
    if (r->go)
        munmap(r->go, sizeof *r->go);
    if (r->memfd >= 0)
        close(r->memfd);
    if (r->gofd >= 0)
        close(r->gofd);
    r->go = NULL;
    r->memfd = r->gofd = -1;
}

int pspawn_send_standin(int sock, const struct call *c, pspawn_task_t *task, const char *token,
                        struct pspawn_hold *hold)
{
    struct encode_task t = { task->argv, task->envp ? task->envp : c->envp, NULL };
    struct encoded_request r;
    int err = pspawn_encode_request(&r, c, &t, 1, 0, token);
    if (!err)
        err = pspawn_send_request(sock, 1, &r, c);
    if (!err && hold)
        *hold = (struct pspawn_hold){ r, 1 };
    else
        pspawn_encoded_release(&r);     /* the zygote has its own mapping */
    return err;
}

void pspawn_standin_go(struct pspawn_hold *hold, int run)
{
    if (!hold->held)
        return;
    pspawn_go_swap(&hold->req.go->go[0], run ? GO_RUN : GO_CANCEL);
    pspawn_encoded_release(&hold->req);
    hold->held = 0;
}
