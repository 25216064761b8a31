/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipbench-measures.c - the three measurements of bench/pipbench (what
 * each means: bench/README.md, "Process-in-Process"): page tables (VmPTE)
 * of N tasks that touched one shared segment, context switches between
 * two tasks on CPU 0, and the spawn of 15 tasks against fork&exec,
 * vfork&exec, posix_spawn and pspawn.  PiP, pthreads and processes side
 * by side; CSV rows by csv_row().
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "median.h"
#include "pipbench.h"

/* VmPTE of PID in KiB, or -1. */
static long vmpte_kb(pid_t pid)
{
    char p[64], line[256];
    long kb = -1;
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "re");
    while (f && fgets(line, sizeof line, f) && sscanf(line, "VmPTE: %ld", &kb) != 1)
        ;
    if (f)
        fclose(f);
    return kb;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        fprintf(stderr, "pipbench: sched_setaffinity(CPU %d): %s\n", cpu, strerror(errno));
}

/* ---- 1. page tables ------------------------------------------------------ */

void measure_pt(const int *ns, int nns, size_t seg_bytes)
{
    struct pipctl *c = make_shared(0, "seg", seg_bytes);
    char addr[32], size[32], nthr[16];
    snprintf(addr, sizeof addr, "%#llx", SEG_ADDR);
    snprintf(size, sizeof size, "%zu", seg_bytes);
    char *one[] = {"pip-task", "pt", paths[0], addr, size, NULL};
    char *thr[] = {"pip-task", "pt-threads", nthr, paths[0], addr, size, NULL};
    long kb[NV][MAXN + 1];
    printf("\n1. Page tables: VmPTE (KiB) of all address spaces, while N tasks have each\n"
           "   written every page of one %zu MiB shared segment\n", seg_bytes >> 20);
    printf("%6s %10s %10s %10s\n", "N", "PiP", "pthreads", "processes");
    for (int k = 0; k < nns; k++) {
        int n = ns[k];
        snprintf(nthr, sizeof nthr, "%d", n);
        for (int v = 0; v < NV; v++) {
            struct group g;
            kb[v][n] = -1;
            if ((v == V_PIP && pip_off[0]) || group_ready(&g, c, v, n, one, thr, "page tables"))
                continue;
            /* the root's covers its PiP tasks, the process's its threads */
            long sum = v == V_PIP ? vmpte_kb(pspawn_context_zygote_pid(&g.ctx)) : 0;
            for (int i = 0; v != V_PIP && i < g.npids; i++) {
                long x = vmpte_kb(g.pids[i]);
                sum = sum < 0 || x < 0 ? -1 : sum + x;
            }
            if (group_end(&g, c, 0)) {
                report_fail("page tables", &g);
                continue;
            }
            kb[v][n] = sum;
            csv_row("pagetable", vname[v], n, "vmpte", (double)sum, "KiB");
        }
        printf("%6d", n);
        for (int v = 0; v < NV; v++)
            kb[v][n] >= 0 ? printf(" %10ld", kb[v][n]) : printf(" %10s", "-");
        printf("\n");
    }
    int n = ns[nns - 1];
    if (kb[V_PIP][n] > 0 && kb[V_PROC][n] > 0 && kb[V_THREADS][n] > 0) {
        double r = (double)kb[V_PROC][n] / (double)kb[V_PIP][n];
        double t = (double)kb[V_PIP][n] / (double)kb[V_THREADS][n];
        printf("   N=%d: processes/PiP = %.1f (target >= 10: %s), PiP/pthreads = %.2f\n", n, r,
               r >= 10 ? "met" : "NOT met", t);
        csv_row("pagetable", "processes/PiP", n, "ratio", r, "x");
        csv_row("pagetable", "PiP/pthreads", n, "ratio", t, "x");
    }
    munmap(c, PIP_PAGE);
}

/* ---- 2. context switches --------------------------------------------------- */

enum { C_CS, C_MM, C_DTLB, NC };
static const char *cname[NC] = {"context-switches", "mm-switches", "dTLB-load-misses"};
static char cerr[NC][160];

static int tracepoint_id(const char *ev)
{
    char p[256];
    int id = -1;
    snprintf(p, sizeof p, "/sys/kernel/tracing/events/%s/id", ev);
    FILE *f = fopen(p, "re");
    if (!f && (snprintf(p, sizeof p, "/sys/kernel/debug/tracing/events/%s/id", ev), 1))
        f = fopen(p, "re");
    if (f && fscanf(f, "%d", &id) != 1)
        id = -1;
    if (f)
        fclose(f);
    return id;
}

/* The counters of everything on CPU 0, disabled; -1 where there is none. */
static void counters_open(int fd[NC])
{
    for (int i = 0; i < NC; i++) {
        struct perf_event_attr a = {.size = sizeof a, .disabled = 1};
        int id = i == C_MM ? tracepoint_id("tlb/tlb_flush") : 0;
        fd[i] = -1;
        if (i == C_CS)
            a.type = PERF_TYPE_SOFTWARE, a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
        else if (i == C_DTLB)
            a.type = PERF_TYPE_HW_CACHE,
            a.config = PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                       (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
        else if (id >= 0)
            a.type = PERF_TYPE_TRACEPOINT, a.config = (uint64_t)id;
        else {
            snprintf(cerr[i], sizeof cerr[i], "no tracepoint tlb:tlb_flush");
            continue;
        }
        if ((fd[i] = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, 0)) < 0)
            snprintf(cerr[i], sizeof cerr[i], "perf_event_open: %s", strerror(errno));
        /* reason 0 (TLB_FLUSH_ON_TASK_SWITCH) is traced at each CR3 load
         * for a next task of another address space */
        else if (i == C_MM && ioctl(fd[i], PERF_EVENT_IOC_SET_FILTER, "reason == 0")) {
            snprintf(cerr[i], sizeof cerr[i], "tracepoint filter: %s", strerror(errno));
            close(fd[i]);
            fd[i] = -1;
        }
    }
}

/* Counting from zero. */
static void counters_start(const int fd[NC])
{
    for (int i = 0; i < NC; i++)
        if (fd[i] >= 0)
            ioctl(fd[i], PERF_EVENT_IOC_RESET, 0), ioctl(fd[i], PERF_EVENT_IOC_ENABLE, 0);
}

/* Stopped, and their counts in VAL (0 where there is none). */
static void counters_stop(const int fd[NC], uint64_t val[NC])
{
    for (int i = 0; i < NC; i++)
        if (fd[i] >= 0 && (ioctl(fd[i], PERF_EVENT_IOC_DISABLE, 0),
                           read(fd[i], &val[i], sizeof val[i]) != sizeof val[i]))
            val[i] = 0;
}

void measure_ctxsw(int rounds, long iters, long bytes)
{
    struct pipctl *c = make_shared(1, "ctl", PIP_PAGE);
    char addr[32], it[24], by[24];
    snprintf(addr, sizeof addr, "%#llx", CTL_ADDR);
    snprintf(it, sizeof it, "%ld", iters);
    snprintf(by, sizeof by, "%ld", bytes);
    char *one[] = {"pip-task", "pp", paths[1], addr, it, by, "0", NULL};
    char *thr[] = {"pip-task", "pp-threads", paths[1], addr, it, by, "0", NULL};
    static double rt[NV][MAXR], wo[NV][MAXR], cnt[NV][NC][MAXR];
    int got[NV] = {0}, fd[NC];
    counters_open(fd);
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
        pin(1); /* stay off CPU 0 while the tasks run there */
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NV; k++) {
            int v = (k + r) % NV;
            struct group g;
            uint64_t val[NC] = {0};
            if ((v == V_PIP && pip_off[0]) || group_ready(&g, c, v, 2, one, thr, "context switches"))
                continue;
            counters_start(fd);
            atomic_store(&c->go, 1);
            pip_wake(&c->go);
            int e = group_wait(&g, &c->done, 2, 60000, "the ping-pong's end", 1);
            counters_stop(fd, val);
            if (group_end(&g, c, e != 0) || e) {
                report_fail("context switches", &g);
                continue;
            }
            int j = got[v]++;
            rt[v][j] = (double)c->ns_with / (double)iters / 1000.0;
            wo[v][j] = (double)c->ns_without / (double)iters / 1000.0;
            for (int i = 0; i < NC; i++)
                cnt[v][i][j] = (double)val[i] / (double)iters;
        }
    pin(0);
    printf("\n2. Context switches: two tasks on CPU 0 hand a futex back and forth %ld times,\n"
           "   a %ld-byte memcpy at each turn (median of %d runs; a round trip is 2 switches)\n",
           iters, bytes, rounds);
    printf("%-10s %11s %11s %11s %9s %9s %9s\n%-10s %11s %11s %11s %9s %9s %9s\n", "",
           "round trip", "memcpy", "switch ovh", "ctx sw", "mm sw", "dTLB miss", "", "(us)",
           "alone (us)", "(us/rt)", "(/rt)", "(/rt)", "(/rt)");
    double med_ov[NV] = {0};
    for (int v = 0; v < NV; v++) {
        if (!got[v]) {
            printf("%-10s %11s\n", vname[v], "-");
            continue;
        }
        double m_rt = median(rt[v], got[v]), m_wo = median(wo[v], got[v]);
        med_ov[v] = m_rt - m_wo;
        printf("%-10s %11.2f %11.2f %11.2f", vname[v], m_rt, m_wo, med_ov[v]);
        csv_row("ctxsw", vname[v], 2, "round_trip", m_rt, "us");
        csv_row("ctxsw", vname[v], 2, "memcpy_alone", m_wo, "us_per_round_trip");
        csv_row("ctxsw", vname[v], 2, "switch_overhead", med_ov[v], "us_per_round_trip");
        for (int i = 0; i < NC; i++) {
            double m = fd[i] >= 0 ? median(cnt[v][i], got[v]) : -1;
            m >= 0 ? printf(" %9.2f", m) : printf(" %9s", "n/a");
            if (m >= 0)
                csv_row("ctxsw", vname[v], 2, cname[i], m, "per_round_trip");
        }
        printf("\n");
    }
    if (med_ov[V_PIP] > 0 && med_ov[V_PROC] > 0 && med_ov[V_THREADS] > 0)
        printf("   switch overhead: processes/PiP = %.2f, PiP/pthreads = %.2f\n",
               med_ov[V_PROC] / med_ov[V_PIP], med_ov[V_PIP] / med_ov[V_THREADS]);
    printf("   switch ovh = round trip - memcpy alone (CTXSWov); counted on CPU 0 during the\n"
           "   ping-pong: ctx sw = context switches, mm sw = switches of address space\n"
           "   (tlb:tlb_flush on task switch: each a CR3 load)\n");
    const char *perf = getenv("PIPBENCH_PERF"); /* what perf(1) says, from bench/pip */
    for (int i = 0; i < NC; i++)
        if (fd[i] < 0)
            printf("   %s: not available in this VM (%s%s%s)\n",
                   i == C_DTLB ? "dTLB counters" : cname[i], cerr[i],
                   i == C_DTLB && perf ? ";\n   " : "", i == C_DTLB && perf ? perf : "");
        else
            close(fd[i]);
    munmap(c, PIP_PAGE);
}

/* ---- 3. spawn ------------------------------------------------------------ */

enum { S_PIP, S_THREADS, S_FORK, S_VFORK, S_POSIX, S_PSPAWN, NS };
static const char *sname[NS] = {"PiP", "pthreads", "fork&exec", "vfork&exec", "posix_spawn",
                                "pspawn"};

static void *nothing(void *arg)
{
    return arg;
}

/* fork (or vfork) and exec the task; nothing but the child's exec and
 * _exit between vfork and the return. */
static __attribute__((noinline)) pid_t fork_exec(int use_vfork, char **argv)
{
    pid_t pid = use_vfork ? vfork() : fork();
    if (pid == 0) {
        execve(task, argv, environ);
        _exit(127);
    }
    return pid;
}

/* One round of variant S: create N tasks, then wait for all; the time in
 * microseconds (a context's creation not included), or -1 with ERR set. */
static double spawn_round(int s, int n, char *err, size_t errlen)
{
    char *argv[] = {"pip-task", "exit", NULL};
    pid_t pids[MAXN];
    pthread_t tid[MAXN];
    pspawn_context_t ctx;
    int e = 0, ok = 1;
    if (s == S_PIP && pip_create(&ctx, err, errlen))
        return -1;
    if (s == S_PSPAWN && (e = pspawn_context_create_opts(&ctx, task, environ, NULL)))
        return snprintf(err, errlen, "pspawn_context_create_opts: %s", strerror(e)), -1;
    uint64_t t0 = pip_now_ns();
    if (s == S_PIP || s == S_PSPAWN)
        e = pspawn_n(pids, &ctx, n, argv);
    for (int i = 0; s == S_THREADS && i < n; i++)
        if ((e = pthread_create(&tid[i], NULL, nothing, NULL)))
            n = i;
    for (int i = 0; s == S_THREADS && i < n; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; (s == S_FORK || s == S_VFORK) && i < n; i++)
        if ((pids[i] = fork_exec(s == S_VFORK, argv)) < 0)
            e = errno;
    for (int i = 0; s == S_POSIX && i < n; i++)
        if ((e = posix_spawn(&pids[i], task, NULL, NULL, argv, environ)))
            pids[i] = -1;
    for (int i = 0, st; s != S_THREADS && i < n; i++)
        ok &= pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) &&
              WEXITSTATUS(st) == 0;
    uint64_t t1 = pip_now_ns();
    if (s == S_PIP || s == S_PSPAWN) {
        const char *r = pspawn_context_reason(&ctx);
        if (r && !e && ok)
            snprintf(err, errlen, "%s fell back to exec: %s", sname[s], r), ok = 0;
        pspawn_context_destroy(&ctx);
    }
    if ((e || !ok) && !err[0])
        snprintf(err, errlen, "%s", e ? strerror(e) : "a task failed");
    return e || !ok ? -1 : (double)(t1 - t0) / 1000.0;
}

void measure_spawn(int rounds, int n)
{
    static double t[NS][MAXR];
    int got[NS] = {0};
    char failed[NS][512] = {{0}};
    pin(0);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NS; k++) {
            int s = (k + r) % NS;
            if (failed[s][0] || (s == S_PIP && pip_off[0]))
                continue;
            double us = spawn_round(s, n, failed[s], sizeof failed[s]);
            if (us >= 0)
                t[s][got[s]++] = us;
            else if (s == S_PIP) {
                snprintf(pip_off, sizeof pip_off, "%.500s", failed[s]);
                printf("PiP: not available (%s)\n", failed[s]);
            }
        }
    printf("\n3. Spawn: create %d tasks that exit at once, then wait for all %d, on CPU 0\n"
           "   (median of %d rounds)\n", n, n, rounds);
    printf("%-12s %14s %12s %14s\n", "", "us per batch", "min", "x fork&exec");
    double base = got[S_FORK] ? median(t[S_FORK], got[S_FORK]) : 0, med[NS] = {0};
    for (int s = 0; s < NS; s++) {
        if (!got[s]) {
            printf("%-12s %14s   %s\n", sname[s], "-",
                   s == S_PIP && pip_off[0] ? "PiP: not available" : failed[s]);
            continue;
        }
        med[s] = median(t[s], got[s]);
        printf("%-12s %14.1f %12.1f", sname[s], med[s], t[s][0]);
        base > 0 ? printf(" %14.3f\n", med[s] / base) : printf("\n");
        csv_row("spawn", sname[s], n, "median", med[s], "us");
        csv_row("spawn", sname[s], n, "min", t[s][0], "us");
        if (base > 0)
            csv_row("spawn", sname[s], n, "ratio_to_fork_exec", med[s] / base, "x");
    }
    if (med[S_PIP] > 0 && med[S_PSPAWN] > 0 && med[S_THREADS] > 0)
        printf("   PiP/pspawn = %.2f, PiP/pthreads = %.2f\n", med[S_PIP] / med[S_PSPAWN],
               med[S_PIP] / med[S_THREADS]);
}
