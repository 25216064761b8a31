/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pidhook - pspawn_attr_setpidhook(): a launcher that reaps with
 * waitpid(-1) in another thread (prted does) knows every task's pid
 * before the task can exit.
 *
 * A reaper thread waits for any child and looks each pid up in what the
 * hook stored.  The hook stores the pid only after sleeping a few ms, and
 * each task exits at once: if a task could run before its hook returned,
 * the reaper would take its exit for an unknown pid.  Checked through a
 * zygote (direct mode), a vector call, and the exec path
 * (PSPAWN_FORCE_EXEC, a held fork); plus: the hook is given exactly the
 * pids the call returns, at their indices, and never a task whose setup
 * failed.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { MAX_KNOWN = 4096 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pid_t known[MAX_KNOWN];
static size_t nknown;
static int reaped, unknown, bad_status, stop;
static int hook_delay_us = 3000;

struct hooked {
    pid_t pid[256];
    int calls[256];
};

static void store_pid(void *arg, size_t index, pid_t pid)
{
    struct hooked *h = arg;
    /* A slow launch thread: the task must still wait for us. */
    struct timespec d = { 0, hook_delay_us * 1000L };
    nanosleep(&d, NULL);
    if (index < 256) {
        h->pid[index] = pid;
        h->calls[index]++;
    }
    pthread_mutex_lock(&lock);
    if (nknown < MAX_KNOWN)
        known[nknown++] = pid;
    pthread_mutex_unlock(&lock);
}

static void *reaper(void *arg)
{
    (void)arg;
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        pthread_mutex_lock(&lock);
        if (pid < 0) {
            int done = stop;
            pthread_mutex_unlock(&lock);
            if (done && errno == ECHILD)
                return NULL;
            struct timespec d = { 0, 1000000 };
            nanosleep(&d, NULL);
            continue;
        }
        int found = 0;
        for (size_t i = 0; i < nknown && !found; i++)
            found = known[i] == pid;
        if (found) {
            reaped++;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                bad_status++;
        } else {
            unknown++;
        }
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
    }
}

/* Wait until the reaper has seen N known tasks (or 10 s). */
static void await_reaped(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&lock);
    while (reaped < n && pthread_cond_timedwait(&cond, &lock, &until) == 0)
        ;
    pthread_mutex_unlock(&lock);
}

static void reset(void)
{
    pthread_mutex_lock(&lock);
    nknown = 0;
    reaped = unknown = bad_status = 0;
    pthread_mutex_unlock(&lock);
}

/* ROUNDS single spawns through CTX (flags FLAGS): every exit reaped as a
 * known pid, the hook given each returned pid once. */
static void singles(pspawn_context_t *ctx, const char *task, unsigned flags, int rounds,
                    const char *what)
{
    reset();
    char *argv[] = { (char *)task, NULL };
    int mismatch = 0, errs = 0;
    for (int r = 0; r < rounds; r++) {
        struct hooked h;
        memset(&h, 0, sizeof h);
        pspawn_attr_t attr;
        pspawn_attr_init(&attr);
        pspawn_attr_setflags(&attr, flags);
        pspawn_attr_setpidhook(&attr, store_pid, &h);
        pid_t pid = -1;
        int err = pspawn_ex(&pid, ctx, &attr, argv, NULL);
        pspawn_attr_destroy(&attr);
        if (err)
            errs++;
        else if (h.calls[0] != 1 || h.pid[0] != pid)
            mismatch++;
    }
    await_reaped(rounds - errs);
    pthread_mutex_lock(&lock);
    tap_ok(errs == 0 && mismatch == 0 && unknown == 0 && reaped == rounds && bad_status == 0,
           "%s: %d tasks that exit at once, each pid given to the hook before it ran "
           "(%d reaped as known, %d as unknown, %d errors, %d hook mismatches)",
           what, rounds, reaped, unknown, errs, mismatch);
    pthread_mutex_unlock(&lock);
}

int main(void)
{
    const char *dir = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX];
    snprintf(task, sizeof task, "%s/task", dir ? dir : "tests");
    int rounds = getenv("PIDHOOK_ROUNDS") ? atoi(getenv("PIDHOOK_ROUNDS")) : 100;

    pthread_t th;
    pthread_create(&th, NULL, reaper, NULL);

    pspawn_context_t ctx;
    int err = pspawn_context_create_opts(&ctx, task, NULL, "fanout=none");
    if (!tap_ok(err == 0 && pspawn_context_uses_zygote(&ctx), "a zygote for %s", task))
        return tap_done();

    singles(&ctx, task, 0, rounds, "zygote");
    singles(&ctx, task, PSPAWN_FORCE_EXEC, rounds / 2, "exec path (held fork)");

    /* A vector: the hook gets each task's index and the pid the call
     * returns for it. */
    reset();
    hook_delay_us = 200;
    enum { N = 200 };
    pspawn_task_t tasks[N];
    char *argv[] = { task, NULL };
    memset(tasks, 0, sizeof tasks);
    for (int i = 0; i < N; i++)
        tasks[i].argv = argv;
    struct hooked h;
    memset(&h, 0, sizeof h);
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_setpidhook(&attr, store_pid, &h);
    err = pspawn_vector(&ctx, tasks, N, &attr, NULL);
    int same = 1;
    for (int i = 0; i < N; i++)
        same &= h.calls[i] == 1 && h.pid[i] == tasks[i].pid;
    await_reaped(N);
    pthread_mutex_lock(&lock);
    tap_ok(err == 0 && same && unknown == 0 && reaped == N,
           "vector of %d: the hook had every task's index and pid before it ran "
           "(%d reaped as known, %d unknown)", N, reaped, unknown);
    pthread_mutex_unlock(&lock);

    /* A task whose setup fails (no such cwd) is never given to the hook. */
    memset(&h, 0, sizeof h);
    pspawn_attr_setcwd(&attr, "/nonexistent/pidhook");
    pid_t pid = -1;
    err = pspawn_ex(&pid, &ctx, &attr, argv, NULL);
    tap_ok(err == ENOENT && h.calls[0] == 0,
           "a task whose setup fails: ENOENT (%s), the hook never called", strerror(err));
    pspawn_attr_setflags(&attr, PSPAWN_FORCE_EXEC);
    err = pspawn_ex(&pid, &ctx, &attr, argv, NULL);
    tap_ok(err == ENOENT && h.calls[0] == 0,
           "the same on the exec path: ENOENT (%s), the hook never called", strerror(err));
    pspawn_attr_destroy(&attr);

    pspawn_context_destroy(&ctx);
    pthread_mutex_lock(&lock);
    stop = 1;
    pthread_mutex_unlock(&lock);
    pthread_join(th, NULL);
    return tap_done();
}
