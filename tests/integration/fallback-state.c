/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fallback-state - when the state of the zygote, of the launcher or of
 * the request makes a fork of the zygote unfaithful to an exec, the task
 * is created by a plain exec instead, runs exactly once with the right
 * output, and the reason is readable (pspawn_context_reason()) and
 * printed on stderr with PSPAWN_DEBUG=1.
 *
 * Cases: a program whose constructor starts a thread or a POSIX timer (and one
 * whose interval timers the zygote's task gets again), a zygote killed or
 * stopped between two spawns, a task whose LD_LIBRARY_PATH is not its
 * zygote's.  And PSPAWN_TRACEME, a debugger's stop at exec, which only the
 * exec path gives.  The program itself (static, set-ID, capabilities,
 * changed on disk) is tests/integration/fallback-program's, the launcher's
 * credentials tests/integration/fallback-creds'.
 *
 * Uses $TESTS_BUILDDIR/{task,threaded,timers}.
 */
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include "fallback.h"

/* Whether PID still exists in any state, zombie included. */
static int process_exists(pid_t pid)
{
    char path[64];

    snprintf(path, sizeof path, "/proc/%ld", (long)pid);
    return access(path, F_OK) == 0;
}

/* The threaded or timers program: "PROG FILE"; it appends "PID". */
static void spawn_threaded(pspawn_context_t *ctx, const char *argv0, struct outcome *o)
{
    char *argv[] = { (char *)argv0, append_path, NULL };

    spawn_collect(ctx, argv, NULL, "", o);
}

/* ---- the cases ---------------------------------------------------------- */

/* PROG's constructors leave the zygote in a state a fork cannot copy (a
 * thread, a POSIX timer), set up by TIMERS in PSPAWN_TEST_TIMERS (NULL:
 * none): it refuses to park, and every task is exec'd. */
static void case_refused_at_main(const char *name, const char *prog, const char *timers,
                                 const char *word, const char *want_out)
{
    char path[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome created = { 0 }, o;
    int rc;

    snprintf(path, sizeof path, "%s/%s", builddir, prog);
    if (timers)
        setenv("PSPAWN_TEST_TIMERS", timers, 1);
    rc = create_context(&ctx, path, &created);
    tap_ok(rc == 0, "%s: pspawn_context_create succeeds (rc %d)", name, rc);
    if (rc == 0) {
        spawn_threaded(&ctx, path, &o);
        prepend_err(&o, created.err);
        check_ran_once(name, &o, want_out);
        check_reason(name, &ctx, &o, word);
        check_exec_for_good(name, &ctx);
        outcome_free(&o);
        pspawn_context_destroy(&ctx);
    }
    free(created.err);
    unsetenv("PSPAWN_TEST_TIMERS");
}

/* The first line PROG prints when exec'd by popen(3) (the shell execs
 * it), without its newline ("" if none). */
static void exec_output(const char *prog, char *line, size_t size)
{
    FILE *p = popen(prog, "r");

    line[0] = 0;
    if (p) {
        if (fgets(line, (int)size, p))
            line[strcspn(line, "\n")] = 0;
        pclose(p);
    }
}

/* A constructor armed an alarm and a profiling timer (gcc -pg does):
 * exec keeps them, fork does not; the zygote's task gets them again. */
static void case_itimers(void)
{
    const char *name = "constructor armed interval timers";
    const char *want = "real=1,0 prof=1,10000 sigprof=1 posix=0";
    char path[PATH_MAX], ref[256], want_nl[64];
    pspawn_context_t ctx;
    struct outcome o;

    snprintf(path, sizeof path, "%s/timers", builddir);
    setenv("PSPAWN_TEST_TIMERS", "itimer", 1);
    exec_output(path, ref, sizeof ref);
    tap_ok(strcmp(ref, want) == 0, "%s: an exec'd task has them (\"%s\")", name, ref);
    if (create_context(&ctx, path, NULL) != 0)
        tap_bail("%s: pspawn_context_create failed", name);
    spawn_threaded(&ctx, path, &o);
    snprintf(want_nl, sizeof want_nl, "%s\n", want);
    check_zygote_served(name, &ctx, &o, want_nl);
    outcome_free(&o);
    /* The alarm is 3 s: a zygote that kept it would be dead by now. */
    sleep(4);
    spawn_threaded(&ctx, path, &o);
    check_ran_once(name, &o, want_nl);
    tap_ok(pspawn_context_uses_zygote(&ctx) && !pspawn_context_reason(&ctx),
           "%s: the zygote outlived the alarm (served again 4 s later)", name);
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_TIMERS");
}

/* environ plus EXTRA (NULL: none), in a static array. */
static char **env_with(const char *extra)
{
    static char *env[512];
    size_t k = 0;
    for (size_t i = 0; environ[i] && k < 510; i++)
        if (!extra || strncmp(environ[i], extra, strcspn(extra, "=") + 1) != 0)
            env[k++] = environ[i];
    if (extra)
        env[k++] = (char *)extra;
    env[k] = NULL;
    return env;
}

/* A variable the loader reads before main (LD_LIBRARY_PATH) differs
 * between a task and its zygote: that task is exec'd, the others are not. */
static void case_loader_env(void)
{
    const char *name = "task's LD_LIBRARY_PATH differs from the zygote's";
    const char *llp = "LD_LIBRARY_PATH=/nonexistent/pspawn-test";
    const char *want = "task version=1 rank=- size=- local=- args=%s\n";
    char task[PATH_MAX], out[128];
    pspawn_context_t ctx;
    struct outcome o;
    char **env;

    snprintf(task, sizeof task, "%s/task", builddir);
    if (create_context(&ctx, task, NULL) != 0)
        tap_bail("%s: pspawn_context_create failed", name);
    spawn_task(&ctx, task, "same", &o);
    snprintf(out, sizeof out, want, "same");
    check_zygote_served(name, &ctx, &o, out);
    outcome_free(&o);
    env = env_with(llp);
    spawn_task_env(&ctx, task, "other", env, &o);
    snprintf(out, sizeof out, want, "other");
    check_ran_once(name, &o, out);
    check_reason(name, &ctx, &o, "LD_LIBRARY_PATH differs");
    tap_ok(pspawn_context_uses_zygote(&ctx), "%s: the zygote still serves the others", name);
    outcome_free(&o);
    pspawn_context_destroy(&ctx);

    /* pspawn_context_create_ex: the zygote takes the given environment;
     * tasks with it are served, a task without the variable is not. */
    name = "pspawn_context_create_ex with LD_LIBRARY_PATH";
    reset_captures();
    if (pspawn_context_create_ex(&ctx, task, -1, env) != 0)
        tap_bail("%s: pspawn_context_create_ex failed", name);
    spawn_task_env(&ctx, task, "same", env, &o);
    snprintf(out, sizeof out, want, "same");
    check_zygote_served(name, &ctx, &o, out);
    outcome_free(&o);
    spawn_task(&ctx, task, "without", &o);
    snprintf(out, sizeof out, want, "without");
    check_ran_once(name, &o, out);
    check_reason(name, &ctx, &o, "LD_LIBRARY_PATH differs");
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
}

/* Whether PID's memory holds glibc: a fork of the zygote does, a program
 * stopped at its first instruction after exec does not (only the loader). */
static int maps_libc(pid_t pid)
{
    char path[64];
    char *maps;
    int found;

    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    maps = read_file(path);
    found = strstr(maps, "/libc.so") != NULL || strstr(maps, "/libc-") != NULL;
    free(maps);
    return found;
}

static pid_t tracer_of(pid_t pid)
{
    char path[64];
    char *status, *line;
    long tracer = -1;

    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    status = read_file(path);
    line = strstr(status, "\nTracerPid:");
    if (line)
        tracer = strtol(line + strlen("\nTracerPid:"), NULL, 10);
    free(status);
    return (pid_t)tracer;
}

/* PSPAWN_TRACEME (a debugger's stop at exec): the task is exec'd and stops
 * with SIGTRAP at the new program's first instruction, traced by us; once
 * let go it runs once, and the next spawn without the flag is the
 * zygote's again.  Through a context (ctx != NULL) or pspawn_exec(). */
static void case_traceme(int through_context)
{
    extern char **environ;
    const char *name = through_context ? "PSPAWN_TRACEME (context)" : "PSPAWN_TRACEME (pspawn_exec)";
    char task[PATH_MAX];
    char *argv[] = { task, "append", append_path, "traced", NULL };
    pspawn_context_t ctx;
    pspawn_attr_t attr;
    struct outcome o;
    struct redirect r;
    pid_t pid = -1;
    int st = 0, stopped, exited0 = 0;

    snprintf(task, sizeof task, "%s/task", builddir);
    if (through_context && create_context(&ctx, task, NULL) != 0)
        tap_bail("%s: pspawn_context_create failed", name);
    if (pspawn_attr_init(&attr) != 0 || pspawn_attr_setflags(&attr, PSPAWN_TRACEME) != 0)
        tap_bail("%s: attribute setup failed", name);
    memset(&o, 0, sizeof o);
    reset_captures();
    redirect_begin(&r);
    o.rc = through_context ? pspawn_ex(&pid, &ctx, &attr, argv, NULL)
                           : pspawn_exec(&pid, task, &attr, argv, environ);
    redirect_end(&r);
    pspawn_attr_destroy(&attr);
    tap_ok(o.rc == 0 && pid > 0, "%s: the spawn succeeded", name);
    if (o.rc != 0 || pid <= 0) {
        tap_diag("    %s", strerror(o.rc));
        if (through_context)
            pspawn_context_destroy(&ctx);
        return;
    }
    stopped = waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP;
    tap_ok(stopped, "%s: the task stopped with SIGTRAP", name);
    if (stopped) {
        tap_ok(tracer_of(pid) == getpid(), "%s: traced by the caller (TracerPid %ld)", name,
               (long)tracer_of(pid));
        tap_ok(!maps_libc(pid), "%s: stopped before the loader mapped libc (a fresh exec)", name);
        char *runs = read_file(append_path);

        tap_ok(count_lines(runs) == 0, "%s: nothing of the program ran yet", name);
        free(runs);
        if (ptrace(PTRACE_DETACH, pid, NULL, NULL) != 0)
            tap_diag("    PTRACE_DETACH: %s", strerror(errno));
    } else {
        tap_diag("    wait status %#x", st);
        kill(pid, SIGKILL);
    }
    exited0 = waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    {
        char *runs = read_file(append_path), want[64];

        snprintf(want, sizeof want, "- %ld\n", (long)pid);
        tap_ok(exited0 && strcmp(runs, want) == 0, "%s: let go, it ran once and exited 0", name);
        free(runs);
    }
    o.err = read_file(stderr_path);
    o.out = read_file(capture_path);
    if (through_context) {
        check_reason(name, &ctx, &o, "PSPAWN_TRACEME");
        outcome_free(&o);
        /* The flag was this call's: the next spawn is the zygote's (with
         * PSPAWN_DEBUG=1 every exec fallback is logged). */
        spawn_task(&ctx, task, "after", &o);
        check_ran_once("after PSPAWN_TRACEME", &o,
                       "task version=1 rank=- size=- local=- args=after\n");
        tap_ok(pspawn_context_uses_zygote(&ctx) && !strstr(o.err, "exec fallback"),
               "after PSPAWN_TRACEME: the next spawn is the zygote's again");
        pspawn_context_destroy(&ctx);
    }
    outcome_free(&o);
}

/* The zygote is killed, or stopped, between two spawns. */
static void case_zygote_gone(int stop)
{
    const char *name = stop ? "zygote stopped (SIGSTOP)" : "zygote killed (SIGKILL)";
    const char *word = stop ? "stopped answering" : "died";
    char task[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome o;
    pid_t zygote;

    snprintf(task, sizeof task, "%s/task", builddir);
    if (create_context(&ctx, task, NULL) != 0)
        tap_bail("%s: pspawn_context_create failed", name);
    pspawn_context_set_timeout(&ctx, 300);
    spawn_task(&ctx, task, "before", &o);
    check_zygote_served(name, &ctx, &o, "task version=1 rank=- size=- local=- args=before\n");
    outcome_free(&o);

    zygote = pspawn_context_zygote_pid(&ctx);
    tap_ok(zygote > 0 && process_exists(zygote), "%s: pspawn_context_zygote_pid() is a live process (%ld)",
           name, (long)zygote);
    if (zygote <= 0)
        return;
    kill(zygote, stop ? SIGSTOP : SIGKILL);

    spawn_task(&ctx, task, "after", &o);
    check_ran_once(name, &o, "task version=1 rank=- size=- local=- args=after\n");
    /* 300 ms timeout: a stopped zygote must not hold the spawn for long. */
    tap_ok(o.seconds < 3.0, "%s: the spawn took %.2f s (timeout 300 ms)", name, o.seconds);
    check_reason(name, &ctx, &o, word);
    check_exec_for_good(name, &ctx);
    outcome_free(&o);

    spawn_task(&ctx, task, "again", &o);
    tap_ok(o.rc == 0 && o.exited0 && o.runs == 1 && o.pid_matches,
           "%s: a second spawn runs too", name);
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
    /* The library killed (if stopped) and reaped its zygote. */
    tap_ok(!process_exists(zygote), "%s: the old zygote is gone after destroy (no zombie)", name);
    if (process_exists(zygote)) {
        kill(zygote, SIGKILL);
        waitpid(zygote, NULL, 0);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    fallback_start(argv);
    case_refused_at_main("threads at main", "threaded", NULL, "threads", "threaded main ran\n");
    case_refused_at_main("POSIX timer at main", "timers", "posix", "POSIX timers",
                         "real=0,0 prof=0,0 sigprof=0 posix=1\n");
    case_itimers();
    case_zygote_gone(0);
    case_zygote_gone(1);
    case_loader_env();
    case_traceme(1);
    case_traceme(0);
    return fallback_finish();
}
