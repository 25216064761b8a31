/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fanout - sub-zygotes for real, on this machine (fanout=core: one zygote
 * per CPU) and on a fake topology of 8 NUMA nodes: the zygotes and the
 * tasks are the caller's children; a task goes to the zygote of its
 * binding, runs with its binding from main on, and unbound tasks are
 * spread; every kind of sub-zygote (fork, exec, replicate); start=lazy; a
 * sub-zygote that fails to start loses and doubles no task; destroy leaves
 * no process and no copy behind.  (Killed mid-batch: tests/integration/zygote-kill.)
 *
 * Uses $TESTS_BUILDDIR/task and $TESTS_BUILDDIR/once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fixtures/procs.h"
#include "pspawn.h"
#include "../fixtures/tap.h"

enum { MAXT = 256 };

static char task[PATH_MAX], once[PATH_MAX], dir[] = "/tmp/pspawn-fanout.XXXXXX", file[128];
static const int both[] = { 0, 1 };    /* task i bound to CPU i % 2 */

/* PID's Cpus_allowed_list. */
static void cpus_allowed(pid_t pid, char *out, size_t size)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    snprintf(out, size, "?");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Cpus_allowed_list: %63s", out) == 1)
            break;
    if (f)
        fclose(f);
}

static size_t zygotes(pspawn_context_t *ctx, pspawn_zygote_info_t *z)
{
    return pspawn_context_zygotes(ctx, z, 16);
}

/* Launch N tasks of PROG (mode ARGS) through CTX, task i bound to CPU
 * BIND[i % NBIND] (NBIND 0: unbound, or ALL when given); wait for all;
 * returns how many exited 0.  Task i gets PSPAWN_RANK=i. */
static int run(pspawn_context_t *ctx, const char *prog, const char *mode, int n, const int *bind,
               int nbind, const cpu_set_t *all, pid_t *pids)
{
    static pspawn_task_t t[MAXT];
    static char env[MAXT][32];
    static char *envs[MAXT][2];
    static cpu_set_t sets[MAXT];
    char *argv[] = { (char *)prog, (char *)mode, file, NULL };
    if (!mode)
        argv[1] = file, argv[2] = NULL;
    memset(t, 0, sizeof t);
    for (int i = 0; i < n; i++) {
        snprintf(env[i], sizeof env[i], "PSPAWN_RANK=%d", i);
        envs[i][0] = env[i];
        envs[i][1] = NULL;
        t[i].argv = argv;
        t[i].envp = envs[i];
        if (nbind) {
            CPU_ZERO(&sets[i]);
            CPU_SET(bind[i % nbind], &sets[i]);
            t[i].cpuset = &sets[i];
            t[i].cpusetsize = sizeof sets[i];
        } else if (all) {
            t[i].cpuset = all;
            t[i].cpusetsize = sizeof *all;
        }
    }
    int rc = pspawn_vector(ctx, t, (size_t)n, NULL, NULL);
    if (rc)
        tap_diag("    pspawn_vector: %s", strerror(rc));
    int good = 0;
    for (int i = 0; i < n; i++) {
        int st;
        pids[i] = t[i].pid;
        if (t[i].pid > 0 && waitpid(t[i].pid, &st, 0) == t[i].pid && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0)
            good++;
    }
    return good;
}

/* Each rank's line of the file: its pid, parent and CPU mask. */
struct where {
    long pid, ppid;
    unsigned long cpus;
    int seen;
};

static int read_where(struct where *w, int n)
{
    memset(w, 0, (size_t)n * sizeof *w);
    FILE *f = fopen(file, "re");
    char line[128];
    int bad = 0;
    while (f && fgets(line, sizeof line, f)) {
        int r;
        long pid, ppid;
        unsigned long cpus;
        if (sscanf(line, "%d %ld %ld %lx", &r, &pid, &ppid, &cpus) != 4 || r < 0 || r >= n ||
            w[r].seen++) {
            bad++;
            continue;
        }
        w[r].pid = pid;
        w[r].ppid = ppid;
        w[r].cpus = cpus;
    }
    if (f)
        fclose(f);
    for (int r = 0; r < n; r++)
        bad += !w[r].seen;
    unlink(file);
    return bad;
}

/* Any file or directory under /dev/shm and /tmp named pspawn-UID-PID-*:
 * copies of this process's contexts. */
static int replicas_left(void)
{
    char prefix[64];
    int n = 0;
    snprintf(prefix, sizeof prefix, "pspawn-%d-%d-", (int)getuid(), (int)getpid());
    const char *dirs[] = { "/dev/shm", "/tmp" };
    for (int i = 0; i < 2; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        while (d && (e = readdir(d)))
            n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
        if (d)
            closedir(d);
    }
    return n;
}

static void variant(const char *sub)
{
    char options[128], what[64];
    pspawn_context_t ctx;
    pspawn_zygote_info_t z[16];
    pid_t pids[MAXT];
    struct where w[MAXT];
    snprintf(options, sizeof options, "fanout=core,subzygote=%s", sub);
    snprintf(what, sizeof what, "subzygote=%s", sub);
    int rc = pspawn_context_create_opts(&ctx, task, NULL, options);
    if (rc)
        tap_bail("%s: %s", options, strerror(rc));
    size_t n = zygotes(&ctx, z);
    char a0[64], a1[64];
    cpus_allowed(z[0].pid, a0, sizeof a0);
    cpus_allowed(n > 1 ? z[1].pid : 0, a1, sizeof a1);
    tap_ok(n == 2 && z[0].pid > 0 && z[1].pid > 0 && z[0].pid == pspawn_context_zygote_pid(&ctx) &&
           !strcmp(z[0].state, "serving") && !strcmp(z[1].state, "serving"),
           "%s: a root zygote and a sub-zygote serving (%zu zygotes)", what, n);
    tap_ok(parent_of(z[0].pid) == getpid() && parent_of(z[1].pid) == getpid() &&
           pspawn_context_owns(&ctx, z[0].pid) && pspawn_context_owns(&ctx, z[1].pid) &&
           !pspawn_context_owns(&ctx, getpid()),
           "%s: both zygotes are our children, and the context owns them", what);
    tap_ok(!strcmp(a0, "0") && !strcmp(a1, "1"),
           "%s: each zygote is bound to its group's CPU (root %s, sub-zygote %s)", what, a0, a1);

    int good = run(&ctx, task, "where", 40, both, 2, NULL, pids);
    int bad = read_where(w, 40), wrong = 0;
    for (int i = 0; i < 40; i++)
        wrong += w[i].ppid != getpid() || w[i].cpus != (i % 2 ? 2ul : 1ul) || w[i].pid != pids[i];
    zygotes(&ctx, z);
    tap_ok(good == 40 && !bad && !wrong, "%s: 40 bound tasks ran once each, our children, bound "
           "from main on (%d exit 0, %d missing or twice, %d wrong)", what, good, bad, wrong);
    tap_ok(z[0].tasks == 20 && z[1].tasks == 20,
           "%s: tasks bound to CPU 0 came from the root, to CPU 1 from the sub-zygote (%lu, %lu)",
           what, z[0].tasks, z[1].tasks);

    good = run(&ctx, task, "where", 40, NULL, 0, NULL, pids);
    bad = read_where(w, 40);
    zygotes(&ctx, z);
    wrong = 0;
    for (int i = 0; i < 40; i++)
        wrong += w[i].ppid != getpid() || w[i].cpus != 3ul;
    tap_ok(good == 40 && !bad && !wrong && z[0].tasks == 40 && z[1].tasks == 40,
           "%s: 40 unbound tasks, with our CPUs, spread 20 and 20 (%lu, %lu; %d wrong)", what,
           z[0].tasks - 20, z[1].tasks - 20, wrong);

    if (!strcmp(sub, "replicate")) {
        /* The sub-zygote runs on its own copies of the libraries. */
        char maps[64], line[1024];
        int copies = 0;
        snprintf(maps, sizeof maps, "/proc/%ld/maps", (long)z[1].pid);
        FILE *f = fopen(maps, "re");
        while (f && fgets(line, sizeof line, f))
            copies += strstr(line, "/pspawn-") && strstr(line, "-g1/libc.so") != NULL;
        if (f)
            fclose(f);
        tap_ok(copies > 0, "subzygote=replicate: the sub-zygote maps libc from its group's copy");
    }
    pspawn_context_destroy(&ctx);
    tap_ok(no_child_left() && replicas_left() == 0,
           "%s: no process and no copy left after destroy", what);
}

/* A fake topology of 8 NUMA nodes: 8 zygotes (nothing bound: not this
 * machine's); tasks with all its CPUs are spread over them all. */
static void case_fake_numa_nodes(void)
{
    pspawn_context_t ctx;
    pspawn_zygote_info_t z[16];
    pid_t pids[MAXT];
    setenv("HWLOC_SYNTHETIC", "node:8 core:1 pu:1", 1);
    int rc = pspawn_context_create_opts(&ctx, task, NULL, "fanout=numa");
    unsetenv("HWLOC_SYNTHETIC");
    if (rc)
        tap_bail("fanout=numa on 8 fake nodes: %s", strerror(rc));
    size_t n = zygotes(&ctx, z);
    int serving = 0, ours = 0;
    for (size_t i = 0; i < n; i++) {
        serving += !strcmp(z[i].state, "serving");
        ours += parent_of(z[i].pid) == getpid();
    }
    tap_ok(n == 8 && serving == 8 && ours == 8,
           "8 fake NUMA nodes: 8 zygotes serving, all our children (%zu, %d, %d)", n, serving, ours);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < 8; c++)
        CPU_SET(c, &all);
    int good = run(&ctx, task, "where", 64, NULL, 0, &all, pids);
    struct where w[MAXT];
    int bad = read_where(w, 64), even = 0;
    zygotes(&ctx, z);
    for (size_t i = 0; i < n; i++)
        even += z[i].tasks == 8;
    tap_ok(good == 64 && !bad && even == 8,
           "8 fake NUMA nodes: 64 tasks bound to all 8 CPUs ran once each, 8 from each zygote "
           "(%d ok, %d groups of 8)", good, even);
    pspawn_context_destroy(&ctx);
    tap_ok(no_child_left(), "8 fake NUMA nodes: no process left after destroy");
}

/* start=lazy: a sub-zygote is made at its group's first task. */
static void case_start_lazy(void)
{
    pspawn_context_t ctx;
    pspawn_zygote_info_t z[16];
    pid_t pids[MAXT];
    struct where w[MAXT];
    int rc = pspawn_context_create_opts(&ctx, task, NULL, "fanout=core,start=lazy");
    if (rc)
        tap_bail("start=lazy: %s", strerror(rc));
    zygotes(&ctx, z);
    tap_ok(z[0].pid > 0 && z[1].pid == -1 && !strcmp(z[1].state, "not started"),
           "start=lazy: only the root at first (sub-zygote: %s)", z[1].state);
    static const int one[] = { 1 };
    int good = run(&ctx, task, "where", 4, one, 1, NULL, pids);
    int bad = read_where(w, 4);
    zygotes(&ctx, z);
    tap_ok(good == 4 && !bad && z[1].pid > 0 && z[1].tasks == 4 && parent_of(z[1].pid) == getpid(),
           "start=lazy: the sub-zygote made for the first task bound to CPU 1 (%s, %lu tasks)",
           z[1].state, z[1].tasks);
    pspawn_context_destroy(&ctx);
    tap_ok(no_child_left(), "start=lazy: no process left after destroy");
}

/* The ranks 0-39 the once program wrote in file: how many are missing,
 * repeated or not a rank. */
static int count_ranks_not_once(void)
{
    int bad = 0;
    FILE *f = fopen(file, "re");
    int seen[40] = { 0 };
    char line[64];
    while (f && fgets(line, sizeof line, f)) {
        int r;
        if (sscanf(line, "%d", &r) != 1 || r < 0 || r >= 40 || seen[r]++)
            bad++;
    }
    if (f)
        fclose(f);
    for (int r = 0; r < 40; r++)
        bad += !seen[r];
    unlink(file);
    return bad;
}

/* A sub-zygote that fails to start (its program's constructor exits):
 * its group's tasks go to the root, each once. */
static void case_sub_zygote_fails_to_start(void)
{
    pspawn_context_t ctx;
    pspawn_zygote_info_t z[16];
    pid_t pids[MAXT];
    char marker[160];
    snprintf(marker, sizeof marker, "%s/marker", dir);
    setenv("ONCE_MARKER", marker, 1);
    int rc = pspawn_context_create_opts(&ctx, once, NULL, "fanout=core,subzygote=exec");
    if (rc)
        tap_bail("once: %s", strerror(rc));
    zygotes(&ctx, z);
    tap_ok(z[0].pid > 0 && z[1].pid == -1 && strstr(z[1].state, "did not start"),
           "a sub-zygote whose program fails to load: lost (%s)", z[1].state);
    int good = run(&ctx, once, NULL, 40, both, 2, NULL, pids);
    int bad = count_ranks_not_once();
    zygotes(&ctx, z);
    tap_ok(good == 40 && !bad && z[0].tasks == 40,
           "its tasks all come from the root, each once (%d ok, %d wrong, root %lu)", good, bad,
           z[0].tasks);
    pspawn_context_destroy(&ctx);
    unsetenv("ONCE_MARKER");
    unlink(marker);
    tap_ok(no_child_left(), "no process left after destroy");
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    tap_watchdog(240);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    snprintf(once, sizeof once, "%s/once", b);
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    snprintf(file, sizeof file, "%s/where", dir);
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || !CPU_ISSET(0, &mine) ||
        !CPU_ISSET(1, &mine) || CPU_COUNT(&mine) != 2) {
        tap_skip("needs CPUs 0 and 1 and no other", "sub-zygotes on this machine's CPUs");
        return tap_done();
    }

    variant("exec");
    variant("fork");
    variant("replicate");
    case_fake_numa_nodes();
    case_start_lazy();
    case_sub_zygote_fails_to_start();
    rmdir(dir);
    return tap_done();
}
