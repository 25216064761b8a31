/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fallback-state - when the state of the zygote, of the launcher or of
 * the request makes a fork of the zygote unfaithful to an exec, the task
 * is created by a plain exec instead, runs exactly once with the right
 * output, and the reason is readable (pspawn_context_reason()) and
 * printed on stderr with PSPAWN_DEBUG=1.
 *
 * Cases: a launcher that gave up a privilege after its zygote started
 * (root, its groups, a capability, one of its bounding or ambient set), a
 * program whose constructor starts a thread or a POSIX timer (and one
 * whose interval timers the zygote's task gets again), a zygote killed or
 * stopped between two spawns, a task whose LD_LIBRARY_PATH is not its
 * zygote's.  And PSPAWN_TRACEME, a debugger's stop at exec, which only the
 * exec path gives.  The program itself (static, set-ID, capabilities,
 * changed on disk) is tests/integration/fallback-program's.
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

/* A launcher that gives up a privilege after its zygote started (drops
 * root, its groups, a capability, a capability from its bounding or
 * ambient set): a fork of the zygote would keep it, so the task is exec'd,
 * and the zygote is not used again.  Runs in a child process (this one
 * stays root), whose exit status carries the results that become TAP
 * lines here. */
enum {
    CR_SERVED = 1, CR_RAN = 2, CR_REASON = 4, CR_FOR_GOOD = 8, CR_OWNER = 16,
    CR_CAP_AS_EXEC = 32, CR_EXEC_LACKS = 64,
};
enum { CR_ROOT, CR_GROUPS, CR_CAP, CR_BOUNDING, CR_AMBIENT };

/* Whether a task ("task wait") started by CTX, or by posix_spawn where
 * CTX is NULL, has CAP_NET_RAW in its effective set (/proc/PID/status);
 * -1 where it did not start. */
static int task_has_net_raw(pspawn_context_t *ctx, const char *task)
{
    char *argv[] = { (char *)task, "ready-wait", NULL };
    char path[64], line[256], c;
    unsigned long long eff;
    int has = -1, p[2], rc;
    pid_t pid;
    FILE *f;
    struct pollfd pfd;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    if (ctx) {
        pspawn_attr_t attr;
        pspawn_attr_init(&attr);
        pspawn_attr_adddup2(&attr, p[1], 1);
        rc = pspawn_ex(&pid, ctx, &attr, argv, NULL);
        pspawn_attr_destroy(&attr);
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        rc = posix_spawn(&pid, task, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    /* Read its capabilities once it is in main: a vfork-based spawn
     * returns before exec has installed the new credentials. */
    pfd = (struct pollfd){ p[0], POLLIN, 0 };
    if (rc == 0 && (poll(&pfd, 1, 10000) != 1 || read(p[0], &c, 1) != 1))
        rc = -1;
    close(p[0]);
    if (rc != 0) {
        if (rc < 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    if ((f = fopen(path, "r"))) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "CapEff: %llx", &eff) == 1)
                has = (int)(eff >> CAP_NET_RAW & 1);
        fclose(f);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return has;
}

/* capset(2) with CAP_NET_RAW in SETS ("e", "p", "i": effective, permitted,
 * inheritable) or not. */
static int set_net_raw(const char *sets, int on)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    __u32 bit = 1u << CAP_NET_RAW;

    if (syscall(SYS_capget, &h, d) != 0)
        return -1;
    if (strchr(sets, 'e'))
        d[0].effective = on ? d[0].effective | bit : d[0].effective & ~bit;
    if (strchr(sets, 'p'))
        d[0].permitted = on ? d[0].permitted | bit : d[0].permitted & ~bit;
    if (strchr(sets, 'i'))
        d[0].inheritable = on ? d[0].inheritable | bit : d[0].inheritable & ~bit;
    return (int)syscall(SYS_capset, &h, d);
}

static int creds_child(int what, const char *word)
{
    char task[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome o;
    struct stat st;
    int bits = 0;

    snprintf(task, sizeof task, "%s/task", builddir);
    if (what == CR_AMBIENT) {
        /* A launcher that is not root and hands CAP_NET_RAW to what it
         * runs through its ambient set: so does the zygote's exec. */
        gid_t none[1];
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setgroups(0, none) != 0 ||
            setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
            set_net_raw("epi", 1) != 0 ||
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) != 0)
            return 0x80;
    }
    if (create_context(&ctx, task, NULL) != 0)
        return 0x80;
    if (task_has_net_raw(&ctx, task) != 1)
        return 0x80;        /* the change below would not be seen */
    spawn_task(&ctx, task, "x", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && pspawn_context_uses_zygote(&ctx) &&
        !pspawn_context_reason(&ctx))
        bits |= CR_SERVED;
    outcome_free(&o);
    if (what == CR_ROOT) {
        gid_t none[1];
        if (setgroups(0, none) != 0 || setresgid(65534, 65534, 65534) != 0 ||
            setresuid(65534, 65534, 65534) != 0)
            return 0x80;
    } else if (what == CR_GROUPS) {
        gid_t other[1] = { 12345 };
        if (setgroups(1, other) != 0)
            return 0x80;
    } else if (what == CR_CAP) {
        if (set_net_raw("ep", 0) != 0)
            return 0x80;
    } else if (what == CR_BOUNDING) {
        /* Still root with every capability, but an exec'd task (root's
         * file capabilities are the bounding set) no longer gets it. */
        if (prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) != 0)
            return 0x80;
    } else if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_RAW, 0, 0) != 0) {
        return 0x80;
    }
    spawn_task(&ctx, task, "x", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && o.pid_matches)
        bits |= CR_RAN;
    if (pspawn_context_reason(&ctx) && strstr(pspawn_context_reason(&ctx), word))
        bits |= CR_REASON;
    tap_diag("    reason: %s", pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "(none)");
    if (!pspawn_context_uses_zygote(&ctx))
        bits |= CR_FOR_GOOD;
    if (stat(append_path, &st) == 0 &&
        st.st_uid == (what == CR_ROOT || what == CR_AMBIENT ? 65534 : 0))
        bits |= CR_OWNER;
    if (what != CR_ROOT && what != CR_GROUPS) {
        int exec_has = task_has_net_raw(NULL, task);
        if (exec_has >= 0 && task_has_net_raw(&ctx, task) == exec_has)
            bits |= CR_CAP_AS_EXEC;
        if (exec_has == 0)
            bits |= CR_EXEC_LACKS;
    }
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
    fflush(stdout);
    return bits;
}

static void case_creds(const char *name, int what, const char *word)
{
    pid_t pid;
    int st, bits;

    if (geteuid() != 0) {
        tap_skip("not root", "%s: falls back to exec", name);
        return;
    }
    chmod(tmpdir, 0777);    /* the launcher that gave up root writes there */
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(creds_child(what, word));
    bits = waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 0x80;
    chmod(tmpdir, 0700);
    if (bits & 0x80)
        tap_bail("%s: the launcher could not set itself up (status %#x)", name, (unsigned)st);
    tap_ok(bits & CR_SERVED, "%s: before, the zygote served the task", name);
    tap_ok(bits & CR_RAN, "%s: after, the task ran exactly once and exited 0", name);
    tap_ok(bits & CR_REASON, "%s: reason mentions \"%s\"", name, word);
    tap_ok(bits & CR_FOR_GOOD, "%s: the context uses exec from then on", name);
    tap_ok(bits & CR_OWNER, "%s: the task ran as the launcher does now (uid %d owns its file)",
           name, what == CR_ROOT || what == CR_AMBIENT ? 65534 : 0);
    if (what != CR_ROOT && what != CR_GROUPS)
        tap_ok(bits & CR_CAP_AS_EXEC, "%s: a task started then has CAP_NET_RAW or not, as an "
               "exec'd one (%s)", name, bits & CR_EXEC_LACKS ? "lacks it" : "has it: root");
    if (what == CR_BOUNDING || what == CR_AMBIENT)
        tap_ok(bits & CR_EXEC_LACKS, "%s: an exec'd task lacks CAP_NET_RAW, which the zygote "
               "has (the comparison means something)", name);
}

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
    case_creds("launcher dropped root", CR_ROOT, "user IDs");
    case_creds("launcher changed its groups", CR_GROUPS, "supplementary groups");
    case_creds("launcher dropped a capability", CR_CAP, "capabilities");
    case_creds("launcher dropped a capability from its bounding set", CR_BOUNDING,
               "bounding capability set");
    case_creds("launcher lowered an ambient capability", CR_AMBIENT, "ambient capabilities");
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
