/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parity-api-attrs - what a launcher asks for a task through pspawn_attr_t
 * gives a task created from the zygote exactly what it gives an exec'd
 * one: file actions (dup2, open, inherit, close, and the umask of a file
 * an open creates), cwd, umask, rlimits, signal mask and defaults, a new
 * process group or one to join, a new session, CPU set, memory policy.
 * The launcher changed its own state after its zygote started, so that
 * an attribute must win over it.
 *
 * Each task (tests/fixtures/probe.c) is compared with posix_spawn's and
 * pspawn_exec's, group by group (parity-api.h).  The launcher's own state
 * is tests/integration/parity-api-state's, the calls and program forms
 * parity-api-calls'.
 *
 * Usage: parity-api-attrs [PROBE]   (default: $TESTS_BUILDDIR/probe)
 */
#include "parity-launcher.h"

/* Every attribute at once, each unlike the launcher's own state. */
static void check_all_attributes(pspawn_context_t *ctx, const struct parity_fds *fds,
                                 const char *sub)
{
    const char *probe = parity.probe;
    char *args[] = { (char *)probe, "attrs", NULL };
    char *env[] = { "ONLY=this", parity.expect_ppid, NULL };
    struct scenario sc = {
        .name = "all attributes", .argv = args, .envp = env,
        .nfa = 4, .fa = {
            { FA_DUP2, 5, fds->data, NULL, 0, 0 },
            { FA_OPEN, 7, -1, "/dev/null", O_WRONLY | O_APPEND, 0 },
            { FA_INHERIT, fds->inherit, -1, NULL, 0, 0 },
            { FA_CLOSE, 0, -1, NULL, 0, 0 },
        },
        .cwd = sub, .set_umask = 1, .umask = 0077,
        .nrl = 2, .rl = {
            { RLIMIT_NOFILE, { 256, orig_nofile.rlim_max } },
            { RLIMIT_STACK, { 4 << 20, RLIM_INFINITY } },
        },
        .set_sigmask = 1, .set_sigdef = 1, .set_pgroup = 1, .pgroup = 0,
        .set_cpus = 1, .cpus = parity.last,
        .set_mempolicy = have_numa, .mempolicy = MPOL_INTERLEAVE,
    };
    struct rlimit stack;

    getrlimit(RLIMIT_STACK, &stack);
    sc.rl[1].rl.rlim_max = stack.rlim_max;
    if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < (4 << 20))
        sc.rl[1].rl.rlim_cur = stack.rlim_max;
    sigemptyset(&sc.sigmask);
    sigaddset(&sc.sigmask, SIGUSR1);
    sigaddset(&sc.sigmask, SIGTERM);
    sigemptyset(&sc.sigdef);
    sigaddset(&sc.sigdef, SIGUSR2);
    check_scenario(ctx, probe, &sc);
}

/* A file created by a file action gets the launcher's umask. */
static void check_created_file(pspawn_context_t *ctx, const char *created)
{
    const char *probe = parity.probe;
    char *args[] = { (char *)probe, "create", NULL };
    struct scenario sc = {
        .name = "file created by addopen", .argv = args, .nfa = 1, .fa = {
            { FA_OPEN, 3, -1, created, O_WRONLY | O_CREAT | O_TRUNC, 0666 },
        },
    };
    struct report ref, got;

    /* each run creates the file afresh */
    unlink(created);
    run_probe(REFERENCE, NULL, probe, &sc, &ref);
    unlink(created);
    run_probe(ZYGOTE, ctx, probe, &sc, &got);
    check_served_by_zygote(sc.name, ctx, &got);
    compare_reports(sc.name, "zygote", &got, &ref, 0);
    report_free(&got);
    unlink(created);
    run_probe(EXEC, NULL, probe, &sc, &got);
    compare_reports(sc.name, "pspawn_exec", &got, &ref, 0);
    report_free(&got);
    report_free(&ref);
    unlink(created);
}

int main(int argc, char **argv)
{
    char sub[PATH_MAX], created[PATH_MAX];
    pspawn_context_t ctx;
    struct parity_fds fds;
    pid_t holder;

    parity_start(argc, argv, "parity-api-attrs", 0);
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    mkdir(sub, 0755);
    snprintf(created, sizeof created, "%s/created.txt", tmpdir);
    context_create(&ctx, parity.probe);

    parity_launcher_change(&fds);
    /* A process group of its own for a task to join. */
    holder = fork();
    if (holder == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, 0);
        for (;;)
            pause();
    }
    setpgid(holder, holder);

    check_all_attributes(&ctx, &fds, sub);
    check_created_file(&ctx, created);
    {
        char *args[] = { parity.probe, "setsid", NULL };
        struct scenario sc = { .name = "new session", .argv = args, .setsid = 1 };
        check_scenario(&ctx, parity.probe, &sc);
    }
    {
        char *args[] = { parity.probe, "join", NULL };
        struct scenario sc = { .name = "join a process group", .argv = args,
                               .set_pgroup = 1, .pgroup = holder };
        check_scenario(&ctx, parity.probe, &sc);
    }

    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    parity_launcher_restore(&fds);
    pspawn_context_destroy(&ctx);
    return parity_finish();
}
