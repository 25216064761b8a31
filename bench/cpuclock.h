/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpuclock.h - the clocks the fan-out benchmarks (fanbench, scalebench)
 * read: wall time, this process's own CPU, and another process's CPU so
 * far, to say where a launch's CPU goes process by process.
 */
#ifndef PSPAWN_BENCH_CPUCLOCK_H
#define PSPAWN_BENCH_CPUCLOCK_H

#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

/* Monotonic wall time, in ms. */
static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* User + system CPU of WHO (RUSAGE_SELF, RUSAGE_CHILDREN), in ms. */
static inline double rusage_ms(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* A process's time on a CPU so far (ns in /proc/PID/schedstat), in ms;
 * 0 once it is gone. */
static inline double cpu_ms(pid_t pid)
{
    char path[64];
    unsigned long long ns = 0;
    snprintf(path, sizeof path, "/proc/%ld/schedstat", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f || fscanf(f, "%llu", &ns) != 1)
        ns = 0;
    if (f)
        fclose(f);
    return ns / 1e6;
}

#endif
