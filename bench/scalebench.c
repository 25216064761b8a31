/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scalebench - tasks per second in wall time: N tasks of PROG launched
 * and reaped, by posix_spawn, by fork + execve, and through libpspawn
 * with each OPTIONS, side by side in one process, R times, interleaved.
 * Run it under `taskset -c 0-K` for a curve over CPU counts: libpspawn's
 * fan-out takes its groups from the CPUs the caller may use
 * (bench/device-fanout does that on a many-core machine).
 *
 *   scalebench [-n N] [-r R] [-c K] [-l LABEL] [-v VARIANT]... -- PROG [ARGS]
 *
 * -c K: first bind itself to the first K CPUs it may use (what
 * `taskset -c 0-(K-1)` does where those are CPUs 0 to K-1).
 *
 * VARIANT: posix_spawn, fork+exec, or libpspawn's options (fanout=none,
 * fanout=core, fanout=4, ...).  Default: posix_spawn, fanout=none,
 * fanout=core.
 *
 * Per run: wall from the first launch to the last task reaped (the
 * context's creation, for libpspawn, is timed apart and left out), the
 * launcher's own CPU, and for libpspawn the number of zygotes and the
 * busiest zygote's CPU (/proc/PID/schedstat) per task of the run.
 * Prints one CSV row per run (stdout, "run," first), then one row of
 * medians per variant ("median," first): tasks/s = N / wall.  A variant's
 * commas are written as ';' there.
 */
#include <errno.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "cpuclock.h"

extern char **environ;

enum { MAXV = 16, MAXR = 16, MAXZ = 256 };

struct sample {
    double wall, create, launcher, busiest, zygotes;
};

struct variant {
    const char *name;
    struct sample s[MAXR];
};

static int wait_all(const pid_t *pids, int n)
{
    int bad = 0, st = 0;
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0) {
            bad++;
            continue;
        }
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static int run_exec(int use_fork, const char *path, char **argv, int n, pid_t *pids,
                    struct sample *s)
{
    double l0 = rusage_ms(RUSAGE_SELF), t0 = now_ms();
    for (int i = 0; i < n; i++) {
        if (!use_fork) {
            if (posix_spawn(&pids[i], path, NULL, NULL, argv, environ) != 0)
                pids[i] = -1;
            continue;
        }
        pids[i] = fork();
        if (pids[i] == 0) {
            execve(path, argv, environ);
            _exit(127);
        }
    }
    int bad = wait_all(pids, n);
    s->wall = now_ms() - t0;
    s->launcher = (rusage_ms(RUSAGE_SELF) - l0) / n;
    s->create = s->busiest = 0;
    s->zygotes = 0;
    return bad;
}

static int run_pspawn(const char *path, char **argv, const char *options, int n, pid_t *pids,
                      struct sample *s)
{
    static pspawn_zygote_info_t z[MAXZ];
    static double zc0[MAXZ];
    pspawn_context_t ctx;
    double t0 = now_ms();
    int err = pspawn_context_create_opts(&ctx, path, NULL, options);
    s->create = now_ms() - t0;
    if (err) {
        fprintf(stderr, "scalebench: %s: %s\n", options, strerror(err));
        return n;
    }
    if (!pspawn_context_uses_zygote(&ctx)) {
        fprintf(stderr, "scalebench: %s: no zygote: %s\n", options, pspawn_context_reason(&ctx));
        pspawn_context_destroy(&ctx);
        return n;
    }
    size_t nz = pspawn_context_zygotes(&ctx, z, MAXZ);
    nz = nz > MAXZ ? MAXZ : nz;
    for (size_t k = 0; k < nz; k++)
        zc0[k] = cpu_ms(z[k].pid);
    double l0 = rusage_ms(RUSAGE_SELF);
    t0 = now_ms();
    int bad = pspawn_n(pids, &ctx, n, argv) != 0;
    bad += wait_all(pids, n);
    s->wall = now_ms() - t0;
    s->launcher = (rusage_ms(RUSAGE_SELF) - l0) / n;
    s->zygotes = (double)nz;
    s->busiest = 0;
    for (size_t k = 0; k < nz; k++) {
        double c = (cpu_ms(z[k].pid) - zc0[k]) / n;
        if (c > s->busiest)
            s->busiest = c;
    }
    pspawn_context_destroy(&ctx);
    return bad;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double med(const struct sample *s, int r, double (*get)(const struct sample *))
{
    double v[MAXR];
    for (int i = 0; i < r; i++)
        v[i] = get(&s[i]);
    qsort(v, (size_t)r, sizeof v[0], cmp);
    return r % 2 ? v[r / 2] : (v[r / 2 - 1] + v[r / 2]) / 2;
}

static double g_wall(const struct sample *s) { return s->wall; }
static double g_create(const struct sample *s) { return s->create; }
static double g_launcher(const struct sample *s) { return s->launcher; }
static double g_busiest(const struct sample *s) { return s->busiest; }
static double g_zygotes(const struct sample *s) { return s->zygotes; }

/* NAME with its commas as ';', for a CSV field. */
static const char *field(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf; *p; p++)
        if (*p == ',')
            *p = ';';
    return buf;
}

static void usage(void)
{
    fprintf(stderr, "usage: scalebench [-n N] [-r R] [-c K] [-l LABEL] [-v VARIANT]... -- PROG [ARGS]\n"
                    "  VARIANT: posix_spawn, fork+exec, or libpspawn options (fanout=...)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int n = 1000, reps = 3, nv = 0, opt, want = 0;
    const char *label = "-";
    struct variant *v = calloc(MAXV, sizeof *v);
    while ((opt = getopt(argc, argv, "+n:r:c:l:v:")) != -1) {
        switch (opt) {
        case 'c': want = atoi(optarg); break;
        case 'n': n = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'l': label = optarg; break;
        case 'v':
            if (nv < MAXV)
                v[nv++].name = optarg;
            break;
        default: usage();
        }
    }
    if (optind >= argc || n < 1 || reps < 1 || reps > MAXR)
        usage();
    if (!nv) {
        v[nv++].name = "posix_spawn";
        v[nv++].name = "fanout=none";
        v[nv++].name = "fanout=core";
    }
    const char *path = argv[optind];
    char **targv = argv + optind;
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    cpu_set_t cs;
    sched_getaffinity(0, sizeof cs, &cs);
    if (want > 0) {
        cpu_set_t first;
        CPU_ZERO(&first);
        for (int c = 0, got = 0; c < CPU_SETSIZE && got < want; c++)
            if (CPU_ISSET(c, &cs)) {
                CPU_SET(c, &first);
                got++;
            }
        if (CPU_COUNT(&first) < want || sched_setaffinity(0, sizeof first, &first) != 0) {
            fprintf(stderr, "scalebench: cannot bind to %d CPUs (%d allowed)\n", want,
                    CPU_COUNT(&cs));
            return 2;
        }
        cs = first;
    }
    int ncpu = CPU_COUNT(&cs), bad = 0;
    printf("what,label,cpus,variant,repeat,n,wall_ms,tasks_per_s,create_ms,launcher_ms,"
           "busiest_zygote_ms,zygotes\n");
    fflush(stdout);
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < nv; k++) {
            /* Rotated, so that no variant always follows the same one. */
            struct variant *x = &v[(k + r) % nv];
            struct sample *s = &x->s[r];
            int b;
            if (strcmp(x->name, "posix_spawn") == 0)
                b = run_exec(0, path, targv, n, pids, s);
            else if (strcmp(x->name, "fork+exec") == 0)
                b = run_exec(1, path, targv, n, pids, s);
            else
                b = run_pspawn(path, targv, x->name, n, pids, s);
            if (b)
                fprintf(stderr, "scalebench: %s: %d of %d tasks failed\n", x->name, b, n);
            bad += b;
            printf("run,%s,%d,%s,%d,%d,%.2f,%.1f,%.1f,%.4f,%.4f,%.0f\n", label, ncpu, field(x->name), r,
                   n, s->wall, n / s->wall * 1e3, s->create, s->launcher, s->busiest,
                   s->zygotes);
            fflush(stdout);
        }
    for (int k = 0; k < nv; k++) {
        double w = med(v[k].s, reps, g_wall);
        printf("median,%s,%d,%s,%d,%d,%.2f,%.1f,%.1f,%.4f,%.4f,%.0f\n", label, ncpu,
               field(v[k].name), reps, n, w, n / w * 1e3, med(v[k].s, reps, g_create),
               med(v[k].s, reps, g_launcher), med(v[k].s, reps, g_busiest),
               med(v[k].s, reps, g_zygotes));
    }
    free(pids);
    free(v);
    return bad ? 1 : 0;
}
