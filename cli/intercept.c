/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pspawn --intercept [OPTIONS] [--] LAUNCHER [ARGS...]: run a launcher
 * that nobody here wrote with libpspawn-intercept.so preloaded, so that
 * its repeated starts of a program fork a zygote of it (pspawn(1),
 * "INTERCEPTION").
 *
 * pspawn makes the interception scope (its name, and its table: a sealed
 * memfd that it holds, which the scope's processes open through
 * /proc/PID/fd, so that nothing is left of it once pspawn and they are
 * gone, even after a SIGKILL), runs the launcher as its child and ends as
 * the launcher ends.  It is a child subreaper meanwhile: the keepers of
 * the scope's zygotes, whose starters exit as soon as they park, are its
 * children rather than init's, and it stops them (SIGTERM, which each
 * passes on to its zygote: it finishes the tasks it runs) once the
 * launcher is done, and reaps them, so that none is left to an init that
 * does not reap (a container's).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gain.h"
#include "priority.h"
#include "procfs.h"
#include "pspawn.h"
#include "route.h"
#include "zygotes.h"

static pid_t launcher = -1;

static void intercept_usage(FILE *f)
{
    fprintf(f,
            "usage: %s --intercept [--after N] [--route WHICH] [--idle S] [--skip LIST]\n"
            "          [--priority MODE] [-o OPTIONS] [--] LAUNCHER [ARGS...]\n"
            "Run LAUNCHER (make, xargs, parallel, python, mpiexec...) so that, from the Nth\n"
            "start of one program on (default 2), it forks a zygote of that program instead\n"
            "of exec'ing it.  The launcher sees the same pids, exit codes and fds.\n\n"
            "  --after N       route a program from its Nth start (PSPAWN_INTERCEPT_AFTER)\n"
            "  --route WHICH   gain (default): only programs whose exec'd starts are measured\n"
            "                  to cost more than a routed start; all: every program a zygote\n"
            "                  can serve (PSPAWN_INTERCEPT_ROUTE)\n"
            "  --idle S        a zygote ends after S s without a task (default 10)\n"
            "  --skip LIST     programs never routed: paths or names, ':' between them\n"
            "  --priority MODE start children that their spawn site predicts long with a\n"
            "                  lower priority: off (default), nice, batch or slice\n"
            "                  (PSPAWN_INTERCEPT_PRIORITY)\n"
            "  -o, --options LIST  the zygotes' libpspawn options (pspawn(3))\n"
            "PSPAWN_DEBUG=1 says what is routed and why not.  See pspawn(1).\n",
            progname);
}

/* Signals meant for pspawn alone go to the launcher; the terminal's
 * reach it by themselves (same process group). */
static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (launcher > 0 && si->si_code != SI_KERNEL)
        kill(launcher, sig);
}

static int debug_on(void)
{
    const char *v = getenv("PSPAWN_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static int set_env(const char *name, const char *value)
{
    if (!value)
        return 0;
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "%s: %s: %s\n", progname, name, strerror(errno));
        return -1;
    }
    return 0;
}

/* The interception library first in LD_PRELOAD, the user's after it. */
static int preload_interceptor(void)
{
    const char *lib = getenv("PSPAWN_INTERCEPT_LIB");
    if (!lib || !*lib)
        lib = PSPAWN_INTERCEPT_LIB_PATH;
    if (access(lib, R_OK) != 0) {
        fprintf(stderr, "%s: %s: %s\n", progname, lib, strerror(errno));
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    char *value;
    if (asprintf(&value, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0)
        return -1;
    int r = set_env("LD_PRELOAD", value);
    free(value);
    return r;
}

/* The scope's name and its table, in the environment. */
static int make_scope(void)
{
    unsigned char raw[ROUTE_SCOPE_LEN / 2];
    char scope[ROUTE_SCOPE_LEN + 1], table[64];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(scope + 2 * i, 3, "%02x", raw[i]);
    int fd = route_create_held(scope);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot make the interception table (a sealed memfd): %s\n",
                progname, strerror(errno));
        return -1;
    }
    /* held until we end: the launcher does not inherit it */
    snprintf(table, sizeof table, "/proc/%d/fd/%d", (int)getpid(), fd);
    if (debug_on())
        fprintf(stderr, "%s: interception scope %s (%s)\n", progname, scope, table);
    return set_env(ROUTE_ENV_TABLE, table) || set_env(ROUTE_ENV_SCOPE, scope) ? -1 : 0;
}

/* Stop the scope's zygotes among our children (adopted orphans: their
 * keepers, which pass SIGTERM on to them): how many were told to, their
 * pids in PIDS (up to MAX). */
static size_t stop_zygotes(const char *scope, pid_t *pids, size_t max)
{
    size_t stopped = 0;
    unsigned long inodes[SCOPE_SOCKETS_MAX];
    size_t n = scope_socket_inodes(geteuid(), scope, inodes);
    DIR *d = n ? opendir("/proc") : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        unsigned long long ppid;
        if (*end || pid <= 1 || pspawn_proc_stat((pid_t)pid, 4, 4, &ppid) < 0 ||
            (pid_t)ppid != getpid())
            continue;
        if (stopped < max && holds_scope_socket((pid_t)pid, inodes, n) &&
            kill((pid_t)pid, SIGTERM) == 0)
            pids[stopped++] = (pid_t)pid;
    }
    if (d)
        closedir(d);
    return stopped;
}

/* Reap the N stopped zygotes PIDS (and any other child that ends
 * meanwhile), for up to REAP_WAIT_MS: a zygote ends once its tasks have.
 * One still running then is left to whoever adopts it. */
#define REAP_WAIT_MS 5000
static void reap_zygotes(pid_t *pids, size_t n)
{
    size_t left = n;
    for (int waited = 0; left && waited < REAP_WAIT_MS;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno != EINTR)
            break;
        if (pid > 0) {
            for (size_t i = 0; i < n; i++)
                if (pids[i] == pid) {
                    pids[i] = 0;
                    left--;
                }
            continue;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        waited += 10;
    }
    if (left && debug_on())
        fprintf(stderr, "%s: %zu zygote(s) still finishing their tasks after %d ms: not "
                "reaped\n", progname, left, REAP_WAIT_MS);
}

static int parse(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "intercept", no_argument, NULL, 'I' }, { "after", required_argument, NULL, 'a' },
        { "idle", required_argument, NULL, 'i' }, { "skip", required_argument, NULL, 's' },
        { "options", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
        { "priority", required_argument, NULL, 'p' }, { "route", required_argument, NULL, 'r' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    char msg[256], *end;
    while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'I': break;
        case 'a':
            if (strtol(optarg, &end, 10) < 1 || *end) {
                fprintf(stderr, "%s: invalid --after '%s' (a count, 1 or more)\n", progname,
                        optarg);
                return -2;
            }
            if (set_env(ROUTE_ENV_AFTER, optarg))
                return -1;
            break;
        case 'i': {
            double s = strtod(optarg, &end);
            if (*end || !(s > 0) || s > 86400) {
                fprintf(stderr, "%s: invalid --idle '%s' (seconds, more than 0 and at most "
                        "86400)\n", progname, optarg);
                return -2;
            }
            if (set_env(ROUTE_ENV_IDLE, optarg))
                return -1;
            break;
        }
        case 'r':
            if (strcmp(optarg, "gain") != 0 && strcmp(optarg, "all") != 0) {
                fprintf(stderr, "%s: invalid --route '%s' (gain or all)\n", progname, optarg);
                return -2;
            }
            if (set_env(ROUTE_ENV_ROUTE, optarg))
                return -1;
            break;
        case 's':
            if (set_env(ROUTE_ENV_SKIP, optarg))
                return -1;
            break;
        case 'p':
            if (priority_mode_parse(optarg) < 0) {
                fprintf(stderr, "%s: invalid --priority '%s' (off, nice, batch or slice)\n",
                        progname, optarg);
                return -2;
            }
            if (set_env(PRIORITY_ENV_MODE, optarg))
                return -1;
            break;
        case 'o':
            if (pspawn_options_check(optarg, msg, sizeof msg) != 0) {
                fprintf(stderr, "%s: invalid --options '%s': %s\n", progname, optarg, msg);
                return -2;
            }
            if (set_env("PSPAWN_OPTIONS", optarg))
                return -1;
            break;
        case 'h': intercept_usage(stdout); return 0;
        default: intercept_usage(stderr); return -2;
        }
    }
    if (optind >= argc) {
        intercept_usage(stderr);
        return -2;
    }
    return optind;
}

int cli_intercept(int argc, char **argv)
{
    int first = parse(argc, argv);
    if (first <= 0)
        return first == 0 ? 0 : first == -2 ? 2 : 1;
    if (preload_interceptor() < 0 || make_scope() < 0)
        return 1;
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* Our dispositions pass to the launcher as they were: set ours after. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    launcher = fork();
    if (launcher == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[first], argv + first);
        int e = errno;
        fprintf(stderr, "%s: %s: %s\n", progname, argv[first], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    if (launcher < 0) {
        perror(progname);
        return 1;
    }
    static const int fwd[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
    struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        struct sigaction was;
        if (sigaction(fwd[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
            sigaction(fwd[i], &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status = 0;
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0 || pid == launcher) {
            status = st;
            break;
        }
        /* an adopted orphan (a zygote that ended, or a task of one) */
    }
    /* A zygote's keeper (a subreaper) adopts what a routed task left
     * behind, such as the keepers of the zygotes a routed sh started: once
     * it ends they come to us, and the next round stops them. */
    pid_t stopped[256];
    for (int round = 0; round < 8; round++) {
        size_t n = stop_zygotes(getenv(ROUTE_ENV_SCOPE), stopped, 256);
        if (n == 0)
            break;
        reap_zygotes(stopped, n);
    }
    signal(SIGINT, SIG_DFL);
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
