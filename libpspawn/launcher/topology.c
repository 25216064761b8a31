/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which CPUs each fork-serving process (the root zygote and its
 * sub-zygotes) serves, from hwloc: the topology restricted to the CPUs the
 * launcher may use (its cgroup's cpuset, which hwloc applies, and its own
 * binding), split as the fanout option asks.  HWLOC_XMLFILE and
 * HWLOC_SYNTHETIC give any topology to test with; such a topology is not
 * this machine's, so its masks are used for dispatch only, never applied.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "groups.h"
#include "internal.h"

#if defined(HAVE_HWLOC) && !defined(PSPAWN_TOPOLOGY_HELPER)
#include <hwloc.h>
#include <hwloc/glibc-sched.h>

_Static_assert(sizeof(cpu_set_t) == PSPAWN_CPUSET_BYTES, "the wire's CPU masks are cpu_set_t");

/* SET as the wire's CPU mask: a cpu_set_t, as sched_setaffinity takes. */
static void cpus_out(hwloc_topology_t topo, hwloc_const_cpuset_t set, unsigned char *out)
{
    cpu_set_t cs;
    hwloc_cpuset_to_glibc_sched_affinity(topo, set, &cs, sizeof cs);
    memcpy(out, &cs, sizeof cs);
}

/* SET as bytes, bit I in byte I / 8: the wire's NUMA node masks. */
static void to_bytes(hwloc_const_bitmap_t set, unsigned char *out, size_t bytes)
{
    memset(out, 0, bytes);
    int i;
    hwloc_bitmap_foreach_begin(i, set) {
        if ((size_t)i < bytes * 8)
            out[i / 8] |= (unsigned char)(1u << (i % 8));
    }
    hwloc_bitmap_foreach_end();
}

/* Split DOMAIN's cores into groups of about PER cores (0: one group per
 * core, as many groups as cores when PER is 1); append them to T. */
static int split_cores(hwloc_topology_t topo, hwloc_const_cpuset_t domain, int per,
                       struct pspawn_topology *t, int cap)
{
    int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, domain, HWLOC_OBJ_CORE);
    if (ncores <= 0)
        return 0;
    int ng = (ncores + per - 1) / per;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return -1;
    for (int g = 0; g < ng && t->ngroups < cap; g++) {
        hwloc_bitmap_zero(set);
        /* Balanced: core i goes to group i * ng / ncores. */
        for (int i = 0; i < ncores; i++)
            if (i * ng / ncores == g) {
                hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, domain,
                                                                       HWLOC_OBJ_CORE, i);
                if (core)
                    hwloc_bitmap_or(set, set, core->cpuset);
            }
        hwloc_bitmap_and(set, set, domain);
        if (!hwloc_bitmap_iszero(set))
            cpus_out(topo, set, t->groups[t->ngroups++].cpus);
    }
    hwloc_bitmap_free(set);
    return 0;
}

/* One group per object of TYPE (its CPUs that we may use).  0 groups if
 * the topology has no such object. */
static void groups_by_type(hwloc_topology_t topo, hwloc_obj_type_t type, struct pspawn_topology *t,
                           int cap)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    for (int i = 0; i < n && t->ngroups < cap; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, i);
        if (o && o->cpuset && !hwloc_bitmap_iszero(o->cpuset))
            cpus_out(topo, o->cpuset, t->groups[t->ngroups++].cpus);
    }
}

/* Groups of PER cores, never across a NUMA node or an L3 cache. */
static int groups_of_cores(hwloc_topology_t topo, int per, struct pspawn_topology *t, int cap)
{
    int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    int nl3 = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L3CACHE);
    hwloc_bitmap_t dom = hwloc_bitmap_alloc(), done = hwloc_bitmap_alloc();
    int err = dom && done ? 0 : -1;
    for (int n = 0; !err && n < (nnodes > 0 ? nnodes : 1); n++) {
        hwloc_obj_t node = nnodes > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n) : NULL;
        hwloc_const_cpuset_t ncs = node ? node->cpuset : hwloc_topology_get_topology_cpuset(topo);
        if (!ncs || hwloc_bitmap_iszero(ncs))
            continue;   /* a memory-only node */
        for (int c = 0; !err && c < nl3; c++) {
            hwloc_obj_t l3 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L3CACHE, c);
            hwloc_bitmap_and(dom, l3->cpuset, ncs);
            hwloc_bitmap_andnot(dom, dom, done);
            if (hwloc_bitmap_iszero(dom))
                continue;
            hwloc_bitmap_or(done, done, dom);
            err = split_cores(topo, dom, per, t, cap);
        }
        /* CPUs of the node under no L3 (or a topology without L3). */
        hwloc_bitmap_andnot(dom, ncs, done);
        if (!err && !hwloc_bitmap_iszero(dom)) {
            hwloc_bitmap_or(done, done, dom);
            err = split_cores(topo, dom, per, t, cap);
        }
    }
    hwloc_bitmap_free(dom);
    hwloc_bitmap_free(done);
    return err;
}

/* Each group's NUMA nodes, and who forks its sub-zygote: the root forks
 * the first group of every other NUMA node, which forks the rest of its
 * node, so that a node's sub-zygotes come up in parallel and take their
 * kernel structures from their own node. */
static void place_groups(hwloc_topology_t topo, struct pspawn_topology *t)
{
    hwloc_bitmap_t cs = hwloc_bitmap_alloc(), ns = hwloc_bitmap_alloc();
    for (int g = 0; cs && ns && g < t->ngroups; g++) {
        struct pspawn_group *gr = &t->groups[g];
        cpu_set_t set;
        memcpy(&set, gr->cpus, sizeof set);
        hwloc_cpuset_from_glibc_sched_affinity(topo, cs, &set, sizeof set);
        gr->ncpus = hwloc_bitmap_weight(cs);
        hwloc_cpuset_to_nodeset(topo, cs, ns);
        to_bytes(ns, gr->nodes, PSPAWN_NODEMASK_BYTES);
        /* With one node there is no memory to place. */
        gr->node = hwloc_bitmap_weight(ns) == 1 &&
                   hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1 ? hwloc_bitmap_first(ns) : -1;
        gr->parent = -1;
        if (g == 0)
            continue;
        gr->parent = 0;
        for (int h = 1; h < g; h++)
            if (t->groups[h].node == gr->node && gr->node >= 0 && gr->node != t->groups[0].node) {
                gr->parent = h;
                break;
            }
    }
    hwloc_bitmap_free(cs);
    hwloc_bitmap_free(ns);
}

int pspawn_topology_groups(const struct pspawn_options *o, int whole, struct pspawn_topology *t)
{
    memset(t, 0, sizeof *t);
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) < 0 || hwloc_topology_load(topo) < 0) {
        snprintf(t->describe, sizeof t->describe, "hwloc could not load the topology");
        return errno ? errno : EIO;
    }
    t->thissystem = hwloc_topology_is_thissystem(topo);
    /* The CPUs we may use: hwloc already left out those of other cgroups;
     * our own binding is known on this machine only. */
    hwloc_bitmap_t use = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
    if (use && t->thissystem && !whole) {
        hwloc_bitmap_t bound = hwloc_bitmap_alloc();
        if (bound && hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0)
            hwloc_bitmap_and(use, use, bound);
        hwloc_bitmap_free(bound);
    }
    if (!use || hwloc_bitmap_iszero(use) ||
        hwloc_topology_restrict(topo, use, HWLOC_RESTRICT_FLAG_REMOVE_CPULESS) < 0) {
        hwloc_bitmap_free(use);
        hwloc_topology_destroy(topo);
        snprintf(t->describe, sizeof t->describe, "no CPU left to use in the topology");
        return EINVAL;
    }
    int cap = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU) + 1;
    t->groups = calloc((size_t)cap, sizeof *t->groups);
    int err = t->groups ? 0 : ENOMEM;
    const char *how = "";
    switch (err ? -1 : o->fanout) {
    case PSPAWN_FANOUT_NONE:
        cpus_out(topo, use, t->groups[t->ngroups++].cpus);
        how = "one zygote";
        break;
    case PSPAWN_FANOUT_NUMA:
        groups_by_type(topo, HWLOC_OBJ_NUMANODE, t, cap);
        how = "a sub-zygote per NUMA node";
        break;
    case PSPAWN_FANOUT_L3:
        groups_by_type(topo, HWLOC_OBJ_L3CACHE, t, cap);
        how = "a sub-zygote per L3 cache";
        if (t->ngroups == 0) {
            groups_by_type(topo, HWLOC_OBJ_NUMANODE, t, cap);
            how = "no L3 cache in the topology: a sub-zygote per NUMA node";
        }
        break;
    case PSPAWN_FANOUT_PACKAGE:
        groups_by_type(topo, HWLOC_OBJ_PACKAGE, t, cap);
        how = "a sub-zygote per package";
        break;
    case PSPAWN_FANOUT_CORE:
        groups_by_type(topo, HWLOC_OBJ_CORE, t, cap);
        how = "a sub-zygote per core";
        break;
    case PSPAWN_FANOUT_CORES:
        err = groups_of_cores(topo, o->cores_per_group, t, cap) ? ENOMEM : 0;
        how = "sub-zygotes of N cores in each NUMA node and L3 cache";
        break;
    case PSPAWN_FANOUT_AUTO:
        err = groups_of_cores(topo, PSPAWN_DEFAULT_GROUP_CORES, t, cap) ? ENOMEM : 0;
        how = "auto: groups of a few cores in each NUMA node and L3 cache";
        break;
    }
    if (!err && t->ngroups == 0)
        cpus_out(topo, use, t->groups[t->ngroups++].cpus);
    if (!err)
        place_groups(topo, t);
    if (!err) {
        int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        snprintf(t->describe, sizeof t->describe, "%d group%s of CPUs on %d CPU%s, %d NUMA "
                 "node%s (%s)%s", t->ngroups, t->ngroups == 1 ? "" : "s",
                 hwloc_bitmap_weight(use), hwloc_bitmap_weight(use) == 1 ? "" : "s", nnodes,
                 nnodes == 1 ? "" : "s", how,
                 t->thissystem ? "" : "; not this machine's topology: nothing is bound");
    }
    hwloc_bitmap_free(use);
    hwloc_topology_destroy(topo);
    if (err)
        pspawn_topology_free(t);
    return err;
}

#else /* no hwloc here: the static stand-in shim, or a build without it */

static int one_group(const struct pspawn_options *o, struct pspawn_topology *t)
{
    memset(t, 0, sizeof *t);
    t->groups = calloc(1, sizeof *t->groups);
    if (!t->groups)
        return ENOMEM;
    cpu_set_t cs;
    if (sched_getaffinity(0, sizeof cs, &cs) == 0)
        memcpy(t->groups[0].cpus, &cs, PSPAWN_CPUSET_BYTES);
    t->groups[0].ncpus = CPU_COUNT(&cs);
    t->groups[0].node = -1;
    t->groups[0].parent = -1;
    t->ngroups = 1;
    t->thissystem = 1;
    snprintf(t->describe, sizeof t->describe, "one zygote: libpspawn was built without hwloc%s",
             o->fanout == PSPAWN_FANOUT_NONE || o->fanout == PSPAWN_FANOUT_AUTO
                 ? "" : " (fanout needs it)");
    return 0;
}

#ifdef PSPAWN_TOPOLOGY_HELPER
/* The shim is static, and hwloc's static library needs more than a task's
 * node may have: it asks the topology of pspawn-topology, which is
 * dynamic (libexec), and reads back what pspawn_topology_write wrote. */
int pspawn_topology_groups(const struct pspawn_options *o, int whole, struct pspawn_topology *t)
{
    char text[sizeof o->cgroup + sizeof o->modules + sizeof o->preload + 128];
    if (pspawn_options_format(o, text, sizeof text) < 0)
        return one_group(o, t);
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        return one_group(o, t);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* PSPAWN_TOPOLOGY: another helper (the one of a build tree). */
    const char *helper = getenv("PSPAWN_TOPOLOGY");
    if (!helper || !*helper)
        helper = PSPAWN_TOPOLOGY_HELPER;
    char *argv[] = { (char *)helper, (char *)(whole ? "--whole" : "--bound"), text, NULL };
    pid_t pid;
    /* Our environment, without what is preloaded into our programs (an
     * interception scope's library, a profiler): the helper needs none
     * of it, and the scope must not count it as one of its launchers. */
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    for (size_t i = 0, k = 0; env && i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    int err = env ? posix_spawn(&pid, helper, &fa, NULL, argv, env) : ENOMEM;
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = err ? NULL : malloc(cap);
    /* The stand-in that asks holds the step's .lock meanwhile: a helper
     * that hangs (hwloc on a broken /sys) must not hang the step.  Twice
     * PSPAWN_TIMEOUT (20 s by default) is plenty for a large machine. */
    const char *tmo = getenv("PSPAWN_TIMEOUT");
    int limit_ms = 10000;
    if (tmo && *tmo && pspawn_timeout_parse(tmo, &limit_ms))
        limit_ms = 10000;
    limit_ms *= 2;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int timed_out = 0;
    while (buf && len + 1 < cap) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = limit_ms - ((now.tv_sec - start.tv_sec) * 1000L +
                                          (now.tv_nsec - start.tv_nsec) / 1000000L);
        struct pollfd p = { out[0], POLLIN, 0 };
        int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (pr == 0) {
            timed_out = 1;
            break;
        }
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        ssize_t n = read(out[0], buf + len, cap - len - 1);
        if (n > 0)
            len += (size_t)n;
        else if (n == 0 || errno != EINTR)
            break;
    }
    close(out[0]);
    if (!err) {
        if (timed_out)
            kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (!buf || timed_out) {
        free(buf);
        return one_group(o, t);
    }
    buf[len] = 0;
    err = pspawn_topology_read(buf, t);
    free(buf);
    return err ? one_group(o, t) : 0;
}
#else
int pspawn_topology_groups(const struct pspawn_options *o, int whole, struct pspawn_topology *t)
{
    (void)whole;
    return one_group(o, t);
}
#endif

#endif

static void put_hex(FILE *f, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
}

static int get_hex(const char *s, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        b[i] = (unsigned char)v;
    }
    return 0;
}

void pspawn_topology_write(const struct pspawn_topology *t, FILE *f)
{
    fprintf(f, "groups %d thissystem %d\n", t->ngroups, t->thissystem);
    for (int g = 0; g < t->ngroups; g++) {
        const struct pspawn_group *gr = &t->groups[g];
        fprintf(f, "group %d %d %d ", gr->parent, gr->node, gr->ncpus);
        put_hex(f, gr->cpus, sizeof gr->cpus);
        fputc(' ', f);
        put_hex(f, gr->nodes, sizeof gr->nodes);
        fputc('\n', f);
    }
    fprintf(f, "describe %s\n", t->describe);
}

int pspawn_topology_read(const char *text, struct pspawn_topology *t)
{
    memset(t, 0, sizeof *t);
    int n, pos = 0;
    if (sscanf(text, "groups %d thissystem %d\n%n", &n, &t->thissystem, &pos) != 2 || n < 1 ||
        n > PSPAWN_FANOUT_MAX + 1 || !(t->groups = calloc((size_t)n, sizeof *t->groups)))
        return EINVAL;
    const char *p = text + pos;
    for (int g = 0; g < n; g++, t->ngroups++) {
        struct pspawn_group *gr = &t->groups[g];
        int at = 0;
        if (sscanf(p, "group %d %d %d %n", &gr->parent, &gr->node, &gr->ncpus, &at) != 3 ||
            get_hex(p + at, gr->cpus, sizeof gr->cpus) ||
            get_hex(p + at + 2 * sizeof gr->cpus + 1, gr->nodes, sizeof gr->nodes)) {
            pspawn_topology_free(t);
            return EINVAL;
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : "";
    }
    if (strncmp(p, "describe ", 9) == 0)
        snprintf(t->describe, sizeof t->describe, "%.*s", (int)strcspn(p + 9, "\n"), p + 9);
    return 0;
}

void pspawn_topology_free(struct pspawn_topology *t)
{
    free(t->groups);
    t->groups = NULL;
    t->ngroups = 0;
}

int pspawn_topology_group_of(const struct pspawn_topology *t, const unsigned char *cpus,
                             unsigned *turn)
{
    return pspawn_pick_group(cpus, t->groups[0].cpus, sizeof t->groups[0], t->ngroups, turn);
}
