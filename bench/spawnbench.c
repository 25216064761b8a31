/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawnbench - time N launches of one program, scheme by scheme.
 *
 *   spawnbench [-n N] [-s scheme[,scheme...]] [-r repeats] [-e ENV]
 *              [-x NAME=VALUE]... [-R] [-q] -- PROG [ARGS]
 *
 * Every scheme launches all N tasks, then waits for all of them; the time
 * is from the first launch call to the last task reaped.  Schemes run
 * interleaved (and in a rotated order) across repeats, because the machine
 * is noisy; the median of the repeats is printed on stdout as CSV:
 *
 *   scheme,n,total_s,per_task_ms
 *
 * or with -R one line per scheme and repeat, for the caller's statistics:
 *
 *   scheme,n,repeat,total_s,per_task_ms
 *
 * Schemes (the paper's names where it has one):
 *   pspawn       pspawn_context_create + pspawn_n + waitpid each + destroy
 *                (the zygote's one exec included); also prints
 *                pspawn-warm: the same without the context creation
 *   posix_spawn  posix_spawn N times, then wait for all
 *   sfork        fork + execve, then wait for that task, N times
 *                (synchronous)
 *   afork        fork + execve N times, then wait for all (asynchronous);
 *   forkexec     the same, under its older name (bench/run)
 *   vfork        vfork + execve N times, then wait for all
 *   pfork        the program launched once with SPAWNBENCH_PFORK=N in its
 *                environment: its main forks N-1 copies of itself that run
 *                as launched tasks would, and waits for them (programs
 *                made by genlibs.py do; the one exec is included)
 *   floor        the program run once with bench/floor.c's library
 *                (libpspawn-floor.so, independent of libpspawn) preloaded,
 *                LD_BIND_NOW=1 and PSPAWN_FLOOR=N: it forks N
 *                children from the parked program with no protocol at all
 *                and reports the time it took (floor-warm, to compare with
 *                pspawn-warm); floor is the whole run, its one exec
 *                included, to compare with pspawn
 *
 * Environment of the tasks (-e): inherit (spawnbench's own, the default),
 * empty (no variable at all), or paper[:DIR] (the paper's realistic one:
 * 100 variables like a login shell's and a site's modules set, plus
 * LD_LIBRARY_PATH with 10 entries, existing empty directories DIR/lib0..9,
 * default /tmp/spawnbench-ldpath, searched by the loader before the
 * program's RUNPATH).  -x adds or replaces one variable.  Every scheme's
 * tasks get exactly that environment; so does pspawn's zygote, plus
 * PSPAWN_PROXY when spawnbench had one.
 *
 * A task that fails to launch or exits with anything but 0 fails its
 * scheme: a benchmark of launches that do not run the program is no
 * benchmark.
 *
 * This file is the driver (options, the tasks' environment, repeats,
 * output); the schemes are spawnbench-schemes.c's, the floor
 * spawnbench-floor.c's.
 */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "median.h"
#include "pspawn.h"
#include "spawnbench.h"

#ifndef PSPAWN_PROXY_PATH
#error "build with -DPSPAWN_PROXY_PATH='\"<pkglibdir>/libpspawn-proxy.so\"'"
#endif
#ifndef PSPAWN_FLOOR_LIB_PATH
#error "build with -DPSPAWN_FLOOR_LIB_PATH='\"<builddir>/bench/.libs/libpspawn-floor.so\"'"
#endif

static const char *const scheme_names[S_COUNT] = {
    [S_PSPAWN] = "pspawn",
    [S_POSIX_SPAWN] = "posix_spawn",
    [S_FORKEXEC] = "forkexec",
    [S_VFORK] = "vfork",
    [S_FLOOR] = "floor",
    [S_SFORK] = "sfork",
    [S_AFORK] = "afork",
    [S_PFORK] = "pfork",
};

static const char *const result_names[R_COUNT] = {
    [R_PSPAWN] = "pspawn",
    [R_PSPAWN_WARM] = "pspawn-warm",
    [R_POSIX_SPAWN] = "posix_spawn",
    [R_FORKEXEC] = "forkexec",
    [R_VFORK] = "vfork",
    [R_FLOOR] = "floor",
    [R_FLOOR_WARM] = "floor-warm",
    [R_SFORK] = "sfork",
    [R_AFORK] = "afork",
    [R_PFORK] = "pfork",
};

/* The proxy's path, read before environ is replaced by the tasks'. */
static char proxy_buf[PATH_MAX];

char **zygote_env;

static enum result results_of(enum scheme s, int second)
{
    static const enum result first[S_COUNT] = {
        [S_PSPAWN] = R_PSPAWN, [S_POSIX_SPAWN] = R_POSIX_SPAWN,
        [S_FORKEXEC] = R_FORKEXEC, [S_VFORK] = R_VFORK, [S_FLOOR] = R_FLOOR,
        [S_SFORK] = R_SFORK, [S_AFORK] = R_AFORK, [S_PFORK] = R_PFORK,
    };
    if (!second)
        return first[s];
    return s == S_PSPAWN ? R_PSPAWN_WARM : s == S_FLOOR ? R_FLOOR_WARM : R_COUNT;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: spawnbench [-n N] [-s scheme[,scheme...]] [-r repeats] "
            "[-e ENV] [-x NAME=VALUE]... [-R] [-q] -- PROG [ARGS]\n"
            "  -n N        tasks per scheme and repeat (default 1000)\n"
            "  -s LIST     schemes: pspawn, posix_spawn, sfork, afork "
            "(forkexec), vfork,\n"
            "              pfork, floor, all (default all)\n"
            "  -r R        repeats, interleaved; the median is reported "
            "(default 3)\n"
            "  -e ENV      the tasks' environment: inherit (default), empty, "
            "paper[:DIR]\n"
            "              (100 variables + LD_LIBRARY_PATH of 10 directories "
            "DIR/lib0..9,\n"
            "              default /tmp/spawnbench-ldpath)\n"
            "  -x N=V      add or replace one variable of the tasks' "
            "environment\n"
            "  -R          one CSV line per repeat: "
            "scheme,n,repeat,total_s,per_task_ms\n"
            "  -q          no progress on stderr\n"
            "Prints CSV on stdout: scheme,n,total_s,per_task_ms\n"
            "The floor scheme preloads $PSPAWN_FLOOR_LIB, else %s\n",
            PSPAWN_FLOOR_LIB_PATH);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_schemes(char *list, enum scheme *sel, int *nsel)
{
    int chosen[S_COUNT] = {0};
    *nsel = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int s = 0; s < S_COUNT; s++) {
            /* "all": every scheme once, forkexec being afork's alias. */
            if ((strcmp(tok, "all") == 0 && s != S_FORKEXEC) ||
                strcmp(tok, scheme_names[s]) == 0) {
                chosen[s] = 1;
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "spawnbench: unknown scheme '%s'\n", tok);
            return -1;
        }
    }
    for (int s = 0; s < S_COUNT; s++) {
        if (chosen[s])
            sel[(*nsel)++] = (enum scheme)s;
    }
    return *nsel ? 0 : -1;
}

/* The paper's "realistic" environment (section 2.4: "10 entries in
 * LD_LIBRARY_PATH and ... the standard entries in the environment"):
 * what a login shell on a cluster with a modules system typically has,
 * 100 variables, plus LD_LIBRARY_PATH.  The directories exist (and are
 * empty), so the loader really looks into each of them for every library
 * that the program needs. */
static char **paper_env(const char *dir)
{
    static const char *const standard[] = {
        "PATH=/opt/site/bin:/opt/mpi/bin:/usr/local/sbin:/usr/local/bin:"
        "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=/home/user", "USER=user", "LOGNAME=user", "SHELL=/bin/bash",
        "LANG=en_US.UTF-8", "LC_ALL=en_US.UTF-8", "TERM=xterm-256color",
        "PWD=/home/user/run", "OLDPWD=/home/user", "SHLVL=2",
        "HOSTNAME=node001", "MAIL=/var/spool/mail/user", "TZ=UTC",
        "EDITOR=vi", "PAGER=less", "LESS=-R", "HISTSIZE=1000",
        "TMPDIR=/tmp", "XDG_RUNTIME_DIR=/run/user/1000",
        "XDG_SESSION_ID=42", "SSH_CLIENT=10.0.0.1 50000 22",
        "SSH_CONNECTION=10.0.0.1 50000 10.0.0.2 22", "SSH_TTY=/dev/pts/0",
        "MANPATH=/opt/site/share/man:/usr/share/man",
        "INFOPATH=/opt/site/share/info",
        "PKG_CONFIG_PATH=/opt/site/lib/pkgconfig:/opt/mpi/lib/pkgconfig",
        "MODULEPATH=/opt/site/modulefiles:/etc/modulefiles",
        "MODULESHOME=/usr/share/modules",
        "LOADEDMODULES=gcc/12.2:openmpi/4.1.5:hdf5/1.14:netcdf/4.9:fftw/3.3",
        "OMP_NUM_THREADS=1", "OMPI_MCA_btl=self,vader,tcp",
        "SLURM_JOB_ID=123456", "SLURM_JOB_NAME=bench",
        "SLURM_NNODES=1", "SLURM_NTASKS=64", "SLURM_CPUS_ON_NODE=64",
        "SLURM_SUBMIT_DIR=/home/user/run", "SLURM_CLUSTER_NAME=cluster",
        "SLURM_JOB_PARTITION=batch",
    };
    enum { NVARS = 100, NDIRS = 10 };
    size_t nstd = sizeof standard / sizeof standard[0];
    char **env = calloc(NVARS + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (; k < nstd; k++)
        env[k] = (char *)standard[k];
    /* The rest: what a modules system sets for each loaded package. */
    for (int i = 0; k < NVARS; k++, i++) {
        if (asprintf(&env[k], "SITE_PKG%02d_ROOT=/opt/site/packages/"
                     "pkg%02d/1.%d.0/linux-x86_64-gcc12", i, i, i % 7) < 0)
            return NULL;
    }
    char *ld = malloc(32 + NDIRS * (strlen(dir) + 8));
    if (!ld)
        return NULL;
    char *p = ld + sprintf(ld, "LD_LIBRARY_PATH=");
    for (int i = 0; i < NDIRS; i++) {
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/lib%d", dir, i);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return NULL;
        if (mkdir(sub, 0755) < 0 && errno != EEXIST)
            return NULL;
        p += sprintf(p, "%s%s", i ? ":" : "", sub);
    }
    env[k++] = ld;
    env[k] = NULL;
    return env;
}

/* The tasks' environment: MODE (inherit, empty, paper[:DIR]) plus EXTRA
 * (NEXTRA "NAME=VALUE" strings). */
static char **task_environ(const char *mode, char **extra, int nextra)
{
    char **base;
    if (strcmp(mode, "inherit") == 0) {
        base = environ;
    } else if (strcmp(mode, "empty") == 0) {
        static char *none[] = {NULL};
        base = none;
    } else if (strncmp(mode, "paper", 5) == 0 &&
               (mode[5] == '\0' || mode[5] == ':')) {
        base = paper_env(mode[5] ? mode + 6 : "/tmp/spawnbench-ldpath");
        if (!base) {
            fprintf(stderr, "spawnbench: -e %s: %s\n", mode, strerror(errno));
            return NULL;
        }
    } else {
        fprintf(stderr, "spawnbench: -e: expected inherit, empty or "
                "paper[:DIR], not '%s'\n", mode);
        return NULL;
    }
    size_t count = 0;
    while (base[count])
        count++;
    char **env = calloc(count + (size_t)nextra + 2, sizeof *env);
    if (!env)
        return NULL;
    memcpy(env, base, count * sizeof *env);
    for (int i = 0; i < nextra; i++)
        env_put(env, extra[i]);
    return env;
}

/* What the command line asks for, besides the program (in struct bench). */
struct options {
    int repeats, raw, nextra;
    const char *env_mode;
    char **extra;               /* -x NAME=VALUE, NEXTRA of them */
    enum scheme sel[S_COUNT];
    int nsel;
};

/* Parses the options into B and O; returns -1 to go on, or the exit
 * status. */
static int parse_options(int argc, char **argv, struct bench *b, struct options *o)
{
    int opt;

    for (int s = 0; s < S_COUNT; s++) {
        if (s != S_FORKEXEC)
            o->sel[o->nsel++] = (enum scheme)s;
    }
    while ((opt = getopt(argc, argv, "+n:s:r:e:x:Rqh")) != -1) {
        switch (opt) {
        case 'n':
            if (parse_int(optarg, 1, 10000000, &b->n) < 0) {
                fprintf(stderr, "spawnbench: -n: expected 1..10000000\n");
                return 2;
            }
            break;
        case 's':
            if (parse_schemes(optarg, o->sel, &o->nsel) < 0)
                return 2;
            break;
        case 'r':
            if (parse_int(optarg, 1, 1000, &o->repeats) < 0) {
                fprintf(stderr, "spawnbench: -r: expected 1..1000\n");
                return 2;
            }
            break;
        case 'e':
            o->env_mode = optarg;
            break;
        case 'x':
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                fprintf(stderr, "spawnbench: -x: expected NAME=VALUE\n");
                return 2;
            }
            o->extra[o->nextra++] = optarg;
            break;
        case 'R':
            o->raw = 1;
            break;
        case 'q':
            b->quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* From here on, environ is the tasks' environment: every scheme passes
 * environ, and libpspawn gives its tasks the caller's.  The zygote's is
 * the same plus PSPAWN_PROXY where we had one.  0, or the exit status. */
static int set_environments(const struct options *o)
{
    const char *proxy_env = getenv("PSPAWN_PROXY");
    int have_proxy = proxy_env && *proxy_env;
    snprintf(proxy_buf, sizeof proxy_buf, "%s",
             have_proxy ? proxy_env : PSPAWN_PROXY_PATH);
    char **task_env = task_environ(o->env_mode, o->extra, o->nextra);
    if (!task_env)
        return 2;
    size_t count = 0;
    while (task_env[count])
        count++;
    zygote_env = calloc(count + 2, sizeof *zygote_env);
    if (!zygote_env)
        return 1;
    memcpy(zygote_env, task_env, count * sizeof *zygote_env);
    static char proxy_var[PATH_MAX + sizeof "PSPAWN_PROXY="];
    if (have_proxy) {
        snprintf(proxy_var, sizeof proxy_var, "PSPAWN_PROXY=%s", proxy_buf);
        env_put(zygote_env, proxy_var);
    }
    environ = task_env;
    return 0;
}

/* One plain run first: it warms the page cache for every scheme alike
 * and proves that the program exits 0 on its own. */
static int runs_alone(const struct bench *b)
{
    pid_t pid;
    int status;
    int err = posix_spawn(&pid, b->path, NULL, NULL, b->argv, environ);
    if (err || wait_pid(pid, &status) < 0) {
        fprintf(stderr, "spawnbench: %s: %s\n", b->path, strerror(err ? err : errno));
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: %s ended with %s on its own\n", b->path, what);
        return 0;
    }
    return 1;
}

/* Every selected scheme, REPEATS times, interleaved: the times in
 * TIMES[result][0..COUNTS[result]), one CSV line each with -R.  Whether
 * any scheme failed (and was dropped). */
static int run_repeats(const struct bench *b, const struct options *o,
                       double *times[R_COUNT], int counts[R_COUNT])
{
    int failed[S_COUNT] = {0}, any_failed = 0;

    if (o->raw)
        printf("scheme,n,repeat,total_s,per_task_ms\n");
    for (int rep = 0; rep < o->repeats; rep++) {
        /* Rotate the order so that no scheme always follows the same one. */
        for (int k = 0; k < o->nsel; k++) {
            enum scheme s = o->sel[(k + rep) % o->nsel];
            double out[R_COUNT] = {0};
            if (failed[s])
                continue;
            if (run_scheme(b, s, out) < 0) {
                fprintf(stderr, "spawnbench: %s failed; dropped from the results\n",
                        scheme_names[s]);
                failed[s] = any_failed = 1;
                continue;
            }
            for (int second = 0; second < 2; second++) {
                enum result r = results_of(s, second);
                if (r == R_COUNT)
                    continue;
                times[r][counts[r]++] = out[r];
                if (o->raw) {
                    printf("%s,%d,%d,%.6f,%.6f\n", result_names[r], b->n,
                           rep + 1, out[r], out[r] * 1e3 / b->n);
                    fflush(stdout);
                }
                if (!b->quiet)
                    fprintf(stderr, "spawnbench: [%d/%d] %-12s n=%d %9.3f s "
                            "%10.4f ms/task\n", rep + 1, o->repeats, result_names[r],
                            b->n, out[r], out[r] * 1e3 / b->n);
            }
        }
    }
    return any_failed;
}

int main(int argc, char **argv)
{
    struct bench b = {.n = 1000};
    struct options o = {.repeats = 3, .env_mode = "inherit"};
    int rc;

    o.extra = calloc((size_t)argc, sizeof *o.extra);
    if (!o.extra)
        return 1;
    rc = parse_options(argc, argv, &b, &o);
    if (rc >= 0)
        return rc;

    static char path[PATH_MAX];
    int err = pspawn_resolve(argv[optind], NULL, path, sizeof path);
    if (err) {
        fprintf(stderr, "spawnbench: %s: %s\n", argv[optind], strerror(err));
        return 1;
    }
    b.path = path;
    b.argv = &argv[optind];
    rc = set_environments(&o);
    if (rc)
        return rc;

    b.pids = calloc((size_t)b.n, sizeof *b.pids);
    double *times[R_COUNT];
    int counts[R_COUNT] = {0};
    for (int r = 0; r < R_COUNT; r++)
        times[r] = calloc((size_t)o.repeats, sizeof *times[r]);
    for (int r = 0; r < R_COUNT; r++) {
        if (!times[r] || !b.pids) {
            fprintf(stderr, "spawnbench: %s\n", strerror(ENOMEM));
            return 1;
        }
    }
    if (!runs_alone(&b))
        return 1;

    int any_failed = run_repeats(&b, &o, times, counts);
    if (!o.raw) {
        printf("scheme,n,total_s,per_task_ms\n");
        for (int r = 0; r < R_COUNT; r++) {
            if (!counts[r])
                continue;
            double t = median(times[r], counts[r]);
            printf("%s,%d,%.6f,%.4f\n", result_names[r], b.n, t, t * 1e3 / b.n);
        }
    }
    fflush(stdout);
    for (int r = 0; r < R_COUNT; r++)
        free(times[r]);
    free(b.pids);
    return any_failed ? 1 : 0;
}
