/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interception library's debug lines (PSPAWN_DEBUG): one write(2)
 * each, formatted with snprintf only, since it may run in a vfork child
 * (wire/sayline.c, the other processes' printer, takes stdio's lock and
 * the time zone).  Every file of the library says things through here;
 * it calls none of them.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "intercept.h"

/* Set in the constructor, never after: a vfork child reads it. */
static int debug;

void intercept_say_on(int on)
{
    debug = on;
}

void intercept_say(const char *fmt, ...)
{
    if (!debug)
        return;
    char buf[PATH_MAX + 128];
    int n = snprintf(buf, sizeof buf, "pspawn-intercept[%d]: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (k > 0 ? (size_t)k : 0);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;   /* cut short */
    buf[len++] = '\n';
    if (write(2, buf, len) < 0) {
        /* nowhere to say it */
    }
}
