/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

int pspawn_attr_init(pspawn_attr_t *attr)
{
    struct pspawn_attr_impl *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    sigemptyset(&a->sigmask);
    sigemptyset(&a->sigdef);
    attr->impl = a;
    return 0;
}

void pspawn_attr_destroy(pspawn_attr_t *attr)
{
    struct pspawn_attr_impl *a = attr ? attr->impl : NULL;
    if (!a)
        return;
    for (int i = 0; i < a->nactions; i++)
        free(a->actions[i].path);
    free(a->actions);
    free(a->cwd);
    free(a);
    attr->impl = NULL;
}

int pspawn_attr_copy(pspawn_attr_t *dst, const pspawn_attr_t *src)
{
    dst->impl = NULL;
    if (!src || !src->impl)
        return 0;
    const struct pspawn_attr_impl *s = src->impl;
    struct pspawn_attr_impl *a = malloc(sizeof *a);
    if (!a)
        return ENOMEM;
    *a = *s;
    a->cwd = NULL;
    a->actions = NULL;
    a->nactions = a->cap = 0;
    dst->impl = a;
    if (s->cwd && !(a->cwd = strdup(s->cwd)))
        goto fail;
    if (s->nactions && !(a->actions = calloc((size_t)s->nactions, sizeof *a->actions)))
        goto fail;
    a->cap = s->nactions;
    for (; a->nactions < s->nactions; a->nactions++) {
        struct attr_action *x = &a->actions[a->nactions];
        *x = s->actions[a->nactions];
        if (x->path && !(x->path = strdup(x->path)))
            goto fail;
    }
    return 0;
fail:
    pspawn_attr_destroy(dst);
    return ENOMEM;
}

static int add_action(pspawn_attr_t *attr, struct attr_action act)
{
    struct pspawn_attr_impl *a = attr->impl;
    if (!a)
        return EINVAL;
    if (act.fd < 0 || (act.kind == AA_DUP2 && act.srcfd < 0))
        return EBADF;
    if (a->nactions >= PSPAWN_FD_MAX)
        return ENOMEM;
    if (a->nactions == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        struct attr_action *n = realloc(a->actions, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        a->actions = n;
        a->cap = cap;
    }
    a->actions[a->nactions++] = act;
    return 0;
}

int pspawn_attr_addopen(pspawn_attr_t *attr, int fd, const char *path,
                        int oflag, mode_t mode)
{
    char *p = strdup(path);
    if (!p)
        return ENOMEM;
    int err = add_action(attr, (struct attr_action){ AA_OPEN, fd, -1, oflag, mode, p });
    if (err)
        free(p);
    return err;
}

int pspawn_attr_adddup2(pspawn_attr_t *attr, int fd, int newfd)
{
    return add_action(attr, (struct attr_action){ AA_DUP2, newfd, fd, 0, 0, NULL });
}

int pspawn_attr_addclose(pspawn_attr_t *attr, int fd)
{
    return add_action(attr, (struct attr_action){ AA_CLOSE, fd, -1, 0, 0, NULL });
}

int pspawn_attr_addinherit(pspawn_attr_t *attr, int fd)
{
    return add_action(attr, (struct attr_action){ AA_DUP2, fd, fd, 0, 0, NULL });
}

int pspawn_attr_setcwd(pspawn_attr_t *attr, const char *path)
{
    struct pspawn_attr_impl *a = attr->impl;
    if (!a || !path)
        return EINVAL;
    if (strlen(path) >= PATH_MAX)
        return ENAMETOOLONG;
    char *p = strdup(path);
    if (!p)
        return ENOMEM;
    free(a->cwd);
    a->cwd = p;
    a->set |= ATTR_CWD;
    return 0;
}

int pspawn_attr_setcpuset(pspawn_attr_t *attr, size_t setsize, const cpu_set_t *set)
{
    struct pspawn_attr_impl *a = attr->impl;
    if (!a || !set)
        return EINVAL;
    memset(a->cpuset, 0, sizeof a->cpuset);
    memcpy(a->cpuset, set, setsize < sizeof a->cpuset ? setsize : sizeof a->cpuset);
    a->set |= ATTR_CPUSET;
    return 0;
}

int pspawn_attr_setsigmask(pspawn_attr_t *attr, const sigset_t *mask)
{
    if (!attr->impl || !mask)
        return EINVAL;
    attr->impl->sigmask = *mask;
    attr->impl->set |= ATTR_SIGMASK;
    return 0;
}

int pspawn_attr_setsigdefault(pspawn_attr_t *attr, const sigset_t *set)
{
    if (!attr->impl || !set)
        return EINVAL;
    attr->impl->sigdef = *set;
    attr->impl->set |= ATTR_SIGDEF;
    return 0;
}

int pspawn_attr_setpgroup(pspawn_attr_t *attr, pid_t pgid)
{
    if (!attr->impl || pgid < 0)
        return EINVAL;
    attr->impl->pgroup = pgid;
    attr->impl->set |= ATTR_PGROUP;
    return 0;
}

int pspawn_attr_setsid(pspawn_attr_t *attr)
{
    if (!attr->impl)
        return EINVAL;
    attr->impl->set |= ATTR_SETSID;
    return 0;
}

int pspawn_attr_setumask(pspawn_attr_t *attr, mode_t mask)
{
    if (!attr->impl)
        return EINVAL;
    attr->impl->umask = mask & 0777;
    attr->impl->set |= ATTR_UMASK;
    return 0;
}

int pspawn_attr_setrlimit(pspawn_attr_t *attr, int resource, const struct rlimit *rlim)
{
    struct pspawn_attr_impl *a = attr->impl;
    if (!a || !rlim || resource < 0 || resource >= RLIM_NLIMITS)
        return EINVAL;
    int i;
    for (i = 0; i < a->nrlimits; i++)
        if (a->rlimits[i].resource == resource)
            break;
    a->rlimits[i] = (struct wire_rlimit){ resource, 0, rlim->rlim_cur, rlim->rlim_max };
    if (i == a->nrlimits)
        a->nrlimits++;
    return 0;
}

int pspawn_attr_setmempolicy(pspawn_attr_t *attr, int mode, const unsigned long *nodemask,
                             unsigned long maxnode)
{
    struct pspawn_attr_impl *a = attr->impl;
    if (!a || mode < 0 || (maxnode && !nodemask))
        return EINVAL;
    memset(a->nodemask, 0, sizeof a->nodemask);
    const unsigned long bits = 8 * sizeof nodemask[0];
    for (unsigned long n = 0; n < maxnode; n++)
        if ((nodemask[n / bits] >> (n % bits)) & 1) {
            if (n >= 8 * sizeof a->nodemask)
                return EINVAL;
            a->nodemask[n / 8] |= (unsigned char)(1u << (n % 8));
        }
    a->mempolicy = mode;
    a->set |= ATTR_MEMPOLICY;
    return 0;
}

int pspawn_attr_setflags(pspawn_attr_t *attr, unsigned flags)
{
    if (!attr->impl || (flags & ~(PSPAWN_PIDFD | PSPAWN_FORCE_EXEC | PSPAWN_TRACEME)))
        return EINVAL;
    attr->impl->flags = flags;
    return 0;
}

int pspawn_attr_setpidhook(pspawn_attr_t *attr, pspawn_pid_hook_t hook, void *arg)
{
    if (!attr || !attr->impl)
        return EINVAL;
    attr->impl->pid_hook = hook;
    attr->impl->pid_hook_arg = hook ? arg : NULL;
    return 0;
}

uint64_t pspawn_call_stack_limit(const struct call *c)
{
    for (int i = 0; i < c->nrlimits; i++)
        if (c->rlimits[i].resource == RLIMIT_STACK)
            return c->rlimits[i].cur;
    return RLIM_INFINITY;
}

static int source_index(struct call *c, int fd)
{
    for (int i = 0; i < c->nfds; i++)
        if (c->fds[i] == fd)
            return i;
    if (c->nfds >= PSPAWN_FD_MAX)
        return -1;
    c->fds[c->nfds] = fd;
    return c->nfds++;
}

static int add_dup2(struct call *c, int src, int target)
{
    if (fcntl(src, F_GETFD) < 0)
        return EBADF;
    int k = source_index(c, src);
    if (k < 0)
        return ENOMEM;
    c->actions[c->nactions++] = (struct child_action){ FA_DUP2, target, k, 0, 0, NULL };
    return 0;
}

/* The signal mask, defaults and dispositions the tasks start from. */
static void call_signals(struct call *c, const struct pspawn_attr_impl *a)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    c->sigmask = pspawn_sigset_to_u64(a && (a->set & ATTR_SIGMASK) ? &a->sigmask : &cur);
    c->sigdef = a && (a->set & ATTR_SIGDEF) ? pspawn_sigset_to_u64(&a->sigdef) : 0;
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction sa;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) < 0)
            continue;
        uint64_t bit = UINT64_C(1) << (sig - 1);
        if (sa.sa_handler == SIG_IGN)
            c->ignored |= bit;
        else if (sa.sa_handler != SIG_DFL)
            c->handled |= bit;
    }
    c->ignored &= ~c->sigdef;
}

/* Working directory, umask, session or process group, scheduling. */
static void call_placement(struct call *c, const struct pspawn_attr_impl *a)
{
    if (a && (a->set & ATTR_CWD)) {
        snprintf(c->cwd, sizeof c->cwd, "%s", a->cwd);
        c->flags |= REQ_CWD;
    } else {
        c->cwd_inherited = 1;
        if (getcwd(c->cwd, sizeof c->cwd))
            c->flags |= REQ_CWD;
    }
    c->umask = a && (a->set & ATTR_UMASK) ? a->umask : pspawn_umask_get();
    c->flags |= REQ_UMASK;
    if (a && (a->set & ATTR_SETSID))
        c->flags |= REQ_SETSID;
    else if (a && (a->set & ATTR_PGROUP)) {
        c->flags |= REQ_SETPGROUP;
        c->pgroup = a->pgroup;
    }
    /* Exec keeps the caller's scheduling: the zygote's may differ now. */
    errno = 0;
    c->nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0)
        c->flags |= REQ_NICE;
    struct sched_param sp;
    c->sched_policy = sched_getscheduler(0);
    if (c->sched_policy >= 0 && sched_getparam(0, &sp) == 0) {
        c->sched_priority = sp.sched_priority;
        c->flags |= REQ_SCHED;
    }
}

/* Exec keeps the caller's NUMA memory policy, no_new_privs and the
 * attributes that fork and exec both keep (personality...), and its CPU
 * affinity and resource limits; and a zygote must not serve a caller that
 * has since put itself under seccomp filters. */
static void call_process_state(struct call *c, const struct pspawn_attr_impl *a)
{
    if (a && (a->set & ATTR_MEMPOLICY)) {
        c->mempolicy = a->mempolicy;
        memcpy(c->nodemask, a->nodemask, sizeof c->nodemask);
        c->flags |= REQ_MEMPOLICY;
    } else if (pspawn_mempolicy_get(&c->mempolicy, c->nodemask) == 0) {
        c->flags |= REQ_MEMPOLICY;
    }
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
        c->flags |= REQ_NO_NEW_PRIVS;
    c->seccomp = pspawn_seccomp_filters();
    pspawn_procstate_get(&c->proc);
    if (a && (a->set & ATTR_CPUSET)) {
        memcpy(c->cpuset, a->cpuset, sizeof c->cpuset);
        c->have_cpuset = 1;
    } else if (sched_getaffinity(0, sizeof c->cpuset, (cpu_set_t *)c->cpuset) == 0) {
        c->have_cpuset = 1;
    }
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        struct rlimit rl;
        if (getrlimit(r, &rl) == 0)
            c->rlimits[c->nrlimits++] = (struct wire_rlimit){ r, 0, rl.rlim_cur, rl.rlim_max };
    }
    if (a)
        for (int i = 0; i < a->nrlimits; i++)
            for (int j = 0; j < c->nrlimits; j++)
                if (c->rlimits[j].resource == a->rlimits[i].resource)
                    c->rlimits[j] = a->rlimits[i];
}

/* Fds: the caller's 0-2 (where open), then the actions in order.  0 or
 * an errno (EBADF: a source fd is not open). */
static int call_fds(struct call *c, const struct pspawn_attr_impl *a)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            add_dup2(c, fd, fd);
    for (int i = 0; a && i < a->nactions; i++) {
        const struct attr_action *x = &a->actions[i];
        int err = 0;
        switch (x->kind) {
        case AA_OPEN:
            c->actions[c->nactions++] = (struct child_action){
                FA_OPEN, x->fd, -1, x->oflag, x->mode, x->path };
            break;
        case AA_DUP2:
        case AA_INHERIT:
            err = add_dup2(c, x->srcfd, x->fd);
            break;
        case AA_CLOSE:
            c->actions[c->nactions++] = (struct child_action){ FA_CLOSE, x->fd, -1, 0, 0, NULL };
            break;
        }
        if (err)
            return err;
    }
    return 0;
}

int pspawn_call_init(struct call *c, const pspawn_attr_t *attrp, char *const envp[])
{
    const struct pspawn_attr_impl *a = attrp ? attrp->impl : NULL;
    memset(c, 0, offsetof(struct call, actions));
    c->nactions = c->nfds = 0;
    c->attr = a;
    c->user_flags = a ? a->flags : 0;
    c->envp = envp ? envp : environ;
    call_signals(c, a);
    if (a && a->pid_hook)
        c->flags |= REQ_LAUNCHER_GO;
    call_placement(c, a);
    call_process_state(c, a);
    return call_fds(c, a);
}
