/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctor-state - what a program's constructors do is part of the program: an
 * exec'd task gets their changes on top of its caller's state, and so must
 * a task forked from the zygote, whose constructors ran once.
 *
 *  - A constructor that starts a shell (system()) before the proxy's own
 *    constructor runs: the shell inherits the zygote's variables and
 *    channels and must not park in the zygote's place.
 *  - A constructor that lowers RLIMIT_CORE (hard limit too) or sets a
 *    umask: tasks keep that, as exec'd ones do; when the caller changed the
 *    same thing after the zygote started, the zygote cannot be faithful and
 *    the task is exec'd, with the reason given.
 *  - A caller that moves to another process group after the zygote
 *    started: its tasks start in its group, as after exec.
 *  - Close actions on the numbers the task's protocol fds sit at (1022,
 *    1023): they must not cut the task off from its launcher.
 *  - A 32-bit ELF: not for the zygote; exec decides, with its own error.
 *
 * Uses $TESTS_BUILDDIR/ctors (linked against libctorlib).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

extern char **environ;
static char prog[PATH_MAX];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Spawn ctors ARG through CTX (or exec it where CTX is NULL) with its
 * stdout to a pipe and CLOSE_A, CLOSE_B (when >= 0) closed; its one line in
 * OUT.  Returns the spawn's error, or -1 when the task did not exit 0. */
static int run(pspawn_context_t *ctx, const char *arg, int close_a, int close_b, char *out,
               size_t size)
{
    char *argv[] = { prog, (char *)arg, NULL };
    pspawn_attr_t attr;
    int p[2], rc, st;
    pid_t pid = -1;
    size_t len = 0;
    ssize_t n;

    out[0] = 0;
    if (pipe2(p, O_CLOEXEC) < 0)
        tap_bail("pipe: %s", strerror(errno));
    pspawn_attr_init(&attr);
    pspawn_attr_adddup2(&attr, p[1], 1);
    if (close_a >= 0)
        pspawn_attr_addclose(&attr, close_a);
    if (close_b >= 0)
        pspawn_attr_addclose(&attr, close_b);
    rc = ctx ? pspawn_ex(&pid, ctx, &attr, argv, NULL) : pspawn_exec(&pid, prog, &attr, argv, NULL);
    pspawn_attr_destroy(&attr);
    close(p[1]);
    while (rc == 0 && len < size - 1 && (n = read(p[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    out[strcspn(out, "\n")] = 0;
    close(p[0]);
    if (rc)
        return rc;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return 0;
}

/* The VALUE of " KEY=VALUE" in LINE, or "?". */
static const char *field(const char *line, const char *key)
{
    static char v[128];
    char pat[64];
    const char *f;

    snprintf(pat, sizeof pat, " %s=", key);
    f = strstr(line, pat);
    if (!f)
        return "?";
    f += strlen(pat);
    snprintf(v, sizeof v, "%.*s", (int)strcspn(f, " "), f);
    return v;
}

static int has(const char *line, const char *key, const char *value)
{
    return strcmp(field(line, key), value) == 0;
}

static int reason_has(pspawn_context_t *ctx, const char *what)
{
    const char *r = pspawn_context_reason(ctx);
    return r && strstr(r, what) != NULL;
}

static void constructor_starts_a_shell(void)
{
    pspawn_context_t ctx;
    char out[512];
    int rc, good = 0;

    setenv("PSPAWN_TEST_CTOR", "spawn", 1);
    rc = pspawn_context_create(&ctx, prog, -1);
    tap_ok(rc == 0 && pspawn_context_uses_zygote(&ctx),
           "constructors that run system(): the zygote parks (%s)",
           rc ? strerror(rc) : pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "");
    for (int i = 0; rc == 0 && i < 3; i++) {
        char arg[16];
        snprintf(arg, sizeof arg, "t%d", i);
        if (run(&ctx, arg, -1, -1, out, sizeof out) == 0 && strncmp(out, "ctors ", 6) == 0 &&
            strncmp(out + 6, arg, strlen(arg)) == 0 && has(out, "system", "0,0") &&
            has(out, "forked", "1"))
            good++;
        else
            tap_diag("    task %d: \"%s\"", i, out);
    }
    tap_ok(good == 3, "each task runs the program with its own argv, forked, and its parent "
           "waits for it (%d of 3)", good);
    if (rc == 0)
        pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_TEST_CTOR");
}

static void constructor_lowers_rlimit_core(void)
{
    pspawn_context_t ctx;
    struct rlimit mine, low;
    char out[512], ref[512];
    int rc;

    getrlimit(RLIMIT_CORE, &mine);
    if (mine.rlim_max == 0) {
        tap_skip("RLIMIT_CORE's hard limit is already 0", "constructor lowers RLIMIT_CORE");
        return;
    }
    low = (struct rlimit){ 0, mine.rlim_max };
    setrlimit(RLIMIT_CORE, &low);
    setenv("PSPAWN_TEST_CTOR", "rlimit", 1);
    rc = run(NULL, "exec", -1, -1, ref, sizeof ref);
    tap_ok(rc == 0 && has(ref, "core", "0:0") && has(ref, "forked", "0"),
           "reference: an exec'd task has the constructor's RLIMIT_CORE 0:0 (\"%s\")", ref);
    rc = pspawn_context_create(&ctx, prog, -1);
    if (rc)
        tap_bail("pspawn_context_create: %s", strerror(rc));
    rc = run(&ctx, "zygote", -1, -1, out, sizeof out);
    tap_ok(rc == 0 && has(out, "core", "0:0") && has(out, "forked", "1"),
           "a forked task keeps the constructor's RLIMIT_CORE 0:0 too (rc %d, \"%s\")", rc, out);
    if (mine.rlim_max >= 1) {
        struct rlimit one = { 1, mine.rlim_max };
        setrlimit(RLIMIT_CORE, &one);
        rc = run(&ctx, "changed", -1, -1, out, sizeof out);
        tap_ok(rc == 0 && has(out, "core", "0:0") && has(out, "forked", "0") &&
               reason_has(&ctx, "RLIMIT_CORE"),
               "caller changes RLIMIT_CORE too: exec'd, with the reason (\"%s\"; %s)", out,
               pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "no reason");
    }
    pspawn_context_destroy(&ctx);
    setrlimit(RLIMIT_CORE, &mine);
    unsetenv("PSPAWN_TEST_CTOR");
}

static void constructor_sets_umask(void)
{
    pspawn_context_t ctx;
    char out[512];
    mode_t old = umask(022);
    int rc;

    setenv("PSPAWN_TEST_CTOR", "umask", 1);
    rc = pspawn_context_create(&ctx, prog, -1);
    if (rc)
        tap_bail("pspawn_context_create: %s", strerror(rc));
    rc = run(&ctx, "zygote", -1, -1, out, sizeof out);
    tap_ok(rc == 0 && has(out, "umask", "077") && has(out, "forked", "1"),
           "a forked task keeps the constructor's umask 077, caller's 022 (\"%s\")", out);
    umask(027);
    rc = run(&ctx, "changed", -1, -1, out, sizeof out);
    tap_ok(rc == 0 && has(out, "umask", "077") && has(out, "forked", "0") &&
           reason_has(&ctx, "umask"),
           "caller changes its umask too: exec'd, umask 077 (\"%s\"; %s)", out,
           pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "no reason");
    pspawn_context_destroy(&ctx);
    umask(old);
    unsetenv("PSPAWN_TEST_CTOR");
}

static void caller_changes_group(void)
{
    pspawn_context_t ctx;
    pid_t orig = getpgrp();
    char out[512], want[32];
    int rc;

    if (orig == getpid()) {
        tap_skip("the test leads its process group: no other group to move to",
                 "caller moves to another process group");
        return;
    }
    if (setpgid(0, 0) < 0)
        tap_bail("setpgid: %s", strerror(errno));
    rc = pspawn_context_create(&ctx, prog, -1);
    if (rc)
        tap_bail("pspawn_context_create: %s", strerror(rc));
    if (setpgid(0, orig) < 0)
        tap_bail("setpgid back: %s", strerror(errno));
    rc = run(&ctx, "group", -1, -1, out, sizeof out);
    snprintf(want, sizeof want, "%d", (int)orig);
    tap_ok(rc == 0 && has(out, "pgid", want) && has(out, "forked", "1"),
           "caller left the zygote's group: its task starts in the caller's group %d (\"%s\")",
           (int)orig, out);
    pspawn_context_destroy(&ctx);
}

static void close_protocol_numbers(void)
{
    pspawn_context_t ctx;
    char out[512];
    double t0;
    int rc;

    rc = pspawn_context_create(&ctx, prog, -1);
    if (rc)
        tap_bail("pspawn_context_create: %s", strerror(rc));
    t0 = now_s();
    rc = run(&ctx, "closes", 1022, 1023, out, sizeof out);
    tap_ok(rc == 0 && has(out, "forked", "1") && now_s() - t0 < 5 &&
               pspawn_context_uses_zygote(&ctx),
           "close actions on fds 1022 and 1023 (where the task's channels were) do not cut it "
           "off (\"%s\", %.1f s)", out, now_s() - t0);
    pspawn_context_destroy(&ctx);
}

static void elf32_program(void)
{
    char path[] = "/tmp/pspawn-elf32-XXXXXX";
    unsigned char h[64] = { 0x7f, 'E', 'L', 'F', 1 /* ELFCLASS32 */, 1, 1 };
    int fd = mkstemp(path), ref, rc;
    pid_t pid;
    char *argv[] = { path, NULL };
    pspawn_context_t ctx;

    h[16] = 2;          /* ET_EXEC */
    h[18] = 3;          /* EM_386 */
    h[20] = 1;          /* EV_CURRENT */
    if (fd < 0 || write(fd, h, sizeof h) != (ssize_t)sizeof h)
        tap_bail("cannot write %s", path);
    fchmod(fd, 0755);
    close(fd);
    ref = posix_spawn(&pid, path, NULL, NULL, argv, environ);
    if (ref == 0)
        waitpid(pid, NULL, 0);
    rc = pspawn_context_create(&ctx, path, -1);
    tap_ok(rc == 0 && !pspawn_context_uses_zygote(&ctx) && reason_has(&ctx, "not a native ELF"),
           "a 32-bit ELF: no zygote, exec decides (%s)",
           rc ? strerror(rc) : pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "");
    if (rc == 0) {
        int err = pspawn_ex(&pid, &ctx, NULL, argv, NULL);
        if (err == 0)
            waitpid(pid, NULL, 0);
        tap_ok(err == ref, "...and the spawn gives what posix_spawn gives (%s, posix_spawn %s)",
               strerror(err), strerror(ref));
        pspawn_context_destroy(&ctx);
    }
    unlink(path);
}

int main(void)
{
    const char *dir = getenv("TESTS_BUILDDIR");

    snprintf(prog, sizeof prog, "%s/ctors", dir ? dir : "tests");
    if (access(prog, X_OK) < 0)
        tap_bail("%s: %s", prog, strerror(errno));
    signal(SIGPIPE, SIG_IGN);
    constructor_starts_a_shell();
    constructor_lowers_rlimit_core();
    constructor_sets_umask();
    caller_changes_group();
    close_protocol_numbers();
    elf32_program();
    return tap_done();
}
