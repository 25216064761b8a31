/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawnbench-floor.c - the floor scheme of bench/spawnbench: the program
 * run once with bench/floor.c's library (libpspawn-floor.so, independent
 * of libpspawn) preloaded, LD_BIND_NOW=1 and PSPAWN_FLOOR=N: it forks N
 * children from the parked program with no protocol at all and reports
 * the time it took on stderr (floor-warm); floor is the whole run, its
 * one exec included.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawnbench.h"

#ifndef PSPAWN_FLOOR_LIB_PATH
#error "build with -DPSPAWN_FLOOR_LIB_PATH='\"<builddir>/bench/.libs/libpspawn-floor.so\"'"
#endif

/* The floor's library: $PSPAWN_FLOOR_LIB, else the one built here. */
static const char *floor_lib_path(void)
{
    const char *p = getenv("PSPAWN_FLOOR_LIB");
    return p && *p ? p : PSPAWN_FLOOR_LIB_PATH;
}

/* The floor's environment: ours, with the floor preloaded and told to fork
 * N children itself, and LD_BIND_NOW=1, so that the floor's children
 * start bound, as tasks start from a zygote that bound the program's
 * functions at its park (libpspawn/zygote/bind.c). */
struct floor_env {
    char **envp;
    char preload[65536];
    char count[32];
};

static int floor_env_init(struct floor_env *fe, const char *lib, int n)
{
    size_t count = 0;
    while (environ[count])
        count++;
    fe->envp = calloc(count + 4, sizeof *fe->envp);
    if (!fe->envp)
        return ENOMEM;
    size_t k = 0;
    const char *user_preload = "";
    for (size_t i = 0; i < count; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0)
            user_preload = environ[i] + 11;
        else if (strncmp(environ[i], "LD_BIND_NOW=", 12) != 0 &&
                 strncmp(environ[i], "PSPAWN_FLOOR=", 13) != 0)
            fe->envp[k++] = environ[i];
    }
    /* As libpspawn does for its zygote: the user's preloads first. */
    int len = snprintf(fe->preload, sizeof fe->preload, "LD_PRELOAD=%s%s%s",
                       user_preload, *user_preload ? " " : "", lib);
    if (len < 0 || (size_t)len >= sizeof fe->preload) {
        free(fe->envp);
        return ENAMETOOLONG;
    }
    snprintf(fe->count, sizeof fe->count, "PSPAWN_FLOOR=%d", n);
    fe->envp[k++] = fe->preload;
    fe->envp[k++] = fe->count;
    fe->envp[k++] = (char *)"LD_BIND_NOW=1";
    fe->envp[k] = NULL;
    return 0;
}

/* Everything the floor run wrote on stderr. */
static char *read_all(int fd)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (cap - len < 1024) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    buf[len] = '\0';
    return buf;
}

/* Finds the proxy's report; passes anything else through to our stderr. */
static int parse_floor(char *out, int n, long long *total_ns)
{
    int found = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        int got_n;
        long long ns;
        if (sscanf(line, "pspawn-floor: n=%d total_ns=%lld", &got_n, &ns) == 2) {
            if (got_n != n) {
                fprintf(stderr, "spawnbench: floor: the proxy forked %d, not %d\n",
                        got_n, n);
                return -1;
            }
            *total_ns = ns;
            found = 1;
        } else {
            fprintf(stderr, "%s\n", line);
        }
    }
    if (!found)
        fprintf(stderr, "spawnbench: floor: no 'pspawn-floor:' line on the "
                "program's stderr (is PSPAWN_FLOOR_LIB the floor's library?)\n");
    return found ? 0 : -1;
}

int run_floor(const struct bench *b, double *total, double *warm)
{
    const char *lib = floor_lib_path();
    if (access(lib, R_OK) != 0) {
        fprintf(stderr, "spawnbench: floor: %s: %s (set PSPAWN_FLOOR_LIB)\n",
                lib, strerror(errno));
        return -1;
    }
    struct floor_env fe;
    int err = floor_env_init(&fe, lib, b->n);
    if (err) {
        fprintf(stderr, "spawnbench: floor: %s\n", strerror(err));
        return -1;
    }
    int fds[2];
    posix_spawn_file_actions_t fa;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "spawnbench: floor: pipe: %s\n", strerror(errno));
        free(fe.envp);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);

    double t0 = now();
    pid_t pid;
    err = posix_spawn(&pid, b->path, &fa, NULL, b->argv, fe.envp);
    close(fds[1]);
    char *out = err ? NULL : read_all(fds[0]);
    int status = 0;
    if (!err && wait_pid(pid, &status) < 0)
        err = errno;
    double t1 = now();

    close(fds[0]);
    posix_spawn_file_actions_destroy(&fa);
    free(fe.envp);
    if (err) {
        fprintf(stderr, "spawnbench: floor: %s: %s\n", b->path, strerror(err));
        free(out);
        return -1;
    }
    if (!out) {
        fprintf(stderr, "spawnbench: floor: %s\n", strerror(ENOMEM));
        return -1;
    }
    long long ns = 0;
    int rc = parse_floor(out, b->n, &ns);
    free(out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char what[64];
        describe_status(what, sizeof what, status);
        fprintf(stderr, "spawnbench: floor: %s ended with %s\n", b->path, what);
        rc = -1;
    }
    *total = t1 - t0;
    *warm = (double)ns * 1e-9;
    return rc;
}
