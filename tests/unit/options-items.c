/* SPDX-License-Identifier: BSD-3-Clause */
/* TAP: how pspawn_options_parse (libpspawn/wire/options.c) splits its text
 * into items with getsubopt(3): words and KEY=VALUE told apart, values
 * that hold '=', empty items, and messages that quote the text as given
 * (getsubopt cuts a copy, never the caller's text). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "options.h"
#include "../fixtures/tap.h"

static int parses(const char *text, struct pspawn_options *o)
{
    char err[256] = "untouched";
    pspawn_options_defaults(o);
    int rc = pspawn_options_parse(o, text, err, sizeof err);
    tap_ok(rc == 0 && err[0] == 0, "\"%s\" parses%s%s", text, rc ? ": " : "", rc ? err : "");
    return rc == 0;
}

static void refused(const char *text, const char *message)
{
    struct pspawn_options o;
    char err[256] = "";
    pspawn_options_defaults(&o);
    int rc = pspawn_options_parse(&o, text, err, sizeof err);
    tap_ok(rc == -1 && strstr(err, message) != NULL, "\"%s\" refused with \"%s\" (got %d: %s)", text,
           message, rc, err);
}

int main(void)
{
    struct pspawn_options o;
    /* The text is a literal, in read-only memory: a parser that wrote
     * into it would crash here. */
    if (parses("fanout=l3,start=lazy", &o))
        tap_ok(o.fanout == PSPAWN_FANOUT_L3 && o.lazy && o.word == PSPAWN_WORD_ON,
               "fanout=l3,start=lazy: l3, lazy, and a key implies on");
    if (parses("off,fanout=4", &o))
        tap_ok(o.word == PSPAWN_WORD_OFF && o.fanout == PSPAWN_FANOUT_CORES && o.cores_per_group == 4,
               "off,fanout=4: the word wins over the implied on, 4 cores per group");
    if (parses("auto", &o))
        tap_ok(o.word == PSPAWN_WORD_AUTO && !(o.given & PSPAWN_OPT_FANOUT), "auto: the word alone");
    if (parses("cgroup=/sys/fs/cgroup/a=b,subzygote=cgroup", &o))
        tap_ok(strcmp(o.cgroup, "/sys/fs/cgroup/a=b") == 0 && o.subzygote == PSPAWN_SUB_CGROUP,
               "a value keeps every '=' after the first (cgroup \"%s\")", o.cgroup);
    if (parses("fanout=numa,fanout=core", &o))
        tap_ok(o.fanout == PSPAWN_FANOUT_CORE, "a later key wins");
    if (parses("modules=numpy:scipy.linalg", &o))
        tap_ok(strcmp(o.modules, "numpy,scipy.linalg") == 0, "modules= keeps its colons apart (%s)",
               o.modules);
    if (parses("", &o))
        tap_ok(o.word == PSPAWN_WORD_UNSET && o.given == 0, "\"\": nothing set");

    if (parses("verbose", &o))
        tap_ok(o.verbose && o.word == PSPAWN_WORD_ON && (o.given & PSPAWN_OPT_VERBOSE),
               "verbose alone: said, and on");
    if (parses("off,verbose,fanout=l3", &o))
        tap_ok(o.verbose && o.word == PSPAWN_WORD_OFF && o.fanout == PSPAWN_FANOUT_L3,
               "off,verbose,fanout=l3: the word off stays");
    if (parses("fanout=core", &o))
        tap_ok(!o.verbose, "no verbose unless said");
    refused("verbose=1", "unknown key \"verbose\"");
    refused("on=1", "unknown key \"on\"");
    refused("fanout", "\"fanout\": expected on, off, auto, verbose or KEY=VALUE");
    refused("fanoutx=1", "unknown key \"fanoutx\"");
    refused("=numa", "unknown key \"\"");
    refused("yes", "\"yes\": expected on, off, auto, verbose or KEY=VALUE");
    refused("on,,fanout=l3", "\"on,,fanout=l3\": empty item");
    refused(",on", "\",on\": empty item");
    refused("on,fanout=l3,", "\"on,fanout=l3,\": ends with a comma");
    /* The item before a bad one parses first, and the message quotes the
     * bad item as written, not as getsubopt left it. */
    refused("start=lazy,fanout=sideways,python=off", "fanout=sideways: expected auto, none");
    refused("python=on,fanout=l3", "python=on: expected auto or off");
    refused("start=lazy,bogus=1", "\"bogus=1\": unknown key \"bogus\"");
    return tap_done();
}
