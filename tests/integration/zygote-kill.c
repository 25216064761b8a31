/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * zygote-kill - killing (SIGKILL) or stopping (SIGSTOP) the zygote at any
 * moment of a 1000-task batch loses no task, runs none twice and hangs
 * nothing: requests in flight are retried by exec.  With fan-out
 * (fanout=core, a sub-zygote per CPU), the same for a sub-zygote, whose
 * tasks go to the root, and for the root, which takes its sub-zygotes
 * with it.
 *
 * Each round launches 1000 tasks with pspawn_vector(), task i with
 * PSPAWN_RANK=i in its environment; each task appends "RANK PID" to one
 * shared O_APPEND file with a single write().  Another thread hits the
 * zygote after a delay (0, 2, 10, 50 ms).  Then every rank must appear
 * exactly once, written by the pid returned for it, every pid must be
 * reaped here with exit 0, and no process may be left once the context is
 * destroyed.  A watchdog fails the test if anything hangs.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { NTASKS = 1000 };

struct hit {
    pid_t zygote;
    int sig;
    int delay_ms;
};

static void *hit_zygote(void *arg)
{
    const struct hit *h = arg;
    struct timespec ts = { h->delay_ms / 1000, (long)(h->delay_ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    kill(h->zygote, h->sig);
    return NULL;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The round's context, and in *h the zygote to hit (VICTIM: which of its
 * zygotes, 0 the root). */
static void start_round_context(pspawn_context_t *ctx, struct hit *h, const char *task,
                                const char *options, int victim, const char *label)
{
    int rc = options ? pspawn_context_create_opts(ctx, task, NULL, options)
                     : pspawn_context_create(ctx, task, -1);
    if (rc != 0)
        tap_bail("pspawn_context_create(%s): %s", task, strerror(rc));
    pspawn_context_set_timeout(ctx, 300);
    pspawn_zygote_info_t z[4];
    size_t nz = pspawn_context_zygotes(ctx, z, 4);
    h->zygote = (size_t)victim < nz ? z[victim].pid : -1;
    if (h->zygote <= 0)
        tap_bail("%s: no zygote (pid %ld, reason %s)", label, (long)h->zygote,
                 pspawn_context_reason(ctx) ? pspawn_context_reason(ctx) : "none");
}

/* The 1000 tasks, each with its PSPAWN_RANK, launched while another
 * thread hits the zygote. */
static void launch_batch_while_hit(pspawn_context_t *ctx, pspawn_task_t *tasks, char **argv,
                                   struct hit *h, const char *label)
{
    static char rank_env[NTASKS][32];
    static char *envs[NTASKS][2];
    pthread_t thread;
    int rc, devnull, saved, created = 0;
    double t0, elapsed;

    memset(tasks, 0, NTASKS * sizeof *tasks);
    for (int i = 0; i < NTASKS; i++) {
        snprintf(rank_env[i], sizeof rank_env[i], "PSPAWN_RANK=%d", i);
        envs[i][0] = rank_env[i];
        envs[i][1] = NULL;
        tasks[i].argv = argv;
        tasks[i].envp = envs[i];
    }

    /* The tasks print a line each: not into the TAP stream. */
    fflush(stdout);
    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    saved = fcntl(1, F_DUPFD_CLOEXEC, 10);
    dup2(devnull, 1);
    close(devnull);

    t0 = now();
    if (pthread_create(&thread, NULL, hit_zygote, h) != 0)
        tap_bail("pthread_create failed");
    rc = pspawn_vector(ctx, tasks, NTASKS, NULL, NULL);
    elapsed = now() - t0;
    pthread_join(thread, NULL);

    dup2(saved, 1);
    close(saved);

    for (int i = 0; i < NTASKS; i++)
        if (tasks[i].error == 0 && tasks[i].pid > 0)
            created++;
    tap_ok(rc == 0 && created == NTASKS, "%s: pspawn_vector created all %d tasks (rc %d, %d created, %.2f s)",
           label, NTASKS, rc, created, elapsed);
    tap_diag("    after the batch: uses_zygote %d, reason: %s", pspawn_context_uses_zygote(ctx),
             pspawn_context_reason(ctx) ? pspawn_context_reason(ctx) : "(none)");
}

static void check_every_task_reaped(const pspawn_task_t *tasks, const char *label)
{
    int reaped_ok = 0, st;

    for (int i = 0; i < NTASKS; i++) {
        if (tasks[i].pid <= 0)
            continue;
        if (waitpid(tasks[i].pid, &st, 0) == tasks[i].pid && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0)
            reaped_ok++;
        else if (i - reaped_ok < 5)
            tap_diag("    task %d (pid %ld): not a normal exit 0 (wait status 0x%x)", i,
                     (long)tasks[i].pid, st);
    }
    tap_ok(reaped_ok == NTASKS, "%s: every pid reaped here with exit 0 (%d/%d)", label,
           reaped_ok, NTASKS);
}

/* FILE's "RANK PID" lines: each rank once, by the pid returned for it. */
static void check_every_rank_once(const char *file, const pspawn_task_t *tasks, const char *label)
{
    static int seen[NTASKS];
    char line[128];
    int dup = 0, wrong_pid = 0, bad_line = 0, missing = 0;
    FILE *f;

    memset(seen, 0, sizeof seen);
    f = fopen(file, "re");
    while (f && fgets(line, sizeof line, f)) {
        int r;
        long pid;
        if (sscanf(line, "%d %ld", &r, &pid) != 2 || r < 0 || r >= NTASKS) {
            bad_line++;
            continue;
        }
        if (seen[r]++)
            dup++;
        else if (pid != (long)tasks[r].pid)
            wrong_pid++;
    }
    if (f)
        fclose(f);
    for (int i = 0; i < NTASKS; i++)
        missing += !seen[i];
    tap_ok(!missing && !dup && !wrong_pid && !bad_line,
           "%s: every rank ran exactly once, as the pid returned for it", label);
    if (missing || dup || wrong_pid || bad_line)
        tap_diag("    %d ranks missing, %d run twice, %d by another pid, %d bad lines",
                 missing, dup, wrong_pid, bad_line);
}

/* The zygote (killed, or stopped then killed) is reaped by the library:
 * no child of ours at all remains. */
static void check_nothing_left(pid_t zygote, const char *label)
{
    pid_t w;
    int left = 0, st;

    while ((w = waitpid(-1, &st, WNOHANG)) > 0)
        left++;
    tap_ok(left == 0 && w == -1 && errno == ECHILD,
           "%s: no process left after pspawn_context_destroy", label);
    if (left)
        tap_diag("    %d leftover children reaped here", left);
    if (w == 0) {
        tap_diag("    children still running (zygote %ld left behind?)", (long)zygote);
        kill(zygote, SIGKILL);
        waitpid(zygote, &st, 0);
    }
}

/* OPTIONS: the context's (NULL: one zygote); VICTIM: which of its zygotes
 * is hit (0: the root). */
static void round_(const char *task, const char *file, int sig, int delay_ms, const char *options,
                   int victim)
{
    static pspawn_task_t tasks[NTASKS];
    char *argv[] = { (char *)task, "append", (char *)file, NULL };
    char label[64];
    const char *signame = sig == SIGKILL ? "SIGKILL" : "SIGSTOP";
    pspawn_context_t ctx;
    struct hit h;

    snprintf(label, sizeof label, "%s%s%s after %d ms", options ? options : "", victim ? ": " : "",
             victim ? "sub-zygote" : options ? ": root" : "", delay_ms);
    snprintf(label + strlen(label), sizeof label - strlen(label), ", %s", signame);
    unlink(file);
    start_round_context(&ctx, &h, task, options, victim, label);
    h.sig = sig;
    h.delay_ms = delay_ms;

    launch_batch_while_hit(&ctx, tasks, argv, &h, label);
    check_every_task_reaped(tasks, label);
    check_every_rank_once(file, tasks, label);

    pspawn_context_destroy(&ctx);
    check_nothing_left(h.zygote, label);
    unlink(file);
}

int main(void)
{
    static const int delays[] = { 0, 2, 10, 50 };
    const char *b = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX], dir[] = "/tmp/pspawn-kill.XXXXXX", file[64];

    tap_watchdog(300);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    snprintf(file, sizeof file, "%s/ranks", dir);

    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++)
        round_(task, file, SIGKILL, delays[i], NULL, 0);
    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++)
        round_(task, file, SIGSTOP, delays[i], NULL, 0);
    /* Fan-out, where this machine has two CPUs to make two groups of. */
    cpu_set_t cs;
    if (!tap_fanout_built()) {
        tap_skip("built without hwloc", "fan-out: a sub-zygote killed or stopped mid-batch");
    } else if (sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_COUNT(&cs) >= 2) {
        static const char *const variants[] = { "fanout=core,subzygote=exec",
                                                 "fanout=core,subzygote=fork" };
        for (size_t v = 0; v < 2; v++)
            for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
                round_(task, file, SIGKILL, delays[i], variants[v], 1);
                if (i % 2 == v)
                    round_(task, file, SIGSTOP, delays[i], variants[v], 1);
            }
        round_(task, file, SIGKILL, 2, variants[0], 0);
        round_(task, file, SIGKILL, 10, variants[1], 0);
    } else {
        tap_skip("one CPU", "fan-out: a sub-zygote killed or stopped mid-batch");
    }

    rmdir(dir);
    return tap_done();
}
