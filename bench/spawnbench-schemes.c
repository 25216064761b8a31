/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawnbench-schemes.c - the launch schemes of bench/spawnbench (its
 * driver, spawnbench.c, says what each measures): pspawn, posix_spawn,
 * sfork, afork (forkexec), vfork and pfork; the floor is
 * spawnbench-floor.c's.  Each launches all N tasks, waits for all of
 * them, and fails if any did not launch or exit 0.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"
#include "spawnbench.h"

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int wait_pid(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

void describe_status(char *buf, size_t len, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "status 0x%x", (unsigned)status);
}

/* ENV with NAME=VALUE (a full "NAME=VALUE" string) added, or replacing
 * the variable of that name; ENV must have room for one more entry. */
void env_put(char **env, char *var)
{
    size_t len = strcspn(var, "=") + 1, i = 0;
    for (; env[i]; i++) {
        if (strncmp(env[i], var, len) == 0) {
            env[i] = var;
            return;
        }
    }
    env[i] = var;
    env[i + 1] = NULL;
}

/* Reap every launched task; returns how many did not exit 0.  Tasks that
 * failed to launch (-1) are skipped: the caller already counted them. */
static int wait_all(const struct bench *b, const char *scheme)
{
    int bad = 0;
    for (int i = 0; i < b->n; i++) {
        int status;
        if (b->pids[i] <= 0)
            continue;
        if (wait_pid(b->pids[i], &status) < 0) {
            fprintf(stderr, "spawnbench: %s: waitpid(%d): %s\n", scheme,
                    (int)b->pids[i], strerror(errno));
            bad++;
            continue;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (bad == 0) {
                char what[64];
                describe_status(what, sizeof what, status);
                fprintf(stderr, "spawnbench: %s: task %d ended with %s\n",
                        scheme, i, what);
            }
            bad++;
        }
    }
    return bad;
}

static int finish(const struct bench *b, const char *scheme, int launch_err,
                  int launched)
{
    int bad = wait_all(b, scheme);
    if (launch_err) {
        fprintf(stderr, "spawnbench: %s: %d of %d tasks not launched: %s\n",
                scheme, b->n - launched, b->n, strerror(launch_err));
        return -1;
    }
    if (bad) {
        fprintf(stderr, "spawnbench: %s: %d of %d tasks failed\n", scheme,
                bad, b->n);
        return -1;
    }
    return 0;
}

static int run_pspawn(const struct bench *b, double *total, double *warm)
{
    pspawn_context_t ctx;
    char **task_env = environ;
    double t0 = now();
    environ = zygote_env;
    int err = pspawn_context_create(&ctx, b->path, -1);
    environ = task_env;
    if (err) {
        fprintf(stderr, "spawnbench: pspawn_context_create(%s): %s\n",
                b->path, strerror(err));
        pspawn_context_destroy(&ctx);
        return -1;
    }
    double t1 = now();
    err = pspawn_n(b->pids, &ctx, b->n, b->argv);
    int launched = 0;
    for (int i = 0; i < b->n; i++)
        launched += b->pids[i] > 0;
    int rc = finish(b, "pspawn", err, launched);
    /* Read before destroy: the string belongs to the context.  A run that
     * fell back to exec measures exec, and must say so. */
    const char *reason = pspawn_context_reason(&ctx);
    if (reason || !pspawn_context_uses_zygote(&ctx))
        fprintf(stderr, "spawnbench: warning: pspawn fell back to exec: %s\n",
                reason ? reason : "(no reason given)");
    pspawn_context_destroy(&ctx);
    double t2 = now();
    *total = t2 - t0;
    *warm = t2 - t1;
    return rc;
}

static int run_posix_spawn(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        int err = posix_spawn(&b->pids[i], b->path, NULL, NULL, b->argv,
                              environ);
        if (err) {
            b->pids[i] = -1;
            if (!first_err)
                first_err = err;
        } else {
            launched++;
        }
    }
    int rc = finish(b, "posix_spawn", first_err, launched);
    *total = now() - t0;
    return rc;
}

/* afork (forkexec): fork + execve N times, then wait for all. */
static int run_forkexec(const struct bench *b, const char *name, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execve(b->path, b->argv, environ);
            _exit(127);
        }
        b->pids[i] = pid;
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
        } else {
            launched++;
        }
    }
    int rc = finish(b, name, first_err, launched);
    *total = now() - t0;
    return rc;
}

/* sfork: fork + execve, then wait for that task before the next. */
static int run_sfork(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0, bad = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execve(b->path, b->argv, environ);
            _exit(127);
        }
        b->pids[i] = -1;    /* reaped here: nothing left for finish() */
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
            continue;
        }
        launched++;
        int status;
        if (wait_pid(pid, &status) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            if (bad++ == 0) {
                char what[64];
                describe_status(what, sizeof what, status);
                fprintf(stderr, "spawnbench: sfork: task %d ended with %s\n",
                        i, what);
            }
        }
    }
    int rc = finish(b, "sfork", first_err, launched);
    if (bad) {
        fprintf(stderr, "spawnbench: sfork: %d of %d tasks failed\n", bad, b->n);
        rc = -1;
    }
    *total = now() - t0;
    return rc;
}

/* Kept apart so that the caller's locals are not live across vfork(). */
static pid_t __attribute__((noinline))
vfork_exec(const char *path, char *const argv[])
{
    pid_t pid = vfork();
    if (pid == 0) {
        execve(path, argv, environ);
        _exit(127);
    }
    return pid;
}

static int run_vfork(const struct bench *b, double *total)
{
    int first_err = 0, launched = 0;
    double t0 = now();
    for (int i = 0; i < b->n; i++) {
        pid_t pid = vfork_exec(b->path, b->argv);
        b->pids[i] = pid;
        if (pid < 0) {
            if (!first_err)
                first_err = errno;
        } else {
            launched++;
        }
    }
    int rc = finish(b, "vfork", first_err, launched);
    *total = now() - t0;
    return rc;
}

/* pfork: the program once, with SPAWNBENCH_PFORK=N; it forks the other
 * N-1 tasks itself and exits 0 only if all of them did. */
static int run_pfork(const struct bench *b, double *total)
{
    size_t count = 0;
    while (environ[count])
        count++;
    char **envp = calloc(count + 2, sizeof *envp);
    char var[48];
    if (!envp) {
        fprintf(stderr, "spawnbench: pfork: %s\n", strerror(ENOMEM));
        return -1;
    }
    memcpy(envp, environ, count * sizeof *envp);
    snprintf(var, sizeof var, "SPAWNBENCH_PFORK=%d", b->n);
    env_put(envp, var);

    double t0 = now();
    pid_t pid;
    int status = 0, err = posix_spawn(&pid, b->path, NULL, NULL, b->argv, envp);
    if (!err && wait_pid(pid, &status) < 0)
        err = errno;
    *total = now() - t0;
    free(envp);
    if (err) {
        fprintf(stderr, "spawnbench: pfork: %s: %s\n", b->path, strerror(err));
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: pfork: %s ended with %s (does it "
                "support SPAWNBENCH_PFORK?)\n", b->path, what);
        return -1;
    }
    return 0;
}

int run_scheme(const struct bench *b, enum scheme s, double out[R_COUNT])
{
    switch (s) {
    case S_PSPAWN:
        return run_pspawn(b, &out[R_PSPAWN], &out[R_PSPAWN_WARM]);
    case S_POSIX_SPAWN:
        return run_posix_spawn(b, &out[R_POSIX_SPAWN]);
    case S_FORKEXEC:
        return run_forkexec(b, "forkexec", &out[R_FORKEXEC]);
    case S_AFORK:
        return run_forkexec(b, "afork", &out[R_AFORK]);
    case S_SFORK:
        return run_sfork(b, &out[R_SFORK]);
    case S_PFORK:
        return run_pfork(b, &out[R_PFORK]);
    case S_VFORK:
        return run_vfork(b, &out[R_VFORK]);
    case S_FLOOR:
        return run_floor(b, &out[R_FLOOR], &out[R_FLOOR_WARM]);
    case S_COUNT:
        break;
    }
    return -1;
}
