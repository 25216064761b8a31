/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * numa-vm - fan-out on real NUMA nodes, inside the guest that
 * tests/vm/numa-vm.sh boots (4 nodes of 2 CPUs, QEMU -numa): hwloc sees
 * the nodes; each zygote is bound to its node's CPUs and its anonymous
 * pages are on its node (numa_maps; a forked sub-zygote's own ones, page
 * by page, from pagemap, once it has made a first task); a task bound to
 * a CPU of a node allocates from that node, with its launcher's memory
 * policy; copies of the libraries (subzygote=replicate) are in their
 * group's node's memory; subzygote=cgroup puts each sub-zygote in a
 * cpuset cgroup of its node and its tasks in the launcher's cgroup.
 *
 * Needs PSPAWN_PROXY and NUMA_TASK (tests/vm/numa-task).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { NODES = 4, CPUS = 8 };

static const char *task;

/* The CPUs of NODE as a list ("2-3"), per libnuma. */
static void node_cpus(int node, char *out, size_t size)
{
    struct bitmask *b = numa_allocate_cpumask();
    numa_node_to_cpus(node, b);
    size_t k = 0;
    out[0] = 0;
    for (unsigned c = 0; c < b->size && k < size; c++) {
        if (!numa_bitmask_isbitset(b, c))
            continue;
        unsigned e = c;
        while (e + 1 < b->size && numa_bitmask_isbitset(b, e + 1))
            e++;
        k += (size_t)snprintf(out + k, size - k, e > c ? "%s%u-%u" : "%s%u", k ? "," : "", c, e);
        c = e;
    }
    numa_free_cpumask(b);
}

static void status_field(pid_t pid, const char *field, char *out, size_t size)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    snprintf(out, size, "?");
    size_t len = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, len) && line[len] == ':') {
            snprintf(out, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
            out[strcspn(out, "\n")] = 0;
        }
    if (f)
        fclose(f);
}

/* Pages of PID's mappings (numa_maps) on NODE and in all: anonymous ones,
 * or those of files whose path holds FILE.  SHOW: print the lines with
 * pages elsewhere (all lines with NUMA_VM_VERBOSE). */
static void pages_on(pid_t pid, int node, const char *file, int show, long *on, long *all)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%ld/numa_maps", (long)pid);
    FILE *f = fopen(path, "re");
    *on = *all = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (file ? !strstr(line, file) : !strstr(line, " anon="))
            continue;
        long here = 0, there = 0;
        for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
            int n;
            long c;
            if (sscanf(p, " N%d=%ld", &n, &c) == 2)
                *(n == node ? &here : &there) += c;
        }
        *on += here;
        *all += here + there;
        if (show && (there || getenv("NUMA_VM_VERBOSE")))
            tap_diag("      %s", strtok(line, "\n"));
    }
    if (f)
        fclose(f);
}

/* PID's pagemap entry of the page at ADDR (0: none, or unreadable). */
static unsigned long long pagemap_entry(pid_t pid, unsigned long addr)
{
    char path[64];
    unsigned long long e = 0;
    snprintf(path, sizeof path, "/proc/%ld/pagemap", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, &e, sizeof e, (off_t)(addr / 4096 * sizeof e)) != sizeof e)
        e = 0;
    if (fd >= 0)
        close(fd);
    return e;
}

#define PM_PRESENT (1ULL << 63)
#define PM_FILE (1ULL << 61)        /* a file page, or shared anonymous */
#define PM_EXCLUSIVE (1ULL << 56)   /* mapped by this process only */
#define PM_PFN ((1ULL << 55) - 1)

/* A forked sub-zygote's own pages, one by one (pagemap): the anonymous
 * pages of its private mappings that it alone maps, on NODE and in all;
 * those elsewhere are shown, with what ROOT has at the same address (the
 * frame, as root, and its node). */
static void own_pages_on(pid_t pid, int node, pid_t root, long *on, long *all)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    FILE *f = fopen(path, "re");
    snprintf(path, sizeof path, "/proc/%ld/pagemap", (long)pid);
    int pm = open(path, O_RDONLY | O_CLOEXEC);
    enum { BATCH = 512 };
    unsigned long long e[BATCH];
    *on = *all = 0;
    while (f && pm >= 0 && fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perm) != 3 || perm[3] != 'p' ||
            end - start > (1UL << 32))
            continue;
        for (unsigned long at = start; at < end; at += BATCH * 4096UL) {
            size_t n = (end - at) / 4096 < BATCH ? (end - at) / 4096 : BATCH;
            if (pread(pm, e, n * sizeof e[0], (off_t)(at / 4096 * sizeof e[0])) !=
                (ssize_t)(n * sizeof e[0]))
                break;
            for (size_t i = 0; i < n; i++) {
                if ((e[i] & (PM_PRESENT | PM_FILE | PM_EXCLUSIVE)) != (PM_PRESENT | PM_EXCLUSIVE))
                    continue;
                void *a = (void *)(at + i * 4096);
                int nd = -1, rnd = -1;
                numa_move_pages(pid, 1, &a, NULL, &nd, 0);
                (*all)++;
                if (nd == node) {
                    (*on)++;
                    continue;
                }
                unsigned long long r = pagemap_entry(root, (unsigned long)a);
                if (r & PM_PRESENT)
                    numa_move_pages(root, 1, &a, NULL, &rnd, 0);
                const char *name = strrchr(line, '/') ? strrchr(line, '/') + 1
                                   : strchr(line, '[') ? strchr(line, '[') : "anonymous";
                tap_diag("      zygote %d's page %p (%.*s) on node %d, frame %llx; the root's "
                         "there: %s frame %llx on node %d", (int)pid, a, (int)strcspn(name, "\n"),
                         name, nd, e[i] & PM_PFN, !(r & PM_PRESENT) ? "none"
                         : r & PM_EXCLUSIVE ? "its own" : "shared", r & PM_PFN, rnd);
            }
        }
    }
    if (pm >= 0)
        close(pm);
    if (f)
        fclose(f);
}

/* Run one task bound to each CPU; check each allocates on its CPU's node,
 * with the caller's memory policy.  CGROUP: also that each is in ours. */
static void tasks_local(pspawn_context_t *ctx, const char *what)
{
    pspawn_task_t t[CPUS];
    cpu_set_t sets[CPUS];
    char env[CPUS][32], *envs[CPUS][2];
    char *argv[] = { (char *)task, NULL };
    char out[] = "/tmp/numa-vm.XXXXXX";
    int fd = mkstemp(out);
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_adddup2(&attr, fd, 1);
    memset(t, 0, sizeof t);
    for (int i = 0; i < CPUS; i++) {
        CPU_ZERO(&sets[i]);
        CPU_SET(i, &sets[i]);
        snprintf(env[i], sizeof env[i], "PSPAWN_RANK=%d", i);
        envs[i][0] = env[i];
        envs[i][1] = NULL;
        t[i] = (pspawn_task_t){ .argv = argv, .envp = envs[i], .cpuset = &sets[i],
                                .cpusetsize = sizeof sets[i] };
    }
    int rc = pspawn_vector(ctx, t, CPUS, &attr, NULL), ok = 0, exited = 0;
    for (int i = 0; i < CPUS; i++) {
        int st;
        exited += t[i].pid > 0 && waitpid(t[i].pid, &st, 0) == t[i].pid && WIFEXITED(st) &&
                  !WEXITSTATUS(st);
    }
    pspawn_attr_destroy(&attr);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        int r, cpu, cn, mn, pol;
        if (sscanf(line, "%d cpu %d cpunode %d memnode %d policy %d", &r, &cpu, &cn, &mn, &pol) == 5 &&
            r >= 0 && r < CPUS && cpu == r && cn == r / 2 && mn == cn && pol == 0)
            ok++;
        else
            tap_diag("    %s", line);
    }
    fclose(f);
    unlink(out);
    tap_ok(rc == 0 && exited == CPUS && ok == CPUS,
           "%s: a task bound to a CPU of node n allocates from node n, with our memory policy "
           "(%d of %d)", what, ok, CPUS);
}

/* One task bound to each CPU in FIRST..LAST step 2 (a CPU of each of
 * those nodes), output dropped; returns how many exited 0. */
static int one_per_node(pspawn_context_t *ctx, int first, int last)
{
    pspawn_task_t t[NODES];
    cpu_set_t sets[NODES];
    char *argv[] = { (char *)task, NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC), n = 0, ok = 0;
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_adddup2(&attr, null, 1);
    memset(t, 0, sizeof t);
    for (int cpu = first; cpu <= last && n < NODES; cpu += 2, n++) {
        CPU_ZERO(&sets[n]);
        CPU_SET(cpu, &sets[n]);
        t[n] = (pspawn_task_t){ .argv = argv, .cpuset = &sets[n], .cpusetsize = sizeof sets[n] };
    }
    pspawn_vector(ctx, t, (size_t)n, &attr, NULL);
    for (int i = 0; i < n; i++) {
        int st;
        ok += t[i].pid > 0 && waitpid(t[i].pid, &st, 0) == t[i].pid && WIFEXITED(st) &&
              !WEXITSTATUS(st);
    }
    pspawn_attr_destroy(&attr);
    close(null);
    return ok;
}

static void variant(const char *sub)
{
    char options[256], what[64];
    snprintf(options, sizeof options, "fanout=numa,subzygote=%s", sub);
    snprintf(what, sizeof what, "subzygote=%s", sub);
    pspawn_context_t ctx;
    int rc = pspawn_context_create_opts(&ctx, task, NULL, options);
    if (rc)
        tap_bail("%s: %s", options, strerror(rc));
    /* A forked sub-zygote's own pages: those it wrote (allocated on its
     * node), and those its root wrote after the fork (the root took a
     * copy, the sub kept the original, on the root's node), which it
     * moves to its node before its first task.  So each serves a task
     * first, the root before the others: later, the root writes no page
     * it has not written since the fork. */
    if (!strcmp(sub, "fork") && (one_per_node(&ctx, 0, 0) != 1 || one_per_node(&ctx, 2, 6) != 3))
        tap_diag("    a first task per zygote failed");
    pspawn_zygote_info_t z[8];
    size_t n = pspawn_context_zygotes(&ctx, z, 8);
    int nodes = 0, bound = 0, anon = 0;
    for (size_t k = 0; k < n; k++) {
        char want[64], got[64];
        node_cpus((int)k, want, sizeof want);
        status_field(z[k].pid, "Cpus_allowed_list", got, sizeof got);
        nodes += z[k].node == (int)k;
        bound += !strcmp(want, got);
        if (strcmp(want, got))
            tap_diag("    zygote %zu: CPUs %s, node %d's are %s", k, got, (int)k, want);
        long on, all;
        int forked = !strcmp(sub, "fork") && k > 0;
        if (forked)
            own_pages_on(z[k].pid, (int)k, z[0].pid, &on, &all);
        else
            pages_on(z[k].pid, (int)k, NULL, 1, &on, &all);
        /* A forked sub-zygote owns few pages (those it shares with its
         * root stay where the root has them), and every one of them is on
         * its node: it allocated them there, or moved them there (when
         * it became its group, and before its first task). */
        anon += forked ? all > 0 && on == all : on * 10 >= all * 9;
        tap_diag("    zygote %zu (pid %d): %ld of %ld %sanonymous pages on node %zu", k,
                 (int)z[k].pid, on, all, forked ? "own " : "", k);
    }
    tap_ok(n == NODES && nodes == NODES, "%s: %s: a zygote per NUMA node (%zu)", what,
           pspawn_context_topology(&ctx), n);
    tap_ok(bound == NODES, "%s: each zygote is bound to its node's CPUs", what);
    tap_ok(anon == NODES, "%s: each zygote's %sanonymous pages are on its node (%s)", what,
           strcmp(sub, "fork") ? "" : "own ", strcmp(sub, "fork") ? "numa_maps" : "pagemap");
    if (!strcmp(sub, "replicate")) {
        int local = 0;
        for (size_t k = 1; k < n; k++) {
            long on, all;
            char copy[32];
            snprintf(copy, sizeof copy, "-g%zu/libc.so", k);
            pages_on(z[k].pid, (int)k, copy, 1, &on, &all);
            local += all > 0 && on == all;
            tap_diag("    sub-zygote %zu: %ld of %ld pages of its libc copy on node %zu", k, on, all, k);
        }
        tap_ok(local == NODES - 1, "subzygote=replicate: each sub-zygote's copy of libc is in its "
               "node's memory");
    }
    tasks_local(&ctx, what);
    pspawn_context_destroy(&ctx);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

int main(void)
{
    task = getenv("NUMA_TASK");
    if (!task || numa_available() < 0)
        tap_bail("needs NUMA_TASK and a NUMA kernel");
    tap_ok(numa_num_configured_nodes() == NODES && numa_num_configured_cpus() == CPUS,
           "the guest has %d NUMA nodes and %d CPUs (%d, %d)", NODES, CPUS,
           numa_num_configured_nodes(), numa_num_configured_cpus());
    /* NUMA_VM_REPEAT=N (numa-vm.sh passes it on): the fork variant N
     * times more, to hunt what only timing shows. */
    const char *repeat = getenv("NUMA_VM_REPEAT");
    for (int i = repeat ? atoi(repeat) : 0; i > 0; i--)
        variant("fork");
    variant("exec");
    variant("fork");
    variant("replicate");

    /* subzygote=cgroup: a cpuset cgroup per sub-zygote (cgroup v2, mounted
     * by the guest's init with the cpuset controller for children). */
    const char *dir = "/sys/fs/cgroup/pspawn-vm";
    mkdir(dir, 0755);
    if (write_file("/sys/fs/cgroup/cgroup.subtree_control", "+cpuset") < 0 ||
        write_file("/sys/fs/cgroup/pspawn-vm/cgroup.subtree_control", "+cpuset") < 0)
        tap_bail("cannot enable the cpuset controller: %s", strerror(errno));
    pspawn_context_t ctx;
    int rc = pspawn_context_create_opts(&ctx, task, NULL,
                                        "fanout=numa,subzygote=cgroup,cgroup=/sys/fs/cgroup/pspawn-vm");
    if (rc)
        tap_bail("subzygote=cgroup: %s", strerror(rc));
    pspawn_zygote_info_t z[8];
    size_t n = pspawn_context_zygotes(&ctx, z, 8);
    int placed = 0;
    for (size_t k = 1; k < n; k++) {
        char path[128], line[256] = "", mems[64] = "", want[32];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)z[k].pid);
        FILE *f = fopen(path, "re");
        if (f && !fgets(line, sizeof line, f))
            line[0] = 0;
        if (f)
            fclose(f);
        line[strcspn(line, "\n")] = 0;
        const char *cg = strchr(line, '/');
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.mems.effective", cg ? cg : "/?");
        f = fopen(path, "re");
        if (f && !fgets(mems, sizeof mems, f))
            mems[0] = 0;
        if (f)
            fclose(f);
        mems[strcspn(mems, "\n")] = 0;
        snprintf(want, sizeof want, "%zu", k);
        char suffix[32];
        snprintf(suffix, sizeof suffix, "-g%zu", k);
        placed += cg && strstr(cg, "/pspawn-vm/pspawn-") && strstr(cg, suffix) && !strcmp(mems, want);
        tap_diag("    sub-zygote %zu: %s, cpuset.mems %s", k, line, mems);
    }
    tap_ok(n == NODES && placed == NODES - 1,
           "subzygote=cgroup: each sub-zygote in a cpuset cgroup of its own node");
    tasks_local(&ctx, "subzygote=cgroup");
    /* The tasks themselves are made in our cgroup: one that lives a while. */
    pid_t pid;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(7, &set);
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_setcpuset(&attr, sizeof set, &set);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);    /* not our TAP */
    pspawn_attr_adddup2(&attr, null, 1);
    char *targv[] = { (char *)task, NULL };
    char mine[256] = "", its[256] = "", path[64];
    rc = pspawn_ex(&pid, &ctx, &attr, targv, NULL);
    pspawn_attr_destroy(&attr);
    close(null);
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "re"), *g = fopen("/proc/self/cgroup", "re");
    if (f && !fgets(its, sizeof its, f))
        its[0] = 0;
    if (g && !fgets(mine, sizeof mine, g))
        mine[0] = 0;
    if (f)
        fclose(f);
    if (g)
        fclose(g);
    its[strcspn(its, "\n")] = 0;
    mine[strcspn(mine, "\n")] = 0;
    int st;
    waitpid(pid, &st, 0);
    tap_ok(rc == 0 && its[0] && !strcmp(its, mine),
           "subzygote=cgroup: a task of node 3's sub-zygote is in our cgroup, not its (%.60s)", its);
    pspawn_context_destroy(&ctx);
    int left = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        left += !strncmp(e->d_name, "pspawn-", 7);
    if (d)
        closedir(d);
    tap_ok(left == 0, "subzygote=cgroup: the cgroups are removed with the context (%d left)", left);
    return tap_done();
}
