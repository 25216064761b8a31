/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sayline.h"

int pspawn_debug_wanted(void)
{
    const char *v = getenv("PSPAWN_DEBUG");
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

void pspawn_vsay_line(const char *who, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &tm);
    fprintf(stderr, "%s[%d] %02d:%02d:%02d.%03ld: %s\n", who, (int)getpid(), tm.tm_hour,
            tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, buf);
}

void pspawn_say_line(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pspawn_vsay_line(who, fmt, ap);
    va_end(ap);
}
