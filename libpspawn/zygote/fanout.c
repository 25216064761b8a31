/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fan-out: the root zygote makes one sub-zygote per group of CPUs the
 * launcher computed (hwloc, launcher side), so that forks are served by
 * as many processes as the node needs and each task is created on a CPU of
 * its own group.
 *
 * A sub-zygote is made (subzygote=...)
 *   fork       by forking its maker (the root, or for a group of another
 *              NUMA node the first sub-zygote of that node, so that a
 *              node's sub-zygotes come up in parallel and take their kernel
 *              structures from their own node);
 *   exec       by exec'ing the program again, as the root was: its own
 *              copy-on-write roots, no chain to share with its siblings;
 *   replicate  the same, loading the program's libraries from copies made
 *              for its group on its own NUMA node (LD_LIBRARY_PATH);
 *   cgroup     the same, with the sub-zygote and its copies in a cpuset
 *              cgroup of its group, and its tasks made in the launcher's.
 * Direct mode: sub-zygotes are made with CLONE_PARENT, so that they and
 * their tasks are the launcher's children; each serves on its own socket
 * to the launcher.  Stand-in mode: they are the root's children, and the
 * root forwards each stand-in to the sub-zygote of its task's CPUs.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "groups.h"
#include "options.h"
#include "pidfd.h"
#include "zygote.h"
#include "strv.h"

extern char **environ;

/* An fd of the launcher's cgroup, at this number in an exec'd sub-zygote. */
#define TASK_CGROUP_AT 1021

/* ---- the libraries, copied for a group (subzygote=replicate) ---------- */

struct objects {
    char **paths;
    int n, cap;
};

/* Whether PATH is one of the words of the LD_PRELOAD we were exec'd with. */
static int preloaded(const char *path)
{
    const char *v = NULL;
    for (char **e = parked.exec_env; e && *e && !v; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0)
            v = *e + 11;
    size_t len = strlen(path);
    for (const char *w = v; w && *w;) {
        size_t n = strcspn(w, " :");
        if (n == len && strncmp(w, path, len) == 0)
            return 1;
        w += n + (w[n] != 0);
    }
    return 0;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct objects *o = data;
    const char *p = info->dlpi_name;
    /* The program itself ("") and the vdso are no files; the loader (its
     * PT_INTERP) is not searched for; nor is what LD_PRELOAD names (the
     * proxy among them), by its path. */
    if (!p || p[0] != '/' || info->dlpi_addr == getauxval(AT_BASE) || preloaded(p))
        return 0;
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 256;
        char **v = realloc(o->paths, (size_t)cap * sizeof *v);
        if (!v)
            return 1;
        o->paths = v;
        o->cap = cap;
    }
    o->paths[o->n++] = strdup(p);
    return 0;
}

static int copy_file(const char *src, int dirfd, const char *name)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) < 0) {
        if (in >= 0)
            close(in);
        return -1;
    }
    int out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0755);
    int ok = out >= 0;
    char buf[65536];
    ssize_t got;
    while (ok && (got = read(in, buf, sizeof buf)) != 0) {
        if (got < 0) {
            ok = errno == EINTR;
            continue;
        }
        for (ssize_t done = 0, w; ok && done < got; done += w > 0 ? w : 0)
            ok = (w = write(out, buf + done, (size_t)(got - done))) > 0 || errno == EINTR;
    }
    close(in);
    if (out >= 0)
        close(out);
    return ok ? 0 : -1;
}

/* Copy every shared object we have loaded into DIR, under the name the
 * loader looks it up by.  Two objects of one name are both left out: the
 * copy of one would stand in for the other. */
static void replicate(const char *dir)
{
    struct objects o = { NULL, 0, 0 };
    dl_iterate_phdr(add_object, &o);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; dirfd >= 0 && i < o.n; i++) {
        const char *base = strrchr(o.paths[i], '/') + 1;
        int twice = 0;
        for (int j = 0; j < o.n; j++)
            twice |= j != i && strcmp(strrchr(o.paths[j], '/') + 1, base) == 0;
        if (!twice)
            copy_file(o.paths[i], dirfd, base);
    }
    if (dirfd >= 0)
        close(dirfd);
    for (int i = 0; i < o.n; i++)
        free(o.paths[i]);
    free(o.paths);
}

/* ---- making sub-zygotes ---------------------------------------------- */

static const char *const sub_drop[] = {
    PSPAWN_ENV_GROUP "=", PSPAWN_ENV_PARENT "=", PSPAWN_ENV_LISTEN "=", PSPAWN_ENV_FORWARD "=",
    PSPAWN_ENV_REPLICA "=", PSPAWN_ENV_TASK_CGROUP "=", PSPAWN_ENV_SOCK "=", PSPAWN_ENV_EXEC "=",
};

static int dropped(const char *kv, int replica)
{
    for (size_t i = 0; i < sizeof sub_drop / sizeof sub_drop[0]; i++)
        if (strncmp(kv, sub_drop[i], strlen(sub_drop[i])) == 0)
            return 1;
    return replica && strncmp(kv, "LD_LIBRARY_PATH=", 16) == 0;
}

/* An exec'd sub-zygote's environment: ours at exec, with its group, its
 * parent, its socket's number and, for replicas, its copies first in the
 * loader's path. */
static char **sub_environ(const struct wire_group *g, int standin, const char *replica,
                          int cgroup)
{
    size_t n = 0;
    while (parked.exec_env && parked.exec_env[n])
        n++;
    char **env = calloc(n + 8, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    const char *ldpath = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(parked.exec_env[i], "LD_LIBRARY_PATH=", 16) == 0)
            ldpath = parked.exec_env[i] + 16;
        if (!dropped(parked.exec_env[i], replica != NULL))
            env[k++] = strdup(parked.exec_env[i]);
    }
    char hex[2 * PSPAWN_CPUSET_BYTES + 1];
    for (size_t i = 0; i < PSPAWN_CPUSET_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", g->cpus[i]);
    pid_t root = parked.root ? parked.root : getpid();
    if (asprintf(&env[k++], PSPAWN_ENV_GROUP "=%d:%d:%d:%s", (int)g->index, (int)g->node,
                 (int)root, hex) < 0 ||
        asprintf(&env[k++], PSPAWN_ENV_PARENT "=%d", (int)(standin ? getpid() : parked.launcher)) < 0 ||
        asprintf(&env[k++], PSPAWN_ENV_SOCK "=%d", parked.sock_at) < 0 ||
        (standin && asprintf(&env[k++], PSPAWN_ENV_FORWARD "=1") < 0) ||
        (replica && (asprintf(&env[k++], PSPAWN_ENV_REPLICA "=%s", replica) < 0 ||
                     asprintf(&env[k++], "LD_LIBRARY_PATH=%s%s%s", replica,
                              ldpath && *ldpath ? ":" : "", ldpath ? ldpath : "") < 0)) ||
        (cgroup && asprintf(&env[k++], PSPAWN_ENV_TASK_CGROUP "=%d", TASK_CGROUP_AT) < 0))
        env[k - 1] = NULL;
    env[k] = NULL;
    return pspawn_strv_complete(env, k);
}

/* What an exec'd sub-zygote starts from: the state we were exec'd with
 * (stdio from /dev/null, so that constructors' output appears once, from
 * the root; every signal at its default), pinned to its group's CPUs and
 * preferring its node's memory before the exec, so that what the kernel
 * and the loader allocate for it is there from the start; its socket and
 * the report pipe at our numbers. */
struct sub_exec {
    struct child_action actions[6];
    int fds[6];
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];
    struct child_setup setup;
    struct child_exec exec;
    char *argv[2];
    char **env;
};

static int prepare_exec(struct sub_exec *x, int chan, const struct wire_group *g, int standin,
                        const char *replica, int task_cgroup, int null)
{
    memset(x, 0, sizeof *x);
    x->env = sub_environ(g, standin, replica, task_cgroup >= 0);
    if (!x->env)
        return -1;
    int n = 0;
    for (int fd = 0; fd <= 2; fd++)
        x->actions[n] = (struct child_action){ FA_DUP2, fd, 0, 0, 0, NULL }, n++;
    x->fds[0] = null;
    x->fds[1] = chan;
    x->actions[n++] = (struct child_action){ FA_DUP2, parked.sock_at, 1, 0, 0, NULL };
    int nfds = 2;
    if (!standin) {
        x->fds[nfds] = parked.report;
        x->actions[n++] = (struct child_action){ FA_DUP2, parked.report_at, nfds++, 0, 0, NULL };
    }
    if (task_cgroup >= 0) {
        x->fds[nfds] = task_cgroup;
        x->actions[n++] = (struct child_action){ FA_DUP2, TASK_CGROUP_AT, nfds++, 0, 0, NULL };
    }
    x->setup = (struct child_setup){
        .actions = x->actions, .nactions = n, .fds = x->fds, .nfds = nfds,
        .sig_default = ~UINT64_C(0),
        .cpuset = zygote_any_cpu(g->cpus) ? g->cpus
                  : zygote_any_cpu(parked.launch_cpuset) ? parked.launch_cpuset : NULL,
        .flags = parked.launch_mempolicy >= 0 ? REQ_MEMPOLICY : 0,
        .mempolicy = parked.launch_mempolicy,
        .nodemask = parked.launch_nodemask,
        .placement_optional = 1,
    };
    if (g->node >= 0 && g->node < PSPAWN_NODEMASK_BYTES * 8) {
        x->nodemask[g->node / 8] = (unsigned char)(1u << (g->node % 8));
        x->setup.flags = REQ_MEMPOLICY;
        x->setup.mempolicy = MPOL_PREFERRED;
        x->setup.nodemask = x->nodemask;
    }
    /* In the directory the root was started in (it parks in "/"): its
     * constructors run there, and a relative file name resolves. */
    if (parked.cwd_released) {
        x->setup.flags |= REQ_CWD;
        x->setup.cwd = parked.cwd;
    }
    /* As the root was: the file name the kernel was given (its base name is
     * the comm, it is AT_EXECFN; for a #! script, the script), with argv
     * that name alone, as the launcher gives it. */
    x->argv[0] = (char *)getauxval(AT_EXECFN);
    x->argv[1] = NULL;
    if (!x->argv[0])
        return -1;
    x->exec = (struct child_exec){ x->argv[0], x->argv, x->env, &x->setup, 0, 0, 0 };
    return 0;
}

/* Exec a sub-zygote from a child that shares our memory until its exec
 * (CLONE_VFORK): nothing of ours is copied. */
static pid_t vfork_exec(struct sub_exec *x, unsigned long extra, int32_t *pid_slot)
{
    size_t stack_size = 64 * 1024;
    char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    /* No handler of ours may run on its stack: block all until its exec. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    pid_t pid = clone(pspawn_child_exec, stack + stack_size,
                      (int)(CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD | extra),
                      &x->exec, pid_slot);
    sigprocmask(SIG_SETMASK, &old, NULL);
    munmap(stack, stack_size);
    if (pid > 0 && x->exec.err) {
        if (!(extra & CLONE_PARENT))
            waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* Join the cgroup PREFIX<index> under DIRFD (cgroup v2: "0" is ourselves). */
static int join_cgroup(int dirfd, const char *prefix, int index)
{
    char name[128];
    snprintf(name, sizeof name, "%s%d/cgroup.procs", prefix, index);
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    int ok = fd >= 0 && write(fd, "0", 1) == 1;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

/* A sub-zygote that loads its own copies: a forked child of ours makes
 * them on the group's node (their page cache is allocated there, and, in a
 * cpuset cgroup, charged and confined there), then execs. */
static pid_t replicated_exec(const struct wire_fanout *f, struct wire_group *g,
                             struct sub_exec *x, const char *dir, int *fds, unsigned long extra)
{
    pid_t pid = zygote_clone(extra, &g->pid);
    if (pid != 0)
        return pid;
    if (f->subzygote == PSPAWN_SUB_CGROUP &&
        join_cgroup(fds[f->cgroup_dir], f->cgroup_prefix, g->index) < 0)
        _exit(127);
    if (zygote_any_cpu(g->cpus))
        sched_setaffinity(0, PSPAWN_CPUSET_BYTES, (const cpu_set_t *)g->cpus);
    if (g->node >= 0 && g->node < PSPAWN_NODEMASK_BYTES * 8) {
        unsigned long mask[PSPAWN_NODEMASK_BYTES / sizeof(unsigned long)] = { 0 };
        mask[g->node / (8 * sizeof mask[0])] |= 1UL << (g->node % (8 * sizeof mask[0]));
        syscall(SYS_set_mempolicy, MPOL_BIND, mask, (unsigned long)PSPAWN_NODEMASK_BYTES * 8 + 1);
    }
    replicate(dir);
    pspawn_child_exec(&x->exec);
    _exit(127);
}

/* In a forked sub-zygote, once its own sub-zygotes are made: keep only
 * what it serves with (stdio, its channel, the report pipe, what the
 * program's constructors opened), drop its maker's. */
static void keep_only(int chan)
{
    int keep[MAX_CTOR_FDS + 8], n = 0;
    for (int fd = 0; fd <= 2; fd++)
        keep[n++] = fd;
    keep[n++] = chan;
    if (parked.report >= 0)
        keep[n++] = parked.report;
    if (parked.task_cgroup >= 0)
        keep[n++] = parked.task_cgroup;
    if (parked.launcher_pidfd >= 0)
        keep[n++] = parked.launcher_pidfd;
    for (int i = 0; i < parked.nctor_fds; i++)
        keep[n++] = parked.ctor_fds[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    pspawn_child_close_others(keep, n);
}

static int make_children(struct wire_fanout *f, int me, int *fds, int nfds, int standin);

/* In a new forked sub-zygote of group G: become it, make its own
 * sub-zygotes, and get ready to serve on CHAN.  Returns 1: here or in one
 * of its sub-zygotes, a zygote set up to serve. */
static int forked_sub(struct wire_fanout *f, const struct wire_group *g, int chan,
                      pid_t root, int *fds, int nfds, int standin)
{
    parked.root = root;
    parked.sock = chan;
    parked.forwarded = standin;
    free(parked.groups);
    parked.groups = NULL;
    parked.ngroups = 0;
    zygote_become_group(g);
    zygote_settle_pages_later(g->node);
    if (make_children(f, g->index, fds, nfds, standin))
        return 1;
    keep_only(chan);
    parked.root_pidfd = (int)syscall(SYS_pidfd_open, root, 0);
    return 1;
}

/* Make the sub-zygotes whose maker is group ME.  Returns 1 in one of them
 * (forked), 0 here. */
static int make_children(struct wire_fanout *f, int me, int *fds, int nfds, int standin)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t root = parked.root ? parked.root : getpid();
    unsigned long extra = standin ? 0 : CLONE_PARENT;
    zygote_making_subs(1);     /* the clones here are no tasks */
    for (uint32_t i = 0; i < f->ngroups; i++) {
        struct wire_group *g = &f->groups[i];
        if (g->parent != me || g->index == me)
            continue;
        int pair[2] = { -1, -1 }, chan;
        if (standin) {
            if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                continue;
            chan = pair[1];
        } else {
            chan = g->sock >= 0 && g->sock < nfds ? fds[g->sock] : -1;
            if (chan < 0)
                continue;
        }
        pid_t pid = -1;
        if (f->subzygote == PSPAWN_SUB_FORK) {
            pid = zygote_clone(extra, &g->pid);
            if (pid == 0) {
                if (pair[0] >= 0)
                    close(pair[0]);
                close(null);
                zygote_making_subs(0);
                return forked_sub(f, g, chan, root, fds, nfds, standin);
            }
        } else {
            char dir[160] = "";
            int replicated = f->subzygote != PSPAWN_SUB_EXEC && f->replica_dir[0];
            if (replicated)
                snprintf(dir, sizeof dir, "%.128s-g%d", f->replica_dir, g->index);
            int tcg = f->subzygote == PSPAWN_SUB_CGROUP && f->task_cgroup >= 0 &&
                      f->task_cgroup < nfds ? fds[f->task_cgroup] : -1;
            struct sub_exec x;
            if (prepare_exec(&x, chan, g, standin, replicated ? dir : NULL, tcg, null) == 0) {
                pid = replicated ? replicated_exec(f, g, &x, dir, fds, extra)
                                 : vfork_exec(&x, extra, &g->pid);
                pspawn_strv_free(x.env);
            }
        }
        if (pair[1] >= 0)
            close(pair[1]);
        if (standin && pid > 0 && parked.groups && g->index < parked.ngroups) {
            parked.groups[g->index].fwd = pair[0];
            parked.groups[g->index].pid = pid;
        } else if (pair[0] >= 0) {
            close(pair[0]);
        }
    }
    if (null >= 0)
        close(null);
    zygote_making_subs(0);
    return 0;
}

int zygote_fanout(char *base, size_t size, int *fds, int nfds, int standin)
{
    struct wire_fanout *f = (struct wire_fanout *)base;
    int ok = size >= sizeof *f && f->ngroups <= PSPAWN_FANOUT_MAX &&
             (size - sizeof *f) / sizeof(struct wire_group) >= f->ngroups;
    const struct wire_group *own = NULL;
    for (uint32_t i = 0; ok && i < f->ngroups; i++) {
        const struct wire_group *g = &f->groups[i];
        ok = g->index >= 0 && g->index < PSPAWN_FANOUT_MAX && g->sock < nfds;
        if (g->index == f->own)
            own = g;
    }
    int made = 0;
    if (ok) {
        if (standin && !parked.groups) {
            /* The stand-in root forwards by CPU: it keeps the table. */
            int n = 0;
            for (uint32_t i = 0; i < f->ngroups; i++)
                if (f->groups[i].index >= n)
                    n = f->groups[i].index + 1;
            parked.groups = calloc((size_t)n, sizeof *parked.groups);
            parked.ngroups = parked.groups ? n : 0;
            for (int i = 0; i < parked.ngroups; i++)
                parked.groups[i].fwd = -1;
            for (uint32_t i = 0; parked.groups && i < f->ngroups; i++)
                memcpy(parked.groups[f->groups[i].index].cpus, f->groups[i].cpus,
                       PSPAWN_CPUSET_BYTES);
        }
        /* The root serves its own group from its first fan-out on. */
        static int root_became;
        if (own && !parked.root && own->index == 0 && !root_became) {
            zygote_become_group(own);
            root_became = 1;
        }
        made = make_children(f, f->own, fds, nfds, standin);
    }
    if (made)
        return 1;   /* a new sub-zygote: keep_only closed what is not ours */
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    return 0;
}

int zygote_group_of(const unsigned char *cpus)
{
    /* As the launcher dispatches: the group the CPUs fall in, or in turn
     * one of those they span; a dead sub-zygote's share stays here. */
    int g = pspawn_pick_group(cpus, parked.groups[0].cpus, sizeof parked.groups[0],
                              parked.ngroups, &parked.turn);
    return g > 0 && parked.groups[g].fwd >= 0 ? g : 0;
}
