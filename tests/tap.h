/*
 * tap.h - the few TAP helpers the C tests share (header only).
 *
 * Results are numbered as they are printed and the plan ("1..N") is printed
 * last by tap_done(), so a test that crashes half way is reported as
 * incomplete by the TAP driver instead of silently passing.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_count;
static int tap_failed;

__attribute__((format(printf, 2, 3), unused))
static int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    if (!cond)
        tap_failed++;
    printf("%s %d - ", cond ? "ok" : "not ok", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    return cond;
}

__attribute__((format(printf, 1, 2), unused))
static void tap_diag(const char *fmt, ...)
{
    va_list ap;

    fputs("# ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Only for a feature that cannot exist on this machine: a skip is not a
 * pass. */
__attribute__((format(printf, 2, 3), unused))
static void tap_skip(const char *reason, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    printf("ok %d - ", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" # SKIP %s\n", reason);
    fflush(stdout);
}

__attribute__((format(printf, 1, 2), noreturn, unused))
static void tap_bail(const char *fmt, ...)
{
    va_list ap;

    fputs("Bail out! ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    exit(99);
}

/* Failures are in the TAP stream; a non-zero exit is kept for what TAP
 * cannot say (a crash, a sanitizer report). */
__attribute__((unused))
static int tap_done(void)
{
    printf("1..%d\n", tap_count);
    if (tap_failed)
        printf("# %d of %d failed\n", tap_failed, tap_count);
    fflush(stdout);
    return 0;
}

static void tap_on_alarm(int sig)
{
    static const char msg[] = "Bail out! watchdog: the test hung\n";
    (void)sig;
    (void)!write(1, msg, sizeof msg - 1);
    _exit(99);
}

/* A hang is a failure, not a stuck CI job. */
__attribute__((unused))
static void tap_watchdog(unsigned seconds)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tap_on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(seconds);
}

#endif
