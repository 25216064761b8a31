/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * session - the launch session (pspawn_session_*), the asynchronous
 * vector spawn: submit returns before the tasks are created and the
 * session's fd becomes readable; every task ends SPAWNED (the caller's
 * child, with its own argv, env and CPU set), FAILED (with its errno and
 * a reason) or, reaped by the session, EXITED with its own wait status;
 * a cancel mid-batch, and SIGKILL of the root zygote or of a sub-zygote
 * mid-session, lose no task and run none twice, nor a SIGSTOP of the
 * root, found hung through the session's fd alone (its timer); 10,000 tasks through one
 * session leave no fd behind; the synchronous calls are refused (EBUSY)
 * only while a session has tasks pending; several submits, a pid hook,
 * the exec path.
 *
 * Each task that must run exactly once appends "RANK PID" to one shared
 * file with a single write (tests/fixtures/task append), RANK its index.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Submit returns before the tasks are created; the fd becomes readable;
 * each task, reaped by the session, exits with its own code. */
static void async_and_exit_codes(pspawn_context_t *ctx)
{
    enum { N = 200 };
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_exit_tasks(N, 1);
    size_t first = 99;
    int rc = pspawn_session_submit(s, tasks, N, NULL, NULL, &first);
    pspawn_session_counts_t c;
    pspawn_session_counts(s, &c);
    pspawn_task_status_t st;
    pspawn_session_status(s, N - 1, &st);
    tap_ok(rc == 0 && first == 0 && c.tasks == N && c.pending == N &&
           st.state == PSPAWN_TASK_PENDING && st.pid == -1,
           "submit returns before the tasks are created (%zu of %d pending, last: state %d)",
           c.pending, N, st.state);
    struct pollfd p = { pspawn_session_fd(s), POLLIN, 0 };
    tap_ok(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN),
           "the session's fd becomes readable");
    rc = run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 30000);
    int spawned = 0, parents = 0, codes = 0, order = 0;
    for (int i = 0; i < N; i++) {
        spawned += seen[i].spawned == 1 && seen[i].pid > 0 && !seen[i].failed;
        parents += seen[i].parent_ok;
        codes += seen[i].exited == 1 && WIFEXITED(seen[i].status) &&
                 WEXITSTATUS(seen[i].status) == i + 1;
        order += seen[i].out_of_order;
    }
    tap_ok(rc == 0 && spawned == N && parents == N && !stray_events,
           "each of %d tasks SPAWNED once, a child of ours (%d spawned, %d ours, %d stray)",
           N, spawned, parents, stray_events);
    tap_ok(codes == N && order == 0,
           "each EXITED after SPAWNED, with its own exit code (%d right, %d out of order)",
           codes, order);
    pspawn_session_counts(s, &c);
    pspawn_session_status(s, 7, &st);
    tap_ok(c.exited == N && c.pending == 0 && c.spawned == 0 && st.state == PSPAWN_TASK_EXITED &&
           WEXITSTATUS(st.wait_status) == 8 && st.pid == seen[7].pid,
           "counts and status by index agree (%zu exited; task 7 exit %d)", c.exited,
           WEXITSTATUS(st.wait_status));
    pspawn_session_destroy(s);
}

/* Without REAP: the tasks are ours to reap, and pspawn_session_wait. */
static void caller_reaps(pspawn_context_t *ctx)
{
    enum { N = 100 };
    pspawn_session_t *s = new_session(ctx, 0);
    make_exit_tasks(N, 100);
    int rc = submit_flagged(s, N, PSPAWN_PIDFD);
    int wrc = pspawn_session_wait(s, PSPAWN_WAIT_LAUNCHED, 30000);
    int xrc = pspawn_session_wait(s, PSPAWN_WAIT_EXITED, 0);
    int good = 0, pidfds = 0;
    pspawn_task_status_t st;
    for (int i = 0; i < N; i++) {
        int w;
        if (pspawn_session_status(s, (size_t)i, &st) == 0 && st.state == PSPAWN_TASK_SPAWNED &&
            waitpid(st.pid, &w, 0) == st.pid && WIFEXITED(w) && WEXITSTATUS(w) == 100 + i)
            good++;
        if (st.pidfd >= 0) {
            pidfds++;
            close(st.pidfd);
        }
    }
    /* No pidfd_open (before Linux 5.3, or tests/fixtures/oldkernel 4.18): -1 each. */
    int own = (int)syscall(SYS_pidfd_open, getpid(), 0);
    int want = own >= 0 || errno != ENOSYS ? N : 0;
    if (own >= 0)
        close(own);
    tap_ok(rc == 0 && wrc == 0 && xrc == EINVAL && good == N && pidfds == want,
           "without REAP: %d of %d tasks reaped here with their own code, each with a pidfd "
           "(%d of %d); WAIT_EXITED refused (%s)", good, N, pidfds, want, strerror(xrc));
    pspawn_session_destroy(s);
}

/* Each task's own argv and env (print), its stdout from the attr. */
static void per_task_settings(pspawn_context_t *ctx)
{
    enum { N = 64 };
    int pipefd[2];
    if (pipe(pipefd))
        tap_bail("pipe");
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_tasks(N, "print", NULL);
    for (int i = 0; i < N; i++) {
        snprintf(label_arg[i], sizeof label_arg[i], "arg-%d", i);
        argvs[i][2] = label_arg[i];
    }
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_adddup2(&attr, pipefd[1], 1);
    int rc = pspawn_session_submit(s, tasks, N, &attr, NULL, NULL);
    pspawn_attr_destroy(&attr);
    close(pipefd[1]);   /* the session keeps its own until the tasks exist */
    rc = rc ? rc : run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 30000);
    pspawn_session_destroy(s);
    /* End of file once every task exited: nothing else holds the pipe. */
    FILE *f = fdopen(pipefd[0], "r");
    char line[256];
    int right[N] = { 0 }, lines = 0, good = 0;
    while (f && fgets(line, sizeof line, f)) {
        int r, a;
        lines++;
        if (sscanf(line, "task version=1 rank=%d size=- local=- args=arg-%d", &r, &a) == 2 &&
            r == a && r >= 0 && r < N)
            right[r]++;
    }
    if (f)
        fclose(f);
    for (int i = 0; i < N; i++)
        good += right[i] == 1;
    tap_ok(rc == 0 && good == N && lines == N,
           "each task has its own argv and env, and its stdout from the attr (%d of %d right, "
           "%d lines)", good, N, lines);
}

/* Each task's own CPU set (where). */
static void per_task_cpus(pspawn_context_t *ctx)
{
    enum { N = 64 };
    char line[256];
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    if (!CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine)) {
        tap_skip("needs CPUs 0 and 1", "each task bound to its own CPU set");
        return;
    }
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    new_ranks_file();
    make_tasks(N, "where", file);
    for (int i = 0; i < N; i++) {
        CPU_ZERO(&sets[i]);
        CPU_SET(i % 2, &sets[i]);
        tasks[i].cpuset = &sets[i];
        tasks[i].cpusetsize = sizeof sets[i];
    }
    int rc = pspawn_session_submit(s, tasks, N, NULL, NULL, NULL);
    rc = rc ? rc : run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 30000);
    pspawn_session_destroy(s);
    int wrong = 0, count = 0;
    FILE *f = fopen(file, "re");
    while (f && fgets(line, sizeof line, f)) {
        int r;
        long pid, ppid;
        unsigned long cpus;
        count++;
        if (sscanf(line, "%d %ld %ld %lx", &r, &pid, &ppid, &cpus) != 4 || r < 0 || r >= N ||
            pid != (long)seen[r].pid || ppid != (long)getpid() || cpus != (r % 2 ? 2ul : 1ul))
            wrong++;
    }
    if (f)
        fclose(f);
    unlink(file);
    tap_ok(rc == 0 && count == N && wrong == 0,
           "each task runs bound to its own CPU set from main on, our child (%d lines, %d wrong)",
           count, wrong);
}

/* No argv: EINVAL; arguments over the stack limit's quarter: E2BIG. */
static void failures(pspawn_context_t *ctx)
{
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_tasks(3, NULL, NULL);
    size_t big_len = 3u << 20;      /* over a quarter of the default 8 MB stack */
    char *big = malloc(big_len + 1);
    if (!big)
        tap_bail("malloc");
    memset(big, 'x', big_len);
    big[big_len] = 0;
    char *big_argv[] = { task, big, NULL };
    tasks[0].argv = NULL;
    tasks[1].argv = big_argv;
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    struct rlimit stack = { 8u << 20, 8u << 20 };
    pspawn_attr_setrlimit(&attr, RLIMIT_STACK, &stack);
    int rc = pspawn_session_submit(s, tasks, 3, &attr, NULL, NULL);
    pspawn_attr_destroy(&attr);
    pspawn_task_status_t st0, st1;
    pspawn_session_status(s, 0, &st0);
    pspawn_session_status(s, 1, &st1);
    int early = st0.state == PSPAWN_TASK_FAILED && st1.state == PSPAWN_TASK_FAILED;
    rc = rc ? rc : run_loop(s, 0, 3, PSPAWN_WAIT_EXITED, 30000);
    free(big);
    tap_ok(rc == 0 && early && seen[0].failed == 1 && seen[0].error == EINVAL &&
           seen[0].has_reason && !seen[0].spawned,
           "no argv: FAILED at submit, EINVAL, with a reason (%s: %s)", strerror(seen[0].error),
           st0.reason ? st0.reason : "none");
    tap_ok(seen[1].failed == 1 && seen[1].error == E2BIG && seen[1].has_reason &&
           !seen[1].spawned, "3 MB of arguments: FAILED, E2BIG, with a reason (%s: %s)",
           strerror(seen[1].error), st1.reason ? st1.reason : "none");
    tap_ok(seen[2].spawned == 1 && seen[2].exited == 1 && WIFEXITED(seen[2].status) &&
           WEXITSTATUS(seen[2].status) == 0, "a good task beside them runs and exits 0");
    pspawn_session_destroy(s);
}

/* Cancel after the first tasks are created: each task either ran once
 * (SPAWNED) or never (FAILED, ECANCELED). */
static void cancel_mid_batch(pspawn_context_t *ctx, const char *what)
{
    enum { N = MAXT };
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    new_ranks_file();
    make_tasks(N, "append", file);
    int rc = pspawn_session_submit(s, tasks, N, NULL, NULL, NULL);
    pspawn_session_counts_t c = { 0 };
    for (int k = 0; k < 10000 && !rc && c.spawned + c.exited == 0; k++) {
        struct pollfd p = { pspawn_session_fd(s), POLLIN, 0 };
        poll(&p, 1, 10);
        pspawn_session_progress(s);
        drain(s, 0, N);
        pspawn_session_counts(s, &c);
    }
    size_t cancelled = pspawn_session_cancel(s);
    pspawn_session_counts(s, &c);
    size_t pending_after = c.pending;
    rc = rc ? rc : run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 60000);
    pspawn_session_destroy(s);
    int ran, bad = check_ranks(N, &ran), wrong_error = 0, bad_exit = 0, failed = 0;
    for (int i = 0; i < N; i++) {
        failed += seen[i].failed;
        wrong_error += seen[i].failed && (seen[i].error != ECANCELED || !seen[i].has_reason);
        bad_exit += seen[i].spawned && (seen[i].exited != 1 || seen[i].status != 0);
    }
    tap_ok(rc == 0 && cancelled > 0 && (int)cancelled == failed && ran + failed == N &&
           pending_after < (size_t)N,
           "%s: cancel mid-batch: %d ran, %zu cancelled (%zu pending right after)", what, ran,
           cancelled, pending_after);
    tap_ok(bad == 0 && wrong_error == 0 && bad_exit == 0 && !stray_events,
           "%s: each task ran exactly once as its pid, or never with ECANCELED (%d wrong, %d "
           "wrong errors, %d bad exits)", what, bad, wrong_error, bad_exit);
}

/* SIGKILL (or SIGSTOP) the zygote VICTIM (0: the root) once tasks are
 * being created: every task is still created exactly once; a stopped one
 * is found hung by the session's timer alone. */
static void zygote_hit(pspawn_context_t *ctx, int victim, int sig, const char *what)
{
    enum { N = 1000 };
    pspawn_zygote_info_t z[8];
    size_t nz = pspawn_context_zygotes(ctx, z, 8);
    if ((size_t)victim >= nz || z[victim].pid <= 0)
        tap_bail("%s: no zygote %d to kill", what, victim);
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    if (sig == SIGSTOP)
        pspawn_context_set_timeout(ctx, 300);
    new_ranks_file();
    make_tasks(N, "append", file);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu = 0; cpu < 4; cpu++)
        CPU_SET(cpu, &all);
    for (int i = 0; i < N && nz > 1; i++) {
        /* a fake topology's CPUs: spread over every zygote */
        tasks[i].cpuset = &all;
        tasks[i].cpusetsize = sizeof all;
    }
    int rc = pspawn_session_submit(s, tasks, N, NULL, NULL, NULL);
    pspawn_session_counts_t c = { 0 };
    for (int k = 0; k < 10000 && !rc && c.spawned + c.exited < 20; k++) {
        struct pollfd p = { pspawn_session_fd(s), POLLIN, 0 };
        poll(&p, 1, 10);
        pspawn_session_progress(s);
        drain(s, 0, N);
        pspawn_session_counts(s, &c);
    }
    kill(z[victim].pid, sig);
    size_t pending_at_kill = c.pending;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = rc ? rc : run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 60000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    pspawn_session_counts(s, &c);
    pspawn_session_destroy(s);
    int ran, bad = check_ranks(N, &ran), bad_exit = 0;
    for (int i = 0; i < N; i++)
        bad_exit += seen[i].spawned != 1 || seen[i].exited != 1 || seen[i].status != 0;
    tap_ok(rc == 0 && c.exited == N && pending_at_kill > 0 && secs < 20 * tap_time_scale(),
           "%s: hit with %zu tasks pending, all %d created all the same (%zu exited, %zu "
           "failed, %.2f s)", what, pending_at_kill, N, c.exited, c.failed, secs);
    tap_ok(bad == 0 && bad_exit == 0 && ran == N && !stray_events,
           "%s: each ran exactly once as the pid the session gave, and exited 0 (%d wrong, "
           "%d bad exits)", what, bad, bad_exit);
    const char *r = pspawn_context_reason(ctx);
    tap_diag("    reason: %s", r ? r : "none");
}

/* 10,000 tasks that exit at once through one session, in waves of 500
 * submitted as the last is created: no fd left behind. */
static void ten_thousand(pspawn_context_t *ctx)
{
    enum { WAVE = 500, WAVES = 20 };
    int before = open_fds();
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    int with_session = open_fds();
    make_tasks(WAVE, NULL, NULL);
    int rc = 0;
    size_t most_running = 0;
    for (int w = 0; w < WAVES && !rc; w++) {
        rc = pspawn_session_submit(s, tasks, WAVE, NULL, NULL, NULL);
        pspawn_session_counts_t c;
        do {
            if (!rc)
                rc = pspawn_session_wait(s, PSPAWN_WAIT_EVENT, 30000);
            pspawn_task_status_t st;
            while (pspawn_session_next(s, &st))
                ;
            pspawn_session_counts(s, &c);
            if (c.spawned > most_running)
                most_running = c.spawned;
        } while (!rc && c.pending > 0);
    }
    if (!rc)
        rc = pspawn_session_wait(s, PSPAWN_WAIT_EXITED, 60000);
    pspawn_session_counts_t c;
    pspawn_session_counts(s, &c);
    int after_exits = open_fds();
    pspawn_session_destroy(s);
    int after_destroy = open_fds();
    tap_ok(rc == 0 && c.tasks == WAVE * WAVES && c.exited == WAVE * WAVES && c.failed == 0,
           "10,000 tasks through one session: all exited (%zu of %zu; at most %zu running at "
           "once)", c.exited, c.tasks, most_running);
    tap_ok(after_exits == with_session && after_destroy == before,
           "no fd growth: %d before, %d with the session, %d after 10,000 exits, %d after "
           "destroy", before, with_session, after_exits, after_destroy);
}

/* A session with tasks pending has the context: pspawn_n waits its turn. */
static void sync_calls_beside(pspawn_context_t *ctx)
{
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_tasks(200, NULL, NULL);
    char *argv[] = { task, NULL };
    pid_t pids[4];
    int rc = pspawn_session_submit(s, tasks, 200, NULL, NULL, NULL);
    int busy = pspawn_n(pids, ctx, 4, argv);
    pspawn_session_t *other;
    pspawn_session_create(&other, ctx, 0);
    int busy2 = pspawn_session_submit(other, tasks, 1, NULL, NULL, NULL);
    int wrc = pspawn_session_wait(s, PSPAWN_WAIT_LAUNCHED, 30000);
    int ok = pspawn_n(pids, ctx, 4, argv);
    int reaped = 0;
    for (int i = 0; i < 4 && !ok; i++) {
        int st;
        reaped += waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && !WEXITSTATUS(st);
    }
    int erc = pspawn_session_wait(s, PSPAWN_WAIT_EXITED, 30000);
    tap_ok(rc == 0 && busy == EBUSY && busy2 == EBUSY && wrc == 0 && ok == 0 && reaped == 4 &&
           erc == 0, "while a session has tasks pending pspawn_n and another session's "
           "submit get EBUSY (%s, %s); once launched, pspawn_n works (%s, %d reaped) and the "
           "session still reaps its own", strerror(busy), strerror(busy2), strerror(ok), reaped);
    pspawn_session_destroy(other);
    pspawn_session_destroy(s);
}

struct hook_log {
    int calls[64];
    pid_t pid[64];
};

static void log_pid(void *arg, size_t index, pid_t pid)
{
    struct hook_log *h = arg;
    if (index < 64) {
        h->calls[index]++;
        h->pid[index] = pid;
    }
}

/* Two submits, the second while the first is in flight: numbered on from
 * the first; a pid hook gets each task's number and pid, once. */
static void hook_and_numbering(pspawn_context_t *ctx)
{
    enum { N = 20 };
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_exit_tasks(2 * N, 0);
    struct hook_log h;
    memset(&h, 0, sizeof h);
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_setpidhook(&attr, log_pid, &h);
    size_t first1 = 99, first2 = 99;
    int rc = pspawn_session_submit(s, tasks, N, &attr, NULL, &first1);
    int rc2 = pspawn_session_submit(s, tasks + N, N, &attr, NULL, &first2);
    pspawn_attr_destroy(&attr);
    int lrc = run_loop(s, 0, 2 * N, PSPAWN_WAIT_EXITED, 30000);
    int good = 0;
    for (int i = 0; i < 2 * N; i++)
        good += h.calls[i] == 1 && h.pid[i] == seen[i].pid && seen[i].exited == 1 &&
                WEXITSTATUS(seen[i].status) == i;
    tap_ok(rc == 0 && rc2 == 0 && lrc == 0 && first1 == 0 && first2 == N && good == 2 * N,
           "a second submit in flight is numbered on (%zu, %zu); the pid hook had each task's "
           "number and pid once, and task i exited i (%d of %d)", first1, first2, good, 2 * N);
    pspawn_session_destroy(s);
}

/* PSPAWN_FORCE_EXEC through a session: the exec path, a few at a time. */
static void exec_path(pspawn_context_t *ctx)
{
    enum { N = 40 };
    pspawn_session_t *s = new_session(ctx, PSPAWN_SESSION_REAP);
    make_exit_tasks(N, 50);
    int rc = submit_flagged(s, N, PSPAWN_FORCE_EXEC);
    rc = rc ? rc : run_loop(s, 0, N, PSPAWN_WAIT_EXITED, 30000);
    int good = 0;
    for (int i = 0; i < N; i++)
        good += seen[i].spawned == 1 && seen[i].parent_ok && seen[i].exited == 1 &&
                WEXITSTATUS(seen[i].status) == 50 + i;
    tap_ok(rc == 0 && good == N, "PSPAWN_FORCE_EXEC: %d of %d exec'd tasks ours, with their "
           "own exit code", good, N);
    pspawn_session_destroy(s);
}

static void with_context(const char *options, void (*test)(pspawn_context_t *))
{
    pspawn_context_t ctx;
    int rc = pspawn_context_create_opts(&ctx, task, NULL, options);
    if (rc || !pspawn_context_uses_zygote(&ctx))
        tap_bail("context (%s): %s", options, rc ? strerror(rc) : pspawn_context_reason(&ctx));
    test(&ctx);
    pspawn_context_destroy(&ctx);
}

static void kill_root(pspawn_context_t *ctx)
{
    zygote_hit(ctx, 0, SIGKILL, "root zygote SIGKILLed");
}

static void stop_root(pspawn_context_t *ctx)
{
    zygote_hit(ctx, 0, SIGSTOP, "root zygote SIGSTOPped, timeout 300 ms");
}

static void kill_sub(pspawn_context_t *ctx)
{
    zygote_hit(ctx, 1, SIGKILL, "fake 2 nodes x 2 cores, a sub-zygote SIGKILLed");
}

static void kill_fanout_root(pspawn_context_t *ctx)
{
    zygote_hit(ctx, 0, SIGKILL, "fake 2 nodes x 2 cores, the root SIGKILLed");
}

static void cancel_one(pspawn_context_t *ctx)
{
    cancel_mid_batch(ctx, "one zygote");
}

static void cancel_fanout(pspawn_context_t *ctx)
{
    cancel_mid_batch(ctx, "fake 2 nodes x 2 cores");
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    tap_watchdog(300);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    /* The tasks print (append, print): their fd 1 is /dev/null, the TAP
     * stream another fd of ours. */
    fflush(stdout);
    int tap_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    FILE *tap = tap_fd >= 0 ? fdopen(tap_fd, "w") : NULL;
    if (!tap || null < 0 || dup2(null, 1) < 0)
        tap_bail("cannot set the tasks' stdout aside");
    close(null);
    stdout = tap;

    with_context("fanout=none", async_and_exit_codes);
    with_context("fanout=none", caller_reaps);
    with_context("fanout=none", per_task_settings);
    with_context("fanout=none", per_task_cpus);
    with_context("fanout=none", failures);
    with_context("fanout=none", cancel_one);
    with_context("fanout=none", kill_root);
    with_context("fanout=none", stop_root);
    with_context("fanout=none", ten_thousand);
    with_context("fanout=none", sync_calls_beside);
    with_context("fanout=none", exec_path);
    with_context("fanout=none", hook_and_numbering);
    if (!tap_fanout_built()) {
        tap_skip("built without hwloc", "fan-out: a batch cancelled");
        tap_skip("built without hwloc", "fan-out: a sub-zygote SIGKILLed");
        tap_skip("built without hwloc", "fan-out: the root SIGKILLed");
    } else {
        setenv("HWLOC_SYNTHETIC", "node:2 core:2 pu:1", 1);
        with_context("fanout=core", cancel_fanout);
        with_context("fanout=core", kill_sub);
        with_context("fanout=core", kill_fanout_root);
        unsetenv("HWLOC_SYNTHETIC");
    }
    tap_ok(no_child_left(), "no process left once the contexts are destroyed");
    rmdir(dir);
    return tap_done();
}
