/* SPDX-License-Identifier: BSD-3-Clause */
/* TAP: the node's line (libpspawn/wire/tally.c) that srun --pspawn=verbose,
 * slurmd's log, pspawn -v and odls_pspawn_verbose print: its keys in their
 * order, counts, the zygote's kind and start, reasons cleaned of what
 * would break the line, and the shim's start-time reading. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tally.h"
#include "../fixtures/tap.h"

static void case_all_forked(void)
{
    struct pspawn_tally t;
    char line[600];
    pspawn_tally_init(&t, 3);
    /* 2026-11-28 12:00:01.234 local time */
    struct tm tm = { .tm_year = 126, .tm_mon = 10, .tm_mday = 28, .tm_hour = 12, .tm_sec = 1,
                     .tm_isdst = -1 };
    long long ms = (long long)mktime(&tm) * 1000 + 234;
    pspawn_tally_forked(&t, PSPAWN_ZYGOTE_NEW, ms + 5);
    pspawn_tally_forked(&t, PSPAWN_ZYGOTE_NEW, ms);
    pspawn_tally_forked(&t, PSPAWN_ZYGOTE_NEW, 0);
    pspawn_tally_format(&t, "c1", "step=12.0", line, sizeof line);
    tap_ok(strcmp(line, "pspawn: node=c1 step=12.0 tasks=3 forked=3 exec=0 unknown=0 zygote=new "
                        "zygote_start=2026-11-28T12:00:01.234 why=\"\"") == 0,
           "three forked: the earliest start, every key: %s", line);
}

static void case_exec_and_unknown(void)
{
    struct pspawn_tally t;
    char line[800];
    pspawn_tally_init(&t, 8);
    pspawn_tally_forked(&t, PSPAWN_ZYGOTE_JOB, 0);
    pspawn_tally_exec(&t, 2, "static program");
    pspawn_tally_exec(&t, 1, "no zygote to serve the task");
    pspawn_tally_exec(&t, 1, "static program");
    pspawn_tally_exec(&t, 1, "a third reason");
    pspawn_tally_format(&t, "n-7", NULL, line, sizeof line);
    tap_ok(strcmp(line, "pspawn: node=n-7 tasks=8 forked=1 exec=5 unknown=2 zygote=job "
                        "zygote_start=- why=\"static program (3); no zygote to serve the task (1); "
                        "other reasons (1)\"") == 0,
           "forked, exec'd for three reasons, two unsaid: %s", line);
    pspawn_tally_forked(&t, PSPAWN_ZYGOTE_NEW, 0);
    pspawn_tally_format(&t, "n-7", NULL, line, sizeof line);
    tap_ok(strstr(line, " zygote=mixed ") != NULL, "a job's zygote and a new one: mixed");
}

static void case_hostile_reason(void)
{
    struct pspawn_tally t;
    char line[600], why[300];
    pspawn_tally_init(&t, 1);
    snprintf(why, sizeof why, "a\"b\\c\nd\x1b[31me\xc3\xa9");
    pspawn_tally_exec(&t, 1, why);
    pspawn_tally_format(&t, "c1", "step=1.0", line, sizeof line);
    tap_ok(strstr(line, "why=\"a?b?c?d?[31me?? (1)\"") != NULL && !strchr(line, '\n'),
           "quotes, backslashes, control and non-ASCII bytes become '?': %s", line);
    memset(why, 'x', sizeof why - 1);
    why[sizeof why - 1] = '\0';
    pspawn_tally_init(&t, 1);
    pspawn_tally_exec(&t, 1, why);
    pspawn_tally_format(&t, "c1", NULL, line, sizeof line);
    tap_ok(strlen(t.why[0]) == PSPAWN_TALLY_WHY - 1 && strstr(line, "x (1)\"") != NULL,
           "a long reason is cut at %d bytes, the line still closed", PSPAWN_TALLY_WHY - 1);
    pspawn_tally_init(&t, 2);
    pspawn_tally_exec(&t, 2, NULL);
    pspawn_tally_format(&t, "", NULL, line, sizeof line);
    tap_ok(strstr(line, "node=- ") && strstr(line, "why=\"no reason given (2)\"") &&
           strstr(line, " zygote=none zygote_start=- "),
           "no node, no reason: said so (%s)", line);
    char tiny[24];
    pspawn_tally_format(&t, "c1", NULL, tiny, sizeof tiny);
    tap_ok(strlen(tiny) == sizeof tiny - 1, "a short buffer is filled and terminated");
}

static void case_start_time(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    long long mine = pspawn_proc_start_ms(getpid());
    /* This test started a moment ago: within its run, to the tick. */
    tap_ok(mine > now_ms - 120000 && mine <= now_ms + 20,
           "this process's start: %lld ms before now", now_ms - mine);
    tap_ok(pspawn_proc_start_ms(1) <= mine && pspawn_proc_start_ms(1) > 0,
           "pid 1 started before this process");
    tap_ok(pspawn_proc_start_ms(-5) == 0 && pspawn_proc_start_ms(0x3fffffff) == 0,
           "no such process: 0");
}

int main(void)
{
    case_all_forked();
    case_exec_and_unknown();
    case_hostile_reason();
    case_start_time();
    tap_done();
    return tap_failed ? 1 : 0;
}
