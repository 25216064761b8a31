#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pspawn_config.h"

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
    snprintf(cfg->shim, sizeof cfg->shim, "%s", PSPAWN_SHIM_PATH);
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

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
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
            return fail(err, errlen, "plugstack.conf argument \"%s\": expected key=value "
                        "(default=, signals=, debug= or shim=)", arg);
        size_t klen = (size_t)(eq - arg);
        const char *val = eq + 1;
        int k;
        if (klen == 7 && strncmp(arg, "default", klen) == 0) {
            if (*val == '\0' || pspawn_mode_parse(val, &cfg->default_mode) < 0)
                return fail(err, errlen, "plugstack.conf argument \"%s\": "
                            "default must be on, off or auto", arg);
        } else if (klen == 7 && strncmp(arg, "signals", klen) == 0) {
            if ((k = lookup(val, signals_names, 3)) < 0)
                return fail(err, errlen, "plugstack.conf argument \"%s\": "
                            "signals must be auto, yes or no", arg);
            cfg->signals = (enum pspawn_signals)k;
        } else if (klen == 5 && strncmp(arg, "debug", klen) == 0) {
            if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
                return fail(err, errlen, "plugstack.conf argument \"%s\": "
                            "debug must be 0 or 1", arg);
            cfg->debug = val[0] == '1';
        } else if (klen == 4 && strncmp(arg, "shim", klen) == 0) {
            if (val[0] != '/')
                return fail(err, errlen, "plugstack.conf argument \"%s\": "
                            "shim must be an absolute path", arg);
            if (strlen(val) >= sizeof cfg->shim)
                return fail(err, errlen, "plugstack.conf argument \"shim=...\": "
                            "path longer than %zu bytes", sizeof cfg->shim - 1);
            memcpy(cfg->shim, val, strlen(val) + 1);
        } else {
            return fail(err, errlen, "plugstack.conf argument \"%s\": unknown key "
                        "(expected default=, signals=, debug= or shim=)", arg);
        }
    }
    return 0;
}
