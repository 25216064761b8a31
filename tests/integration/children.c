/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * children - a task from the zygote is the launcher's own child, as after
 * fork+exec: the launcher gets SIGCHLD with the task's pid and status,
 * waitpid(-1) returns exactly the tasks, a task's exit code and killing
 * signal reach the launcher, and job control (stop, continue) is reported
 * to it.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

enum { NTASKS = 20 };

static pid_t spawn(pspawn_context_t *ctx, char **argv)
{
    pid_t pid = -1;
    int rc = pspawn_ex(&pid, ctx, NULL, argv, NULL);

    if (rc != 0)
        tap_diag("    pspawn_ex %s: %s", argv[1] ? argv[1] : "", strerror(rc));
    return rc ? -1 : pid;
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX], sigstr[16];
    char *exit0[] = { task, "exit", "0", NULL };
    char *exit7[] = { task, "exit", "7", NULL };
    char *raise_[] = { task, "raise", sigstr, NULL };
    char *wait_[] = { task, "wait", NULL };
    pspawn_context_t ctx;
    struct timespec five = { 5, 0 };
    sigset_t chld;
    siginfo_t si;
    pid_t pid, pids[NTASKS], zygote;
    int rc, st, matched = 0, others = 0;

    tap_watchdog(60);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    rc = pspawn_context_create(&ctx, task, -1);
    if (rc != 0)
        tap_bail("pspawn_context_create(%s): %s", task, strerror(rc));
    zygote = pspawn_context_zygote_pid(&ctx);

    /* SIGCHLD comes to the launcher, naming the task. */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    pid = spawn(&ctx, exit7);
    memset(&si, 0, sizeof si);
    rc = pid > 0 ? sigtimedwait(&chld, &si, &five) : -1;
    tap_ok(rc == SIGCHLD && si.si_pid == pid && si.si_code == CLD_EXITED && si.si_status == 7,
           "SIGCHLD for the task: pid %ld (task %ld), code %d, status %d", (long)si.si_pid,
           (long)pid, si.si_code, si.si_status);
    rc = pid > 0 ? waitpid(pid, &st, 0) : -1;
    tap_ok(rc == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7, "waitpid: the task exited 7");
    sigprocmask(SIG_UNBLOCK, &chld, NULL);

    /* waitpid(-1) returns the tasks and nothing else. */
    for (int i = 0; i < NTASKS; i++)
        pids[i] = spawn(&ctx, exit0);
    for (int n = 0; n < NTASKS; n++) {
        pid_t w = waitpid(-1, &st, 0);
        int mine = 0;
        for (int i = 0; i < NTASKS; i++)
            if (w > 0 && pids[i] == w) {
                pids[i] = 0;
                mine = 1;
            }
        if (mine && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            matched++;
        else {
            others++;
            tap_diag("    waitpid(-1) gave %ld (%s)", (long)w,
                     w == zygote ? "the zygote" : w < 0 ? strerror(errno) : "not a task");
        }
    }
    tap_ok(matched == NTASKS && others == 0,
           "waitpid(-1) returns the %d tasks, each exit 0 (%d matched, %d other)", NTASKS,
           matched, others);

    /* A killing signal is reported as such. */
    snprintf(sigstr, sizeof sigstr, "%d", SIGUSR1);
    pid = spawn(&ctx, raise_);
    rc = pid > 0 ? waitpid(pid, &st, 0) : -1;
    tap_ok(rc == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1,
           "a task killed by SIGUSR1 is reported killed by SIGUSR1");

    /* Job control: stopped and continued are reported to the launcher. */
    pid = spawn(&ctx, wait_);
    if (pid > 0) {
        kill(pid, SIGSTOP);
        rc = waitpid(pid, &st, WUNTRACED);
        tap_ok(rc == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP,
               "a stopped task is reported stopped (WUNTRACED)");
        kill(pid, SIGCONT);
        rc = waitpid(pid, &st, WCONTINUED);
        tap_ok(rc == pid && WIFCONTINUED(st), "a continued task is reported continued (WCONTINUED)");
        kill(pid, SIGKILL);
        rc = waitpid(pid, &st, 0);
        tap_ok(rc == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
               "then killed, it is reaped here");
    } else {
        tap_ok(0, "a stopped task is reported stopped (WUNTRACED)");
        tap_ok(0, "a continued task is reported continued (WCONTINUED)");
        tap_ok(0, "then killed, it is reaped here");
    }

    tap_ok(pspawn_context_uses_zygote(&ctx) && !pspawn_context_reason(&ctx),
           "all of it through the zygote (no fallback)");
    pspawn_context_destroy(&ctx);
    return tap_done();
}
