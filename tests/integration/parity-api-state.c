/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parity-api-state - a task created from the zygote reflects the
 * launcher's own state at spawn time, never the zygote's, as an exec'd
 * one does: the launcher changes its umask, cwd, signals, rlimits,
 * affinity, memory policy, personality, THP switch, I/O priority, timer
 * slack, nice and open fds after one zygote started and before another
 * starts, restores them, and at last gives up privileges (no_new_privs,
 * memory-deny-write-execute, a seccomp filter).  Also a zygote pinned to
 * a CPU, and one started under a low RLIMIT_NOFILE.
 *
 * Each task (tests/fixtures/probe.c) is compared with posix_spawn's and
 * pspawn_exec's, group by group (parity-api.h).  The attributes are
 * tests/integration/parity-api-attrs', the calls and program forms
 * parity-api-calls'.
 *
 * Usage: parity-api-state [PROBE]   (default: $TESTS_BUILDDIR/probe)
 */
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "parity-launcher.h"

/* ---- privileges the launcher gives up ----------------------------------- */

/* exec keeps no_new_privs and memory-deny-write-execute (Linux 6.3): a
 * launcher that set one (prctl OPTION, 1) after its zygote started must
 * not get tasks without it.  KEY is the probe's report of it. */
static void check_gained(pspawn_context_t *ctx, const char *probe, const char *name,
                         int option, const char *key)
{
    char *args[] = { (char *)probe, (char *)key, NULL };
    struct scenario sc = { .name = name, .argv = args, .null_attr = 1 };
    struct report ref;
    const char *v;

    if (prctl(option, 1, 0, 0, 0) != 0) {
        if (option == PR_SET_NO_NEW_PRIVS)
            tap_bail("%s: prctl: %s", name, strerror(errno));
        tap_skip(strerror(errno), "%s: prctl does not work here", name);
        return;
    }
    check_scenario(ctx, probe, &sc);
    run_probe(REFERENCE, NULL, probe, &sc, &ref);
    v = report_get(&ref, key);
    tap_ok(v && strcmp(v, "1") == 0,
           "%s: the reference task has it (the comparison means something)", name);
    report_free(&ref);
}

/* A launcher that put itself under a seccomp filter after its zygote
 * started: a fork of the zygote would escape the filter, so the task is
 * exec'd (and is under it), and the reason says why. */
static void check_seccomp(pspawn_context_t *ctx, const char *probe)
{
    char *args[] = { (char *)probe, "seccomp", NULL };
    struct scenario sc = { .name = "launcher under a seccomp filter", .argv = args,
                           .null_attr = 1 };
    struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
    struct sock_fprog prog = { 1, allow };
    struct report ref, got;
    const char *mapped, *reason;

    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        tap_bail("PR_SET_SECCOMP: %s", strerror(errno));
    run_probe(REFERENCE, NULL, probe, &sc, &ref);
    run_probe(ZYGOTE, ctx, probe, &sc, &got);
    compare_reports(sc.name, "zygote", &got, &ref, 0);
    mapped = report_get(&got, "x.proxy_mapped");
    reason = pspawn_context_reason(ctx);
    tap_ok(mapped && strcmp(mapped, "0") == 0 && reason && strstr(reason, "seccomp"),
           "%s: the task was exec'd, and the reason says why", sc.name);
    tap_diag("    reason: %s", reason ? reason : "(none)");
    report_free(&got);
    report_free(&ref);
}

int main(int argc, char **argv)
{
    const char *probe;
    pspawn_context_t ctx_a, ctx_b;
    struct parity_fds fds;

    parity_start(argc, argv, "parity-api-state", 1);
    probe = parity.probe;
    context_create(&ctx_a, probe);

    /* ---- the launcher as it was when the zygotes started ---- */
    {
        char *args[] = { (char *)probe, "one", "two words", "", "tab\there\nnewline",
                         "\xc3\xbcn\xc3\xaf", NULL };
        struct scenario sc = { .name = "default", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        /* A zygote pinned to one CPU while it loads: its tasks still get
         * the caller's affinity. */
        char *args[] = { (char *)probe, "pinned", NULL };
        struct scenario sc = { .name = "zygote pinned to a CPU", .argv = args, .null_attr = 1 };
        pspawn_context_t ctx_pinned;
        int rc = pspawn_context_create(&ctx_pinned, probe, parity.last_cpu);
        if (rc != 0)
            tap_bail("pspawn_context_create(%s, core %d): %s", probe, parity.last_cpu,
                     strerror(rc));
        check_scenario(&ctx_pinned, probe, &sc);
        pspawn_context_destroy(&ctx_pinned);
    }

    /* ---- the launcher changed its state after the zygote started ---- */
    parity_launcher_change(&fds);
    {
        char *args[] = { (char *)probe, "state", NULL };
        char *env[] = { "A=1", "B=two words", "EMPTY=", "PATH=/usr/bin:/bin",
                        parity.expect_ppid, NULL };
        struct scenario sc = { .name = "launcher state changed", .argv = args,
                               .envp = env, .null_attr = 1 };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        /* A launcher with a low fd limit (ulimit -n 256) can still have a
         * zygote. */
        char *args[] = { (char *)probe, "low-nofile", NULL };
        struct scenario sc = { .name = "zygote started under RLIMIT_NOFILE 256",
                               .argv = args, .null_attr = 1 };
        struct rlimit rl = orig_nofile, cur;
        pspawn_context_t ctx_low;
        getrlimit(RLIMIT_NOFILE, &cur);
        rl.rlim_cur = rl.rlim_max < 256 ? rl.rlim_max : 256;
        setrlimit(RLIMIT_NOFILE, &rl);
        context_create(&ctx_low, probe);
        setrlimit(RLIMIT_NOFILE, &cur);
        check_scenario(&ctx_low, probe, &sc);
        pspawn_context_destroy(&ctx_low);
    }

    /* ---- a zygote started in that state, the launcher restored ---- */
    context_create(&ctx_b, probe);
    parity_launcher_restore(&fds);
    {
        char *args[] = { (char *)probe, "restored", NULL };
        struct scenario sc = { .name = "launcher state restored", .argv = args,
                               .null_attr = 1 };
        check_scenario(&ctx_b, probe, &sc);
    }

    /* ---- the launcher gave up privileges (for good: last) ---- */
    check_gained(&ctx_b, probe, "launcher set no_new_privs", PR_SET_NO_NEW_PRIVS,
                 "misc.no_new_privs");
    check_gained(&ctx_b, probe, "launcher set memory-deny-write-execute",
                 65 /* PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 1 */, "misc.mdwe");
    check_seccomp(&ctx_b, probe);

    pspawn_context_destroy(&ctx_a);
    pspawn_context_destroy(&ctx_b);
    return parity_finish();
}
