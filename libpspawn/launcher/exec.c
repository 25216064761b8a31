/* SPDX-License-Identifier: BSD-3-Clause */
/* The plain exec path: the reference that the zygote path must match, and
 * its fallback.  Like glibc's and musl's posix_spawn, the child shares the
 * caller's memory (CLONE_VM|CLONE_VFORK) and reports a failure by writing
 * its errno into that memory before exiting.  A caller with a pid hook
 * must run the hook while the child waits before its exec, which a vfork
 * child cannot do (its parent is suspended until the exec): its child is
 * a fork, held on a pipe. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

int pspawn_exec_setup(pid_t *pidp, const char *path, struct child_setup *s,
                      uint64_t sigmask, char *const argv[], char *const envp[])
{
    struct child_exec a = { path, argv, envp, s, sigmask, 0, 0 };
    size_t stack_size = 64 * 1024;
    char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return errno;
    /* No handler of the caller may run on the child's stack in shared
     * memory: block everything until the child has reset them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = clone(pspawn_child_exec, stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    int err = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(stack, stack_size);
    if (err)
        return err;
    if (a.err) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return a.err;
    }
    *pidp = pid;
    return 0;
}

static int read_int(int fd, int *v)
{
    ssize_t n;
    while ((n = read(fd, v, sizeof *v)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof *v;
}

static void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

/* The held exec: S->fds has room for two more.  Task INDEX's pid goes to
 * HOOK once the child is set up, and before it may exec. */
static int exec_held(pid_t *pidp, const char *path, struct child_setup *s, uint64_t sigmask,
                     char *const argv[], char *const envp[], pspawn_pid_hook_t hook,
                     void *arg, size_t index)
{
    int go[2], rep[2];
    if (pipe2(go, O_CLOEXEC) < 0)
        return errno;
    if (pipe2(rep, O_CLOEXEC) < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        return e;
    }
    s->fds[s->nfds++] = go[0];
    s->fds[s->nfds++] = rep[1];
    struct child_exec a = { path, argv, envp, s, sigmask, 0, 1 };
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = fork();
    if (pid == 0)
        pspawn_child_exec(&a);
    int err = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(go[0]);
    close(rep[1]);
    int v = 0;
    if (!err && (!read_int(rep[0], &v) || v)) {
        err = v ? v : ECHILD;   /* its setup failed, or it died in it */
        reap(pid);
    } else if (!err) {
        hook(arg, index, pid);
        while (write(go[1], "g", 1) < 0 && errno == EINTR)
            ;
        if (read_int(rep[0], &v)) {     /* end of file: exec'd */
            err = v;
            reap(pid);
        }
    }
    close(go[1]);
    close(rep[0]);
    if (!err)
        *pidp = pid;
    return err;
}

int pspawn_exec_task(pid_t *pid, const char *path, const struct call *c, size_t index,
                     const unsigned char *cpuset, char *const argv[], char *const envp[])
{
    /* The child is a copy of the caller: it already has the caller's cwd,
     * umask, rlimits, scheduling, affinity and memory policy, so only what
     * the attribute object asks for is applied. */
    const struct pspawn_attr_impl *a = c->attr;
    unsigned set = a ? a->set : 0;
    int fds[PSPAWN_FD_MAX + 2];     /* and a held child's two pipes */
    memcpy(fds, c->fds, c->nfds * sizeof(int));
    struct child_setup s = {
        .flags = c->flags & (REQ_SETSID | REQ_SETPGROUP |
                             ((set & ATTR_CWD) ? REQ_CWD : 0) | ((set & ATTR_UMASK) ? REQ_UMASK : 0) |
                             ((set & ATTR_MEMPOLICY) ? REQ_MEMPOLICY : 0)),
        .umask = c->umask,
        .mempolicy = c->mempolicy,
        .nodemask = c->nodemask,
        .pgroup = c->pgroup,
        .cwd = c->cwd,
        .cpuset = cpuset ? cpuset : ((set & ATTR_CPUSET) ? c->cpuset : NULL),
        .rlimits = a ? a->rlimits : NULL,
        .nrlimits = a ? a->nrlimits : 0,
        .actions = c->actions,
        .nactions = c->nactions,
        .fds = fds,
        .nfds = c->nfds,
        /* exec resets handled signals itself, but the child must not run
         * the caller's handlers before it gets there. */
        .sig_default = c->handled | c->sigdef,
        .sig_ignore = 0,
        .emulate_cloexec = 0,
        .traceme = (c->user_flags & PSPAWN_TRACEME) != 0,
    };
    if (a && a->pid_hook)
        return exec_held(pid, path, &s, c->sigmask, argv, envp, a->pid_hook, a->pid_hook_arg,
                         index);
    return pspawn_exec_setup(pid, path, &s, c->sigmask, argv, envp);
}

int pspawn_exec(pid_t *pid, const char *path, const pspawn_attr_t *attr,
                char *const argv[], char *const envp[])
{
    struct call *c = malloc(sizeof *c);
    if (!c)
        return ENOMEM;
    int err = pspawn_call_init(c, attr, envp);
    if (!err)
        err = pspawn_exec_task(pid, path, c, 0, NULL, argv, c->envp);
    free(c);
    return err;
}
