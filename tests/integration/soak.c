/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak - 10,000 spawns through one context leak nothing:
 *   the launcher's fd count is the same after them (and back to where it
 *   was once the context is destroyed), no zombie is left, the zygote's
 *   VmRSS and fd count after 10,000 spawns are within a small margin of
 *   those after the first 1,000, and the context still uses its zygote.
 *
 * 100 batches of 100, in turn through pspawn(), pspawn_n(), pspawn_vector()
 * and pspawn_n_ex() with file actions; every task is reaped here and must
 * exit 0.
 *
 * Uses $TESTS_BUILDDIR/task (no argument: exits 0 at once).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { BATCHES = 100, BATCH = 100, RSS_MARGIN_KB = 1024 };

static int count_fds(pid_t pid)
{
    char path[64];
    DIR *d;
    struct dirent *de;
    int n = 0;

    snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
    d = opendir(path);
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return pid == getpid() ? n - 1 : n;   /* not the one reading */
}

static long vm_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* Children of this process: all of them, and the zombies among them. */
static void count_children(int *all, int *zombies)
{
    DIR *d = opendir("/proc");
    struct dirent *de;

    *all = *zombies = 0;
    while (d && (de = readdir(d)) != NULL) {
        char path[300], buf[512], *p, state;
        long ppid;
        FILE *f;

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        f = fopen(path, "re");
        if (!f)
            continue;
        p = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (p && sscanf(p + 1, " %c %ld", &state, &ppid) == 2 && ppid == (long)getpid()) {
            (*all)++;
            *zombies += state == 'Z';
        }
    }
    if (d)
        closedir(d);
}

static int reap(pid_t pid)
{
    int st;

    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* One batch of BATCH tasks, in turn through pspawn(), pspawn_n(),
 * pspawn_vector() and pspawn_n_ex() (with ATTR's file actions); their
 * pids (or -1) in pids.  ERRORS counts the failed calls, the first 5 shown. */
static void spawn_batch(pspawn_context_t *ctx, pspawn_attr_t *attr, char **argv, int batch,
                        pid_t *pids, int *errors)
{
    static pspawn_task_t tasks[BATCH];
    int rc;

    switch (batch % 4) {
    case 0:
        for (int i = 0; i < BATCH; i++) {
            pids[i] = pspawn(ctx, argv);
            if (pids[i] < 0 && (*errors)++ < 5)
                tap_diag("    pspawn: %s", strerror(errno));
        }
        break;
    case 1:
        rc = pspawn_n(pids, ctx, BATCH, argv);
        if (rc && (*errors)++ < 5)
            tap_diag("    pspawn_n: %s", strerror(rc));
        break;
    case 2:
        memset(tasks, 0, sizeof tasks);
        for (int i = 0; i < BATCH; i++)
            tasks[i].argv = argv;
        rc = pspawn_vector(ctx, tasks, BATCH, NULL, NULL);
        if (rc && (*errors)++ < 5)
            tap_diag("    pspawn_vector: %s", strerror(rc));
        for (int i = 0; i < BATCH; i++)
            pids[i] = tasks[i].pid;
        break;
    default:
        rc = pspawn_n_ex(pids, ctx, BATCH, attr, argv, NULL);
        if (rc && (*errors)++ < 5)
            tap_diag("    pspawn_n_ex: %s", strerror(rc));
        break;
    }
}

struct soak {
    int spawned, exited_ok, errors, zfds_1000;
    long rss_1000;
    double seconds;
};

/* All the batches, each reaped before the next; the zygote's VmRSS and
 * fd count taken after the first 1,000 spawns. */
static void run_batches(pspawn_context_t *ctx, pspawn_attr_t *attr, char **argv, pid_t zygote,
                        struct soak *s)
{
    pid_t pids[BATCH];
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int batch = 0; batch < BATCHES; batch++) {
        spawn_batch(ctx, attr, argv, batch, pids, &s->errors);
        for (int i = 0; i < BATCH; i++) {
            s->spawned += pids[i] > 0;
            s->exited_ok += reap(pids[i]);
        }
        if (batch == 1000 / BATCH - 1) {
            s->rss_1000 = vm_rss_kb(zygote);
            s->zfds_1000 = count_fds(zygote);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX];
    char *argv[2];
    pspawn_context_t ctx;
    pspawn_attr_t attr;
    pid_t zygote;
    int fds_before, fds_created, fds_after, zfds_end, rc, all, zombies;
    long rss_end;
    struct soak s = { .zfds_1000 = -1, .rss_1000 = -1 };
    pid_t w;

    tap_watchdog(150);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    argv[0] = task;
    argv[1] = NULL;

    fds_before = count_fds(getpid());
    rc = pspawn_context_create(&ctx, task, -1);
    if (rc != 0)
        tap_bail("pspawn_context_create(%s): %s", task, strerror(rc));
    zygote = pspawn_context_zygote_pid(&ctx);
    fds_created = count_fds(getpid());
    pspawn_attr_init(&attr);
    pspawn_attr_addopen(&attr, 3, "/dev/null", O_RDONLY, 0);
    pspawn_attr_adddup2(&attr, 2, 4);

    run_batches(&ctx, &attr, argv, zygote, &s);
    rss_end = vm_rss_kb(zygote);
    zfds_end = count_fds(zygote);
    fds_after = count_fds(getpid());
    count_children(&all, &zombies);
    pspawn_attr_destroy(&attr);

    tap_ok(s.spawned == BATCHES * BATCH && s.exited_ok == BATCHES * BATCH,
           "%d spawns: %d created, %d reaped with exit 0 (%.2f s)", BATCHES * BATCH, s.spawned,
           s.exited_ok, s.seconds);
    tap_ok(pspawn_context_uses_zygote(&ctx) && !pspawn_context_reason(&ctx),
           "still served by the zygote (pid %ld) after all of them", (long)zygote);
    tap_ok(fds_after == fds_created, "launcher fd count flat: %d after creating the context, %d after",
           fds_created, fds_after);
    tap_ok(zombies == 0 && all == 1, "no zombie: children left %d (the zygote), zombies %d",
           all, zombies);
    tap_ok(s.rss_1000 > 0 && rss_end > 0 && rss_end - s.rss_1000 <= RSS_MARGIN_KB,
           "zygote VmRSS flat: %ld kB after 1,000, %ld kB after 10,000 (margin %d kB)",
           s.rss_1000, rss_end, RSS_MARGIN_KB);
    tap_ok(s.zfds_1000 > 0 && zfds_end == s.zfds_1000,
           "zygote fd count flat: %d after 1,000, %d after 10,000", s.zfds_1000, zfds_end);

    pspawn_context_destroy(&ctx);
    tap_ok(count_fds(getpid()) == fds_before, "launcher fd count back to %d after destroy (%d)",
           fds_before, count_fds(getpid()));
    w = waitpid(-1, NULL, WNOHANG);
    tap_ok(w == -1 && errno == ECHILD, "no child at all after destroy (waitpid: %ld)", (long)w);
    return tap_done();
}
