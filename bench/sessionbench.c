/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sessionbench - a launch session against pspawn_n, side by side: how
 * soon the first task runs, and all of them, N tasks of one program.
 *
 *   sessionbench [-n N] [-r R] [-l LABEL] [-o CSV] -- PROG [ARGS]
 *
 * Each task writes the CLOCK_MONOTONIC time at the start of its main (a
 * struct timespec) on the fd that SESSIONBENCH_STAMP_FD names: programs
 * made by bench/genlibs.py do.  The times are taken from just before the
 * launch call (pspawn_session_submit, or pspawn_n):
 *
 *   first    the first task's main
 *   all      the last task's main
 *   returns  the launch call returning (the session: submit; pspawn_n:
 *            every task created)
 *   launched the caller knowing every pid (the session: no task pending)
 *
 * Each run has a fresh context (its zygote started, and parked, before
 * the clock starts) and reaps its tasks with waitpid before the next.
 * The schemes alternate, in a rotated order, for R repeats; the table of
 * medians goes to stdout, one CSV line per scheme and repeat to CSV.
 *
 * A task that fails to launch, or exits with anything but 0, or writes no
 * time, fails the run: a benchmark of launches that do not run the
 * program is no benchmark.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "median.h"
#include "pspawn.h"

extern char **environ;

#define STAMP_FD 3  /* where the tasks find the pipe */

enum scheme { S_SESSION, S_PSPAWN_N, S_COUNT };
static const char *const scheme_names[S_COUNT] = { "session", "pspawn_n" };

enum metric { M_FIRST, M_ALL, M_RETURNS, M_LAUNCHED, M_COUNT };
static const char *const metric_names[M_COUNT] = { "first", "all", "returns", "launched" };

struct bench {
    const char *path;
    char **argv;
    char **envp;            /* environ, and SESSIONBENCH_STAMP_FD */
    int n;
    pid_t *pids;
    pspawn_task_t *tasks;
    struct timespec *stamps;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The session: submit, then the caller's loop on its fd until every
 * task is created.  0 or an errno. */
static int launch_session(struct bench *b, pspawn_context_t *ctx, const pspawn_attr_t *attr,
                          double *t0_out, double *out)
{
    pspawn_session_t *s;
    int err = pspawn_session_create(&s, ctx, 0);
    if (err)
        return err;
    /* A launcher makes its session once: only submit on is the launch. */
    double t0 = *t0_out = now_ms();
    err = pspawn_session_submit(s, b->tasks, (size_t)b->n, attr, b->envp, NULL);
    out[M_RETURNS] = now_ms() - t0;
    pspawn_session_counts_t c = { .pending = 1 };
    struct pollfd p = { pspawn_session_fd(s), POLLIN, 0 };
    while (!err && c.pending > 0) {
        poll(&p, 1, -1);
        pspawn_session_progress(s);
        pspawn_session_counts(s, &c);
    }
    out[M_LAUNCHED] = now_ms() - t0;
    pspawn_task_status_t st;
    for (int i = 0; i < b->n; i++) {
        b->pids[i] = -1;
        if (pspawn_session_status(s, (size_t)i, &st) == 0 && st.state == PSPAWN_TASK_SPAWNED)
            b->pids[i] = st.pid;
        else if (!err)
            err = st.error ? st.error : EIO;
    }
    pspawn_session_destroy(s);
    return err;
}

/* One run of scheme S: a fresh zygote, N tasks, every time in OUT (ms).
 * 0, or -1 (said why). */
static int run(struct bench *b, enum scheme s, double *out)
{
    pspawn_context_t ctx;
    int err = pspawn_context_create(&ctx, b->path, -1);
    if (err || !pspawn_context_uses_zygote(&ctx)) {
        fprintf(stderr, "sessionbench: no zygote for %s: %s\n", b->path,
                err ? strerror(err) : pspawn_context_reason(&ctx));
        if (!err)
            pspawn_context_destroy(&ctx);
        return -1;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        perror("sessionbench: pipe");
        pspawn_context_destroy(&ctx);
        return -1;
    }
    /* Room for every stamp: no task waits for us to read. */
    fcntl(pipefd[0], F_SETPIPE_SZ, (int)(b->n * sizeof(struct timespec)) + 4096);
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_adddup2(&attr, pipefd[1], STAMP_FD);
    double t0 = now_ms();
    if (s == S_SESSION) {
        err = launch_session(b, &ctx, &attr, &t0, out);
    } else {
        err = pspawn_n_ex(b->pids, &ctx, b->n, &attr, b->argv, b->envp);
        out[M_RETURNS] = out[M_LAUNCHED] = now_ms() - t0;
    }
    pspawn_attr_destroy(&attr);
    close(pipefd[1]);
    int bad = 0;
    for (int i = 0; i < b->n; i++) {
        int st;
        if (b->pids[i] <= 0 || waitpid(b->pids[i], &st, 0) != b->pids[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            bad++;
    }
    size_t want = (size_t)b->n * sizeof *b->stamps, got = 0;
    ssize_t r;
    while (got < want && (r = read(pipefd[0], (char *)b->stamps + got, want - got)) > 0)
        got += (size_t)r;
    close(pipefd[0]);
    pspawn_context_destroy(&ctx);
    if (err || bad || got != want) {
        fprintf(stderr, "sessionbench: %s: %s, %d tasks did not exit 0, %zu of %d times\n",
                scheme_names[s], err ? strerror(err) : "launched", bad,
                got / sizeof *b->stamps, b->n);
        return -1;
    }
    double first = -1, last = -1;
    for (int i = 0; i < b->n; i++) {
        double t = b->stamps[i].tv_sec * 1e3 + b->stamps[i].tv_nsec / 1e6 - t0;
        first = first < 0 || t < first ? t : first;
        last = t > last ? t : last;
    }
    out[M_FIRST] = first;
    out[M_ALL] = last;
    return 0;
}

/* environ, and the stamp fd's variable. */
static char **stamp_environ(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **v = calloc(n + 2, sizeof *v);
    if (!v)
        return NULL;
    memcpy(v, environ, n * sizeof *v);
    static char var[64];
    snprintf(var, sizeof var, "SESSIONBENCH_STAMP_FD=%d", STAMP_FD);
    v[n] = var;
    return v;
}

static void print_table(const char *label, int n, int repeats, double med[S_COUNT][M_COUNT])
{
    printf("%s, %d tasks, median of %d repeats (ms from the launch call)\n", label, n, repeats);
    printf("  %-20s %12s %12s %12s %12s\n", "scheme", "first main", "all mains", "call returns",
           "pids known");
    for (int s = 0; s < S_COUNT; s++)
        printf("  %-20s %12.3f %12.3f %12.3f %12.3f\n", scheme_names[s], med[s][M_FIRST],
               med[s][M_ALL], med[s][M_RETURNS], med[s][M_LAUNCHED]);
    printf("  %-20s", "session/pspawn_n");
    for (int m = 0; m < M_COUNT; m++)
        printf(" %11.3fx", med[S_PSPAWN_N][m] > 0 ? med[S_SESSION][m] / med[S_PSPAWN_N][m] : 0);
    printf("\n");
}

static int usage(void)
{
    fprintf(stderr, "usage: sessionbench [-n N] [-r R] [-l LABEL] [-o CSV] -- PROG [ARGS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct bench b = { .n = 1000 };
    int repeats = 3, opt;
    const char *label = NULL, *csv_path = NULL;
    while ((opt = getopt(argc, argv, "n:r:l:o:")) != -1) {
        if (opt == 'n')
            b.n = atoi(optarg);
        else if (opt == 'r')
            repeats = atoi(optarg);
        else if (opt == 'l')
            label = optarg;
        else if (opt == 'o')
            csv_path = optarg;
        else
            return usage();
    }
    if (optind >= argc || b.n < 1 || repeats < 1)
        return usage();
    b.path = argv[optind];
    b.argv = &argv[optind];
    label = label ? label : b.path;
    b.envp = stamp_environ();
    b.pids = calloc((size_t)b.n, sizeof *b.pids);
    b.tasks = calloc((size_t)b.n, sizeof *b.tasks);
    b.stamps = calloc((size_t)b.n, sizeof *b.stamps);
    double *times = calloc((size_t)repeats * S_COUNT * M_COUNT, sizeof *times);
    FILE *csv = csv_path ? fopen(csv_path, "a") : NULL;
    if (!b.envp || !b.pids || !b.tasks || !b.stamps || !times || (csv_path && !csv)) {
        fprintf(stderr, "sessionbench: %s\n", strerror(errno ? errno : ENOMEM));
        return 1;
    }
    for (int i = 0; i < b.n; i++)
        b.tasks[i].argv = b.argv;
    if (csv && fseek(csv, 0, SEEK_END) == 0 && ftell(csv) == 0) {
        fprintf(csv, "program,scheme,n,repeat");
        for (int m = 0; m < M_COUNT; m++)
            fprintf(csv, ",%s_ms", metric_names[m]);
        fprintf(csv, "\n");
    }
    /* One run of each first, not counted: the page cache, the program. */
    double warm[M_COUNT];
    for (int s = 0; s < S_COUNT; s++)
        if (run(&b, (enum scheme)s, warm) < 0)
            return 1;
    for (int rep = 0; rep < repeats; rep++)
        for (int k = 0; k < S_COUNT; k++) {
            int s = (k + rep) % S_COUNT;
            double *out = &times[((size_t)s * repeats + rep) * M_COUNT];
            if (run(&b, (enum scheme)s, out) < 0)
                return 1;
            fprintf(stderr, "sessionbench: [%d/%d] %-9s first %9.3f ms, all %9.3f ms, "
                    "returns %9.3f ms\n", rep + 1, repeats, scheme_names[s], out[M_FIRST],
                    out[M_ALL], out[M_RETURNS]);
            if (csv)
                fprintf(csv, "%s,%s,%d,%d,%.3f,%.3f,%.3f,%.3f\n", label, scheme_names[s], b.n,
                        rep + 1, out[M_FIRST], out[M_ALL], out[M_RETURNS], out[M_LAUNCHED]);
        }
    double med[S_COUNT][M_COUNT], *v = calloc((size_t)repeats, sizeof *v);
    if (!v)
        return 1;
    for (int s = 0; s < S_COUNT; s++)
        for (int m = 0; m < M_COUNT; m++) {
            for (int rep = 0; rep < repeats; rep++)
                v[rep] = times[((size_t)s * repeats + rep) * M_COUNT + m];
            med[s][m] = median(v, repeats);
        }
    print_table(label, b.n, repeats, med);
    if (csv)
        fclose(csv);
    free(v);
    return 0;
}
