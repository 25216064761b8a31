/* SPDX-License-Identifier: BSD-3-Clause */
/* TAP: the plugstack.conf arguments and --pspawn values (pspawn_config.c),
 * without Slurm.  Built with PSPAWN_SHIM_PATH="/test/pspawn-shim". */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "pspawn_config.h"
#include "worth.h"
#include "../fixtures/tap.h"


/* Parse the words of line (space-separated) over the defaults. */
static int parse(const char *line, struct pspawn_config *cfg, char *err, size_t errlen)
{
    char buf[8192];
    char *words[32];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && n < 32;
         w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    pspawn_config_defaults(cfg);
    return pspawn_config_parse(cfg, n, words, err, errlen);
}

static void good(const char *line, enum pspawn_mode mode, enum pspawn_signals signals,
                 int debug, const char *shim)
{
    struct pspawn_config cfg;
    char err[256] = "untouched";
    int rc = parse(line, &cfg, err, sizeof err);
    tap_ok(rc == 0 && err[0] == '\0', "accepts \"%s\"%s%s", line, rc ? ": " : "", rc ? err : "");
    tap_ok(cfg.default_mode == mode && cfg.signals == signals && cfg.debug == debug &&
           strcmp(cfg.shim, shim) == 0,
           "\"%s\" gives default=%s signals=%s debug=%d shim=%s (got %s %s %d %s)", line,
           pspawn_mode_name(mode), pspawn_signals_name(signals), debug, shim,
           pspawn_mode_name(cfg.default_mode), pspawn_signals_name(cfg.signals), cfg.debug,
           cfg.shim);
}

/* Rejected, with a message that names the argument. */
static void bad(const char *line, const char *named)
{
    struct pspawn_config cfg;
    char err[256] = "";
    int rc = parse(line, &cfg, err, sizeof err);
    tap_ok(rc == -1, "rejects \"%s\"", line);
    tap_ok(strstr(err, named) != NULL, "message names \"%s\": %s", named, err);
}

static void case_plugstack_defaults(void)
{
    struct pspawn_config cfg;
    pspawn_config_defaults(&cfg);
    tap_ok(cfg.default_mode == PSPAWN_MODE_OFF && cfg.signals == PSPAWN_SIGNALS_AUTO &&
           cfg.debug == 0 && strcmp(cfg.shim, "/test/pspawn-shim") == 0,
           "defaults: default=off signals=auto debug=0 shim=PSPAWN_SHIM_PATH");
}

static void case_plugstack_accepted(void)
{
    good("", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("default=on", PSPAWN_MODE_ON, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("default=auto", PSPAWN_MODE_AUTO, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("default=off", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("signals=yes", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_YES, 0, "/test/pspawn-shim");
    good("signals=no", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_NO, 0, "/test/pspawn-shim");
    good("signals=auto", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("debug=1", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 1, "/test/pspawn-shim");
    good("debug=0", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/test/pspawn-shim");
    good("shim=/opt/p/shim", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/opt/p/shim");
    good("default=auto signals=no debug=1 shim=/x/y", PSPAWN_MODE_AUTO, PSPAWN_SIGNALS_NO, 1,
         "/x/y");
    good("debug=1 debug=0 default=on default=auto", PSPAWN_MODE_AUTO, PSPAWN_SIGNALS_AUTO, 0,
         "/test/pspawn-shim");
    good("shim=/a=b", PSPAWN_MODE_OFF, PSPAWN_SIGNALS_AUTO, 0, "/a=b");
}

static void case_plugstack_rejected(void)
{
    bad("default=yes", "default=yes");
    bad("default=", "default=");
    bad("default=ON", "default=ON");
    bad("signals=maybe", "signals=maybe");
    bad("signals=", "signals=");
    bad("debug=2", "debug=2");
    bad("debug=yes", "debug=yes");
    bad("debug", "debug");
    bad("shim=relative/pspawn-shim", "shim=relative/pspawn-shim");
    bad("shim=", "shim=");
    bad("defaults=on", "defaults=on");
    bad("=on", "=on");
    bad("default=on bogus", "bogus");
    bad("signals=yes debug=1 default=of", "default=of");
}

static void case_plugstack_long_shim_and_tiny_error(void)
{
    struct pspawn_config cfg;
    char longpath[PATH_MAX + 16];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    char longarg[PATH_MAX + 32];
    snprintf(longarg, sizeof longarg, "shim=%s", longpath);
    char *argv[] = { longarg };
    char err[256] = "";
    pspawn_config_defaults(&cfg);
    tap_ok(pspawn_config_parse(&cfg, 1, argv, err, sizeof err) == -1 && strstr(err, "shim") != NULL,
           "rejects a shim path longer than PATH_MAX: %s", err);

    /* A tiny error buffer is still terminated. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    char *bogus[] = { "bogus=1" };
    tap_ok(pspawn_config_parse(&cfg, 1, bogus, tiny, sizeof tiny) == -1 &&
           memchr(tiny, '\0', sizeof tiny) != NULL, "error message truncated and terminated");
}

static void case_pspawn_mode_words(void)
{
    enum pspawn_mode m = PSPAWN_MODE_OFF;
    tap_ok(pspawn_mode_parse(NULL, &m) == 0 && m == PSPAWN_MODE_ON, "--pspawn alone: on");
    m = PSPAWN_MODE_OFF;
    tap_ok(pspawn_mode_parse("", &m) == 0 && m == PSPAWN_MODE_ON, "--pspawn= (empty): on");
    tap_ok(pspawn_mode_parse("off", &m) == 0 && m == PSPAWN_MODE_OFF, "--pspawn=off");
    tap_ok(pspawn_mode_parse("auto", &m) == 0 && m == PSPAWN_MODE_AUTO, "--pspawn=auto");
    tap_ok(pspawn_mode_parse("on", &m) == 0 && m == PSPAWN_MODE_ON, "--pspawn=on");
    m = PSPAWN_MODE_AUTO;
    tap_ok(pspawn_mode_parse("yes", &m) == -1 && m == PSPAWN_MODE_AUTO,
           "--pspawn=yes rejected, mode unchanged");
    tap_ok(pspawn_mode_parse("on ", &m) == -1, "--pspawn='on ' rejected");
}

/* --pspawn=WORD,KEY=VALUE...: one syntax with libpspawn's options. */
static void case_pspawn_args_accepted(void)
{
    static const struct {
        const char *arg;
        enum pspawn_mode mode;
        const char *options;
    } args[] = {
        { NULL, PSPAWN_MODE_ON, "" },
        { "on,fanout=l3", PSPAWN_MODE_ON, "fanout=l3" },
        { "fanout=l3", PSPAWN_MODE_ON, "fanout=l3" },
        { "fanout=4,subzygote=fork", PSPAWN_MODE_ON, "fanout=4,subzygote=fork" },
        { "auto,fanout=numa,start=lazy", PSPAWN_MODE_AUTO, "fanout=numa,start=lazy" },
        { "fanout=core,off", PSPAWN_MODE_OFF, "fanout=core" },
        { "modules=numpy:scipy.linalg", PSPAWN_MODE_ON, "modules=numpy:scipy.linalg" },
        { "on,preload=auto,python=off", PSPAWN_MODE_ON, "preload=auto,python=off" },
        { "off", PSPAWN_MODE_OFF, "" },
        { "on,reuse=job", PSPAWN_MODE_ON, "reuse=job" },
        { "reuse=job,idle=60,zygotes=2", PSPAWN_MODE_ON, "reuse=job,idle=60,zygotes=2" },
    };
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        char opts[128] = "x", why[256];
        enum pspawn_mode m = PSPAWN_MODE_OFF;
        int rc = pspawn_arg_parse(args[i].arg, &m, opts, sizeof opts, why, sizeof why);
        tap_ok(rc == 0 && m == args[i].mode && strcmp(opts, args[i].options) == 0,
               "--pspawn=%s: %s with \"%s\" (got rc %d, %s, \"%s\"%s%s)",
               args[i].arg ? args[i].arg : "", pspawn_mode_name(args[i].mode), args[i].options, rc,
               pspawn_mode_name(m), opts, rc ? ": " : "", rc ? why : "");
    }
}

static void case_pspawn_args_rejected(void)
{
    static const struct {
        const char *arg, *named;
    } badargs[] = {
        { "on,fanout=bogus", "fanout=bogus" },
        { "fanout=0", "fanout=0" },
        { "on,off", "more than one" },
        { "on,,fanout=l3", "empty item" },
        { "on,fanout=l3,", "ends with a comma" },
        { "fanuot=l3", "fanuot" },
        { "subzygote=spawn", "subzygote=spawn" },
        { "subzygote=cgroup", "cgroup=DIR" },
        { "python=on", "python=on" },
        { "modules=numpy,scipy", "\"scipy\"" },
        { "preload=relative", "preload=relative" },
        { "yes", "yes" },
        { "reuse=node", "reuse=node" },
        { "reuse=job,idle=0", "idle=0" },
        { "reuse=job,idle=1h", "idle=1h" },
        { "zygotes=65", "zygotes=65" },
        { "zygotes=0", "zygotes=0" },
    };
    for (size_t i = 0; i < sizeof badargs / sizeof badargs[0]; i++) {
        char opts[128], why[256] = "";
        enum pspawn_mode m = PSPAWN_MODE_AUTO;
        int rc = pspawn_arg_parse(badargs[i].arg, &m, opts, sizeof opts, why, sizeof why);
        tap_ok(rc == -1 && strstr(why, badargs[i].named) != NULL,
               "--pspawn=%s rejected, naming \"%s\": %s", badargs[i].arg, badargs[i].named, why);
    }
}

static void case_site_and_reuse_options(void)
{
    struct pspawn_config cfg;
    /* plugstack.conf: libpspawn's keys are the site's defaults for every
     * step, in the order given. */
    char err2[256] = "";
    tap_ok(parse("default=auto fanout=core subzygote=fork debug=1", &cfg, err2, sizeof err2) == 0 &&
               cfg.default_mode == PSPAWN_MODE_AUTO && cfg.debug == 1 &&
               strcmp(cfg.options, "fanout=core,subzygote=fork") == 0,
           "plugstack.conf fanout=core subzygote=fork: site options \"%s\"%s", cfg.options, err2);
    tap_ok(parse("default=on reuse=job idle=120", &cfg, err2, sizeof err2) == 0 &&
               strcmp(cfg.options, "reuse=job,idle=120") == 0,
           "plugstack.conf reuse=job idle=120: site options \"%s\"%s", cfg.options, err2);

    /* What reuse=job's keys set, and their defaults: a step's keys come
     * after the site's, and win. */
    struct pspawn_options o;
    pspawn_options_defaults(&o);
    tap_ok(!o.reuse_job && o.idle_s == PSPAWN_DEFAULT_IDLE_S &&
               o.max_zygotes == PSPAWN_DEFAULT_JOB_ZYGOTES,
           "defaults: reuse=step, idle=%d s, zygotes=%d", o.idle_s, o.max_zygotes);
    int prc = pspawn_options_parse(&o, "reuse=job,idle=120,zygotes=8,reuse=step,reuse=job,idle=30",
                                   err2, sizeof err2);
    tap_ok(prc == 0 && o.reuse_job && o.idle_s == 30 && o.max_zygotes == 8,
           "reuse=job,idle=120,zygotes=8,...,idle=30: job, 30 s, 8 zygotes (got %d, %d, %d)%s",
           o.reuse_job, o.idle_s, o.max_zygotes, err2);
    char text[512];
    struct pspawn_options back;
    pspawn_options_defaults(&back);
    tap_ok(pspawn_options_format(&o, text, sizeof text) == 0 &&
               pspawn_options_parse(&back, text, err2, sizeof err2) == 0 && back.reuse_job &&
               back.idle_s == 30 && back.max_zygotes == 8,
           "formatted and read back: \"%s\"", text);
}

/* auto_objects=N: default=auto's least number of objects. */
static void case_auto_objects(void)
{
    struct pspawn_config cfg;
    char err[256] = "";
    pspawn_config_defaults(&cfg);
    tap_ok(cfg.auto_objects == -1, "auto_objects= defaults to the measured values (-1: %d)",
           cfg.auto_objects);
    tap_ok(parse("default=auto auto_objects=50", &cfg, err, sizeof err) == 0 &&
               cfg.auto_objects == 50 && cfg.options[0] == '\0',
           "auto_objects=50: taken, and not passed to libpspawn (%s)", err);
    tap_ok(parse("auto_objects=0", &cfg, err, sizeof err) == 0 && cfg.auto_objects == 0,
           "auto_objects=0: every program is worth a zygote");
    const char *bad[] = { "auto_objects=", "auto_objects=-1", "auto_objects=many",
                          "auto_objects=40000", "auto_objects=12x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        tap_ok(parse(bad[i], &cfg, err, sizeof err) == -1 && strstr(err, bad[i]) &&
                   strstr(err, "from 0 to 32767"),
               "%s refused, naming it: %s", bad[i], err);
}

/* Site policy: force=off, allow=KEY:KEY; what allow= refuses of a user's
 * --pspawn keys, and how it says so. */
static void case_site_policy(void)
{
    struct pspawn_config cfg;
    char err[256] = "";
    tap_ok(parse("force=off allow=fanout:python", &cfg, err, sizeof err) == 0 && cfg.force_off &&
           cfg.allow_set && strcmp(cfg.allow, ":fanout:python:") == 0,
           "force=off allow=fanout:python: taken (%s)", err[0] ? err : cfg.allow);
    tap_ok(pspawn_config_refuses(&cfg, "fanout=core,python=off", err, sizeof err) == 0,
           "allowed keys pass");
    tap_ok(pspawn_config_refuses(&cfg, "fanout=core,reuse=job", err, sizeof err) == -1 &&
           strstr(err, "reuse= is not allowed") && strstr(err, "allow=fanout:python"),
           "reuse= refused, naming the key and the rule: %s", err);
    tap_ok(parse("allow=", &cfg, err, sizeof err) == 0 && cfg.allow_set &&
           pspawn_config_refuses(&cfg, "", err, sizeof err) == 0 &&
           pspawn_config_refuses(&cfg, "fanout=l3", err, sizeof err) == -1 &&
           strstr(err, "allow=)"),
           "allow= (empty): no key, only the words (%s)", err);
    pspawn_config_defaults(&cfg);
    tap_ok(!cfg.force_off && !cfg.allow_set &&
           pspawn_config_refuses(&cfg, "fanout=core,reuse=job,mode=pip", err, sizeof err) == 0,
           "by default every key is allowed and nothing forced");
    tap_ok(parse("allow=fanout", &cfg, err, sizeof err) == 0 &&
           pspawn_config_refuses(&cfg, "verbose,fanout=l3", err, sizeof err) == 0 &&
           parse("allow=", &cfg, err, sizeof err) == 0 &&
           pspawn_config_refuses(&cfg, "verbose", err, sizeof err) == 0,
           "verbose is always the user's, even under allow= (%s)", err);
    enum pspawn_mode mode;
    char options[256];
    tap_ok(pspawn_arg_parse("on,verbose", &mode, options, sizeof options, err, sizeof err) == 0 &&
           mode == PSPAWN_MODE_ON && strcmp(options, "verbose") == 0,
           "--pspawn=on,verbose: on, and verbose among the options (%s)", options);
    bad("allow=fanout:sideways", "sideways");
    bad("allow=verbose", "verbose");
    bad("force=on", "force=on");
}

int main(void)
{
    case_plugstack_defaults();
    case_plugstack_accepted();
    case_plugstack_rejected();
    case_plugstack_long_shim_and_tiny_error();
    case_pspawn_mode_words();
    case_pspawn_args_accepted();
    case_pspawn_args_rejected();
    case_site_and_reuse_options();
    case_site_policy();
    case_auto_objects();
    bad("fanout=sideways", "fanout=sideways");
    bad("fanout=l3,start=lazy", "fanout=l3,start=lazy");

    tap_done();
    return tap_failed ? 1 : 0;
}
