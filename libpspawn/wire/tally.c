/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "tally.h"

void pspawn_tally_init(struct pspawn_tally *t, unsigned tasks)
{
    memset(t, 0, sizeof *t);
    t->tasks = tasks;
}

void pspawn_tally_zygote_program(struct pspawn_tally *t, int objects, int python)
{
    if (objects > t->objects)
        t->objects = objects;
    t->python |= python != 0;
}

void pspawn_tally_forked(struct pspawn_tally *t, int kind, long long start_ms)
{
    t->forked++;
    if (kind != PSPAWN_ZYGOTE_NEW && kind != PSPAWN_ZYGOTE_JOB)
        kind = PSPAWN_ZYGOTE_NEW;
    if (t->zygote == PSPAWN_ZYGOTE_NONE)
        t->zygote = kind;
    else if (t->zygote != kind)
        t->zygote = PSPAWN_ZYGOTE_MIXED;
    if (start_ms > 0 && (t->zygote_start_ms == 0 || start_ms < t->zygote_start_ms))
        t->zygote_start_ms = start_ms;
}

void pspawn_tally_exec(struct pspawn_tally *t, unsigned count, const char *why)
{
    char clean[PSPAWN_TALLY_WHY];
    size_t n = 0;
    for (const char *p = why ? why : "no reason given"; *p && n + 1 < sizeof clean; p++) {
        unsigned char c = (unsigned char)*p;
        clean[n++] = c < 0x20 || c > 0x7e || c == '"' || c == '\\' ? '?' : (char)c;
    }
    clean[n] = '\0';
    t->exec += count;
    for (int i = 0; i < 2; i++) {
        if (t->why_count[i] == 0) {
            memcpy(t->why[i], clean, n + 1);
            t->why_count[i] = count;
            return;
        }
        if (strcmp(t->why[i], clean) == 0) {
            t->why_count[i] += count;
            return;
        }
    }
    t->why_other += count;
}

const char *pspawn_zygote_kind_name(int kind)
{
    switch (kind) {
    case PSPAWN_ZYGOTE_NONE: return "none";
    case PSPAWN_ZYGOTE_NEW: return "new";
    case PSPAWN_ZYGOTE_JOB: return "job";
    case PSPAWN_ZYGOTE_MIXED: return "mixed";
    }
    return "?";
}

void pspawn_tally_format(const struct pspawn_tally *t, const char *node, const char *scope,
                         char *buf, size_t size)
{
    if (size == 0)
        return;
    char start[40] = "-";
    if (t->forked && t->zygote_start_ms > 0) {
        time_t s = (time_t)(t->zygote_start_ms / 1000);
        struct tm tm;
        size_t k = localtime_r(&s, &tm) ? strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
        if (k)
            snprintf(start + k, sizeof start - k, ".%03d", (int)(t->zygote_start_ms % 1000));
        else
            snprintf(start, sizeof start, "-");
    }
    char why[2 * PSPAWN_TALLY_WHY + 64] = "";
    size_t at = 0;
    for (int i = 0; i < 2 && t->why_count[i]; i++) {
        int m = snprintf(why + at, sizeof why - at, "%s%s (%u)", i ? "; " : "", t->why[i],
                         t->why_count[i]);
        at += m > 0 && (size_t)m < sizeof why - at ? (size_t)m : 0;
    }
    if (t->why_other)
        snprintf(why + at, sizeof why - at, "; other reasons (%u)", t->why_other);
    unsigned said = t->forked + t->exec;
    snprintf(buf, size, "pspawn: node=%s %s%stasks=%u forked=%u exec=%u unknown=%u zygote=%s "
             "zygote_start=%s why=\"%s\"", node && *node ? node : "-", scope ? scope : "",
             scope && *scope ? " " : "", t->tasks, t->forked, t->exec,
             t->tasks > said ? t->tasks - said : 0,
             pspawn_zygote_kind_name(t->forked ? t->zygote : PSPAWN_ZYGOTE_NONE), start, why);
}

long long pspawn_proc_start_ms(pid_t pid)
{
    /* The start time counts clock ticks on the boot-time clock; /proc/stat's
     * btime is whole seconds, too coarse: the wall clock now, less the
     * time since the start on the boot-time clock. */
    unsigned long long ticks;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec real, boot;
    if (pid <= 0 || hz <= 0 || pspawn_proc_stat(pid, 22, 22, &ticks) < 0 ||
        clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
        return 0;
    long long boot_ms = (long long)boot.tv_sec * 1000 + boot.tv_nsec / 1000000;
    long long since = boot_ms - (long long)(ticks * 1000 / (unsigned long long)hz);
    return since < 0 ? 0 : (long long)real.tv_sec * 1000 + real.tv_nsec / 1000000 - since;
}
