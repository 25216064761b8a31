/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fanbench - where the CPU of a launch goes, process by process: the
 * launcher, each zygote (root and sub-zygotes) and the tasks, for
 * posix_spawn and for libpspawn with the options given; then the model's
 * tasks/s at C cores from those costs.  Two cores cannot show a many-core
 * speed-up in wall time; what each process spends per task can.
 *
 *   fanbench [-n N] [-r R] [-C 16,64,128,192] [-g G] [-c PSPAWN] [-P] [-o OPTIONS]... -- PROG [ARGS]
 *
 * Each variant (posix_spawn, then each -o OPTIONS, default fanout=none
 * and fanout=core with each kind of sub-zygote) launches N tasks of PROG
 * and waits for them, R times, interleaved, at two settings:
 *   2 cores   as the machine is: the zygotes pinned to their groups;
 *   1 core    fanbench and all its processes on CPU 0 (a variant asking
 *             for fanout=core gets a fake topology of 2 cores,
 *             HWLOC_SYNTHETIC, so that it keeps its 2 zygotes, unbound,
 *             each serving half of the tasks):
 *             the total CPU of a task without any parallel overlap.
 * CPU: the launcher's from getrusage(RUSAGE_SELF), each zygote's from
 * /proc/PID/schedstat (time on a CPU, ns), the tasks' from
 * getrusage(RUSAGE_CHILDREN) (they are reaped, the zygotes not yet).
 * Context creation is not in the per-task figures (printed apart).
 *
 * -P leaves posix_spawn out (and so the model, which needs it): for
 * comparing launchers' own costs quickly.
 *
 * With -c PSPAWN, the pspawn command too, as the launcher (`PSPAWN
 * --fanout=core -n N PROG ARGS`, at 2 cores, once per repeat): its own
 * CPU from /proc/PID/schedstat once it has exited and before it is
 * reaped (its zygotes and tasks are its children, reaped by it), the
 * total from getrusage(RUSAGE_CHILDREN).
 *
 * Each run's progress line (stderr) gives each zygote's CPU per task it
 * served, the root first.
 * Prints medians per variant (ms per task): wall, launcher, busiest
 * zygote (its CPU over the N tasks), serial (a zygote's CPU per task it
 * served, the worst zygote), tasks, total; CSV with -R.  Then the model:
 *   tasks/s = min(C / total, D / serial, 1 / launcher)
 * with D = 1 for one zygote, C / G for fan-out (G: cores per zygote, -g,
 * default libpspawn's 3), totals taken at 1 core, for C in -C.  The model
 * leaves out contention on shared kernel locks (each library's
 * i_mmap_rwsem, the page cache): bench/README.md says how to see it.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "cpuclock.h"

extern char **environ;

enum { MAXV = 16, MAXZ = 16, MAXR = 32 };

struct sample {
    double wall, create, launcher, tasks, busiest, serial, zyg_total;
    int nz;
    char each[160];     /* each zygote's CPU per task it served, root first */
};

struct variant {
    const char *name, *options;     /* options NULL: posix_spawn */
    struct sample s[2][MAXR];       /* [0] 2 cores, [1] 1 core */
};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const struct sample *s, int r, size_t off)
{
    double v[MAXR];
    for (int i = 0; i < r; i++)
        v[i] = *(const double *)((const char *)&s[i] + off);
    qsort(v, (size_t)r, sizeof v[0], cmp);
    return r % 2 ? v[r / 2] : (v[r / 2 - 1] + v[r / 2]) / 2;
}

static int wait_all(pid_t *pids, int n)
{
    int bad = 0, st;
    for (int i = 0; i < n; i++) {
        while (pids[i] > 0 && waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        bad += pids[i] <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static int run_exec(const char *path, char **argv, int n, pid_t *pids, struct sample *s)
{
    double l0 = rusage_ms(RUSAGE_SELF), c0 = rusage_ms(RUSAGE_CHILDREN), t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (posix_spawn(&pids[i], path, NULL, NULL, argv, environ) != 0)
            pids[i] = -1;
    int bad = wait_all(pids, n);
    s->wall = (now_ms() - t0) / n;
    s->launcher = (rusage_ms(RUSAGE_SELF) - l0) / n;
    s->tasks = (rusage_ms(RUSAGE_CHILDREN) - c0) / n;
    return bad;
}

static int run_pspawn(const char *path, char **argv, const char *options, int n, pid_t *pids,
                      struct sample *s)
{
    pspawn_context_t ctx;
    double t0 = now_ms();
    int err = pspawn_context_create_opts(&ctx, path, NULL, options);
    s->create = now_ms() - t0;
    if (err) {
        fprintf(stderr, "fanbench: %s: %s\n", options, strerror(err));
        return n;
    }
    if (!pspawn_context_uses_zygote(&ctx)) {
        fprintf(stderr, "fanbench: %s: no zygote: %s\n", options, pspawn_context_reason(&ctx));
        pspawn_context_destroy(&ctx);
        return n;
    }
    pspawn_zygote_info_t z[MAXZ];
    int nz = (int)pspawn_context_zygotes(&ctx, z, MAXZ);
    nz = nz > MAXZ ? MAXZ : nz;
    double zc0[MAXZ];
    unsigned long served0[MAXZ];
    for (int k = 0; k < nz; k++) {
        zc0[k] = cpu_ms(z[k].pid);
        served0[k] = z[k].tasks;
    }
    double l0 = rusage_ms(RUSAGE_SELF), c0 = rusage_ms(RUSAGE_CHILDREN);
    t0 = now_ms();
    int bad = pspawn_n(pids, &ctx, n, argv) != 0;
    bad += wait_all(pids, n);
    s->wall = (now_ms() - t0) / n;
    s->launcher = (rusage_ms(RUSAGE_SELF) - l0) / n;
    s->tasks = (rusage_ms(RUSAGE_CHILDREN) - c0) / n;
    pspawn_context_zygotes(&ctx, z, MAXZ);
    s->busiest = s->serial = s->zyg_total = 0;
    s->nz = nz;
    s->each[0] = '\0';
    for (int k = 0; k < nz; k++) {
        double cpu = cpu_ms(z[k].pid) - zc0[k];
        unsigned long served = z[k].tasks - served0[k];
        size_t at = strlen(s->each);
        snprintf(s->each + at, sizeof s->each - at, "%s%s %.3f (%lu)", k ? ", " : "",
                 k ? "sub" : "root", served ? cpu / served : 0.0, served);
        s->zyg_total += cpu / n;
        if (cpu / n > s->busiest)
            s->busiest = cpu / n;
        if (served && cpu / served > s->serial)
            s->serial = cpu / served;
    }
    pspawn_context_destroy(&ctx);
    return bad;
}

/* The pspawn command CMD launching N tasks of PATH (TARGV: its argv) with
 * fan-out, as a launcher: its own CPU (schedstat, read while it is a
 * zombie: final, and not yet added to ours), and the rest, its zygotes'
 * and tasks', which it reaped.  The number of failures (its exit code). */
static int run_command(const char *cmd, const char *path, char **targv, int n, struct sample *s)
{
    int argc = 0;
    while (targv[argc])
        argc++;
    char count[16];
    snprintf(count, sizeof count, "%d", n);
    char **argv = calloc((size_t)argc + 5, sizeof *argv);
    if (!argv)
        return n;
    argv[0] = (char *)cmd, argv[1] = "--fanout=core", argv[2] = "-n", argv[3] = count;
    argv[4] = (char *)path;
    for (int i = 1; i < argc; i++)
        argv[4 + i] = targv[i];
    double c0 = rusage_ms(RUSAGE_CHILDREN), t0 = now_ms();
    pid_t pid;
    int err = posix_spawn(&pid, cmd, NULL, NULL, argv, environ);
    free(argv);
    if (err) {
        fprintf(stderr, "fanbench: %s: %s\n", cmd, strerror(err));
        return n;
    }
    siginfo_t si;
    while (waitid(P_PID, pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    double own = cpu_ms(pid);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    s->wall = (now_ms() - t0) / n;
    s->launcher = own / n;
    s->zyg_total = 0;
    s->tasks = (rusage_ms(RUSAGE_CHILDREN) - c0 - own) / n;
    fprintf(stderr, "fanbench: %s --fanout=core: wall %.3f launcher %.4f rest %.3f ms/task\n",
            cmd, s->wall, s->launcher, s->tasks);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : n;
}

/* fanout=core on one core: a fake topology of two cores, so that it keeps
 * two zygotes (not bound: the fake CPUs are not this machine's), numbered
 * away from CPU 0, so that tasks bound to CPU 0 fall in neither group and
 * are spread over both. */
static void one_core(int on, const char *options)
{
    static cpu_set_t all;
    static int saved;
    if (!saved) {
        sched_getaffinity(0, sizeof all, &all);
        saved = 1;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof one, on ? &one : &all);
    if (on && options && strstr(options, "fanout=core"))
        setenv("HWLOC_SYNTHETIC", "core:2 pu:1(indexes=1000,1001)", 1);
    else
        unsetenv("HWLOC_SYNTHETIC");
}

/* The model's tasks/s for a variant of costs TOTAL (1 core), SERIAL and
 * LAUNCHER (ms per task) at C cores; OPTIONS NULL: exec. */
static double project(const char *options, double total, double serial, double launcher, int c,
                      int group)
{
    double t = c / total;
    if (launcher > 0 && 1 / launcher < t)
        t = 1 / launcher;
    if (options) {
        double d = strstr(options, "fanout=none") ? 1 : (double)c / group;
        if (serial > 0 && d / serial < t)
            t = d / serial;
    }
    return t * 1e3;
}

static void usage(void)
{
    fprintf(stderr, "usage: fanbench [-n N] [-r R] [-C C1,C2...] [-g G] [-R] [-c PSPAWN] "
                    "[-P] [-o OPTIONS]... -- PROG [ARGS]\n");
    exit(2);
}

struct bench {
    int n, reps, csv, group, nv, ncores, cores[8];
    const char *command;            /* -c: the pspawn command, or NULL */
    int no_exec;                    /* -P: posix_spawn (v[0]) not run */
    struct sample cmd[MAXR];        /* its runs */
    struct variant *v;
    /* Medians per variant: total at 1 core, serial and launcher at 2. */
    double tot1[MAXV], ser[MAXV], lau[MAXV], single_busiest;
};

/* The options into *b; returns optind, where PROG is. */
static int parse_args(int argc, char **argv, struct bench *b)
{
    b->n = 1000, b->reps = 3, b->group = 3;
    b->v = calloc(MAXV, sizeof *b->v);
    b->v[b->nv++].name = "posix_spawn";
    int opt;
    while ((opt = getopt(argc, argv, "+n:r:C:g:Rc:Po:")) != -1) {
        switch (opt) {
        case 'P': b->no_exec = 1; break;
        case 'c': b->command = optarg; break;
        case 'n': b->n = atoi(optarg); break;
        case 'r': b->reps = atoi(optarg); break;
        case 'g': b->group = atoi(optarg); break;
        case 'R': b->csv = 1; break;
        case 'C':
            for (char *p = strtok(optarg, ","); p && b->ncores < 8; p = strtok(NULL, ","))
                b->cores[b->ncores++] = atoi(p);
            break;
        case 'o':
            if (b->nv < MAXV) {
                b->v[b->nv].name = b->v[b->nv].options = optarg;
                b->nv++;
            }
            break;
        default: usage();
        }
    }
    if (optind >= argc || b->n < 1 || b->reps < 1 || b->reps > MAXR || b->group < 1)
        usage();
    if (!b->ncores) {
        static const int dflt[] = { 16, 64, 128, 192 };
        memcpy(b->cores, dflt, sizeof dflt);
        b->ncores = 4;
    }
    if (b->nv == 1) {
        static const char *const dflt[] = {
            "fanout=none", "fanout=core,subzygote=fork", "fanout=core,subzygote=exec",
            "fanout=core,subzygote=replicate",
        };
        for (int i = 0; i < 4; i++)
            b->v[b->nv].name = b->v[b->nv].options = dflt[i], b->nv++;
    }
    return optind;
}

/* One run of variant x, repeat r, at setting c (1: one core), with its
 * progress lines (and CSV row); the number of its tasks that failed. */
static int run_variant(const struct bench *b, struct variant *x, int r, int c, const char *path,
                       char **targv, pid_t *pids)
{
    struct sample *s = &x->s[c][r];
    if (!x->options && b->no_exec)
        return 0;
    one_core(c == 1, x->options);
    int bad = x->options ? run_pspawn(path, targv, x->options, b->n, pids, s)
                         : run_exec(path, targv, b->n, pids, s);
    one_core(0, NULL);
    if (bad)
        fprintf(stderr, "fanbench: %s: %d of %d tasks failed\n", x->name, bad, b->n);
    double total = s->launcher + s->zyg_total + s->tasks;
    fprintf(stderr, "fanbench: [%d/%d] %d core%s %-34s wall %.3f launcher %.4f "
            "busiest %.3f tasks %.3f total %.3f ms/task\n", r + 1, b->reps, 2 - c,
            c ? "" : "s", x->name, s->wall, s->launcher, s->busiest, s->tasks, total);
    if (x->options)
        fprintf(stderr, "fanbench:         each zygote, ms per task it served "
                "(tasks): %s\n", s->each);
    if (b->csv)
        printf("%s,%d,%d,%.4f,%.2f,%.5f,%.4f,%.4f,%d,%.4f,%.4f\n", x->name, 2 - c,
               r, s->wall, s->create, s->launcher, s->busiest, s->serial, s->nz,
               s->tasks, total);
    return bad;
}

/* A variant's medians at one setting (c: 1 for one core), printed, and
 * kept in *b for the model. */
static void print_medians_of(struct bench *b, int k, int c)
{
    const struct variant *v = b->v;
    const int reps = b->reps;
    const struct sample *s = v[k].s[c];
    double total[MAXR];
    struct sample t[MAXR];
    for (int r = 0; r < reps; r++) {
        total[r] = s[r].launcher + s[r].zyg_total + s[r].tasks;
        t[r] = s[r];
        t[r].zyg_total = total[r];  /* reuse: the total's median */
    }
    double md_total = median(t, reps, offsetof(struct sample, zyg_total));
    printf("%-26s %7s %7d %8.1f %9.4f %8.3f %8.3f %8.3f %8.3f %8.3f\n", v[k].name,
           c ? "1 core" : "2 cores", s[0].nz, median(s, reps, offsetof(struct sample, create)),
           median(s, reps, offsetof(struct sample, launcher)),
           median(s, reps, offsetof(struct sample, busiest)),
           median(s, reps, offsetof(struct sample, serial)),
           median(s, reps, offsetof(struct sample, tasks)), md_total,
           median(s, reps, offsetof(struct sample, wall)));
    if (c == 1)
        b->tot1[k] = md_total;
    else {
        b->ser[k] = median(s, reps, offsetof(struct sample, serial));
        b->lau[k] = median(s, reps, offsetof(struct sample, launcher));
        if (v[k].options && strstr(v[k].options, "fanout=none"))
            b->single_busiest = median(s, reps, offsetof(struct sample, busiest));
    }
}

/* The targets at 2 cores: each zygote variant's launcher against its
 * total; with fanout=none among them (SINGLE >= 0), fan-out against it. */
static void print_targets(const struct bench *b, int single)
{
    const struct variant *v = b->v;
    const int reps = b->reps;
    printf("\nTargets at 2 cores (D = 2 with fanout=core)%s:\n",
           single >= 0 ? ", against fanout=none" : "");
    for (int k = 0; k < b->nv; k++) {
        if (!v[k].options)
            continue;
        double t[MAXR];
        for (int r = 0; r < reps; r++)
            t[r] = v[k].s[0][r].launcher + v[k].s[0][r].zyg_total + v[k].s[0][r].tasks;
        qsort(t, (size_t)reps, sizeof t[0], cmp);
        double total2 = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
        printf("  %-34s launcher/(total/256) %.2f (<= 1)", v[k].name, b->lau[k] / (total2 / 256));
        if (single >= 0 && k != single) {
            double busiest = median(v[k].s[0], reps, offsetof(struct sample, busiest));
            double wall = median(v[k].s[0], reps, offsetof(struct sample, wall));
            double wall1 = median(v[single].s[0], reps, offsetof(struct sample, wall));
            printf("  busiest/(single/2) %.2f (<= 1.2)  total/single %.2f (<= 1.1)  "
                   "wall/single %.2f (<= 1.05)", busiest / (b->single_busiest / 2),
                   b->tot1[k] / b->tot1[single], wall / wall1);
        }
        printf("\n");
    }
}

/* The pspawn command's medians (-c). */
static void print_command(const struct bench *b)
{
    double l = median(b->cmd, b->reps, offsetof(struct sample, launcher));
    double rest = median(b->cmd, b->reps, offsetof(struct sample, tasks));
    double wall = median(b->cmd, b->reps, offsetof(struct sample, wall));
    printf("\nThe pspawn command, --fanout=core, 2 cores (ms per task, medians of %d):\n"
           "  launcher %.4f  zygotes and tasks %.3f  total %.3f  wall %.3f  "
           "launcher/(total/256) %.2f (<= 1)\n", b->reps, l, rest, l + rest, wall,
           l / ((l + rest) / 256));
}

static void print_model(const struct bench *b, int single)
{
    const struct variant *v = b->v;
    const double *tot1 = b->tot1, *ser = b->ser, *lau = b->lau;
    const int group = b->group;
    double L = tot1[0] / tot1[single];
    printf("\nThe model (not a measurement): tasks/s = min(C / total, D / serial, 1 / launcher),\n"
           "totals at 1 core, serial and launcher at 2 cores; D = 1 for one zygote, C / %d for\n"
           "fan-out.  It leaves out contention on shared kernel locks.  L = posix_spawn's total /\n"
           "one zygote's total = %.2f: the most any zygote launcher can gain over exec.\n",
           group, L);
    printf("%-34s", "tasks/s at C cores");
    for (int i = 0; i < b->ncores; i++)
        printf(" %9d", b->cores[i]);
    printf("    and against posix_spawn, in L\n");
    for (int k = 0; k < b->nv; k++) {
        printf("%-34s", v[k].name);
        for (int i = 0; i < b->ncores; i++)
            printf(" %9.0f", project(v[k].options, tot1[k], ser[k], lau[k], b->cores[i], group));
        if (k > 0)
            for (int i = 0; i < b->ncores; i++)
                printf(" %5.2f", project(v[k].options, tot1[k], ser[k], lau[k], b->cores[i], group) /
                                     project(NULL, tot1[0], 0, lau[0], b->cores[i], group) / L);
        printf("\n");
    }
    printf("(target: fan-out at 128 cores >= 0.8 L; the serial cost says how many cores a zygote\n"
           "may serve without being the limit: total / serial)\n");
    for (int k = 1; k < b->nv; k++)
        if (ser[k] > 0)
            printf("  %-32s %.1f cores per zygote\n", v[k].name, tot1[k] / ser[k]);
}

int main(int argc, char **argv)
{
    static struct bench b;
    int at = parse_args(argc, argv, &b);
    const char *path = argv[at];
    char **targv = argv + at;
    pid_t *pids = calloc((size_t)b.n, sizeof *pids);
    int bad = 0;
    if (b.csv)
        printf("variant,cores,repeat,wall,create,launcher,busiest,serial,zygotes,tasks,total\n");
    for (int r = 0; r < b.reps; r++) {
        for (int c = 0; c < 2; c++)
            for (int k = 0; k < b.nv; k++)
                /* Rotated, so that no variant always follows the same one. */
                bad += run_variant(&b, &b.v[(k + r) % b.nv], r, c, path, targv, pids);
        if (b.command)
            bad += run_command(b.command, path, targv, b.n, &b.cmd[r]);
    }
    /* Medians, and the model. */
    printf("\n%-34s %7s %8s %9s %8s %8s %8s %8s %8s\n", "variant (ms per task)", "zygotes",
           "create", "launcher", "busiest", "serial", "tasks", "total", "wall");
    for (int k = b.no_exec ? 1 : 0; k < b.nv; k++)
        for (int c = 0; c < 2; c++)
            print_medians_of(&b, k, c);
    int single = -1;
    for (int k = 0; k < b.nv; k++)
        if (b.v[k].options && strstr(b.v[k].options, "fanout=none"))
            single = k;
    print_targets(&b, single);
    if (b.command)
        print_command(&b);
    if (single >= 0 && !b.no_exec)
        print_model(&b, single);
    free(pids);
    return bad ? 1 : 0;
}
