/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srun's --pspawn= value: the option's callback in spank/pspawn_srun.c
 * (included, with the few Slurm calls it makes stubbed), which srun runs
 * first and every slurmstepd again with the value srun forwarded.
 *
 * Input: one byte says how the callback is reached (srun or slurmstepd,
 * with the value, with none, or as sbatch's "(null)"), one byte picks the
 * site's plugstack.conf options, the rest is the value.
 *
 * Invariants: a refused value leaves the step's earlier choice as it was
 * and says why; a taken one gives a known mode and options that libpspawn
 * takes, alone, after the site's (as slurmstepd joins them) and with the
 * shim's default subzygote added (as pspawn-shim does).
 */
#include <assert.h>
#include <stdarg.h>

#include "fuzz.h"
#include "options.h"
#include "pspawn_spank.h"

struct pspawn_config pspawn_config;
static char last_error[1024];

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

void slurm_info(const char *fmt, ...)
{
    (void)fmt;
}

void slurm_debug(const char *fmt, ...)
{
    (void)fmt;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp;
    (void)opt;
    return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
    (void)err;
    return "stub";
}

#include "../../spank/pspawn_srun.c"

/* Site options, as pspawn_config_parse leaves them. */
static const char *const site_options[] = {
    "", "fanout=core", "subzygote=fork,start=lazy", "subzygote=cgroup,cgroup=/sys/fs/cgroup/pspawn",
    "preload=auto,python=off", "modules=numpy:scipy,fanout=4",
};

static void must_parse(const char *text, const char *what)
{
    struct pspawn_options o;
    char why[256];
    pspawn_options_defaults(&o);
    FUZZ_CHECK(pspawn_options_parse(&o, text, why, sizeof why) == 0, "%s \"%s\" does not parse: %s", what,
               text, why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    unsigned how = fz_u8(&in), site = fz_u8(&in);
    const uint8_t *rest;
    size_t n = fz_bytes(&in, in.n, &rest);
    char *value = malloc(n + 1);
    assert(value);
    memcpy(value, rest, n);
    value[n] = 0;
    const char *arg = (how & 6) == 2 ? NULL : (how & 6) == 4 ? "(null)" : value;
    int remote = how & 1;

    pspawn_config_defaults(&pspawn_config);
    snprintf(pspawn_config.options, sizeof pspawn_config.options, "%s",
             site_options[site % (sizeof site_options / sizeof site_options[0])]);
    /* An earlier --pspawn (sbatch's, through the environment) to keep. */
    option_given = 0;
    FUZZ_CHECK(on_option(0, "auto,fanout=l3", 0) == 0, "the earlier value fails: %s", last_error);
    last_error[0] = 0;

    int rc = on_option(0, arg, remote);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc < 0) {
        FUZZ_CHECK(last_error[0] && strstr(last_error, "--pspawn="), "refused without a message naming it");
        FUZZ_CHECK(pspawn_option_mode() == PSPAWN_MODE_AUTO && !strcmp(pspawn_option_options(), "fanout=l3"),
                   "a refused \"%s\" changed the step's choice to %s \"%s\"", value,
                   pspawn_mode_name(pspawn_option_mode()), pspawn_option_options());
    } else {
        enum pspawn_mode m = pspawn_option_mode();
        FUZZ_CHECK(m >= PSPAWN_MODE_OFF && m <= PSPAWN_MODE_AUTO, "mode %d", m);
        const char *mine = pspawn_option_options();
        FUZZ_CHECK(memchr(mine, 0, sizeof option_options) != NULL, "options not terminated");
        FUZZ_CHECK(arg && *arg && strcmp(arg, "(null)") ? 1 : m == PSPAWN_MODE_ON && !*mine,
                   "--pspawn with no value: %s \"%s\"", pspawn_mode_name(m), mine);
        for (const char *p = mine; *p;) {
            size_t len = strcspn(p, ",");
            FUZZ_CHECK(!((len == 2 && !strncmp(p, "on", 2)) || (len == 3 && !strncmp(p, "off", 3)) ||
                         (len == 4 && !strncmp(p, "auto", 4))),
                       "options \"%s\" keep a word", mine);
            p += len + (p[len] == ',');
        }
        must_parse(mine, "the step's options");
        /* slurmstepd: the site's, then the step's (later keys win). */
        char step[1040];
        snprintf(step, sizeof step, "%s%s%s", pspawn_config.options, pspawn_config.options[0] && mine[0] ? "," : "",
                 mine);
        must_parse(step, "the site's and the step's options");
        /* pspawn-shim: the step's subzygote, or fork. */
        if (!strstr(step, "subzygote=")) {
            char shim[1100];
            snprintf(shim, sizeof shim, "%s%ssubzygote=fork", step, step[0] ? "," : "");
            must_parse(shim, "the shim's options");
        }
    }
    free(value);
    return 0;
}
