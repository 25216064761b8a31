/*
 * numa-vm - fan-out on real NUMA nodes, inside the guest that
 * tests/vm/numa-vm.sh boots (4 nodes of 2 CPUs, QEMU -numa): hwloc sees
 * the nodes; each zygote is bound to its node's CPUs and its anonymous
 * pages are on its node (numa_maps); a task bound to a CPU of a node
 * allocates from that node, with its launcher's memory policy; copies of
 * the libraries (subzygote=replicate) are in their group's node's memory;
 * subzygote=cgroup puts each sub-zygote in a cpuset cgroup of its node and
 * its tasks in the launcher's cgroup.
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
#include "tap.h"

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

/* Pages of PID's mappings (numa_maps) on its node and in all: anonymous
 * ones (ONLY_OWN: not mapped by another process too), or those of files
 * whose path holds FILE. */
static void pages_on(pid_t pid, int node, const char *file, int only_own, long *on, long *all)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%ld/numa_maps", (long)pid);
    FILE *f = fopen(path, "re");
    *on = *all = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (file ? !strstr(line, file) : (!strstr(line, " anon=") || (only_own && strstr(line, "mapmax="))))
            continue;
        for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
            int n;
            long c;
            if (sscanf(p, " N%d=%ld", &n, &c) == 2) {
                *all += c;
                if (n == node)
                    *on += c;
            }
        }
    }
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

static void variant(const char *sub)
{
    char options[256], what[64];
    snprintf(options, sizeof options, "fanout=numa,subzygote=%s", sub);
    snprintf(what, sizeof what, "subzygote=%s", sub);
    pspawn_context_t ctx;
    int rc = pspawn_context_create_opts(&ctx, task, NULL, options);
    if (rc)
        tap_bail("%s: %s", options, strerror(rc));
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
        pages_on(z[k].pid, (int)k, NULL, !strcmp(sub, "fork"), &on, &all);
        /* A forked sub-zygote owns few pages: those it shares with its
         * root stay where the root has them. */
        anon += all == 0 ? !strcmp(sub, "fork") : on * 10 >= all * 9;
        tap_diag("    zygote %zu (pid %d): %ld of %ld %sanonymous pages on node %zu", k,
                 (int)z[k].pid, on, all, strcmp(sub, "fork") ? "" : "own ", k);
    }
    tap_ok(n == NODES && nodes == NODES, "%s: %s: a zygote per NUMA node (%zu)", what,
           pspawn_context_topology(&ctx), n);
    tap_ok(bound == NODES, "%s: each zygote is bound to its node's CPUs", what);
    tap_ok(anon == NODES, "%s: each zygote's %sanonymous pages are on its node (numa_maps)", what,
           strcmp(sub, "fork") ? "" : "own ");
    if (!strcmp(sub, "replicate")) {
        int local = 0;
        for (size_t k = 1; k < n; k++) {
            long on, all;
            char copy[32];
            snprintf(copy, sizeof copy, "-g%zu/libc.so", k);
            pages_on(z[k].pid, (int)k, copy, 0, &on, &all);
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
