/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpspawn's option syntax (libpspawn/wire/options.c), as every front
 * door takes it: pspawn --options, PSPAWN_OPTIONS, srun --pspawn=,
 * plugstack.conf, the PRRTE component's MCA parameters.
 *
 * Invariants: an error always says something, in a terminated buffer of
 * any size (even 0 or 1 bytes); what parses holds only values the
 * launcher knows; and what parses, formatted back, parses to the same
 * options (the stand-in client sends them on as text).  The same text as
 * PSPAWN_TIMEOUT's value (pspawn_timeout_parse): a day at most, never 0.
 */
#include <assert.h>
#include <errno.h>

#include "fuzz.h"
#include "options.h"

static void check_values(const struct pspawn_options *o, const char *text)
{
    FUZZ_CHECK(o->word >= PSPAWN_WORD_UNSET && o->word <= PSPAWN_WORD_AUTO, "\"%s\": word %d", text, o->word);
    FUZZ_CHECK(o->fanout >= PSPAWN_FANOUT_AUTO && o->fanout <= PSPAWN_FANOUT_CORES, "\"%s\": fanout %d",
               text, o->fanout);
    FUZZ_CHECK(o->fanout != PSPAWN_FANOUT_CORES || (o->cores_per_group >= 1 && o->cores_per_group <= 4096),
               "\"%s\": %d cores per group", text, o->cores_per_group);
    FUZZ_CHECK(o->subzygote >= PSPAWN_SUB_FORK && o->subzygote <= PSPAWN_SUB_CGROUP, "\"%s\": subzygote %d",
               text, o->subzygote);
    FUZZ_CHECK(o->subzygote != PSPAWN_SUB_CGROUP || o->cgroup[0], "\"%s\": subzygote=cgroup without cgroup", text);
    FUZZ_CHECK(memchr(o->cgroup, 0, sizeof o->cgroup) && (!o->cgroup[0] || o->cgroup[0] == '/'),
               "\"%s\": cgroup \"%.64s\"", text, o->cgroup);
    FUZZ_CHECK(memchr(o->preload, 0, sizeof o->preload) &&
                   (!o->preload[0] || o->preload[0] == '/' || !strcmp(o->preload, "auto")),
               "\"%s\": preload \"%.64s\"", text, o->preload);
    FUZZ_CHECK(memchr(o->modules, 0, sizeof o->modules) != NULL, "\"%s\": modules not terminated", text);
    FUZZ_CHECK(!strchr(o->cgroup, ',') && !strchr(o->preload, ','),
               "\"%s\": a comma inside a value cannot be written back", text);
    FUZZ_CHECK(o->python == 0 || o->python == 1, "\"%s\": python %d", text, o->python);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    assert(text);
    memcpy(text, data, size);
    text[size] = 0;

    struct pspawn_options o;
    pspawn_options_defaults(&o);
    char err[256];
    memset(err, 'x', sizeof err);
    int rc = pspawn_options_parse(&o, text, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "\"%s\": returned %d", text, rc);
    FUZZ_CHECK(memchr(err, 0, sizeof err) != NULL, "\"%s\": error not terminated", text);
    FUZZ_CHECK(rc == 0 ? err[0] == 0 : err[0] != 0, "\"%s\": rc %d with error \"%s\"", text, rc, err);

    /* The same with error buffers too small for any message: exactly
     * sized allocations, so that a write past them is an ASan report. */
    for (size_t len = 0; len <= 2; len++) {
        struct pspawn_options o2;
        pspawn_options_defaults(&o2);
        char *small = len ? malloc(len) : NULL;
        int rc2 = pspawn_options_parse(&o2, text, small, len);
        FUZZ_CHECK(rc2 == rc, "\"%s\": rc %d with %zu error bytes, %d with 256", text, rc2, len, rc);
        FUZZ_CHECK(len == 0 || small[len - 1] == 0 || memchr(small, 0, len), "\"%s\": error not terminated", text);
        free(small);
    }

    if (rc == 0) {
        check_values(&o, text);
        /* A number of cores is written in digits, nothing else. */
        for (const char *p = text; *p;) {
            size_t len = strcspn(p, ",");
            if (len > 7 && !strncmp(p, "fanout=", 7) && p[7] >= '0' && p[7] <= '9')
                FUZZ_CHECK(strspn(p + 7, "0123456789") == len - 7, "\"%s\": fanout=%.*s taken", text,
                           (int)len - 7, p + 7);
            else if (len > 7 && !strncmp(p, "fanout=", 7))
                FUZZ_CHECK(strspn(p + 7, "abcdefghijklmnopqrstuvwxyz0123456789") == len - 7,
                           "\"%s\": fanout=%.*s taken", text, (int)len - 7, p + 7);
            p += len + (p[len] == ',');
        }
        char buf[2 * PATH_MAX + 2048], n1[16], n2[16];
        FUZZ_CHECK(pspawn_options_format(&o, buf, sizeof buf) == 0, "\"%s\": format failed", text);
        struct pspawn_options back;
        pspawn_options_defaults(&back);
        char why[256];
        FUZZ_CHECK(pspawn_options_parse(&back, buf, why, sizeof why) == 0,
                   "\"%s\" formats as \"%s\", which does not parse: %s", text, buf, why);
        FUZZ_CHECK(back.fanout == o.fanout && back.subzygote == o.subzygote && back.lazy == o.lazy &&
                       back.python == o.python && !strcmp(back.cgroup, o.cgroup) &&
                       !strcmp(back.preload, o.preload) && !strcmp(back.modules, o.modules) &&
                       !strcmp(pspawn_fanout_name(&back, n1, sizeof n1), pspawn_fanout_name(&o, n2, sizeof n2)),
                   "\"%s\" formats as \"%s\", which parses to other options", text, buf);
        /* A buffer one byte short of the text is refused, never cut. */
        size_t need = strlen(buf) + 1;
        char *tight = malloc(need - 1);
        FUZZ_CHECK(pspawn_options_format(&o, tight, need - 1) == -1, "\"%s\": format cut to %zu bytes",
                   text, need - 1);
        free(tight);
    }
    /* PSPAWN_TIMEOUT's value, which options.c parses too. */
    int ms = -7;
    int trc = pspawn_timeout_parse(text, &ms);
    FUZZ_CHECK(trc == 0 || trc == EINVAL, "timeout \"%s\": returned %d", text, trc);
    FUZZ_CHECK(trc ? ms == -7 : ms >= 1 && ms <= 86400 * 1000, "timeout \"%s\": rc %d, %d ms", text, trc, ms);
    free(text);
    return 0;
}
