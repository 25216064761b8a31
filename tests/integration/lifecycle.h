/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle.h - what the two lifecycle test programs share (header only):
 * tests/integration/lifecycle (the zygote's life) and tests/integration/lifecycle-libs (its
 * libraries replaced on disk).
 */
#ifndef TESTS_LIFECYCLE_H
#define TESTS_LIFECYCLE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

/* Half of PATH_MAX: room for the names made of them. */
static char builddir[PATH_MAX / 2], tmp[PATH_MAX / 2], lifeprog[PATH_MAX / 2];

__attribute__((unused))
static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

__attribute__((unused))
static int copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[65536];
    int in = open(from, O_RDONLY | O_CLOEXEC), out;
    ssize_t n;
    int rc = 0;

    if (in < 0)
        return -1;
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (out < 0) {
        close(in);
        return -1;
    }
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    close(in);
    if (close(out) != 0 || n < 0)
        rc = -1;
    return rc;
}

__attribute__((unused))
/* Spawn N tasks of ARGV through CTX with fd 1 on OUT (if not NULL) and
 * wait for them: how many exited with 0.  Their pids in PIDS if not NULL. */
static int run(pspawn_context_t *ctx, int n, char *const argv[], const char *out, pid_t *pids)
{
    pid_t p[64];
    int saved = -1, fd, ok = 0, st;

    if (out) {
        fflush(stdout);
        saved = dup(1);
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || saved < 0)
            tap_bail("cannot open %s: %s", out, strerror(errno));
        dup2(fd, 1);
        close(fd);
    }
    int err = pspawn_n(p, ctx, n, argv);
    if (out) {
        dup2(saved, 1);
        close(saved);
    }
    if (err) {
        tap_diag("pspawn_n: %s", strerror(err));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (pids)
            pids[i] = p[i];
        while (waitpid(p[i], &st, 0) < 0 && errno == EINTR)
            ;
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    return ok;
}

__attribute__((unused))
static int file_has(const char *file, const char *what)
{
    static char buf[1 << 16];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);

    if (fd >= 0)
        close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return memmem(buf, (size_t)n, what, strlen(what)) != NULL;
}

/* The start of main: the build directory from TESTS_BUILDDIR, a fresh
 * /tmp/pspawn-NAME.XXXXXX, and a group of our own. */
__attribute__((unused))
static void lifecycle_start(const char *name)
{
    const char *b = getenv("TESTS_BUILDDIR");

    tap_watchdog(300);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    if (strlen(b) >= sizeof builddir - 16)
        tap_bail("TESTS_BUILDDIR is too long");
    snprintf(builddir, sizeof builddir, "%s", b);
    snprintf(lifeprog, sizeof lifeprog, "%.*s/lifeprog", (int)sizeof builddir - 16, b);
    snprintf(tmp, sizeof tmp, "/tmp/pspawn-%s.XXXXXX", name);
    if (!mkdtemp(tmp))
        tap_bail("mkdtemp: %s", strerror(errno));
    /* A group of our own: kill(0, ...) reaches us and ours only. */
    setpgid(0, 0);
    unsetenv("PSPAWN_OPTIONS");
}

/* The end of main: remove the temporary directory, print the plan. */
__attribute__((unused))
static int lifecycle_finish(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmp);
    return tap_done();
}

#endif
