/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "pspawn_config.h"
#include "worth.h"

#ifndef PSPAWN_SHIM_PATH
#define PSPAWN_SHIM_PATH "/usr/libexec/libpspawn/pspawn-shim"
#endif

static const char *const mode_names[] = {
    [PSPAWN_MODE_OFF] = "off",
    [PSPAWN_MODE_ON] = "on",
    [PSPAWN_MODE_AUTO] = "auto",
};

static const char *const signals_names[] = {
    [PSPAWN_SIGNALS_AUTO] = "auto",
    [PSPAWN_SIGNALS_YES] = "yes",
    [PSPAWN_SIGNALS_NO] = "no",
};

void pspawn_config_defaults(struct pspawn_config *cfg)
{
    cfg->default_mode = PSPAWN_MODE_OFF;
    cfg->signals = PSPAWN_SIGNALS_AUTO;
    cfg->debug = 0;
    cfg->auto_objects = -1;
    snprintf(cfg->shim, sizeof cfg->shim, "%s", PSPAWN_SHIM_PATH);
    cfg->options[0] = '\0';
    cfg->force_off = 0;
    cfg->allow_set = 0;
    cfg->allow[0] = '\0';
}

/* allow=KEY:KEY...: each a key of libpspawn's options; "" allows none. */
static int parse_allow(struct pspawn_config *cfg, const char *arg, const char *val, char *err,
                       size_t errlen)
{
    size_t at = 0;
    cfg->allow[at++] = ':';
    for (const char *p = val; *p;) {
        size_t len = strcspn(p, ":");
        if (len && !pspawn_options_is_key(p, len))
            return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": \"%.*s\" is not "
                                 "a key of --pspawn (fanout, subzygote, start, cgroup, python, "
                                 "modules, preload, reuse, idle, zygotes, mode)", arg, (int)len, p);
        if (len && at + len + 2 > sizeof cfg->allow)
            return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": too long", arg);
        if (len) {
            memcpy(cfg->allow + at, p, len);
            at += len;
            cfg->allow[at++] = ':';
        }
        p += len + (p[len] == ':');
    }
    cfg->allow[at] = '\0';
    cfg->allow_set = 1;
    return 0;
}

int pspawn_config_refuses(const struct pspawn_config *cfg, const char *options, char *err,
                          size_t errlen)
{
    if (errlen > 0)
        err[0] = '\0';
    if (!cfg->allow_set)
        return 0;
    for (const char *p = options; *p;) {
        size_t len = strcspn(p, ",");
        size_t klen = strcspn(p, "=,");
        char want[64];
        snprintf(want, sizeof want, ":%.*s:", (int)(klen < 60 ? klen : 60), p);
        /* verbose only says what happened: always the user's. */
        int verbose = len == 7 && strncmp(p, "verbose", 7) == 0;
        if (klen && !verbose && !strstr(cfg->allow, want)) {
            /* The rule as the site wrote it: allow=a:b (":a:b:" here). */
            size_t n = strlen(cfg->allow);
            return pspawn_errmsg(err, errlen, "%.*s= is not allowed on this cluster (its "
                                 "plugstack.conf says allow=%.*s)", (int)klen, p,
                                 (int)(n > 2 ? n - 2 : 0), cfg->allow + 1);
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

const char *pspawn_mode_name(enum pspawn_mode mode)
{
    return mode_names[mode];
}

const char *pspawn_signals_name(enum pspawn_signals signals)
{
    return signals_names[signals];
}

/* Index of word in names, or -1. */
static int lookup(const char *word, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(word, names[i]) == 0)
            return i;
    return -1;
}

int pspawn_mode_parse(const char *text, enum pspawn_mode *mode)
{
    if (text == NULL || *text == '\0') {
        *mode = PSPAWN_MODE_ON;
        return 0;
    }
    int i = lookup(text, mode_names, 3);
    if (i < 0)
        return -1;
    *mode = (enum pspawn_mode)i;
    return 0;
}

/* Append ITEM (LEN bytes) to the comma-separated OPTIONS. */
static int append(char *options, size_t optlen, const char *item, size_t len)
{
    size_t have = strlen(options);
    if (have + (have ? 1 : 0) + len + 1 > optlen)
        return -1;
    if (have)
        options[have++] = ',';
    memcpy(options + have, item, len);
    options[have + len] = '\0';
    return 0;
}

int pspawn_arg_parse(const char *text, enum pspawn_mode *mode, char *options, size_t optlen,
                     char *err, size_t errlen)
{
    if (errlen > 0)
        err[0] = '\0';
    options[0] = '\0';
    if (text == NULL || *text == '\0') {
        *mode = PSPAWN_MODE_ON;
        return 0;
    }
    /* libpspawn's parser says what is wrong with any item; the words are
     * ours (it takes them and ignores them). */
    struct pspawn_options o;
    pspawn_options_defaults(&o);
    if (pspawn_options_parse(&o, text, err, errlen) < 0)
        return -1;
    int words = 0;
    enum pspawn_mode m = PSPAWN_MODE_ON;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, ",");
        int w = -1;
        for (int i = 0; i < 3 && w < 0; i++)
            if (strlen(mode_names[i]) == len && strncmp(p, mode_names[i], len) == 0)
                w = i;
        if (w >= 0) {
            if (words++)
                return pspawn_errmsg(err, errlen, "\"%s\": more than one of on, off and auto", text);
            m = (enum pspawn_mode)w;
        } else if (append(options, optlen, p, len) < 0) {
            return pspawn_errmsg(err, errlen, "\"%s\": longer than %zu bytes", text, optlen - 1);
        }
        p += len + (p[len] == ',');
    }
    *mode = m;
    return 0;
}

int pspawn_config_parse(struct pspawn_config *cfg, int argc, char *const argv[],
                        char *err, size_t errlen)
{
    if (errlen > 0)
        err[0] = '\0';
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        if (eq == NULL)
            return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": expected key=value "
                        "(default=, signals=, debug=, shim=, force=, allow=, auto_objects=, or an "
                        "option's key)", arg);
        size_t klen = (size_t)(eq - arg);
        const char *val = eq + 1;
        int k;
        if (klen == 7 && strncmp(arg, "default", klen) == 0) {
            if (*val == '\0' || pspawn_mode_parse(val, &cfg->default_mode) < 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": "
                            "default must be on, off or auto", arg);
        } else if (klen == 7 && strncmp(arg, "signals", klen) == 0) {
            if ((k = lookup(val, signals_names, 3)) < 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": "
                            "signals must be auto, yes or no", arg);
            cfg->signals = (enum pspawn_signals)k;
        } else if (klen == 5 && strncmp(arg, "debug", klen) == 0) {
            if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": "
                            "debug must be 0 or 1", arg);
            cfg->debug = val[0] == '1';
        } else if (klen == 12 && strncmp(arg, "auto_objects", klen) == 0) {
            char *end;
            errno = 0;
            long n = strtol(val, &end, 10);
            if (*val == '\0' || *end || errno || n < 0 || n > 32767)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": auto_objects "
                            "must be a number of objects from 0 to 32767", arg);
            cfg->auto_objects = (int)n;
        } else if (klen == 5 && strncmp(arg, "force", klen) == 0) {
            if (strcmp(val, "off") != 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": "
                            "force must be off (every step exec'd, whatever its --pspawn)", arg);
            cfg->force_off = 1;
        } else if (klen == 5 && strncmp(arg, "allow", klen) == 0) {
            if (parse_allow(cfg, arg, val, err, errlen) < 0)
                return -1;
        } else if (klen == 4 && strncmp(arg, "shim", klen) == 0) {
            if (val[0] != '/')
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": "
                            "shim must be an absolute path", arg);
            if (strlen(val) >= sizeof cfg->shim)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"shim=...\": "
                            "path longer than %zu bytes", sizeof cfg->shim - 1);
            memcpy(cfg->shim, val, strlen(val) + 1);
        } else {
            /* libpspawn's options, as site defaults: each word alone for
             * its syntax (with a cgroup= set, since the one that
             * subzygote=cgroup needs may be another word), all of them
             * together at the end. */
            struct pspawn_options o;
            char why[256];
            pspawn_options_defaults(&o);
            o.cgroup[0] = '/';
            if (strchr(arg, ','))
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": one key=value per "
                            "argument, separated by spaces", arg);
            if (pspawn_options_parse(&o, arg, why, sizeof why) < 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf argument \"%s\": %s (the keys are "
                            "default=, signals=, debug=, shim=, force=, allow=, auto_objects=, and libpspawn's fanout=, "
                            "subzygote=, start=, cgroup=, python=, modules=, preload=, reuse=, idle=, "
                            "zygotes=, mode=)", arg, why);
            if (append(cfg->options, sizeof cfg->options, arg, strlen(arg)) < 0)
                return pspawn_errmsg(err, errlen, "plugstack.conf arguments: libpspawn's options "
                            "longer than %zu bytes", sizeof cfg->options - 1);
        }
    }
    struct pspawn_options site;
    char why[256];
    pspawn_options_defaults(&site);
    if (pspawn_options_parse(&site, cfg->options, why, sizeof why) < 0)
        return pspawn_errmsg(err, errlen, "plugstack.conf arguments \"%s\": %s", cfg->options, why);
    return 0;
}
