/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fan-out, launcher side: the groups of CPUs (topology.c), a server for
 * each, and the fan-out message that has the root zygote make them
 * (zygote/fanout.c).  Tasks are dispatched to the server of the group
 * their binding falls in (the zygote handle, pspawn_zygote_route, asks
 * pspawn_server_for).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "internal.h"
#include "procfs.h"
#include "memfd.h"
#include "pidfd.h"
#include "replica.h"
#include "unixsock.h"

/* Distinguishes the copies and cgroups of this process's contexts. */
static unsigned long context_seq;

/* CPUS as a list ("0-3,8"). */
static const char *cpu_list(const unsigned char *cpus, size_t bits, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < bits && k < size; i++) {
        if (!(cpus[i / 8] >> (i % 8) & 1))
            continue;
        size_t j = i;
        while (j + 1 < bits && (cpus[(j + 1) / 8] >> ((j + 1) % 8) & 1))
            j++;
        k += (size_t)snprintf(buf + k, size - k, j > i ? "%s%zu-%zu" : "%s%zu",
                              k ? "," : "", i, j);
        i = j;
    }
    return buf;
}

static int one_group(struct pspawn_zygote *z)
{
    pspawn_topology_free(&z->topo);
    z->topo.groups = calloc(1, sizeof *z->topo.groups);
    if (!z->topo.groups)
        return ENOMEM;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    sched_getaffinity(0, sizeof cs, &cs);
    memcpy(z->topo.groups[0].cpus, &cs, PSPAWN_CPUSET_BYTES);
    z->topo.groups[0].ncpus = CPU_COUNT(&cs);
    z->topo.groups[0].node = -1;
    z->topo.groups[0].parent = -1;
    z->topo.ngroups = 1;
    z->topo.thissystem = 1;
    return 0;
}

int pspawn_fanout_plan(struct pspawn_zygote *z)
{
    int err = 0;
    if (z->opts.fanout == PSPAWN_FANOUT_NONE) {
        err = one_group(z);
        snprintf(z->topo.describe, sizeof z->topo.describe, "fanout=none: one zygote");
    } else if ((err = pspawn_topology_groups(&z->opts, 0, &z->topo)) != 0) {
        pspawn_debug(z, "no fan-out: %s", z->topo.describe);
        char why[200];
        snprintf(why, sizeof why, "%.180s", z->topo.describe);
        err = one_group(z);
        snprintf(z->topo.describe, sizeof z->topo.describe, "one zygote (%s)", why);
    }
    if (err)
        return err;
    if (z->topo.ngroups > PSPAWN_FANOUT_MAX + 1) {
        /* The CPUs of groups past the last are spread over all. */
        pspawn_debug(z, "%d groups: only the first %d get a zygote", z->topo.ngroups,
                     PSPAWN_FANOUT_MAX + 1);
        z->topo.ngroups = PSPAWN_FANOUT_MAX + 1;
    }
    z->servers = calloc((size_t)z->topo.ngroups, sizeof *z->servers);
    if (!z->servers)
        return ENOMEM;
    for (int k = 0; k < z->topo.ngroups; k++)
        z->servers[k] = (struct zygote_server){ .state = SERVER_NONE, .pid = -1, .pidfd = -1,
                                                .sock = -1 };
    pspawn_debug(z, "%s", z->topo.describe);
    return 0;
}

/* Our own cgroup v2 directory, where subzygote=cgroup makes the tasks. */
static int own_cgroup(char *dir)
{
    char *self = pspawn_read_file("/proc/self/cgroup");
    char *mounts = pspawn_read_file("/proc/self/mountinfo");
    int r = self && mounts ? pspawn_cg2_dir(self, mounts, dir) : -1;
    free(self);
    free(mounts);
    return r;
}

static void wire_group_of(const struct pspawn_topology *t, int k, int parent, int sock,
                          struct wire_group *wg)
{
    const struct pspawn_group *g = &t->groups[k];
    memset(wg, 0, sizeof *wg);
    wg->index = k;
    wg->parent = parent;
    wg->sock = sock;
    wg->node = g->node;
    /* A topology that is not this machine's binds nothing. */
    if (t->thissystem)
        memcpy(wg->cpus, g->cpus, sizeof wg->cpus);
}

/* A fan-out table for N more groups than the root's own, in a new memfd
 * (*MEMFD), mapped: the header and group 0 filled in. */
static struct wire_fanout *fanout_table(const struct pspawn_topology *t,
                                        const struct pspawn_options *o, int n, int *memfd,
                                        size_t *size)
{
    *size = sizeof(struct wire_fanout) + (size_t)(n + 1) * sizeof(struct wire_group);
    struct wire_fanout *f = pspawn_memfd_create("pspawn-fanout", *size, memfd);
    if (!f)
        return NULL;
    f->ngroups = (uint32_t)n + 1;
    f->subzygote = (uint32_t)o->subzygote;
    f->own = 0;
    f->task_cgroup = f->cgroup_dir = -1;
    wire_group_of(t, 0, -1, -1, &f->groups[0]);
    return f;
}

/* Ask the root for the sub-zygotes of the N groups LIST: one socket pair
 * each, their ends and the table in one message. */
static int send_fanout(struct pspawn_zygote *z, const int *list, int n)
{
    int memfd;
    size_t size;
    struct wire_fanout *f = fanout_table(&z->topo, &z->opts, n, &memfd, &size);
    if (!f)
        return errno;
    int fds[PSPAWN_FANOUT_MAX + 4], nfds = 0, err = 0;
    fds[nfds++] = memfd;
    int tree = z->opts.subzygote == PSPAWN_SUB_FORK && !z->opts.lazy;
    for (int i = 0; i < n && !err; i++) {
        int k = list[i], sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
            err = errno;
            break;
        }
        z->servers[k].sock = sp[0];
        wire_group_of(&z->topo, k,
                      tree && z->topo.groups[k].parent > 0 ? z->topo.groups[k].parent : 0,
                      nfds - 1, &f->groups[i + 1]);
        fds[nfds++] = sp[1];
    }
    if (!err && z->opts.subzygote >= PSPAWN_SUB_REPLICATE)
        snprintf(f->replica_dir, sizeof f->replica_dir, "%s", z->replica_dir);
    int cg_dir = -1, cg_task = -1;
    if (!err && z->opts.subzygote == PSPAWN_SUB_CGROUP) {
        char own[PATH_MAX];
        cg_dir = open(z->opts.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cg_task = own_cgroup(own) == 0 ? open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (cg_dir < 0 || cg_task < 0)
            err = errno ? errno : ENOENT;
        snprintf(f->cgroup_prefix, sizeof f->cgroup_prefix, "pspawn-%d-%lu-g", (int)getpid(),
                 z->cgroup_seq);
        f->cgroup_dir = nfds - 1;
        fds[nfds++] = cg_dir;
        f->task_cgroup = nfds - 1;
        fds[nfds++] = cg_task;
    }
    if (!err) {
        struct request_msg msg = { PSPAWN_FANOUT_MAGIC, 0, (uint32_t)size, (uint32_t)nfds - 1 };
        err = pspawn_send_fds(z->servers[0].sock, &msg, sizeof msg, fds, nfds);
    }
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* Kept: the root writes each sub-zygote's pid there. */
    struct fanout_map *v = err ? NULL : realloc(z->tables, (size_t)(z->ntables + 1) * sizeof *v);
    if (v) {
        z->tables = v;
        z->tables[z->ntables++] = (struct fanout_map){ f, size };
        for (int i = 0; i < n; i++)
            z->servers[list[i]].pid_slot = &f->groups[i + 1].pid;
    } else {
        munmap(f, size);
    }
    for (int i = 0; i < n; i++) {
        struct zygote_server *sv = &z->servers[list[i]];
        if (err) {
            char why[160];
            snprintf(why, sizeof why, "could not ask the root for it: %s", strerror(err));
            pspawn_server_lost(z, list[i], 0, why);
        } else {
            sv->state = SERVER_STARTING;
            sv->progress_ms = pspawn_now_ms();
        }
    }
    return err;
}

int pspawn_fanout_send_standin(int sock, const struct pspawn_topology *t,
                               const struct pspawn_options *o)
{
    /* The stand-in root makes every sub-zygote itself, and its socket: it
     * forwards their stand-ins to them. */
    int memfd;
    size_t size;
    struct wire_fanout *f = fanout_table(t, o, t->ngroups - 1, &memfd, &size);
    if (!f)
        return errno;
    if (f->subzygote == PSPAWN_SUB_CGROUP)
        f->subzygote = PSPAWN_SUB_REPLICATE;
    for (int k = 1; k < t->ngroups; k++)
        wire_group_of(t, k, 0, -1, &f->groups[k]);
    if (f->subzygote == PSPAWN_SUB_REPLICATE) {
        const char *base = getenv("PSPAWN_REPLICA_DIR");
        struct stat st;
        if (!base || !*base)
            base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(f->replica_dir, sizeof f->replica_dir, "%s/pspawn-%d-%d", base, (int)getuid(),
                 (int)getpid());
    }
    struct request_msg msg = { PSPAWN_FANOUT_MAGIC, 0, (uint32_t)size, 0 };
    int err = pspawn_send_fds(sock, &msg, sizeof msg, &memfd, 1);
    munmap(f, size);
    close(memfd);
    return err;
}

int pspawn_server_ready(struct pspawn_zygote *z, int s)
{
    struct zygote_server *sv = &z->servers[s];
    struct zygote_ready r;
    ssize_t got;
    while ((got = recv(sv->sock, &r, sizeof r, MSG_DONTWAIT)) < 0 && errno == EINTR)
        ;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    char why[200], list[128];
    if (got != (ssize_t)sizeof r || r.magic != PSPAWN_MAGIC) {
        snprintf(why, sizeof why, "it did not start (%s)",
                 z->opts.subzygote == PSPAWN_SUB_FORK ? "its fork failed"
                                                      : "its exec failed, or it died loading");
        pspawn_server_lost(z, s, SERVER_KILL, why);
        return -1;
    }
    if (r.status != ZYGOTE_PARKED || r.detail != s) {
        pspawn_zygote_refusal(why, sizeof why, (int)r.status, r.detail);
        pspawn_server_lost(z, s, SERVER_KILL, why);
        return -1;
    }
    /* Its maker had the kernel write its pid in the table before it ran:
     * a ready message with another is not from it (we would signal and
     * reap some other process as our sub-zygote). */
    int32_t made = sv->pid_slot ? __atomic_load_n(sv->pid_slot, __ATOMIC_ACQUIRE) : 0;
    if (r.pid <= 0 || (sv->pid_slot && r.pid != made)) {
        snprintf(why, sizeof why, "its ready message names pid %d, not the one it was made "
                 "with (%d)", (int)r.pid, (int)made);
        pspawn_server_lost(z, s, SERVER_KILL, why);
        return -1;
    }
    sv->pid = r.pid;
    sv->pidfd = (int)syscall(SYS_pidfd_open, sv->pid, 0);
    sv->state = SERVER_READY;
    pspawn_debug(z, "sub-zygote %d (CPUs %s, node %d) is pid %d", s,
                 cpu_list(z->topo.groups[s].cpus, PSPAWN_CPUSET_BYTES * 8, list, sizeof list),
                 z->topo.groups[s].node, (int)sv->pid);
    return 1;
}

int pspawn_server_start(struct pspawn_zygote *z, int s)
{
    return send_fanout(z, &s, 1);
}

/* Where the copies of subzygote=replicate go: node-local memory. */
static void replica_base(struct pspawn_zygote *z)
{
    const char *base = getenv("PSPAWN_REPLICA_DIR");
    struct stat st;
    if (!base || !*base)
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(z->replica_dir, sizeof z->replica_dir, "%s/pspawn-%d-%d-%lu", base,
             (int)getuid(), (int)getpid(), z->cgroup_seq);
}

/* subzygote=cgroup: a cpuset cgroup per sub-zygote's group. */
static int make_cgroups(struct pspawn_zygote *z)
{
    for (int k = 1; k < z->topo.ngroups; k++) {
        char path[PATH_MAX + 64], list[1024];
        snprintf(path, sizeof path, "%s/pspawn-%d-%lu-g%d", z->opts.cgroup, (int)getpid(),
                 z->cgroup_seq, k);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return errno;
        const struct pspawn_group *g = &z->topo.groups[k];
        const char *what[2][2] = {
            { "cpuset.cpus", cpu_list(g->cpus, PSPAWN_CPUSET_BYTES * 8, list, sizeof list) },
            { "cpuset.mems", NULL },
        };
        char mems[1024];
        what[1][1] = cpu_list(g->nodes, PSPAWN_NODEMASK_BYTES * 8, mems, sizeof mems);
        for (int i = 0; i < 2; i++) {
            char file[PATH_MAX + 96];
            snprintf(file, sizeof file, "%s/%s", path, what[i][0]);
            int fd = open(file, O_WRONLY | O_CLOEXEC);
            int ok = fd >= 0 && (!*what[i][1] || write(fd, what[i][1], strlen(what[i][1])) > 0);
            int e = errno;
            if (fd >= 0)
                close(fd);
            if (!ok)
                return e ? e : EIO;
        }
    }
    return 0;
}

int pspawn_fanout_start(struct pspawn_zygote *z)
{
    z->cgroup_seq = ++context_seq;
    /* An exec'd sub-zygote of a warm interpreter would import everything
     * again; a forked one has it all. */
    if (z->python && z->opts.subzygote != PSPAWN_SUB_FORK) {
        pspawn_debug(z, "warm Python zygote: sub-zygotes are forked, not %s",
                     pspawn_subzygote_name(z->opts.subzygote));
        z->opts.subzygote = PSPAWN_SUB_FORK;
    }
    if (z->opts.subzygote >= PSPAWN_SUB_REPLICATE)
        replica_base(z);
    if (z->opts.subzygote == PSPAWN_SUB_CGROUP) {
        int err = z->topo.thissystem ? make_cgroups(z) : EINVAL;
        if (err) {
            pspawn_debug(z, "subzygote=cgroup: no cpuset cgroup under %s (%s): copies without "
                         "cgroups", z->opts.cgroup, strerror(err));
            z->opts.subzygote = PSPAWN_SUB_REPLICATE;
        }
    }
    if (z->topo.ngroups < 2)
        return 0;
    size_t n = (size_t)z->topo.ngroups - 1;
    int *list = calloc(n, sizeof *list);
    if (!list)
        return ENOMEM;
    for (size_t i = 0; i < n; i++)
        list[i] = (int)i + 1;
    /* Lazy: the root serves its own group from now on, the others are
     * asked for at their first task. */
    int err = send_fanout(z, list, z->opts.lazy ? 0 : (int)n);
    free(list);
    if (err == ENOMEM)
        return err;
    /* Eager: wait for them all, so that a sub-zygote that cannot start is
     * known (and its group served by another) before the first task. */
    double deadline = pspawn_now_ms() + pspawn_start_timeout_ms(z);
    for (;;) {
        struct pollfd p[PSPAWN_FANOUT_MAX + 1];
        int np = 0, idx[PSPAWN_FANOUT_MAX + 1];
        for (int k = 1; k < z->topo.ngroups; k++)
            if (z->servers[k].state == SERVER_STARTING) {
                idx[np] = k;
                p[np++] = (struct pollfd){ z->servers[k].sock, POLLIN, 0 };
            }
        int left = (int)(deadline - pspawn_now_ms());
        if (np == 0)
            break;
        int r = left > 0 ? poll(p, (nfds_t)np, left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            for (int i = 0; i < np; i++)
                pspawn_server_lost(z, idx[i], SERVER_KILL, "it did not park in time");
            break;
        }
        for (int i = 0; i < np; i++)
            if (p[i].revents)
                pspawn_server_ready(z, idx[i]);
    }
    return 0;
}

static int serving(const struct zygote_server *sv)
{
    return sv->state == SERVER_READY || sv->state == SERVER_STARTING;
}

int pspawn_server_for(struct pspawn_zygote *z, const unsigned char *cpus)
{
    int g = z->topo.ngroups > 1 ? pspawn_topology_group_of(&z->topo, cpus, &z->turn) : 0;
    if (z->servers[g].state == SERVER_NONE && g > 0)
        pspawn_server_start(z, g);
    if (serving(&z->servers[g]))
        return g;
    /* Its group's zygote is lost: the nearest one that serves. */
    for (int k = 0; k < z->topo.ngroups; k++)
        if (serving(&z->servers[k]) && z->topo.groups[k].node == z->topo.groups[g].node &&
            z->topo.groups[g].node >= 0)
            return k;
    for (int k = 0; k < z->topo.ngroups; k++)
        if (serving(&z->servers[k]))
            return k;
    return -1;
}

void pspawn_fanout_cleanup(struct pspawn_zygote *z)
{
    for (int k = 1; k < z->topo.ngroups; k++) {
        char path[PATH_MAX + 64];
        if (z->replica_dir[0]) {
            snprintf(path, sizeof path, "%s-g%d", z->replica_dir, k);
            pspawn_replica_remove(path);
        }
        if (z->opts.subzygote == PSPAWN_SUB_CGROUP && z->cgroup_seq) {
            snprintf(path, sizeof path, "%s/pspawn-%d-%lu-g%d", z->opts.cgroup, (int)getpid(),
                     z->cgroup_seq, k);
            rmdir(path);
        }
    }
    for (int i = 0; i < z->ntables; i++)
        munmap(z->tables[i].map, z->tables[i].size);
    free(z->tables);
    z->tables = NULL;
    z->ntables = 0;
    free(z->servers);
    z->servers = NULL;
    pspawn_topology_free(&z->topo);
}
