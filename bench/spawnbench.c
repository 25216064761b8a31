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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "median.h"
#include "pspawn.h"

#ifndef PSPAWN_PROXY_PATH
#error "build with -DPSPAWN_PROXY_PATH='\"<pkglibdir>/libpspawn-proxy.so\"'"
#endif
#ifndef PSPAWN_FLOOR_LIB_PATH
#error "build with -DPSPAWN_FLOOR_LIB_PATH='\"<builddir>/bench/.libs/libpspawn-floor.so\"'"
#endif

extern char **environ;

enum scheme {
    S_PSPAWN, S_POSIX_SPAWN, S_FORKEXEC, S_VFORK, S_FLOOR, S_SFORK, S_AFORK,
    S_PFORK, S_COUNT
};

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

/* What is reported: some schemes give two numbers. */
enum result {
    R_PSPAWN, R_PSPAWN_WARM, R_POSIX_SPAWN, R_FORKEXEC, R_VFORK,
    R_FLOOR, R_FLOOR_WARM, R_SFORK, R_AFORK, R_PFORK, R_COUNT
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

/* The zygote's environment: the tasks' plus PSPAWN_PROXY, if we had one. */
static char **zygote_env;

struct bench {
    const char *path;   /* the program, resolved */
    char **argv;        /* argv of every task */
    int n;
    pid_t *pids;
    int quiet;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int wait_pid(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

static void describe_status(char *buf, size_t len, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "status 0x%x", (unsigned)status);
}

/* Reap every launched task; returns how many did not exit 0.  Tasks that
 * failed to launch (-1) are skipped: the caller already counted them. */
static int wait_all(const struct bench *b, const char *scheme)
{
    int bad = 0;
    for (int i = 0; i < b->n; i++) {
        int status;
        if (b->pids[i] <= 0)
            continue;
        if (wait_pid(b->pids[i], &status) < 0) {
            fprintf(stderr, "spawnbench: %s: waitpid(%d): %s\n", scheme,
                    (int)b->pids[i], strerror(errno));
            bad++;
            continue;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (bad == 0) {
                char what[64];
                describe_status(what, sizeof what, status);
                fprintf(stderr, "spawnbench: %s: task %d ended with %s\n",
                        scheme, i, what);
            }
            bad++;
        }
    }
    return bad;
}

static int finish(const struct bench *b, const char *scheme, int launch_err,
                  int launched)
{
    int bad = wait_all(b, scheme);
    if (launch_err) {
        fprintf(stderr, "spawnbench: %s: %d of %d tasks not launched: %s\n",
                scheme, b->n - launched, b->n, strerror(launch_err));
        return -1;
    }
    if (bad) {
        fprintf(stderr, "spawnbench: %s: %d of %d tasks failed\n", scheme,
                bad, b->n);
        return -1;
    }
    return 0;
}

static int run_pspawn(const struct bench *b, double *total, double *warm)
{
    pspawn_context_t ctx;
    char **task_env = environ;
    double t0 = now();
    environ = zygote_env;
    int err = pspawn_context_create(&ctx, b->path, -1);
    environ = task_env;
    if (err) {
        fprintf(stderr, "spawnbench: pspawn_context_create(%s): %s\n",
                b->path, strerror(err));
        pspawn_context_destroy(&ctx);
        return -1;
    }
    double t1 = now();
    err = pspawn_n(b->pids, &ctx, b->n, b->argv);
    int launched = 0;
    for (int i = 0; i < b->n; i++)
        launched += b->pids[i] > 0;
    int rc = finish(b, "pspawn", err, launched);
    /* Read before destroy: the string belongs to the context.  A run that
     * fell back to exec measures exec, and must say so. */
    const char *reason = pspawn_context_reason(&ctx);
    if (reason || !pspawn_context_uses_zygote(&ctx))
        fprintf(stderr, "spawnbench: warning: pspawn fell back to exec: %s\n",
                reason ? reason : "(no reason given)");
    pspawn_context_destroy(&ctx);
    double t2 = now();
    *total = t2 - t0;
    *warm = t2 - t1;
    return rc;
}

static int run_posix_spawn(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        int err = posix_spawn(&b->pids[i], b->path, NULL, NULL, b->argv,
                              environ);
        if (err) {
            b->pids[i] = -1;
            if (!first_err)
                first_err = err;
        } else {
            launched++;
        }
    }
    int rc = finish(b, "posix_spawn", first_err, launched);
    *total = now() - t0;
    return rc;
}

/* afork (forkexec): fork + execve N times, then wait for all. */
static int run_forkexec(const struct bench *b, const char *name, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execve(b->path, b->argv, environ);
            _exit(127);
        }
        b->pids[i] = pid;
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
        } else {
            launched++;
        }
    }
    int rc = finish(b, name, first_err, launched);
    *total = now() - t0;
    return rc;
}

/* sfork: fork + execve, then wait for that task before the next. */
static int run_sfork(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0, bad = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execve(b->path, b->argv, environ);
            _exit(127);
        }
        b->pids[i] = -1;    /* reaped here: nothing left for finish() */
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
            continue;
        }
        launched++;
        int status;
        if (wait_pid(pid, &status) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            if (bad++ == 0) {
                char what[64];
                describe_status(what, sizeof what, status);
                fprintf(stderr, "spawnbench: sfork: task %d ended with %s\n",
                        i, what);
            }
        }
    }
    int rc = finish(b, "sfork", first_err, launched);
    if (bad) {
        fprintf(stderr, "spawnbench: sfork: %d of %d tasks failed\n", bad, b->n);
        rc = -1;
    }
    *total = now() - t0;
    return rc;
}

/* Kept apart so that the caller's locals are not live across vfork(). */
static pid_t __attribute__((noinline))
vfork_exec(const char *path, char *const argv[])
{
    pid_t pid = vfork();
    if (pid == 0) {
        execve(path, argv, environ);
        _exit(127);
    }
    return pid;
}

static int run_vfork(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = vfork_exec(b->path, b->argv);
        b->pids[i] = pid;
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
        } else {
            launched++;
        }
    }
    int rc = finish(b, "vfork", first_err, launched);
    *total = now() - t0;
    return rc;
}

/* The floor's library: $PSPAWN_FLOOR_LIB, else the one built here. */
static const char *floor_lib_path(void)
{
    const char *p = getenv("PSPAWN_FLOOR_LIB");
    return p && *p ? p : PSPAWN_FLOOR_LIB_PATH;
}

/* ENV with NAME=VALUE (a full "NAME=VALUE" string) added, or replacing
 * the variable of that name; ENV must have room for one more entry. */
static void env_put(char **env, char *var)
{
    size_t len = strcspn(var, "=") + 1, i = 0;
    for (; env[i]; i++) {
        if (strncmp(env[i], var, len) == 0) {
            env[i] = var;
            return;
        }
    }
    env[i] = var;
    env[i + 1] = NULL;
}

/* pfork: the program once, with SPAWNBENCH_PFORK=N; it forks the other
 * N-1 tasks itself and exits 0 only if all of them did. */
static int run_pfork(const struct bench *b, double *total)
{
    size_t count = 0;
    while (environ[count])
        count++;
    char **envp = calloc(count + 2, sizeof *envp);
    char var[48];
    if (!envp) {
        fprintf(stderr, "spawnbench: pfork: %s\n", strerror(ENOMEM));
        return -1;
    }
    memcpy(envp, environ, count * sizeof *envp);
    snprintf(var, sizeof var, "SPAWNBENCH_PFORK=%d", b->n);
    env_put(envp, var);

    double t0 = now();
    pid_t pid;
    int status = 0, err = posix_spawn(&pid, b->path, NULL, NULL, b->argv, envp);
    if (!err && wait_pid(pid, &status) < 0)
        err = errno;
    *total = now() - t0;
    free(envp);
    if (err) {
        fprintf(stderr, "spawnbench: pfork: %s: %s\n", b->path, strerror(err));
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: pfork: %s ended with %s (does it "
                "support SPAWNBENCH_PFORK?)\n", b->path, what);
        return -1;
    }
    return 0;
}


/* The floor's environment: ours, with the floor preloaded and told to fork
 * N children itself, and LD_BIND_NOW=1 as libpspawn gives its zygote, so
 * that the floor's children start from the same pre-bound state as tasks. */
struct floor_env {
    char **envp;
    char preload[65536];
    char count[32];
};

static int floor_env_init(struct floor_env *fe, const char *lib, int n)
{
    size_t count = 0;
    while (environ[count])
        count++;
    fe->envp = calloc(count + 4, sizeof *fe->envp);
    if (!fe->envp)
        return ENOMEM;
    size_t k = 0;
    const char *user_preload = "";
    for (size_t i = 0; i < count; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0)
            user_preload = environ[i] + 11;
        else if (strncmp(environ[i], "LD_BIND_NOW=", 12) != 0 &&
                 strncmp(environ[i], "PSPAWN_FLOOR=", 13) != 0)
            fe->envp[k++] = environ[i];
    }
    /* As libpspawn does for its zygote: the user's preloads first. */
    int len = snprintf(fe->preload, sizeof fe->preload, "LD_PRELOAD=%s%s%s",
                       user_preload, *user_preload ? " " : "", lib);
    if (len < 0 || (size_t)len >= sizeof fe->preload) {
        free(fe->envp);
        return ENAMETOOLONG;
    }
    snprintf(fe->count, sizeof fe->count, "PSPAWN_FLOOR=%d", n);
    fe->envp[k++] = fe->preload;
    fe->envp[k++] = fe->count;
    fe->envp[k++] = (char *)"LD_BIND_NOW=1";
    fe->envp[k] = NULL;
    return 0;
}

/* Everything the floor run wrote on stderr. */
static char *read_all(int fd)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (cap - len < 1024) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    buf[len] = '\0';
    return buf;
}

/* Finds the proxy's report; passes anything else through to our stderr. */
static int parse_floor(char *out, int n, long long *total_ns)
{
    int found = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        int got_n;
        long long ns;
        if (sscanf(line, "pspawn-floor: n=%d total_ns=%lld", &got_n, &ns) == 2) {
            if (got_n != n) {
                fprintf(stderr, "spawnbench: floor: the proxy forked %d, not %d\n",
                        got_n, n);
                return -1;
            }
            *total_ns = ns;
            found = 1;
        } else {
            fprintf(stderr, "%s\n", line);
        }
    }
    if (!found)
        fprintf(stderr, "spawnbench: floor: no 'pspawn-floor:' line on the "
                "program's stderr (is PSPAWN_FLOOR_LIB the floor's library?)\n");
    return found ? 0 : -1;
}

static int run_floor(const struct bench *b, double *total, double *warm)
{
    const char *lib = floor_lib_path();
    if (access(lib, R_OK) != 0) {
        fprintf(stderr, "spawnbench: floor: %s: %s (set PSPAWN_FLOOR_LIB)\n",
                lib, strerror(errno));
        return -1;
    }
    struct floor_env fe;
    int err = floor_env_init(&fe, lib, b->n);
    if (err) {
        fprintf(stderr, "spawnbench: floor: %s\n", strerror(err));
        return -1;
    }
    int fds[2];
    posix_spawn_file_actions_t fa;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "spawnbench: floor: pipe: %s\n", strerror(errno));
        free(fe.envp);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);

    double t0 = now();
    pid_t pid;
    err = posix_spawn(&pid, b->path, &fa, NULL, b->argv, fe.envp);
    close(fds[1]);
    char *out = err ? NULL : read_all(fds[0]);
    int status = 0;
    if (!err && wait_pid(pid, &status) < 0)
        err = errno;
    double t1 = now();

    close(fds[0]);
    posix_spawn_file_actions_destroy(&fa);
    free(fe.envp);
    if (err) {
        fprintf(stderr, "spawnbench: floor: %s: %s\n", b->path, strerror(err));
        free(out);
        return -1;
    }
    if (!out) {
        fprintf(stderr, "spawnbench: floor: %s\n", strerror(ENOMEM));
        return -1;
    }
    long long ns = 0;
    int rc = parse_floor(out, b->n, &ns);
    free(out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: floor: %s ended with %s\n", b->path, what);
        rc = -1;
    }
    *total = t1 - t0;
    *warm = (double)ns * 1e-9;
    return rc;
}

/* Runs scheme S once; stores its time(s) in OUT by result. */
static int run_scheme(const struct bench *b, enum scheme s, double out[R_COUNT])
{
    switch (s) {
    case S_PSPAWN:
        return run_pspawn(b, &out[R_PSPAWN], &out[R_PSPAWN_WARM]);
    case S_POSIX_SPAWN:
        return run_posix_spawn(b, &out[R_POSIX_SPAWN]);
    case S_FORKEXEC:
        return run_forkexec(b, "forkexec", &out[R_FORKEXEC]);
    case S_AFORK:
        return run_forkexec(b, "afork", &out[R_AFORK]);
    case S_SFORK:
        return run_sfork(b, &out[R_SFORK]);
    case S_PFORK:
        return run_pfork(b, &out[R_PFORK]);
    case S_VFORK:
        return run_vfork(b, &out[R_VFORK]);
    case S_FLOOR:
        return run_floor(b, &out[R_FLOOR], &out[R_FLOOR_WARM]);
    case S_COUNT:
        break;
    }
    return -1;
}

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

int main(int argc, char **argv)
{
    struct bench b = {.n = 1000};
    int repeats = 3, nsel = 0, raw = 0, nextra = 0;
    const char *env_mode = "inherit";
    char **extra = calloc((size_t)argc, sizeof *extra);
    enum scheme sel[S_COUNT];
    int opt;

    if (!extra)
        return 1;
    for (int s = 0; s < S_COUNT; s++) {
        if (s != S_FORKEXEC)
            sel[nsel++] = (enum scheme)s;
    }
    while ((opt = getopt(argc, argv, "+n:s:r:e:x:Rqh")) != -1) {
        switch (opt) {
        case 'n':
            if (parse_int(optarg, 1, 10000000, &b.n) < 0) {
                fprintf(stderr, "spawnbench: -n: expected 1..10000000\n");
                return 2;
            }
            break;
        case 's':
            if (parse_schemes(optarg, sel, &nsel) < 0)
                return 2;
            break;
        case 'r':
            if (parse_int(optarg, 1, 1000, &repeats) < 0) {
                fprintf(stderr, "spawnbench: -r: expected 1..1000\n");
                return 2;
            }
            break;
        case 'e':
            env_mode = optarg;
            break;
        case 'x':
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                fprintf(stderr, "spawnbench: -x: expected NAME=VALUE\n");
                return 2;
            }
            extra[nextra++] = optarg;
            break;
        case 'R':
            raw = 1;
            break;
        case 'q':
            b.quiet = 1;
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

    static char path[PATH_MAX];
    int err = pspawn_resolve(argv[optind], NULL, path, sizeof path);
    if (err) {
        fprintf(stderr, "spawnbench: %s: %s\n", argv[optind], strerror(err));
        return 1;
    }
    b.path = path;
    b.argv = &argv[optind];

    /* From here on, environ is the tasks' environment: every scheme
     * passes environ, and libpspawn gives its tasks the caller's. */
    const char *proxy_env = getenv("PSPAWN_PROXY");
    int have_proxy = proxy_env && *proxy_env;
    snprintf(proxy_buf, sizeof proxy_buf, "%s",
             have_proxy ? proxy_env : PSPAWN_PROXY_PATH);
    char **task_env = task_environ(env_mode, extra, nextra);
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

    b.pids = calloc((size_t)b.n, sizeof *b.pids);
    double *times[R_COUNT];
    int counts[R_COUNT] = {0};
    for (int r = 0; r < R_COUNT; r++)
        times[r] = calloc((size_t)repeats, sizeof *times[r]);
    for (int r = 0; r < R_COUNT; r++) {
        if (!times[r] || !b.pids) {
            fprintf(stderr, "spawnbench: %s\n", strerror(ENOMEM));
            return 1;
        }
    }

    /* One plain run first: it warms the page cache for every scheme alike
     * and proves that the program exits 0 on its own. */
    pid_t pid;
    int status;
    err = posix_spawn(&pid, b.path, NULL, NULL, b.argv, environ);
    if (err || wait_pid(pid, &status) < 0) {
        fprintf(stderr, "spawnbench: %s: %s\n", b.path, strerror(err ? err : errno));
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: %s ended with %s on its own\n", b.path, what);
        return 1;
    }

    if (raw)
        printf("scheme,n,repeat,total_s,per_task_ms\n");
    int failed[S_COUNT] = {0};
    for (int rep = 0; rep < repeats; rep++) {
        /* Rotate the order so that no scheme always follows the same one. */
        for (int k = 0; k < nsel; k++) {
            enum scheme s = sel[(k + rep) % nsel];
            double out[R_COUNT] = {0};
            if (failed[s])
                continue;
            if (run_scheme(&b, s, out) < 0) {
                fprintf(stderr, "spawnbench: %s failed; dropped from the results\n",
                        scheme_names[s]);
                failed[s] = 1;
                continue;
            }
            for (int second = 0; second < 2; second++) {
                enum result r = results_of(s, second);
                if (r == R_COUNT)
                    continue;
                times[r][counts[r]++] = out[r];
                if (raw) {
                    printf("%s,%d,%d,%.6f,%.6f\n", result_names[r], b.n,
                           rep + 1, out[r], out[r] * 1e3 / b.n);
                    fflush(stdout);
                }
                if (!b.quiet)
                    fprintf(stderr, "spawnbench: [%d/%d] %-12s n=%d %9.3f s "
                            "%10.4f ms/task\n", rep + 1, repeats, result_names[r],
                            b.n, out[r], out[r] * 1e3 / b.n);
            }
        }
    }

    if (!raw) {
        printf("scheme,n,total_s,per_task_ms\n");
        for (int r = 0; r < R_COUNT; r++) {
            if (!counts[r])
                continue;
            double t = median(times[r], counts[r]);
            printf("%s,%d,%.6f,%.4f\n", result_names[r], b.n, t, t * 1e3 / b.n);
        }
    }
    fflush(stdout);

    int any_failed = 0;
    for (int s = 0; s < S_COUNT; s++)
        any_failed |= failed[s];
    for (int r = 0; r < R_COUNT; r++)
        free(times[r]);
    free(b.pids);
    return any_failed ? 1 : 0;
}
