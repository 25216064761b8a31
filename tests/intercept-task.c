/*
 * The program that tests/intercept.sh has launchers start, exec'd or
 * routed through a zygote by libpspawn-intercept.so: it prints what a
 * launcher gives it (arguments, a variable, cwd, its open fds) and ends
 * as told, so that both ways can be compared line by line.
 *
 *   intercept-task exit K        print, exit K
 *   intercept-task raise SIG     print, die by SIG
 *   intercept-task term          ready on fd 3, wait; SIGTERM: exit 42
 *   intercept-task usr1 MS       ready on fd 3, count SIGUSR1 for MS ms
 *   intercept-task sleep MS      its pid on fd 3, sleep MS ms, exit 0
 *   intercept-task sched MS      sleep MS ms, print its nice, scheduling
 *                                policy and slice (spawn-site priorities)
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, term;

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

static void on_term(int sig)
{
    (void)sig;
    term = 1;
}

static void ready(void)
{
    char line[32];
    int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    if (write(3, line, (size_t)n) != n)
        _exit(99);
    close(3);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The fds we have beyond 0-2, as "3,5" ("-": none). */
static void open_fds(char *buf, size_t len)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t at = 0;
    buf[0] = 0;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%d", at ? "," : "", fd);
    }
    if (d)
        closedir(d);
    if (!at)
        snprintf(buf, len, "-");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *what = argv[1];
    if (!strcmp(what, "exit") || !strcmp(what, "raise")) {
        char cwd[512], fds[256];
        const char *v = getenv("INTERCEPT_TEST_VAR");
        open_fds(fds, sizeof fds);
        printf("task %s %s var=%s cwd=%s fds=%s pgrp_is_own=%d\n", what, argc > 2 ? argv[2] : "",
               v ? v : "(unset)", getcwd(cwd, sizeof cwd) ? cwd : "?", fds,
               getpgrp() == getpid());
        fflush(stdout);
        if (!strcmp(what, "raise")) {
            signal(atoi(argv[2]), SIG_DFL);
            raise(atoi(argv[2]));
        }
        return argc > 2 ? atoi(argv[2]) : 0;
    }
    if (!strcmp(what, "term")) {
        signal(SIGTERM, on_term);
        ready();
        while (!term)
            pause();
        printf("task got SIGTERM\n");
        return 42;
    }
    if (!strcmp(what, "usr1") && argc > 2) {
        signal(SIGUSR1, on_usr1);
        ready();
        sleep_ms(atol(argv[2]));
        printf("task SIGUSR1 x%d\n", (int)usr1);
        return 0;
    }
    if (!strcmp(what, "sched") && argc > 2) {
        sleep_ms(atol(argv[2]));
        /* struct sched_attr: size, policy, flags, nice, priority, runtime... */
        struct { unsigned size, policy; unsigned long long flags; int nice; unsigned prio;
                 unsigned long long runtime, deadline, period; unsigned umin, umax; } a = { 0 };
        long r = syscall(SYS_sched_getattr, 0, &a, sizeof a, 0);
        printf("task %s nice=%d policy=%u slice_us=%llu\n", argv[0],
               getpriority(PRIO_PROCESS, 0), r == 0 ? a.policy : 99, a.runtime / 1000);
        return 0;
    }
    if (!strcmp(what, "sleep") && argc > 2) {
        ready();
        sleep_ms(atol(argv[2]));
        return 0;
    }
    return 2;
}
