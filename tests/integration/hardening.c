/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hardening - the launcher's side of issue-level defects, each checked
 * where it would show:
 *
 *   - pspawn_n_ex() with PSPAWN_PIDFD leaked one pidfd per task;
 *   - the E2BIG check used the caller's RLIMIT_STACK, not the one the
 *     task gets from its attributes (which is what execve checks);
 *   - a caller that changed session since the zygote started, asking for
 *     a new process group, got a task in the zygote's session;
 *   - a task the zygote could not clone (its pids cgroup full) was lost
 *     with EAGAIN instead of being exec'd;
 *   - PSPAWN_TIMEOUT that is not a number of seconds.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

static char task[PATH_MAX];

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int reap_ok(pid_t pid)
{
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Field 6 of /proc/PID/stat: its session. */
static long session_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    long ppid, pgrp, sid;
    char state;
    return p && sscanf(p + 2, "%c %ld %ld %ld", &state, &ppid, &pgrp, &sid) == 4 ? sid : -1;
}

static void pidfd_leak(pspawn_context_t *ctx)
{
    char *argv[] = { task, NULL };
    pspawn_attr_t attr;
    pspawn_attr_init(&attr);
    pspawn_attr_setflags(&attr, PSPAWN_PIDFD);
    int before = count_fds(), ok = 1;
    for (int r = 0; r < 25; r++) {
        pid_t pids[4];
        ok &= pspawn_n_ex(pids, ctx, 4, &attr, argv, NULL) == 0;
        for (int i = 0; i < 4; i++)
            ok &= reap_ok(pids[i]);
    }
    tap_ok(ok && count_fds() == before,
           "pspawn_n_ex with PSPAWN_PIDFD: 100 tasks, no fd left behind (%d fds before, %d after)",
           before, count_fds());
    /* A call that fails before any task exists closes nothing of ours. */
    pspawn_attr_adddup2(&attr, 987, 5);  /* not open */
    pid_t pid;
    int err = pspawn_n_ex(&pid, ctx, 1, &attr, argv, NULL);
    tap_ok(err == EBADF && fcntl(0, F_GETFD) >= 0 && count_fds() == before,
           "a call refused with EBADF (%s) closes none of the caller's fds", strerror(err));
    pspawn_attr_destroy(&attr);
}

/* ~200 KB of arguments: under the default stack limit's quarter, over a
 * quarter of 512 KB. */
static void e2big_by_task_limit(pspawn_context_t *ctx)
{
    static char big[3][50000];
    char *argv[6] = { task, "print" };
    for (int i = 0; i < 3; i++) {
        memset(big[i], 'x', sizeof big[i] - 1);
        big[i][sizeof big[i] - 1] = 0;
        argv[2 + i] = big[i];
    }
    argv[5] = NULL;
    struct rlimit small = { 512 * 1024, RLIM_INFINITY };
    for (int exec = 0; exec < 2; exec++) {
        pspawn_attr_t attr;
        pspawn_attr_init(&attr);
        pspawn_attr_addopen(&attr, 1, "/dev/null", O_WRONLY, 0);    /* it prints them */
        if (exec)
            pspawn_attr_setflags(&attr, PSPAWN_FORCE_EXEC);
        pid_t pid = -1;
        int ok_default = pspawn_ex(&pid, ctx, &attr, argv, NULL) == 0 && reap_ok(pid);
        pspawn_attr_setrlimit(&attr, RLIMIT_STACK, &small);
        pid = -1;
        int err = pspawn_ex(&pid, ctx, &attr, argv, NULL);
        tap_ok(ok_default && err == E2BIG && pid == -1,
               "%s: 150 KB of arguments run with the caller's stack limit, and fail with E2BIG "
               "(%s) for a task whose RLIMIT_STACK is 512 KB", exec ? "exec path" : "zygote",
               strerror(err));
        pspawn_attr_destroy(&attr);
    }
}

/* In a child: make a context, leave the session, ask for a new group. */
static void session_changed(void)
{
    int pipefd[2];
    if (pipe(pipefd) < 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        pspawn_context_t ctx;
        long result = -2;
        if (pspawn_context_create_opts(&ctx, task, NULL, "fanout=none") == 0) {
            setsid();
            pspawn_attr_t attr;
            pspawn_attr_init(&attr);
            pspawn_attr_setpgroup(&attr, 0);
            char *argv[] = { task, "wait", NULL };
            pid_t pid;
            if (pspawn_ex(&pid, &ctx, &attr, argv, NULL) == 0) {
                usleep(100000);
                long sid = session_of(pid);
                result = sid == getsid(0) ? 1 : sid;
                kill(pid, SIGTERM);
                waitpid(pid, NULL, 0);
            }
            pspawn_attr_destroy(&attr);
            pspawn_context_destroy(&ctx);
        }
        if (write(pipefd[1], &result, sizeof result) < 0)
            _exit(1);
        _exit(0);
    }
    close(pipefd[1]);
    long result = -3;
    if (read(pipefd[0], &result, sizeof result) != sizeof result)
        result = -3;
    close(pipefd[0]);
    waitpid(child, NULL, 0);
    tap_ok(result == 1, "a caller that left the zygote's session and asks for a new process "
           "group: its task is in the caller's session (%ld)", result);
}

/* The zygote alone in a pids cgroup that allows no more: its clones fail
 * (EAGAIN), so each task is exec'd, once. */
static void clone_fails(pspawn_context_t *ctx)
{
    const char *roots[] = { "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
    char dir[PATH_MAX] = "", file[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof roots / sizeof roots[0] && !dir[0]; i++) {
        struct stat st;
        snprintf(file, sizeof file, "%s/cgroup.procs", roots[i]);
        if (stat(file, &st) < 0)
            continue;
        snprintf(dir, sizeof dir, "%s/pspawn-hardening-%d", roots[i], (int)getpid());
        snprintf(file, sizeof file, "%s/pids.max", dir);
        if (mkdir(dir, 0755) < 0 || access(file, W_OK) < 0) {
            rmdir(dir);
            dir[0] = 0;
        }
    }
    if (!dir[0]) {
        tap_skip("no pids cgroup this test may create (needs root)",
                 "a task the zygote cannot clone is exec'd");
        return;
    }
    pid_t z = pspawn_context_zygote_pid(ctx);
    char pid_text[32];
    int n = snprintf(pid_text, sizeof pid_text, "%d", (int)z);
    snprintf(file, sizeof file, "%s/pids.max", dir);
    int fd = open(file, O_WRONLY);
    int set = fd >= 0 && write(fd, "1", 1) == 1;
    if (fd >= 0)
        close(fd);
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    fd = open(file, O_WRONLY);
    set &= fd >= 0 && write(fd, pid_text, (size_t)n) == n;
    if (fd >= 0)
        close(fd);

    enum { N = 3 };
    pspawn_task_t tasks[N];
    char *argv[] = { task, NULL };
    memset(tasks, 0, sizeof tasks);
    for (int i = 0; i < N; i++)
        tasks[i].argv = argv;
    int err = pspawn_vector(ctx, tasks, N, NULL, NULL);
    const char *why = pspawn_context_reason(ctx);
    int ok = set && err == 0;
    for (int i = 0; i < N; i++)
        ok &= reap_ok(tasks[i].pid);
    tap_ok(ok && why && strstr(why, "could not create"),
           "the zygote's pids cgroup full: %d tasks exec'd instead (error %d, reason: %s)", N,
           err, why ? why : "none");

    /* Back where it was, and the cgroup gone. */
    char root_procs[PATH_MAX + 32];
    snprintf(root_procs, sizeof root_procs, "%.*s/cgroup.procs",
             (int)(strrchr(dir, '/') - dir), dir);
    fd = open(root_procs, O_WRONLY);
    if (fd >= 0) {
        if (write(fd, pid_text, (size_t)n) < 0)
            tap_diag("could not move the zygote back: %s", strerror(errno));
        close(fd);
    }
    rmdir(dir);
}

int main(void)
{
    const char *dir = getenv("TESTS_BUILDDIR");
    snprintf(task, sizeof task, "%s/task", dir ? dir : "tests");
    pspawn_context_t ctx;
    int err = pspawn_context_create_opts(&ctx, task, NULL, "fanout=none");
    if (!tap_ok(err == 0 && pspawn_context_uses_zygote(&ctx), "a zygote for %s", task))
        return tap_done();
    pidfd_leak(&ctx);
    e2big_by_task_limit(&ctx);
    session_changed();
    clone_fails(&ctx);
    pspawn_context_destroy(&ctx);

    const char *bad[] = { "abc", "0", "-1", "1e300", "nan", "inf", "5s" };
    int refused = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("PSPAWN_TIMEOUT", bad[i], 1);
        refused += pspawn_context_create_opts(&ctx, task, NULL, "fanout=none") == EINVAL;
    }
    setenv("PSPAWN_TIMEOUT", "0.25", 1);
    err = pspawn_context_create_opts(&ctx, task, NULL, "fanout=none");
    if (!err)
        pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TIMEOUT");
    tap_ok(refused == 7 && err == 0, "PSPAWN_TIMEOUT: abc, 0, -1, 1e300, nan, inf and 5s "
           "refused with EINVAL (%d of 7), 0.25 taken", refused);
    return tap_done();
}
