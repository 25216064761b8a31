/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plugin's plugstack.conf arguments (spank/pspawn_config.c): the
 * input is one plugstack.conf line after the plugin's path, split into
 * words at blanks as Slurm splits it.
 *
 * Invariants: an error always says something, in a terminated buffer
 * (allow='s refusals too);
 * what parses holds only known values, an absolute shim path, and site
 * options that libpspawn's parser takes (slurmstepd hands them to every
 * step); and the libpspawn keys of a line are accepted exactly when
 * libpspawn accepts them together, whatever their order over the words
 * (subzygote=cgroup in one word, cgroup=DIR in the next).
 */
#include <assert.h>

#include "fuzz.h"
#include "options.h"
#include "pspawn_config.h"

#define MAX_WORDS 64

static int is_plugin_key(const char *w)
{
    static const char *const keys[] = { "default=", "signals=", "debug=", "shim=", "force=",
                                        "allow=", "auto_objects=" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strncmp(w, keys[i], strlen(keys[i])))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    assert(line);
    memcpy(line, data, size);
    line[size] = 0;
    char *argv[MAX_WORDS];
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(line, " \t\n", &save); w && argc < MAX_WORDS;
         w = strtok_r(NULL, " \t\n", &save))
        argv[argc++] = w;

    struct pspawn_config cfg;
    pspawn_config_defaults(&cfg);
    char err[256];
    memset(err, 'x', sizeof err);
    int rc = pspawn_config_parse(&cfg, argc, argv, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    FUZZ_CHECK(memchr(err, 0, sizeof err) != NULL, "error not terminated");
    FUZZ_CHECK(rc == 0 ? err[0] == 0 : err[0] != 0, "rc %d with error \"%s\"", rc, err);
    if (rc == 0) {
        FUZZ_CHECK(cfg.default_mode >= PSPAWN_MODE_OFF && cfg.default_mode <= PSPAWN_MODE_AUTO,
                   "default %d", cfg.default_mode);
        FUZZ_CHECK(cfg.signals >= PSPAWN_SIGNALS_AUTO && cfg.signals <= PSPAWN_SIGNALS_NO, "signals %d",
                   cfg.signals);
        FUZZ_CHECK(cfg.debug == 0 || cfg.debug == 1, "debug %d", cfg.debug);
        FUZZ_CHECK(memchr(cfg.shim, 0, sizeof cfg.shim) && cfg.shim[0] == '/', "shim \"%.64s\"", cfg.shim);
        FUZZ_CHECK(memchr(cfg.options, 0, sizeof cfg.options) != NULL, "options not terminated");
        FUZZ_CHECK(cfg.force_off == 0 || cfg.force_off == 1, "force %d", cfg.force_off);
        FUZZ_CHECK(memchr(cfg.allow, 0, sizeof cfg.allow) != NULL, "allow not terminated");
        /* allow= only ever refuses with a message, and never the site's
         * own keys when it lets every key through. */
        char aerr[256];
        memset(aerr, 'x', sizeof aerr);
        int arc = pspawn_config_refuses(&cfg, cfg.options, aerr, sizeof aerr);
        FUZZ_CHECK((arc == 0 && aerr[0] == 0) || (arc == -1 && aerr[0] && memchr(aerr, 0, sizeof aerr)),
                   "refuses %d: \"%.64s\"", arc, aerr);
        FUZZ_CHECK(cfg.allow_set || arc == 0, "no allow=, yet \"%s\" refused", cfg.options);
        struct pspawn_options o;
        char why[256];
        pspawn_options_defaults(&o);
        FUZZ_CHECK(pspawn_options_parse(&o, cfg.options, why, sizeof why) == 0,
                   "site options \"%s\" do not parse: %s", cfg.options, why);
        /* What the error buffer is, the outcome is not: 0 bytes too. */
        struct pspawn_config again;
        pspawn_config_defaults(&again);
        FUZZ_CHECK(pspawn_config_parse(&again, argc, argv, NULL, 0) == 0, "fails without an error buffer");
    }

    /* Only the words that are libpspawn's keys, one per word (no comma),
     * and short enough together for cfg.options: accepted exactly when
     * libpspawn takes them joined by commas. */
    char *keys[MAX_WORDS], joined[sizeof cfg.options * 2] = "";
    int nkeys = 0;
    size_t len = 0;
    for (int i = 0; i < argc; i++) {
        if (!strchr(argv[i], '=') || strchr(argv[i], ',') || is_plugin_key(argv[i]))
            continue;
        size_t w = strlen(argv[i]);
        if (len + w + 2 > sizeof cfg.options)
            break;
        keys[nkeys++] = argv[i];
        len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%s", len ? "," : "", argv[i]);
    }
    struct pspawn_config kc;
    struct pspawn_options ko;
    char kwhy[256] = "", owhy[256] = "";
    pspawn_config_defaults(&kc);
    pspawn_options_defaults(&ko);
    int krc = pspawn_config_parse(&kc, nkeys, keys, kwhy, sizeof kwhy);
    int orc = nkeys ? pspawn_options_parse(&ko, joined, owhy, sizeof owhy) : 0;
    FUZZ_CHECK(krc == orc, "plugstack.conf words \"%s\" (commas for blanks): %s, but libpspawn %s them%s%s",
               joined, krc ? "refused" : "taken", orc ? "refuses" : "takes", krc ? ": " : "", krc ? kwhy : owhy);
    FUZZ_CHECK(krc != 0 || !strcmp(kc.options, joined), "site options \"%s\", words \"%s\"", kc.options, joined);
    free(line);
    return 0;
}
