/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * python-fallback.c - tasks a warm Python zygote cannot run as an exec'd
 * interpreter would are exec'd, and the reason names what differs: the
 * interpreter options, a start-up variable (PYTHON*, LANG, LC_*), a program
 * read from stdin.  Tasks that match, in one vector with those, run warm
 * with their own exit codes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

extern char **environ;

static int exit_code(pid_t pid)
{
    int st;
    if (pid <= 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Spawn one task of ARGV (ENVP: NULL for the caller's) and return its
 * exit code; *WHY gets the context's reason (or ""). */
static int run(pspawn_context_t *ctx, char *const argv[], char *const envp[], char *why,
               size_t size)
{
    pspawn_task_t t = { .argv = argv, .envp = envp };
    int err = pspawn_vector(ctx, &t, 1, NULL, NULL);
    const char *r = pspawn_context_reason(ctx);
    snprintf(why, size, "%s", r ? r : "");
    return err ? -1 : exit_code(t.pid);
}

int main(void)
{
    const char *py = "/usr/bin/python3";
    if (access(py, X_OK) != 0) {
        tap_ok(1, "# SKIP no %s", py);
        return tap_done();
    }
    setenv("PSPAWN_CACHE_DIR", "/nonexistent/pspawn-cache", 1);
    char *zargv[] = { "python3", "-c", "pass", NULL };
    pspawn_context_t ctx;
    int err = pspawn_context_create_argv(&ctx, py, zargv, NULL, NULL);
    tap_ok(err == 0 && pspawn_context_uses_zygote(&ctx),
           "context with a Python command line (%s)", strerror(err));
    char why[600];

    char *same[] = { "python3", "-c", "import sys; sys.exit(7)", NULL };
    int rc = run(&ctx, same, NULL, why, sizeof why);
    tap_ok(rc == 7 && !why[0], "same options: served warm, exit 7 (got %d; %s)", rc, why);

    char *opt[] = { "python3", "-O", "-c", "import sys; sys.exit(0 if sys.flags.optimize else 9)", NULL };
    rc = run(&ctx, opt, NULL, why, sizeof why);
    tap_ok(rc == 0 && strstr(why, "interpreter options differ"),
           "-O: exec'd with the reason, and optimized (got %d; %s)", rc, why);

    char *xopt[] = { "python3", "-X", "utf8", "-c", "import sys; sys.exit(sys.flags.utf8_mode + 4)", NULL };
    rc = run(&ctx, xopt, NULL, why, sizeof why);
    tap_ok(rc == 5 && strstr(why, "interpreter options differ"),
           "-X utf8: exec'd with the reason (got %d; %s)", rc, why);

    size_t n = 0;
    while (environ[n])
        n++;
    char *env[n + 2];
    memcpy(env, environ, n * sizeof *env);
    env[n] = "PYTHONHASHSEED=123";
    env[n + 1] = NULL;
    char *seed[] = { "python3", "-c",
                     "import sys, os; sys.exit(0 if sys.flags.hash_randomization == 1 and "
                     "os.environ['PYTHONHASHSEED'] == '123' else 9)", NULL };
    rc = run(&ctx, seed, env, why, sizeof why);
    tap_ok(rc == 0 && strstr(why, "PYTHONHASHSEED"),
           "PYTHONHASHSEED set: exec'd, the reason names it (got %d; %s)", rc, why);
    env[n] = "LC_ALL=C";
    rc = run(&ctx, same, env, why, sizeof why);
    tap_ok(rc == 7 && strstr(why, "LC_ALL"), "LC_ALL set: exec'd, the reason names it (got %d; %s)",
           rc, why);

    char *in[] = { "python3", "-", NULL };
    rc = run(&ctx, in, NULL, why, sizeof why);
    tap_ok(rc == 0 && strstr(why, "standard input"),
           "a program on stdin: exec'd with the reason (got %d; %s)", rc, why);

    /* A vector mixing both: each task where it belongs, in order. */
    pspawn_task_t t[3] = { { .argv = same }, { .argv = opt }, { .argv = same } };
    err = pspawn_vector(&ctx, t, 3, NULL, NULL);
    int a = exit_code(t[0].pid), b = exit_code(t[1].pid), c = exit_code(t[2].pid);
    tap_ok(err == 0 && a == 7 && b == 0 && c == 7, "mixed vector: exits 7, 0, 7 (got %d %d %d)",
           a, b, c);
    pspawn_context_destroy(&ctx);

    /* A preloaded module rewritten while its zygote lives: the next task
     * runs the new one (the zygote watched the file), never the one the
     * zygote imported. */
    char dir[] = "/tmp/pspawn-pywatch.XXXXXX", mod[64];
    tap_ok(mkdtemp(dir) != NULL, "a directory for the module (%s)", dir);
    snprintf(mod, sizeof mod, "%s/watchedmod.py", dir);
    FILE *f = fopen(mod, "w");
    if (f) {
        fputs("V = 11\n", f);
        fclose(f);
    }
    setenv("PSPAWN_PRELOAD_MODULES", "watchedmod", 1);
    setenv("PYTHONPATH", dir, 1);
    char *wargv[] = { "python3", "-c", "import watchedmod, sys; sys.exit(watchedmod.V)", NULL };
    err = pspawn_context_create_argv(&ctx, py, wargv, NULL, NULL);
    rc = err ? -1 : run(&ctx, wargv, NULL, why, sizeof why);
    tap_ok(rc == 11 && !why[0], "a preloaded module: served warm, exit 11 (got %d; %s)", rc, why);
    sleep(1);   /* (another mtime, whatever the filesystem's granularity) */
    f = fopen(mod, "w");
    if (f) {
        fputs("V = 12\n", f);
        fclose(f);
    }
    rc = err ? -1 : run(&ctx, wargv, NULL, why, sizeof why);
    tap_ok(rc == 12, "the module rewritten on disk: the next task runs the new one, exit 12 "
           "(got %d; %s)", rc, why);
    pspawn_context_destroy(&ctx);
    unlink(mod);
    rmdir(dir);
    return tap_done();
}
