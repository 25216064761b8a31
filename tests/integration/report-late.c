/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report-late - a request whose tasks finish their setup after their
 * zygote died.  A request's tasks say how their setup ended in the go
 * block, and the last to count itself out writes the request's one record
 * (wire/protocol.h): here that record, or a task's failure, comes after
 * the zygote (the root, and with fan-out a sub-zygote) was killed.  Each
 * task must be neither lost nor run twice, a failure must be the caller's
 * error, and the launcher must take them as they come, not at the lost
 * request's deadline (the context's timeout, 20 s here).
 *
 * Both tasks of the request open a FIFO in their setup (a file action),
 * which blocks them after their clone until this test opens its other
 * end, once the zygote is dead.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { NTASKS = 2, TIMEOUT_MS = 20000 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

struct launch {
    pspawn_context_t *ctx;
    pspawn_task_t tasks[NTASKS];
    pspawn_attr_t attr;
    int rc;
};

static void *launch_thread(void *arg)
{
    struct launch *l = arg;
    l->rc = pspawn_vector(l->ctx, l->tasks, NTASKS, &l->attr, NULL);
    return NULL;
}

/* Our children that are not zygotes of CTX (tasks are ours: CLONE_PARENT;
 * CTX NULL: all of them). */
static int tasks_alive(pspawn_context_t *ctx)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char path[64], buf[512];
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0 || (ctx && pspawn_context_owns(ctx, pid)))
            continue;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = 0;
        char *rp = strrchr(buf, ')');
        int ppid = 0;
        if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == (int)getpid())
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* How many lines of FILE say RANK PID. */
static int runs_of(const char *file, int rank, pid_t pid)
{
    FILE *f = fopen(file, "re");
    char line[128];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        int r;
        long p;
        if (sscanf(line, "%d %ld", &r, &p) == 2 && r == rank && (pid <= 0 || p == (long)pid))
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

/* One round: OPTIONS for the context, VICTIM the zygote killed (0 the
 * root, 1 a sub-zygote, whose CPUs the tasks are bound to); FAIL: the
 * tasks' setup then fails (a missing file, after the FIFO). */
static void round_(const char *task, const char *dir, const char *options, int victim, int fail)
{
    char label[160], fifo[PATH_MAX], file[PATH_MAX], missing[PATH_MAX];
    snprintf(label, sizeof label, "%s, %s killed, %s", options, victim ? "a sub-zygote" : "the root",
             fail ? "then their setup fails" : "then their setup ends well");
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(file, sizeof file, "%s/ranks", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    unlink(file);
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0)
        tap_bail("mkfifo: %s", strerror(errno));

    static pspawn_context_t ctx;
    if (pspawn_context_create_opts(&ctx, task, NULL, options) != 0)
        tap_bail("%s: no context", label);
    pspawn_context_set_timeout(&ctx, TIMEOUT_MS);
    pspawn_zygote_info_t z[4];
    size_t nz = pspawn_context_zygotes(&ctx, z, 4);
    pid_t zygote = (size_t)victim < nz ? z[victim].pid : -1;
    if (zygote <= 0)
        tap_bail("%s: no zygote %d (%zu zygotes)", label, victim, nz);

    static struct launch l;
    memset(&l, 0, sizeof l);
    l.ctx = &ctx;
    static char rank_env[NTASKS][32];
    static char *envs[NTASKS][2];
    char *argv[] = { (char *)task, "append", file, NULL };
    for (int i = 0; i < NTASKS; i++) {
        snprintf(rank_env[i], sizeof rank_env[i], "PSPAWN_RANK=%d", i);
        envs[i][0] = rank_env[i];
        envs[i][1] = NULL;
        l.tasks[i].argv = argv;
        l.tasks[i].envp = envs[i];
        if (victim) {
            l.tasks[i].cpuset = &z[victim].cpus;
            l.tasks[i].cpusetsize = sizeof z[victim].cpus;
        }
    }
    pspawn_attr_init(&l.attr);
    pspawn_attr_addopen(&l.attr, 5, fifo, O_RDONLY, 0);
    if (fail)
        pspawn_attr_addopen(&l.attr, 6, missing, O_RDONLY, 0);

    pthread_t thread;
    if (pthread_create(&thread, NULL, launch_thread, &l) != 0)
        tap_bail("pthread_create failed");
    /* Both cloned (and blocked in their setup), and the zygote done with
     * the request: then it dies. */
    double until = now() + 30;
    while (tasks_alive(&ctx) < NTASKS && now() < until)
        sleep_ms(10);
    int cloned = tasks_alive(&ctx);
    sleep_ms(200);
    kill(zygote, SIGKILL);
    /* The launcher sees it die (its pidfd) while the tasks still wait. */
    sleep_ms(300);
    double t_open = now();
    int w = open(fifo, O_WRONLY | O_CLOEXEC);
    pthread_join(thread, NULL);
    double took = now() - t_open;
    if (w >= 0)
        close(w);
    pspawn_attr_destroy(&l.attr);

    int reaped = 0, created = 0, failed = 0, st;
    for (int i = 0; i < NTASKS; i++) {
        created += l.tasks[i].pid > 0 && l.tasks[i].error == 0;
        failed += l.tasks[i].pid <= 0 && l.tasks[i].error == ENOENT;
        if (l.tasks[i].pid > 0 && waitpid(l.tasks[i].pid, &st, 0) == l.tasks[i].pid &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0)
            reaped++;
    }
    int once = 0, none = 0;
    for (int i = 0; i < NTASKS; i++) {
        once += runs_of(file, i, l.tasks[i].pid) == 1 && runs_of(file, i, 0) == 1;
        none += runs_of(file, i, 0) == 0;
    }
    tap_diag("    %s: %d cloned before the kill; the launch returned %.2f s after the FIFO opened "
             "(rc %d); reason: %s", label, cloned, took, l.rc,
             pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "(none)");
    if (fail)
        tap_ok(cloned == NTASKS && l.rc == ENOENT && failed == NTASKS && none == NTASKS &&
               took < 5.0,
               "%s: each task fails with ENOENT, as exec's would, and none runs (%d failed, "
               "%d ran none, %.2f s)", label, failed, none, took);
    else
        tap_ok(cloned == NTASKS && l.rc == 0 && created == NTASKS && once == NTASKS &&
               reaped == NTASKS && took < 5.0,
               "%s: each task is the caller's, ran exactly once by the pid returned, and exits 0 "
               "(%d created, %d once, %d reaped, %.2f s)", label, created, once, reaped, took);
    pspawn_context_destroy(&ctx);
    while (waitpid(-1, &st, WNOHANG) > 0)
        ;
    int left = tasks_alive(NULL);
    tap_ok(left == 0, "%s: no process of the context is left (%d)", label, left);
    unlink(fifo);
    unlink(file);
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX], dir[] = "/tmp/pspawn-late.XXXXXX";
    tap_watchdog(240);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    /* The tasks print nothing: "append" only appends. */
    round_(task, dir, "fanout=none", 0, 0);
    round_(task, dir, "fanout=none", 0, 1);
    cpu_set_t cs;
    if (!tap_fanout_built()) {
        for (int i = 0; i < 4; i++)
            tap_skip("built without hwloc", "fan-out: a sub-zygote killed, its tasks set up after");
    } else if (sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_COUNT(&cs) >= 2) {
        round_(task, dir, "fanout=core,subzygote=exec", 1, 0);
        round_(task, dir, "fanout=core,subzygote=fork", 1, 1);
    } else {
        for (int i = 0; i < 4; i++)
            tap_skip("one CPU", "fan-out: a sub-zygote killed, its tasks set up after");
    }
    rmdir(dir);
    return tap_done();
}
