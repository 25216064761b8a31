/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle - the zygote's life, through the API:
 *  1. orphan: the launcher is killed while its zygote loads (a library's
 *     constructor sleeps): the zygote exits, and the program's main never
 *     runs in it (while a daemon a constructor starts, which has not the
 *     launcher among its ancestors either, does run);
 *  2. process group: kill(0, SIGINT) and kill(-pgid, SIGTERM) from the
 *     launcher between batches: the same zygote serves the next batch, and
 *     each task is in its caller's process group;
 *  3. program by fd: the program is swapped for a static one (whose main
 *     leaves a mark) between its inspection and the zygote's exec: no
 *     zygote runs it, the tasks run what is on disk, once each;
 *  4. constructor fds: 100 are kept by every task; 1100 are refused with a
 *     reason and the tasks exec'd; without /proc (a mount namespace where
 *     it is hidden: root only), the fds are still found, a threaded
 *     program and one with a POSIX timer are still refused, and a zygote
 *     that cannot make a timer to count them refuses, saying so;
 *  5. /proc/PID/environ of the zygote and of a task holds no
 *     PSPAWN_ZYGOTE_ variable.
 * A library replaced on disk: tests/integration/lifecycle-libs.c.
 *
 * Uses $TESTS_BUILDDIR/{lifeprog,lifeprog-static,threaded,timers}.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Files in DIR whose names start with PREFIX; their pids (the rest of the
 * name) in PIDS, up to MAX. */
static int marks(const char *dir, const char *prefix, pid_t *pids, int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    size_t len = strlen(prefix);

    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, len) == 0) {
            if (n < max)
                pids[n] = (pid_t)atoi(e->d_name + len);
            n++;
        }
    if (d)
        closedir(d);
    return n;
}

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];

    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
}

/* Wait up to SECONDS for our child PID; its status, or -1 if it runs on. */
static int wait_for(pid_t pid, double seconds)
{
    double end = now() + seconds;
    int st;

    do {
        pid_t r = waitpid(pid, &st, WNOHANG);

        if (r == pid)
            return st;
        if (r < 0)
            return -2;
        sleep_ms(10);
    } while (now() < end);
    return -1;
}

/* ---- 1. the launcher dies while its zygote loads ------------------------ */

static void orphan(void)
{
    char dir[PATH_MAX];
    pid_t zygote = 0, launcher, found[4];
    int st;

    snprintf(dir, sizeof dir, "%s/orphan", tmp);
    mkdir(dir, 0755);
    /* The orphaned zygote becomes our child: we see it end. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    launcher = fork();
    if (launcher == 0) {
        pspawn_context_t ctx;

        setenv("PSPAWN_TEST_LIFE", "slow=1500", 1);
        setenv("PSPAWN_TEST_DIR", dir, 1);
        pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none");
        _exit(0);
    }
    for (int i = 0; i < 1000 && marks(dir, "ctor.", found, 4) == 0; i++)
        sleep_ms(10);
    if (marks(dir, "ctor.", found, 4) == 1)
        zygote = found[0];
    tap_ok(zygote > 0, "orphan: the zygote's library constructor started (pid %d)", (int)zygote);
    kill(launcher, SIGKILL);
    waitpid(launcher, &st, 0);
    st = zygote > 0 ? wait_for(zygote, 10) : -1;
    tap_ok(st >= 0, "orphan: the zygote exits once its launcher is gone (status %#x)", st);
    if (st == -1 && zygote > 0) {
        kill(zygote, SIGKILL);
        waitpid(zygote, &st, 0);
    }
    tap_ok(marks(dir, "main.", found, 4) == 0, "orphan: the program's main never ran (%d marks)",
           marks(dir, "main.", found, 4));
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

/* A helper a library's constructor starts as a daemon (double fork) has
 * the zygote's variables and not its launcher among its ancestors, as an
 * orphaned zygote has: it is no zygote, and runs. */
static void daemon_helper(void)
{
    char dir[PATH_MAX];
    pid_t found[4];
    pspawn_context_t ctx;

    snprintf(dir, sizeof dir, "%s/daemon", tmp);
    mkdir(dir, 0755);
    setenv("PSPAWN_TEST_LIFE", "daemon=1", 1);
    setenv("PSPAWN_TEST_DIR", dir, 1);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    for (int i = 0; i < 500 && marks(dir, "daemon.", found, 4) == 0; i++)
        sleep_ms(10);
    tap_ok(pspawn_context_uses_zygote(&ctx) && marks(dir, "daemon.", found, 4) == 1 &&
           marks(dir, "main.", found, 4) == 0,
           "a daemon a constructor started runs (%d marks), and no main ran",
           marks(dir, "daemon.", found, 4));
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_LIFE");
    unsetenv("PSPAWN_TEST_DIR");
}

/* ---- 2. the terminal's signals ------------------------------------------ */

static int pgids_ok(const char *file, int n)
{
    FILE *f = fopen(file, "re");
    int pid, pgid, lines = 0, good = 0;

    while (f && fscanf(f, "%d %d", &pid, &pgid) == 2) {
        lines++;
        good += pgid == (int)getpgrp();
    }
    if (f)
        fclose(f);
    if (good != n || lines != n)
        tap_diag("%d lines, %d in our group %d", lines, good, (int)getpgrp());
    return good == n && lines == n;
}

static void process_group(void)
{
    pspawn_context_t ctx;
    char file[PATH_MAX];
    char *argv[] = { lifeprog, "pgid", file, NULL };
    static const struct { int sig; int whole_group; const char *what; } hits[] = {
        { SIGINT, 0, "kill(0, SIGINT)" },
        { SIGTERM, 1, "kill(-pgid, SIGTERM)" },
        { SIGHUP, 0, "kill(0, SIGHUP)" },
    };

    snprintf(file, sizeof file, "%s/pgids", tmp);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    pid_t zygote = pspawn_context_zygote_pid(&ctx);
    tap_ok(pspawn_context_uses_zygote(&ctx) && run(&ctx, 2, argv, NULL, NULL) == 2 &&
           pgids_ok(file, 2), "process group: a first batch through zygote %d, in our group",
           (int)zygote);
    for (size_t h = 0; h < sizeof hits / sizeof hits[0]; h++) {
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        int st;

        sigaction(hits[h].sig, &ign, &old);
        kill(hits[h].whole_group ? -getpgrp() : 0, hits[h].sig);
        sigaction(hits[h].sig, &old, NULL);
        sleep_ms(100);
        pid_t dead = waitpid(zygote, &st, WNOHANG);
        tap_ok(dead == 0, "process group: %s reaches no zygote (%s)", hits[h].what,
               dead == 0 ? "alive" : "it died");
        unlink(file);
        int ran = run(&ctx, 2, argv, NULL, NULL);
        tap_ok(ran == 2 && pgids_ok(file, 2) && pspawn_context_uses_zygote(&ctx) &&
               pspawn_context_zygote_pid(&ctx) == zygote,
               "process group: after %s the same zygote serves, tasks in our group (%d ran; %s)",
               hits[h].what, ran, pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "");
    }
    pspawn_context_destroy(&ctx);
}

/* ---- 3. the program swapped between its inspection and the exec -------- */

/* The launcher calls socketpair() once it inspected the program and
 * before it execs the zygote, and access("/proc/self/fd") once it opened
 * the program it execs: the swap happens there. */
static char swap_from[PATH_MAX], swap_to[PATH_MAX];
static const char *swap_at;

static void swap_now(const char *where)
{
    if (swap_at && strcmp(swap_at, where) == 0) {
        if (rename(swap_from, swap_to) != 0)
            tap_diag("rename: %s", strerror(errno));
        swap_at = NULL;
    }
}

int socketpair(int domain, int type, int protocol, int sv[2])
{
    static int (*real)(int, int, int, int *);

    if (!real)
        real = (int (*)(int, int, int, int *))dlsym(RTLD_NEXT, "socketpair");
    swap_now("socketpair");
    return real(domain, type, protocol, sv);
}

int access(const char *path, int mode)
{
    static int (*real)(const char *, int);

    if (!real)
        real = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");
    if (strcmp(path, "/proc/self/fd") == 0)
        swap_now("access");
    return real(path, mode);
}

static void swapped_program(const char *where)
{
    char dir[PATH_MAX], prog[PATH_MAX], stat_prog[PATH_MAX];
    char *argv[] = { prog, NULL };
    pid_t pids[4], found[16];
    pspawn_context_t ctx;

    snprintf(dir, sizeof dir, "%s/swap", tmp);
    mkdir(dir, 0755);
    clear_dir(dir);
    snprintf(prog, sizeof prog, "%s/prog", tmp);
    snprintf(stat_prog, sizeof stat_prog, "%s/lifeprog-static", builddir);
    if (copy_file(lifeprog, prog, 0755))
        tap_bail("cannot copy %s", lifeprog);
    snprintf(swap_from, sizeof swap_from, "%s/prog-static", tmp);
    if (copy_file(stat_prog, swap_from, 0755))
        tap_bail("cannot copy %s", stat_prog);
    snprintf(swap_to, sizeof swap_to, "%s", prog);
    setenv("PSPAWN_TEST_DIR", dir, 1);
    swap_at = where;
    int rc = pspawn_context_create_opts(&ctx, prog, NULL, "fanout=none");
    swap_at = NULL;
    if (rc)
        tap_bail("pspawn_context_create_opts: %s", strerror(rc));
    int ran = run(&ctx, 3, argv, NULL, pids);
    sleep_ms(200);   /* a zygote that ran main has left its mark by now */
    int n = marks(dir, "main.", found, 16), ours = 0;
    for (int i = 0; i < n && i < 16; i++)
        for (int k = 0; k < 3; k++)
            ours += found[i] == pids[k];
    tap_ok(ran == 3 && n == 3 && ours == 3,
           "program swapped at %s(): the 3 tasks ran it once each, no zygote ran its main "
           "(%d ran, %d marks, %d of them tasks'; %s)", where, ran, n, ours,
           pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "no reason");
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_DIR");
}

/* ---- 4. constructor fds, and no /proc ----------------------------------- */

static void ctor_fds(const char *label, int nfds, int expect_zygote)
{
    char opt[64];
    char *argv[] = { lifeprog, "fds", NULL };
    pspawn_context_t ctx;

    snprintf(opt, sizeof opt, "fds=%d", nfds);
    setenv("PSPAWN_TEST_LIFE", opt, 1);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    const char *why = pspawn_context_reason(&ctx);
    int zyg = pspawn_context_uses_zygote(&ctx);
    int ran = run(&ctx, 3, argv, NULL, NULL);
    if (expect_zygote)
        tap_ok(zyg && ran == 3 && pspawn_context_uses_zygote(&ctx),
               "%s%d constructor fds: every task through the zygote has them all (%d of 3; %s)",
               label, nfds, ran, why ? why : "no fallback");
    else
        tap_ok(!zyg && ran == 3 && why && strstr(why, "fds open"),
               "%s%d constructor fds: refused with the reason (%s), the tasks exec'd with them "
               "(%d of 3)", label, nfds, why ? why : "none", ran);
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_LIFE");
}

static void threaded(const char *label)
{
    char prog[PATH_MAX], file[PATH_MAX];
    char *argv[] = { prog, file, NULL };
    pspawn_context_t ctx;

    snprintf(prog, sizeof prog, "%s/threaded", builddir);
    snprintf(file, sizeof file, "%s/threaded.out", tmp);
    if (pspawn_context_create_opts(&ctx, prog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    const char *why = pspawn_context_reason(&ctx);
    int ran = run(&ctx, 1, argv, "/dev/null", NULL);
    tap_ok(!pspawn_context_uses_zygote(&ctx) && why && strstr(why, "thread") && ran == 1,
           "%sa program with a thread at main is refused (%s)", label, why ? why : "no reason");
    pspawn_context_destroy(&ctx);
}

/* A constructor's POSIX timer is found without /proc (timer numbers); and
 * where no timer can be made to find them (RLIMIT_SIGPENDING 0), the
 * zygote cannot tell, and says so instead of serving. */
static void posix_timers(const char *label)
{
    char prog[PATH_MAX], file[PATH_MAX];
    char *argv[] = { prog, file, NULL };
    pspawn_context_t ctx;
    const char *why;

    snprintf(prog, sizeof prog, "%s/timers", builddir);
    snprintf(file, sizeof file, "%s/timers.out", tmp);
    setenv("PSPAWN_TEST_TIMERS", "posix", 1);
    if (pspawn_context_create_opts(&ctx, prog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    why = pspawn_context_reason(&ctx);
    int ran = run(&ctx, 1, argv, "/dev/null", NULL);
    tap_ok(!pspawn_context_uses_zygote(&ctx) && why && strstr(why, "POSIX timers at main (1:") &&
           ran == 1, "%sa program with a POSIX timer at main is refused (%s)", label,
           why ? why : "no reason");
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_TIMERS");

    struct rlimit saved, none;
    char *plain[] = { lifeprog, "fds", NULL };
    getrlimit(RLIMIT_SIGPENDING, &saved);
    none = saved;
    none.rlim_cur = 0;
    setrlimit(RLIMIT_SIGPENDING, &none);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    setrlimit(RLIMIT_SIGPENDING, &saved);
    why = pspawn_context_reason(&ctx);
    ran = run(&ctx, 1, plain, NULL, NULL);
    tap_ok(!pspawn_context_uses_zygote(&ctx) && why &&
           strstr(why, "cannot tell whether the zygote has POSIX timers") && ran == 1,
           "%sno timer can be made to count them: refused, it cannot tell (%s)", label,
           why ? why : "no reason");
    pspawn_context_destroy(&ctx);
}

/* In a child, in a mount namespace of its own with /proc hidden. */
static void without_proc(void)
{
    fflush(stdout);
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        int failed = tap_failed;

        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("none", "/proc", "tmpfs", 0, NULL) != 0) {
            printf("# cannot hide /proc: %s\n", strerror(errno));
            _exit(3);
        }
        ctor_fds("no /proc: ", 100, 1);
        threaded("no /proc: ");
        posix_timers("no /proc: ");
        fflush(stdout);
        _exit(tap_failed - failed);
    }
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
        tap_skip("needs root, to hide /proc in a mount namespace", "no /proc: constructor fds");
        tap_skip("needs root, to hide /proc in a mount namespace", "no /proc: threads");
        tap_skip("needs root, to hide /proc in a mount namespace", "no /proc: POSIX timers");
        tap_skip("needs root, to hide /proc in a mount namespace",
                 "no /proc: POSIX timers, cannot tell");
        return;
    }
    /* The child's results were printed with our numbers: count them. */
    tap_count += 4;
    tap_failed += WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

/* ---- 5. /proc/PID/environ ----------------------------------------------- */

static void environ_block(void)
{
    char *check[] = { lifeprog, "environ", NULL }, *hold[] = { lifeprog, "sleep", "3000", NULL };
    char path[64];
    pspawn_context_t ctx;
    pid_t task;
    int st;

    setenv("PSPAWN_TEST_DIR", tmp, 1);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, "fanout=none") != 0)
        tap_bail("pspawn_context_create_opts failed");
    pid_t zygote = pspawn_context_zygote_pid(&ctx);
    snprintf(path, sizeof path, "/proc/%d/environ", (int)zygote);
    tap_ok(zygote > 0 && file_has(path, "PSPAWN_ZYGOTE_") == 0 && file_has(path, "PSPAWN_TEST_DIR=") == 1,
           "environ: the zygote's /proc/PID/environ holds no PSPAWN_ZYGOTE_ (has %d)",
           file_has(path, "PSPAWN_ZYGOTE_"));
    tap_ok(run(&ctx, 2, check, NULL, NULL) == 2,
           "environ: a task's own /proc/self/environ holds none");
    task = pspawn(&ctx, hold);
    sleep_ms(200);
    snprintf(path, sizeof path, "/proc/%d/environ", (int)task);
    tap_ok(task > 0 && file_has(path, "PSPAWN_ZYGOTE_") == 0 && file_has(path, "PSPAWN_TEST_DIR=") == 1,
           "environ: nor does a running task's, read by its launcher");
    kill(task, SIGKILL);
    waitpid(task, &st, 0);
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_DIR");
}

int main(void)
{
    lifecycle_start("lifecycle");

    orphan();
    daemon_helper();
    process_group();
    swapped_program("socketpair");
    swapped_program("access");
    ctor_fds("", 100, 1);
    ctor_fds("", 1100, 0);
    threaded("");
    without_proc();
    environ_block();

    return lifecycle_finish();
}
