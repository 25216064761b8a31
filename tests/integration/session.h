/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * session.h - what tests/integration/session.c's cases share (header only, for that
 * one test): the tasks (tests/fixtures/task) with their argv, env and CPU sets, a
 * caller's loop on the session's fd, what the events said of each task,
 * and the ranks file every task that must run once appends to.
 */
#ifndef TESTS_SESSION_H
#define TESTS_SESSION_H

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../fixtures/procs.h"
#include "pspawn.h"
#include "../fixtures/tap.h"

enum { MAXT = 2000 };

static char task[PATH_MAX], dir[] = "/tmp/pspawn-session.XXXXXX", file[128];

/* What the events said of each task. */
struct seen {
    int spawned, failed, exited, out_of_order;
    pid_t pid;
    int parent_ok;          /* its parent was us when we learnt its pid */
    int error, has_reason, status;
};
static struct seen seen[MAXT];
static int stray_events;

/* Per-task argv, env and CPU set, kept until the session is done. */
static char rank_env[MAXT][32], code_arg[MAXT][16], label_arg[MAXT][32];
static char *envs[MAXT][2], *argvs[MAXT][6];
static cpu_set_t sets[MAXT];
static pspawn_task_t tasks[MAXT];

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1;   /* the directory's own */
}

static void drain(pspawn_session_t *s, size_t base, size_t n)
{
    pspawn_task_status_t st;
    while (pspawn_session_next(s, &st)) {
        if (st.index < base || st.index >= base + n) {
            stray_events++;
            continue;
        }
        struct seen *x = &seen[st.index - base];
        if (st.state == PSPAWN_TASK_SPAWNED) {
            x->spawned++;
            x->pid = st.pid;
            /* Not reaped yet: the session reaps in a later progress. */
            x->parent_ok = parent_of(st.pid) == (long)getpid();
            if (st.pidfd >= 0)
                close(st.pidfd);
        } else if (st.state == PSPAWN_TASK_FAILED) {
            x->failed++;
            x->error = st.error;
            x->has_reason = st.reason && *st.reason;
        } else if (st.state == PSPAWN_TASK_EXITED) {
            x->exited++;
            x->out_of_order += !x->spawned;
            x->status = st.wait_status;
        } else {
            stray_events++;
        }
    }
}

/* The caller's loop: poll the fd, progress, take the events, until UNTIL
 * holds (PSPAWN_WAIT_*) or TIMEOUT_MS.  Returns 0 or ETIMEDOUT. */
static int run_loop(pspawn_session_t *s, size_t base, size_t n, int until, int timeout_ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pspawn_session_progress(s);
        drain(s, base, n);
        pspawn_session_counts_t c;
        pspawn_session_counts(s, &c);
        if (c.pending == 0 && (until == PSPAWN_WAIT_LAUNCHED || c.spawned == 0))
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= timeout_ms)
            return ETIMEDOUT;
        /* The fd alone must wake us, for the zygotes' deadlines too. */
        struct pollfd p = { pspawn_session_fd(s), POLLIN, 0 };
        poll(&p, 1, (int)(timeout_ms - ms));
    }
}

static void reset_seen(void)
{
    memset(seen, 0, sizeof seen);
    stray_events = 0;
}

/* A file of its own for each case: a task a failed case left running
 * must not write into the next one's. */
static void new_ranks_file(void)
{
    static int cases;
    snprintf(file, sizeof file, "%s/ranks-%d", dir, ++cases);
}

/* Tasks 0..N-1 run ARGV0 MODE [ARG], with PSPAWN_RANK=i. */
static void make_tasks(int n, const char *mode, const char *arg)
{
    memset(tasks, 0, sizeof tasks);
    for (int i = 0; i < n; i++) {
        snprintf(rank_env[i], sizeof rank_env[i], "PSPAWN_RANK=%d", i);
        envs[i][0] = rank_env[i];
        envs[i][1] = NULL;
        argvs[i][0] = task;
        argvs[i][1] = (char *)mode;
        argvs[i][2] = (char *)arg;
        argvs[i][3] = NULL;
        tasks[i].argv = argvs[i];   /* ends at the first NULL */
        tasks[i].envp = envs[i];
    }
}

/* The ranks in FILE: each 0..N-1 once, written by the pid the session
 * gave it, or not at all for a task that failed.  Returns the number of
 * wrong ranks (missing, twice, by another pid, run though failed). */
static pspawn_session_t *new_session(pspawn_context_t *ctx, unsigned flags)
{
    pspawn_session_t *s;
    int rc = pspawn_session_create(&s, ctx, flags);
    if (rc)
        tap_bail("pspawn_session_create: %s", strerror(rc));
    reset_seen();
    return s;
}

/* Submit tasks 0..N-1 with an attr of FLAGS only (copied: destroyed at
 * once). */
static int submit_flagged(pspawn_session_t *s, int n, unsigned flags)
{
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_setflags(&attr, flags);
    int rc = pspawn_session_submit(s, tasks, (size_t)n, &attr, NULL, NULL);
    pspawn_attr_destroy(&attr);
    return rc;
}

/* Tasks 0..N-1 run "task exit BASE+i". */
static void make_exit_tasks(int n, int base)
{
    make_tasks(n, "exit", NULL);
    for (int i = 0; i < n; i++) {
        snprintf(code_arg[i], sizeof code_arg[i], "%d", base + i);
        argvs[i][2] = code_arg[i];
    }
}

static int check_ranks(int n, int *ran)
{
    static int count[MAXT];
    static long by[MAXT];
    memset(count, 0, sizeof count);
    FILE *f = fopen(file, "re");
    char line[128];
    int bad = 0;
    while (f && fgets(line, sizeof line, f)) {
        int r;
        long pid;
        if (sscanf(line, "%d %ld", &r, &pid) != 2 || r < 0 || r >= n) {
            bad++;
            continue;
        }
        count[r]++;
        by[r] = pid;
    }
    if (f)
        fclose(f);
    *ran = 0;
    for (int r = 0; r < n; r++) {
        *ran += count[r] > 0;
        if (seen[r].spawned == 1 && !seen[r].failed)
            bad += count[r] != 1 || by[r] != (long)seen[r].pid;
        else if (seen[r].failed == 1 && !seen[r].spawned)
            bad += count[r] != 0;
        else
            bad++;
    }
    unlink(file);
    return bad;
}

#endif
