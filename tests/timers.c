/*
 * timers - a program whose constructor arms timers, which exec keeps and
 * fork does not: with PSPAWN_TEST_TIMERS=itimer it arms an alarm
 * (ITIMER_REAL, 3 s: it would end a zygote that kept it) and a 10 ms
 * profiling timer (ITIMER_PROF, as a program built with gcc -pg does),
 * which a task must have as an exec'd one does; with
 * PSPAWN_TEST_TIMERS=posix it creates a POSIX timer, which a fork cannot
 * make again: libpspawn has to fall back to exec.
 *
 *   timers [FILE]   append "PID\n" to FILE with one write(), burn 100 ms
 *                   of CPU, then print what it has:
 *                   "real=ARMED,INTERVAL_S prof=ARMED,INTERVAL_US
 *                    sigprof=GOT posix=COUNT", and with PSPAWN_TEST_PROXY
 *                   set, " proxy=MAPPED": whether libpspawn's proxy is in
 *                   its memory: 1 in a zygote's task, 0 in an exec'd
 *                   one (the end-to-end tests tell them apart by it)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "append-pid.h"

static volatile sig_atomic_t ticks;

static void on_prof(int sig)
{
    (void)sig;
    ticks++;
}

__attribute__((constructor)) static void arm(void)
{
    const char *what = getenv("PSPAWN_TEST_TIMERS");

    if (what && strcmp(what, "itimer") == 0) {
        struct sigaction sa;
        struct itimerval prof = { { 0, 10000 }, { 0, 10000 } };
        struct itimerval real = { { 0, 0 }, { 3, 0 } };

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_prof;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGPROF, &sa, NULL);
        setitimer(ITIMER_PROF, &prof, NULL);
        setitimer(ITIMER_REAL, &real, NULL);
    } else if (what && strcmp(what, "posix") == 0) {
        struct sigevent ev;
        timer_t id;

        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_NONE;
        timer_create(CLOCK_MONOTONIC, &ev, &id);
    }
}

static int posix_timers(void)
{
    FILE *f = fopen("/proc/self/timers", "r");
    char line[128];
    int n = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "ID:", 3) == 0)
            n++;
    fclose(f);
    return n;
}

static int proxy_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;

    if (!f)
        return -1;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "libpspawn-proxy") != NULL;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    struct itimerval real, prof;
    struct timespec t0, t;

    if (argc >= 2 && append_pid(argv[1]) != 0)
        return 2;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
    getitimer(ITIMER_REAL, &real);
    getitimer(ITIMER_PROF, &prof);
    printf("real=%d,%ld prof=%d,%ld sigprof=%d posix=%d",
           real.it_value.tv_sec || real.it_value.tv_usec, (long)real.it_interval.tv_sec,
           prof.it_value.tv_sec || prof.it_value.tv_usec, (long)prof.it_interval.tv_usec,
           ticks > 0, posix_timers());
    if (getenv("PSPAWN_TEST_PROXY"))
        printf(" proxy=%d", proxy_mapped());
    putchar('\n');
    return 0;
}
