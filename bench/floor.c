/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpspawn-floor.so: the benchmarks' floor, independent of libpspawn.
 *
 * Preloaded with PSPAWN_FLOOR=N (and LD_BIND_NOW=1, so that the children
 * start from the same pre-bound state as pspawn's tasks), it lets every
 * constructor run, then, in place of main(), forks the parked program N
 * times with no protocol at all: each child returns into the real main()
 * and exits through __libc_start_main as a task does.  It waits for all of
 * them and prints on stderr
 *
 *   pspawn-floor: n=N total_ns=T
 *
 * with T from the first fork to the last child reaped.  What no launcher
 * forking a zygote can beat on this machine: the kernel's fork and exit of
 * the loaded program, and the children's own run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

extern char **environ;

static long floor_n;
static main_fn real_main;

__attribute__((constructor)) static void floor_init(void)
{
    const char *v = getenv("PSPAWN_FLOOR");
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (v && *v && !*end && n > 0)
        floor_n = n;
    unsetenv("PSPAWN_FLOOR");
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* A bare fork: no atfork handlers, the child's thread id where glibc keeps
 * it (as libpspawn's tasks have it). */
static pid_t bare_fork(int *tid_addr)
{
    return (pid_t)syscall(SYS_clone, SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID,
                          NULL, NULL, tid_addr, 0);
}

static int floor_main(int argc, char **argv, char **envp)
{
    int *tid_addr = NULL;
    if (prctl(PR_GET_TID_ADDRESS, &tid_addr, 0, 0, 0) < 0)
        tid_addr = NULL;
    fflush(NULL);
    double t0 = now_ns();
    long started = 0;
    for (long i = 0; i < floor_n; i++) {
        pid_t pid = bare_fork(tid_addr);
        if (pid == 0)
            return real_main(argc, argv, envp);
        if (pid > 0)
            started++;
    }
    int st;
    while (started > 0 && (wait(&st) > 0 || errno == EINTR))
        started--;
    fprintf(stderr, "pspawn-floor: n=%ld total_ns=%.0f\n", floor_n, now_ns() - t0);
    _exit(0);
}

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (floor_n > 0) {
        real_main = main;
        main = floor_main;
    }
    return next(main, argc, argv, init, fini, rtld_fini, stack_end);
}
