/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plugin's settings: the plugstack.conf arguments and the values of
 * the --pspawn option, parsed in one place.  Nothing here calls Slurm, so
 * tests/unit/spank-config.c can test it without a cluster.
 */
#ifndef PSPAWN_CONFIG_H
#define PSPAWN_CONFIG_H

#include <limits.h>
#include <stddef.h>

enum pspawn_mode {
    PSPAWN_MODE_OFF,
    PSPAWN_MODE_ON,     /* every step that can use a zygote */
    /* only steps with more than one task on the node (or reuse=job), of
     * a program worth a zygote (worth.h, auto_objects=) */
    PSPAWN_MODE_AUTO,
};

/* Whether the shim relays signals to its task (PSPAWN_SHIM_SIGNALS). */
enum pspawn_signals {
    PSPAWN_SIGNALS_AUTO,    /* the shim decides from ProctrackType */
    PSPAWN_SIGNALS_YES,
    PSPAWN_SIGNALS_NO,
};

struct pspawn_config {
    enum pspawn_mode default_mode;  /* default=: when srun has no --pspawn */
    enum pspawn_signals signals;    /* signals= */
    int debug;                      /* debug=0|1 */
    int auto_objects;               /* auto_objects=N: default=auto's least; -1: worth.h's */
    char shim[PATH_MAX];            /* shim=: absolute path of pspawn-shim */
    /* libpspawn's options (options.h) the site sets for every step, from
     * the plugstack.conf arguments with their keys (fanout=, subzygote=,
     * start=, cgroup=); a step's --pspawn keys come after, and win. */
    char options[512];
    /* Site policy.  force=off: every step is exec'd, whatever the user
     * asked.  allow=KEY:KEY...: the keys a user's --pspawn may set
     * (":fanout:reuse:", colons around each; all keys while allow_set is
     * 0).  The words on, off, auto and verbose are always the user's. */
    int force_off;
    int allow_set;
    char allow[256];
};

/* The settings with no plugstack.conf argument: default=off, signals=auto,
 * debug=0, auto_objects= as measured (-1: worth.h), shim=PSPAWN_SHIM_PATH, no
 * force=, every key allowed. */
void pspawn_config_defaults(struct pspawn_config *cfg);

/*
 * Parse the plugstack.conf arguments (key=value words) into cfg, which
 * holds the defaults or earlier values; a key given twice keeps the last.
 * Returns 0, or -1 with a message naming the bad argument in err
 * (errlen bytes, always terminated); cfg may then be partly updated.
 */
int pspawn_config_parse(struct pspawn_config *cfg, int argc, char *const argv[],
                        char *err, size_t errlen);

/*
 * One word: "on", "off" or "auto"; NULL or "" (the option given with no
 * argument) means on.  Returns 0, or -1 if text is none of these (mode is
 * then unchanged).
 */
int pspawn_mode_parse(const char *text, enum pspawn_mode *mode);

/*
 * The argument of --pspawn: a comma-separated list of at most one word
 * (on, off, auto) and libpspawn's options (fanout=l3,...); a key without a
 * word means on, NULL or "" means on.  *MODE gets the word, OPTIONS
 * (OPTLEN bytes) the keys as text.  Returns 0, or -1 with a message in ERR.
 */
int pspawn_arg_parse(const char *text, enum pspawn_mode *mode, char *options, size_t optlen,
                     char *err, size_t errlen);

/*
 * Whether the site's allow= lets a user's --pspawn set OPTIONS (its keys,
 * as pspawn_arg_parse gives them).  Returns 0, or -1 with a message in ERR
 * that names the first key refused and the site's rule.
 */
int pspawn_config_refuses(const struct pspawn_config *cfg, const char *options, char *err,
                          size_t errlen);

/* "on", "off", "auto"; "auto", "yes", "no": the words the parsers take. */
const char *pspawn_mode_name(enum pspawn_mode mode);
const char *pspawn_signals_name(enum pspawn_signals signals);

#endif
