/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parity-api-calls - every call and every form of the program gives a
 * task created from the zygote what an exec'd one gets: scripts with and
 * without a #! argument and by a relative path, an argv too long to fit
 * in place, pspawn() and pspawn_n() (the caller's state throughout), and
 * pspawn_vector() (per-task argv, envp and CPU set over a shared
 * attribute, with pidfds) through the zygote and with PSPAWN_FORCE_EXEC.
 *
 * Each task (tests/fixtures/probe.c) is compared with posix_spawn's and
 * pspawn_exec's, group by group (parity-api.h).  The launcher's own state
 * is tests/integration/parity-api-state's, the attributes
 * parity-api-attrs'.
 *
 * Usage: parity-api-calls [PROBE]   (default: $TESTS_BUILDDIR/probe)
 */
#include "parity-launcher.h"

/* pspawn() and pspawn_n(): the paper's calls, caller's state throughout. */
static void check_paper_calls(pspawn_context_t *ctx, const char *path)
{
    char *argv[] = { (char *)path, "paper", "call", NULL };
    struct scenario sc = { .name = "pspawn_n", .argv = argv, .null_attr = 1 };
    struct report ref, got[4];
    pid_t pids[3] = { -1, -1, -1 }, pid;
    char *text;
    const char *p;
    int rc, all_ok = 1, nrep = 0;

    run_probe(REFERENCE, NULL, path, &sc, &ref);

    capture_begin();
    rc = pspawn_n(pids, ctx, 3, argv);
    capture_end();
    for (int i = 0; i < 3; i++) {
        int ok = 0;
        const char *st = pids[i] > 0 ? wait_status(pids[i], &ok) : "no pid";
        if (!ok) {
            tap_diag("    task %d: %s", i, st);
            all_ok = 0;
        }
    }
    tap_ok(rc == 0 && all_ok, "pspawn_n: 3 tasks spawned and exited 0 (rc %d)", rc);
    text = capture_read();
    p = text;
    while (nrep < 3 && report_parse(&got[nrep], &p))
        nrep++;
    tap_ok(nrep == 3, "pspawn_n: 3 reports (got %d)", nrep);
    for (int i = 0; i < nrep; i++) {
        char label[32];
        snprintf(label, sizeof label, "pspawn_n[%d]", i);
        check_served_by_zygote(label, ctx, &got[i]);
    }
    for (int i = 0; i < nrep; i++) {
        char label[32];
        snprintf(label, sizeof label, "pspawn_n[%d]", i);
        compare_reports(label, "zygote", &got[i], &ref, 0);
        report_free(&got[i]);
    }
    free(text);

    capture_begin();
    pid = pspawn(ctx, argv);
    rc = pid < 0 ? errno : 0;
    capture_end();
    {
        int ok = 0;
        const char *st = pid > 0 ? wait_status(pid, &ok) : strerror(rc);
        tap_ok(pid > 0 && ok, "pspawn: spawned and exited 0 (%s)", st);
    }
    text = capture_read();
    p = text;
    report_parse(&got[0], &p);
    check_served_by_zygote("pspawn", ctx, &got[0]);
    compare_reports("pspawn", "zygote", &got[0], &ref, 0);
    report_free(&got[0]);
    free(text);
    report_free(&ref);
}

/* pidfd of a vector task: must refer to that task. */
static int pidfd_matches(int pidfd, pid_t pid)
{
    char path[64], buf[4096], *p;
    FILE *f;
    long got = -1;

    if (pidfd < 0)
        return 0;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f))
        if ((p = strstr(buf, "Pid:")) == buf)
            got = strtol(p + 4, NULL, 10);
    fclose(f);
    return got == (long)pid;
}

/* The reports of the two vector tasks in TEXT, by their argv[1] (vec0,
 * vec1) whatever order they wrote in; an empty one where none came. */
static void vector_reports(const char *text, struct report got[2])
{
    const char *p = text;

    memset(got, 0, 2 * sizeof *got);
    for (int nrep = 0; nrep < 2; nrep++) {
        struct report r;
        const char *a1;
        if (!report_parse(&r, &p))
            break;
        a1 = report_get(&r, "argv.1");
        if (a1 && strcmp(a1, "vec0") == 0 && !got[0].n)
            got[0] = r;
        else if (a1 && strcmp(a1, "vec1") == 0 && !got[1].n)
            got[1] = r;
        else
            report_free(&r);
    }
}

/* pspawn_vector: per-task argv, envp and CPU set over a shared attribute
 * and envp; through the zygote and with PSPAWN_FORCE_EXEC. */
static void check_vector(pspawn_context_t *ctx, const char *path, int data_fd,
                         const cpu_set_t *first, const cpu_set_t *last,
                         char *expect_ppid)
{
    char *argv0[] = { (char *)path, "vec0", NULL };
    char *argv1[] = { (char *)path, "vec1", "second", NULL };
    char *env0[] = { "VEC=task0", expect_ppid, NULL };
    char *envcall[] = { "VEC=call", "OTHER=x", expect_ppid, NULL };
    /* The shared attribute, and the two tasks as plain scenarios. */
    struct scenario shared = {
        .name = "vector", .nfa = 1, .fa = { { FA_DUP2, 5, data_fd, NULL, 0, 0 } },
        .set_umask = 1, .umask = 0007, .set_cpus = 1, .cpus = *last,
    };
    struct scenario sc[2];
    pspawn_attr_t attr;

    sc[0] = shared;
    sc[0].argv = argv0;
    sc[0].envp = env0;
    sc[0].cpus = *first;
    sc[1] = shared;
    sc[1].argv = argv1;
    sc[1].envp = envcall;

    for (int force = 0; force < 2; force++) {
        const char *method = force ? "vector+FORCE_EXEC" : "vector";
        struct report ref[2], got[2];
        pspawn_task_t tasks[2];
        char *text;
        int rc, all_ok = 1;

        memset(tasks, 0, sizeof tasks);
        tasks[0].argv = argv0;
        tasks[0].envp = env0;
        tasks[0].cpuset = first;
        tasks[0].cpusetsize = sizeof *first;
        tasks[1].argv = argv1;
        for (int i = 0; i < 2; i++)
            run_probe(REFERENCE, NULL, path, &sc[i], &ref[i]);

        scenario_attr(&shared, &attr, PSPAWN_PIDFD | (force ? PSPAWN_FORCE_EXEC : 0));
        capture_begin();
        rc = pspawn_vector(ctx, tasks, 2, &attr, envcall);
        capture_end();
        pspawn_attr_destroy(&attr);
        /* Before reaping: the pidfd of a reaped task shows no pid. */
        tap_ok(pidfd_matches(tasks[0].pidfd, tasks[0].pid) &&
               pidfd_matches(tasks[1].pidfd, tasks[1].pid),
               "%s: PSPAWN_PIDFD gives each task a pidfd for its pid", method);
        for (int i = 0; i < 2; i++) {
            int ok = 0;
            const char *st = tasks[i].pid > 0 ? wait_status(tasks[i].pid, &ok) : "no pid";
            if (!ok || tasks[i].error) {
                tap_diag("    task %d: error %d, %s", i, tasks[i].error, st);
                all_ok = 0;
            }
        }
        tap_ok(rc == 0 && all_ok, "%s: 2 tasks spawned and exited 0 (rc %d)", method, rc);
        for (int i = 0; i < 2; i++)
            if (tasks[i].pidfd >= 0)
                close(tasks[i].pidfd);
        text = capture_read();
        vector_reports(text, got);
        tap_ok(got[0].n && got[1].n, "%s: one report from each task", method);
        for (int i = 0; i < 2; i++) {
            char label[40];
            snprintf(label, sizeof label, "%s[%d]", method, i);
            if (!force)
                check_served_by_zygote(label, ctx, &got[i]);
            else
                tap_ok(report_get(&got[i], "x.proxy_mapped") &&
                       strcmp(report_get(&got[i], "x.proxy_mapped"), "0") == 0,
                       "%s: exec'd (PSPAWN_FORCE_EXEC)", label);
            compare_reports(label, force ? "pspawn_exec" : "zygote", &got[i], &ref[i], 0);
            report_free(&got[i]);
            report_free(&ref[i]);
        }
        free(text);
    }
}

/* Scripts: with a #! argument (SCRIPT_OPT), without one (SCRIPT_PLAIN,
 * whose argv[0] the interpreter replaces), each with its own zygote. */
static void check_scripts(const char *script_opt, const char *script_plain)
{
    pspawn_context_t ctx_script, ctx_plain;

    context_create(&ctx_script, script_opt);
    context_create(&ctx_plain, script_plain);
    {
        char *args[] = { (char *)script_opt, "s1", "s 2", NULL };
        struct scenario sc = { .name = "script with #! argument", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_script, script_opt, &sc);
    }
    {
        char *args[] = { "argv0-is-replaced", "p1", NULL };
        struct scenario sc = { .name = "script without #! argument", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_plain, script_plain, &sc);
    }
    pspawn_context_destroy(&ctx_script);
    pspawn_context_destroy(&ctx_plain);
}

/* 200 arguments of 1000 bytes: more than the zygote's own argv has room
 * for in place (so /proc/PID/cmdline is not compared). */
static void check_long_argv(pspawn_context_t *ctx, const char *probe)
{
    enum { NARGS = 200, ARGLEN = 1000 };
    char *args[NARGS + 2];
    struct scenario sc = { .name = "long argv", .argv = args, .null_attr = 1,
                           .skip_cmdline = 1 };

    args[0] = (char *)probe;
    for (int i = 1; i <= NARGS; i++)
        args[i] = repeat_char((char)('a' + i % 26), ARGLEN);
    args[NARGS + 1] = NULL;
    check_scenario(ctx, probe, &sc);
    for (int i = 1; i <= NARGS; i++)
        free(args[i]);
}

int main(int argc, char **argv)
{
    const char *probe;
    char script_opt[PATH_MAX], script_plain[PATH_MAX], line[PATH_MAX + 8];
    pspawn_context_t ctx, ctx_rel;
    struct parity_fds fds;

    parity_start(argc, argv, "parity-api-calls", 0);
    probe = parity.probe;
    snprintf(script_opt, sizeof script_opt, "%s/script-opt", tmpdir);
    snprintf(line, sizeof line, "#!%s -x", probe);
    write_script("script-opt", line);
    snprintf(script_plain, sizeof script_plain, "%s/script-plain", tmpdir);
    snprintf(line, sizeof line, "#!%s", probe);
    write_script("script-plain", line);
    context_create(&ctx, probe);

    /* ---- the launcher as it was when the zygotes started ---- */
    check_scripts(script_opt, script_plain);

    /* ---- the launcher changed its state after the zygote started ---- */
    parity_launcher_change(&fds);
    check_long_argv(&ctx, probe);
    {
        /* A context on a relative path: "relative to the cwd", which is
         * tmpdir now. */
        char *args[] = { "script-opt", "r1", NULL };
        struct scenario sc = { .name = "script by relative path", .argv = args,
                               .null_attr = 1 };
        context_create(&ctx_rel, "script-opt");
        check_scenario(&ctx_rel, "script-opt", &sc);
        pspawn_context_destroy(&ctx_rel);
    }
    check_paper_calls(&ctx, probe);
    check_vector(&ctx, probe, fds.data, &parity.first, &parity.last, parity.expect_ppid);

    parity_launcher_restore(&fds);
    pspawn_context_destroy(&ctx);
    return parity_finish();
}
