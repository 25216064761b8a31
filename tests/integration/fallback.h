/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fallback.h - what the two fallback test programs share (header only):
 * tests/integration/fallback-program (the program itself cannot be served
 * by its zygote) and tests/integration/fallback-state (the zygote's, the
 * launcher's or the request's state makes a fork unfaithful to an exec).
 * One spawn observed from every side (its output, how many times it ran,
 * stderr with PSPAWN_DEBUG=1), the checks made of it, and the start and
 * end of main.
 */
#ifndef TESTS_FALLBACK_H
#define TESTS_FALLBACK_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

static char builddir[PATH_MAX / 2];
static char tmpdir[256];
static char capture_path[300];
static char stderr_path[300];
static char append_path[300];

/* ---- small helpers ------------------------------------------------------ */

/* The whole of PATH (files of /proc too, which have no size). */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "re");
    char *text = NULL;
    size_t len = 0, cap = 0, n;

    if (!f)
        return strdup("");
    do {
        if (cap - len < 4096) {
            cap = cap ? 2 * cap : 8192;
            text = realloc(text, cap);
            if (!text)
                tap_bail("out of memory");
        }
        n = fread(text + len, 1, cap - len - 1, f);
        len += n;
    } while (n > 0);
    text[len] = '\0';
    fclose(f);
    return text;
}

static int count_lines(const char *text)
{
    int n = 0;

    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* ---- one spawn, observed from every side --------------------------------- */

struct outcome {
    int rc;             /* pspawn_ex's return */
    int exited0;        /* reaped, exit 0 */
    char *out;          /* the task's stdout */
    char *err;          /* stderr of launcher and task (PSPAWN_DEBUG) */
    int runs;           /* lines the task appended to append_path */
    int pid_matches;    /* the one run was the pid returned */
    double seconds;     /* time spent in pspawn_ex */
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Redirect fd 1 and fd 2 to files around F (spawn or context creation),
 * with PSPAWN_DEBUG=1 so that a fallback reason is printed. */
struct redirect { int out, err; };

static void redirect_begin(struct redirect *r)
{
    int o, e;

    fflush(stdout);
    fflush(stderr);
    o = open(capture_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    e = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (o < 0 || e < 0)
        tap_bail("open capture files: %s", strerror(errno));
    r->out = fcntl(1, F_DUPFD_CLOEXEC, 10);
    r->err = fcntl(2, F_DUPFD_CLOEXEC, 10);
    dup2(o, 1);
    dup2(e, 2);
    close(o);
    close(e);
}

static void redirect_end(struct redirect *r)
{
    fflush(stderr);
    dup2(r->out, 1);
    dup2(r->err, 2);
    close(r->out);
    close(r->err);
}

static void reset_captures(void)
{
    unlink(capture_path);
    unlink(stderr_path);
    unlink(append_path);
}

static void outcome_free(struct outcome *o)
{
    free(o->out);
    free(o->err);
    memset(o, 0, sizeof *o);
}

/* Spawns ARGV (with ENVP) through CTX, waits for it and collects what it
 * printed and how many times it ran: the task appends PREFIX and its pid
 * to append_path. */
static void spawn_collect(pspawn_context_t *ctx, char *const argv[], char *const envp[],
                          const char *prefix, struct outcome *o)
{
    struct redirect r;
    pid_t pid = -1;
    double t0;
    char *runs, want[64];
    int st;

    memset(o, 0, sizeof *o);
    reset_captures();
    redirect_begin(&r);
    t0 = now();
    o->rc = pspawn_ex(&pid, ctx, NULL, argv, envp);
    o->seconds = now() - t0;
    redirect_end(&r);
    if (o->rc == 0 && waitpid(pid, &st, 0) == pid)
        o->exited0 = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    o->out = read_file(capture_path);
    o->err = read_file(stderr_path);
    runs = read_file(append_path);
    o->runs = count_lines(runs);
    snprintf(want, sizeof want, "%s%ld\n", prefix, (long)pid);
    o->pid_matches = strcmp(runs, want) == 0;
    free(runs);
}

/* One task: "PROG append FILE ARG"; it appends "- PID" and prints
 * "task version=V ... args=ARG". */
__attribute__((unused))
static void spawn_task_env(pspawn_context_t *ctx, const char *argv0, const char *arg,
                           char *const envp[], struct outcome *o)
{
    char *argv[] = { (char *)argv0, "append", append_path, (char *)arg, NULL };

    spawn_collect(ctx, argv, envp, "- ", o);
}

static void spawn_task(pspawn_context_t *ctx, const char *argv0, const char *arg,
                       struct outcome *o)
{
    spawn_task_env(ctx, argv0, arg, NULL, o);
}


/* ---- checks ------------------------------------------------------------- */

static void check_ran_once(const char *name, const struct outcome *o, const char *want_out)
{
    tap_ok(o->rc == 0 && o->exited0 && o->runs == 1 && o->pid_matches &&
           strcmp(o->out, want_out) == 0,
           "%s: the task ran exactly once, exited 0, printed the right output", name);
    if (o->rc != 0)
        tap_diag("    pspawn_ex: %s", strerror(o->rc));
    if (o->runs != 1 || !o->pid_matches)
        tap_diag("    runs recorded: %d (pid %s)", o->runs,
                 o->pid_matches ? "matches" : "does not match");
    if (strcmp(o->out, want_out) != 0)
        tap_diag("    output: \"%s\", want \"%s\"", o->out, want_out);
}

__attribute__((unused)) static void check_reason(const char *name, const pspawn_context_t *ctx,
                         const struct outcome *o, const char *word)
{
    const char *reason = pspawn_context_reason(ctx);

    tap_ok(reason && strstr(reason, word), "%s: reason mentions \"%s\"", name, word);
    tap_diag("    reason: %s", reason ? reason : "(none)");
    /* PSPAWN_DEBUG=1: a line "libpspawn[PID] TIME: ..." with the reason on stderr
     * (o->err holds what was printed while creating and spawning). */
    {
        const char *line = strstr(o->err, "libpspawn[");
        int found = 0;
        while (line && !found) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            char *copy = strndup(line, len);
            found = (line == o->err || line[-1] == '\n') && strstr(copy, word);
            free(copy);
            line = strstr(line + 1, "libpspawn[");
        }
        tap_ok(found, "%s: PSPAWN_DEBUG=1 prints the reason on stderr", name);
        if (!found)
            tap_diag("    stderr: %s", o->err[0] ? o->err : "(empty)");
    }
}

__attribute__((unused))
static void check_exec_for_good(const char *name, const pspawn_context_t *ctx)
{
    tap_ok(!pspawn_context_uses_zygote(ctx), "%s: pspawn_context_uses_zygote() is 0", name);
}

__attribute__((unused)) static void check_zygote_served(const char *name, const pspawn_context_t *ctx,
                                const struct outcome *o, const char *want_out)
{
    const char *reason = pspawn_context_reason(ctx);
    char label[128];

    snprintf(label, sizeof label, "%s, first spawn", name);
    check_ran_once(label, o, want_out);
    tap_ok(pspawn_context_uses_zygote(ctx) && !reason,
           "%s: served by the zygote (no fallback yet)", name);
    if (reason)
        tap_diag("    reason: %s", reason);
}

/* Create the context with stderr captured (a reason found at creation is
 * printed then). */
static int create_context(pspawn_context_t *ctx, const char *path, struct outcome *o)
{
    struct redirect r;
    int rc;

    reset_captures();
    redirect_begin(&r);
    rc = pspawn_context_create(ctx, path, -1);
    redirect_end(&r);
    if (o)
        o->err = read_file(stderr_path);
    return rc;
}

/* Puts BEFORE (what the context's creation printed) ahead of O's stderr,
 * where the reason checks look for it. */
__attribute__((unused))
static void prepend_err(struct outcome *o, const char *before)
{
    char *s = malloc(strlen(before) + strlen(o->err) + 1);

    if (!s)
        tap_bail("out of memory");
    strcpy(s, before);
    strcat(s, o->err);
    free(o->err);
    o->err = s;
}


/* Copy FROM to TO with MODE. */
__attribute__((unused)) static void copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[65536], tmp[PATH_MAX];
    int in, out;
    ssize_t n;

    /* Write aside and rename, as an install does: the old file may be
     * running (a zygote), so it cannot be written in place. */
    snprintf(tmp, sizeof tmp, "%s.new", to);
    in = open(from, O_RDONLY | O_CLOEXEC);
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
    if (in < 0 || out < 0)
        tap_bail("copy %s to %s: %s", from, tmp, strerror(errno));
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            tap_bail("copy %s: %s", tmp, strerror(errno));
    close(in);
    if (fchmod(out, mode) != 0 || close(out) != 0 || rename(tmp, to) != 0)
        tap_bail("copy %s: %s", to, strerror(errno));
}

/* ---- start and end of main ---------------------------------------------- */

/* The start of main: PSPAWN_DEBUG=1 (by running ARGV again with it, so
 * that the library reads it however early), the build directory from
 * TESTS_BUILDDIR, a fresh /tmp/pspawn-fallback.XXXXXX. */
static void fallback_start(char **argv)
{
    const char *b = getenv("TESTS_BUILDDIR");

    if (!getenv("PSPAWN_DEBUG") || strcmp(getenv("PSPAWN_DEBUG"), "1") != 0) {
        setenv("PSPAWN_DEBUG", "1", 1);
        execv("/proc/self/exe", argv);
        tap_bail("re-exec with PSPAWN_DEBUG=1: %s", strerror(errno));
    }
    tap_watchdog(120);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(builddir, sizeof builddir, "%s", b);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pspawn-fallback.XXXXXX");
    if (!mkdtemp(tmpdir))
        tap_bail("mkdtemp: %s", strerror(errno));
    snprintf(capture_path, sizeof capture_path, "%s/stdout", tmpdir);
    snprintf(stderr_path, sizeof stderr_path, "%s/stderr", tmpdir);
    snprintf(append_path, sizeof append_path, "%s/runs", tmpdir);
}

/* The end of main: the scratch directory removed with the copies made
 * in it, the plan printed. */
static int fallback_finish(void)
{
    static const char *const names[] = { "setuid", "setgid", "caps", "changing", "task-for-nobody",
                                         "proxy-for-nobody.so" };
    char path[PATH_MAX];

    reset_captures();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    if (rmdir(tmpdir) != 0)
        tap_diag("rmdir %s: %s", tmpdir, strerror(errno));
    return tap_done();
}

#endif
