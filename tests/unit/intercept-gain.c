/* SPDX-License-Identifier: BSD-3-Clause */
/* TAP: whether interception routes a program (libpspawn/intercept/gain.c):
 * the comparison of its exec'd and routed starts, the guess before any
 * routed start is measured (from the scope's cheapest start, or a
 * constant), Python, PSPAWN_INTERCEPT_ROUTE=all, when a program is a
 * leaf, and LD_PRELOAD without the interception library. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "gain.h"
#include "route.h"
#include "../fixtures/tap.h"

static struct route_shared table;

static const char *refusal(const struct route_program *e, const char *path, int all)
{
    static char buf[160];
    return gain_refusal(e, path, all, buf, sizeof buf);
}

static void case_refusal(void)
{
    route_table = &table;
    struct route_program e = { .key = 1, .verdict = ROUTE_YES };
    const char *why = refusal(&e, "/usr/bin/gzip", 0);
    tap_ok(why && strstr(why, "not measured yet"), "no exec'd start measured: exec'd (%s)",
           why ? why : "routed");
    tap_ok(refusal(&e, "/usr/bin/gzip", 1) == NULL, "ROUTE=all: routed, measured or not");
    tap_ok(refusal(&e, "/usr/bin/python3.11", 0) == NULL,
           "a Python interpreter: routed before anything is measured");

    e.exec_us = 1200;
    e.execs = 1;
    why = refusal(&e, "/usr/bin/gzip", 0);
    tap_ok(why && strstr(why, "not measured yet"), "one exec'd start measured: not enough (%s)",
           why ? why : "routed");
    e.execs = 2;
    why = refusal(&e, "/usr/bin/gzip", 0);
    tap_ok(why && strstr(why, "1.200 ms") && strstr(why, "taken to be 2.000 ms"),
           "1.2 ms exec'd, nothing routed yet: exec'd against the guess (%s)", why ? why : "-");
    e.exec_us = GAIN_ROUTED_GUESS_US * (100 + GAIN_MARGIN_PCT) / 100 + 1;
    tap_ok(refusal(&e, "/usr/bin/gzip", 0) == NULL,
           "just above the guess and its margin (%u us): routed", e.exec_us);

    table.exec_floor_us = 800;
    e.exec_us = 1450;
    why = refusal(&e, "/usr/bin/gzip", 0);
    tap_ok(why && strstr(why, "taken to be 1.200 ms"),
           "the scope's cheapest start 0.8 ms: a routed one guessed at 1.2 ms, 1.45 ms exec'd "
           "is not enough (%s)", why ? why : "-");
    e.exec_us = 1550;
    tap_ok(refusal(&e, "/usr/bin/gzip", 0) == NULL,
           "1.55 ms exec'd against a 1.2 ms guess and its margin: routed");
    table.exec_floor_us = 0;

    table.routed_floor_us = 3000;
    why = refusal(&e, "/usr/bin/gzip", 0);
    tap_ok(why && strstr(why, "another program's 3.000 ms"),
           "another program's cheapest routed start replaces the guess (%s)", why ? why : "-");

    e.exec_us = 5000;
    e.routed_us = 4500;
    e.routed = GAIN_ROUTED_SAMPLES - 1;
    tap_ok(refusal(&e, "/x/big", 0) == NULL,
           "%d routed starts measured at 4.5 ms at best: not enough to end its routing",
           GAIN_ROUTED_SAMPLES - 1);
    e.routed = GAIN_ROUTED_SAMPLES;
    why = refusal(&e, "/x/big", 0);
    tap_ok(why && strstr(why, "measured 4.500 ms"),
           "its own routed start measured at 4.5 ms against 5 ms exec'd: no gain, exec'd (%s)",
           why ? why : "-");
    e.routed_us = 1000;
    tap_ok(refusal(&e, "/x/big", 0) == NULL, "its own routed start 1 ms against 5 ms: routed");
    table.routed_floor_us = 0;
}

static void case_notes(void)
{
    route_table = &table;
    struct route_program *e = route_program_entry(42);
    tap_ok(e != NULL && route_program_find(42) == e && route_program_find(43) == NULL,
           "find: the entry added, none for another key");
    gain_note_routed(42, 2500);
    gain_note_routed(42, 1800);
    gain_note_routed(42, 2200);
    tap_ok(e->routed_us == 1800 && table.routed_floor_us == 1800,
           "routed starts: the cheapest kept, per program and for the scope (%u, %u)",
           e->routed_us, table.routed_floor_us);
    gain_note_routed(43, 100);
    tap_ok(table.routed_floor_us == 1800, "a program the scope never counted changes nothing");
}

static void case_leaf(void)
{
    struct route_program e = { .key = 7, .verdict = ROUTE_YES, .ends = GAIN_LEAF_ENDS - 1 };
    tap_ok(!gain_leaf(&e, "/usr/bin/gzip"), "%d runs ended: not a leaf yet", GAIN_LEAF_ENDS - 1);
    e.ends = GAIN_LEAF_ENDS;
    tap_ok(gain_leaf(&e, "/usr/bin/gzip"), "%d runs ended, none launched: a leaf", GAIN_LEAF_ENDS);
    const char *never[] = { "/bin/sh", "/usr/bin/bash", "/usr/bin/make", "/usr/bin/env",
                            "/usr/bin/python3", "/usr/bin/perl", "/usr/bin/cp", "/usr/bin/install" };
    int any = 0;
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        any |= gain_leaf(&e, never[i]);
    tap_ok(!any, "shells, make, env, interpreters and in-place writers are never leaves");
    e.launches = 1;
    tap_ok(!gain_leaf(&e, "/usr/bin/gzip"), "one run that launched something: never a leaf");
}

/* gain_env_bare of ENV: its LD_PRELOAD, "(none)" without one, or "-" for 0. */
static const char *bare(char **env)
{
    static char out[512], buf[512];
    char *res[16];
    size_t n = 0;
    while (env[n])
        n++;
    if (!gain_env_bare(res, buf, sizeof buf, env, n))
        return "-";
    snprintf(out, sizeof out, "(none)");
    for (size_t i = 0; res[i]; i++)
        if (!strncmp(res[i], "LD_PRELOAD=", 11))
            snprintf(out, sizeof out, "%s", res[i] + 11);
    return out;
}

static void case_env(void)
{
    char *only[] = { "A=1", "LD_PRELOAD=/usr/lib/libpspawn/libpspawn-intercept.so", "B=2", NULL };
    tap_ok(!strcmp(bare(only), "(none)"), "only ours: the variable goes (%s)", bare(only));
    char *mixed[] = { "LD_PRELOAD=/x/libpspawn-intercept.so:/opt/libfoo.so /opt/libbar.so", NULL };
    tap_ok(!strcmp(bare(mixed), "/opt/libfoo.so:/opt/libbar.so"),
           "ours first, two of the user's (colon, space): theirs stay (%s)", bare(mixed));
    char *last[] = { "LD_PRELOAD=/opt/libfoo.so:libpspawn-intercept.so", NULL };
    tap_ok(!strcmp(bare(last), "/opt/libfoo.so"), "ours last, by name only: theirs stay (%s)",
           bare(last));
    char *lookalike[] = { "LD_PRELOAD=/opt/mylibpspawn-intercept.so:/opt/libpspawn-intercept.so.1",
                          NULL };
    tap_ok(!strcmp(bare(lookalike), "-"), "look-alikes are not ours: nothing to take out");
    char *none[] = { "A=1", NULL };
    tap_ok(!strcmp(bare(none), "-"), "no LD_PRELOAD: nothing to take out");
    char *count[] = { "A=1", "LD_PRELOAD=libpspawn-intercept.so", "B=2", "C=3", NULL };
    char *res[8], buf[64];
    gain_env_bare(res, buf, sizeof buf, count, 4);
    tap_ok(res[0] == count[0] && res[1] == count[2] && res[2] == count[3] && res[3] == NULL,
           "the other variables kept, in order, the list ended");
}

int main(void)
{
    case_refusal();
    case_notes();
    case_leaf();
    case_env();
    return tap_done();
}
