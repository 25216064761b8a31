/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "options.h"

/* What the benchmarks chose (bench/README.md, "Fan-out"): exec'd
 * sub-zygotes fork as cheaply as the root, forked ones pay for the longer
 * copy-on-write chains of every level. */
#define PSPAWN_DEFAULT_SUBZYGOTE PSPAWN_SUB_EXEC

static const char *const fanout_names[] = {
    [PSPAWN_FANOUT_AUTO] = "auto", [PSPAWN_FANOUT_NONE] = "none",
    [PSPAWN_FANOUT_NUMA] = "numa", [PSPAWN_FANOUT_L3] = "l3",
    [PSPAWN_FANOUT_PACKAGE] = "package", [PSPAWN_FANOUT_CORE] = "core",
};
static const char *const subzygote_names[] = {
    [PSPAWN_SUB_FORK] = "fork", [PSPAWN_SUB_EXEC] = "exec",
    [PSPAWN_SUB_REPLICATE] = "replicate", [PSPAWN_SUB_CGROUP] = "cgroup",
};

void pspawn_options_defaults(struct pspawn_options *o)
{
    memset(o, 0, sizeof *o);
    o->word = PSPAWN_WORD_UNSET;
    o->fanout = PSPAWN_FANOUT_AUTO;
    o->subzygote = PSPAWN_DEFAULT_SUBZYGOTE;
    o->python = 1;
    o->idle_s = PSPAWN_DEFAULT_IDLE_S;
    o->max_zygotes = PSPAWN_DEFAULT_JOB_ZYGOTES;
}

/* V (VLEN bytes) as a whole number from LO to HI into *N: 0, or -1. */
static int parse_count(const char *v, size_t vlen, long lo, long hi, int *n)
{
    char num[16] = "";
    char *end = num;
    long x = 0;
    /* Digits only: strtol would also take " 4" and "+4". */
    if (vlen > 0 && vlen < sizeof num && strspn(v, "0123456789") >= vlen) {
        memcpy(num, v, vlen);
        x = strtol(num, &end, 10);
    }
    if (!num[0] || *end || x < lo || x > hi)
        return -1;
    *n = (int)x;
    return 0;
}

static int lookup(const char *w, size_t len, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (names[i] && strlen(names[i]) == len && strncmp(w, names[i], len) == 0)
            return i;
    return -1;
}

int pspawn_errmsg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Every key, for the messages about one that is not. */
#define KEYS "fanout, subzygote, start, cgroup, python, modules, preload, reuse, idle, zygotes, mode"

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

/* What getsubopt(3) tells apart: the keys (KEY=VALUE), then the words. */
enum item {
    ITEM_FANOUT, ITEM_SUBZYGOTE, ITEM_START, ITEM_CGROUP, ITEM_PYTHON, ITEM_MODULES,
    ITEM_PRELOAD, ITEM_REUSE, ITEM_IDLE, ITEM_ZYGOTES, ITEM_MODE,
    ITEM_OFF, ITEM_ON, ITEM_AUTO, ITEM_VERBOSE,
};
static char *const item_names[] = {
    [ITEM_FANOUT] = "fanout", [ITEM_SUBZYGOTE] = "subzygote", [ITEM_START] = "start",
    [ITEM_CGROUP] = "cgroup", [ITEM_PYTHON] = "python", [ITEM_MODULES] = "modules",
    [ITEM_PRELOAD] = "preload", [ITEM_REUSE] = "reuse", [ITEM_IDLE] = "idle",
    [ITEM_ZYGOTES] = "zygotes", [ITEM_MODE] = "mode",
    [ITEM_OFF] = "off", [ITEM_ON] = "on", [ITEM_AUTO] = "auto", [ITEM_VERBOSE] = "verbose", NULL,
};
_Static_assert(PSPAWN_WORD_ON - PSPAWN_WORD_OFF == ITEM_ON - ITEM_OFF &&
               PSPAWN_WORD_AUTO - PSPAWN_WORD_OFF == ITEM_AUTO - ITEM_OFF,
               "the words in the order of enum pspawn_word");

/* The keys whose value is one of two words: the first sets the field to
 * 0, the second to 1. */
static const struct two_way {
    int item;
    const char *zero, *one, *expected;
    size_t field;
    unsigned given;
} two_ways[] = {
    { ITEM_START, "eager", "lazy", "eager or lazy", offsetof(struct pspawn_options, lazy),
      PSPAWN_OPT_START },
    { ITEM_PYTHON, "off", "auto", "auto or off", offsetof(struct pspawn_options, python),
      PSPAWN_OPT_PYTHON },
    { ITEM_REUSE, "step", "job", "step or job", offsetof(struct pspawn_options, reuse_job),
      PSPAWN_OPT_REUSE },
    { ITEM_MODE, "fork", "pip", "fork or pip", offsetof(struct pspawn_options, pip),
      PSPAWN_OPT_MODE },
};

/* Key K's value V when K is a two-way key: 0 (set), 1 (not such a key) or
 * -1 (a bad value, said in ERR). */
static int parse_two_way(struct pspawn_options *o, int k, const char *v, size_t vlen, char *err,
                         size_t errlen)
{
    for (int i = 0; i < N_OF(two_ways); i++) {
        const struct two_way *t = &two_ways[i];
        if (t->item != k)
            continue;
        int *field = (int *)((char *)o + t->field);
        if (strcmp(v, t->zero) == 0)
            *field = 0;
        else if (strcmp(v, t->one) == 0)
            *field = 1;
        else
            return pspawn_errmsg(err, errlen, "%s=%.*s: expected %s", item_names[k], (int)vlen, v,
                                 t->expected);
        o->given |= t->given;
        return 0;
    }
    return 1;
}

/* fanout=V: a kind of group, or a number of cores per group. */
static int parse_fanout(struct pspawn_options *o, const char *v, size_t vlen, char *err,
                        size_t errlen)
{
    int k = lookup(v, vlen, fanout_names, N_OF(fanout_names));
    if (k >= 0) {
        o->fanout = k;
    } else {
        int n;
        if (parse_count(v, vlen, 1, 4096, &n) < 0)
            return pspawn_errmsg(err, errlen, "fanout=%.*s: expected auto, none, numa, l3, package, "
                                 "core or a number of cores per group (1-4096)", (int)vlen, v);
        o->fanout = PSPAWN_FANOUT_CORES;
        o->cores_per_group = n;
    }
    o->given |= PSPAWN_OPT_FANOUT;
    return 0;
}

/* modules=V: Python module names, colon-separated (kept comma-separated,
 * as struct pspawn_options holds them). */
static int parse_modules(struct pspawn_options *o, const char *v, size_t vlen, char *err,
                         size_t errlen)
{
    if (vlen >= sizeof o->modules)
        return pspawn_errmsg(err, errlen, "modules=: longer than %zu bytes", sizeof o->modules - 1);
    for (size_t i = 0; i < vlen; i++) {
        char c = v[i];
        if (!(c == ':' || c == '.' || c == '_' || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return pspawn_errmsg(err, errlen, "modules=%.*s: expected Python module names "
                                 "separated by colons", (int)vlen, v);
        o->modules[i] = c == ':' ? ',' : c;
    }
    o->modules[vlen] = 0;
    o->given |= PSPAWN_OPT_MODULES;
    return 0;
}

/* Item K (an enum item, or -1: none of them) with its value V (after the
 * '='), as getsubopt found it; ITEM (LEN bytes) is the item as the user
 * wrote it. */
static int parse_item(struct pspawn_options *o, int k, const char *v, const char *item, size_t len,
                      char *err, size_t errlen, int *word_given)
{
    /* (V is unspecified where K is -1: POSIX leaves it so.) */
    const char *eq = memchr(item, '=', len);
    if (k < 0 || !eq != (k >= ITEM_OFF)) {
        if (!eq)
            return pspawn_errmsg(err, errlen, "\"%.*s\": expected on, off, auto, verbose or "
                                 "KEY=VALUE (keys: " KEYS ")", (int)len, item);
        return pspawn_errmsg(err, errlen, "\"%.*s\": unknown key \"%.*s\" (keys: " KEYS ")",
                             (int)len, item, (int)(eq - item), item);
    }
    size_t vlen = eq ? strlen(v) : 0;
    int two_way = eq ? parse_two_way(o, k, v, vlen, err, errlen) : 1;
    if (two_way <= 0)
        return two_way;
    switch (k) {
    case ITEM_OFF:
    case ITEM_ON:
    case ITEM_AUTO:
        o->word = PSPAWN_WORD_OFF + (k - ITEM_OFF);
        o->given |= PSPAWN_OPT_WORD;
        *word_given = 1;
        break;
    case ITEM_VERBOSE:
        o->verbose = 1;
        o->given |= PSPAWN_OPT_VERBOSE;
        break;
    case ITEM_FANOUT:
        if (parse_fanout(o, v, vlen, err, errlen) < 0)
            return -1;
        break;
    case ITEM_SUBZYGOTE:
        if ((k = lookup(v, vlen, subzygote_names, N_OF(subzygote_names))) < 0)
            return pspawn_errmsg(err, errlen, "subzygote=%.*s: expected fork, exec, replicate or cgroup",
                        (int)vlen, v);
        o->subzygote = k;
        o->given |= PSPAWN_OPT_SUBZYGOTE;
        break;
    case ITEM_CGROUP:
        if (vlen == 0 || v[0] != '/' || vlen >= sizeof o->cgroup)
            return pspawn_errmsg(err, errlen, "cgroup=%.*s: expected an absolute path (under %zu bytes)",
                        (int)vlen, v, sizeof o->cgroup);
        memcpy(o->cgroup, v, vlen + 1);
        o->given |= PSPAWN_OPT_CGROUP;
        break;
    case ITEM_PRELOAD:
        if (strcmp(v, "off") == 0)
            o->preload[0] = 0;
        else if (strcmp(v, "auto") == 0 || (vlen > 1 && v[0] == '/' && vlen < sizeof o->preload))
            memcpy(o->preload, v, vlen + 1);
        else
            return pspawn_errmsg(err, errlen, "preload=%.*s: expected off, auto or the absolute "
                                 "path of a list of libraries", (int)vlen, v);
        o->given |= PSPAWN_OPT_PRELOAD;
        break;
    case ITEM_MODULES:
        if (parse_modules(o, v, vlen, err, errlen) < 0)
            return -1;
        break;
    case ITEM_IDLE:
        if (parse_count(v, vlen, 1, 86400, &o->idle_s) < 0)
            return pspawn_errmsg(err, errlen, "idle=%.*s: expected seconds (1-86400)", (int)vlen, v);
        o->given |= PSPAWN_OPT_IDLE;
        break;
    case ITEM_ZYGOTES:
        if (parse_count(v, vlen, 1, 64, &o->max_zygotes) < 0)
            return pspawn_errmsg(err, errlen, "zygotes=%.*s: expected a number of zygotes (1-64)",
                                 (int)vlen, v);
        o->given |= PSPAWN_OPT_ZYGOTES;
        break;
    }
    return 0;
}

/* The items of TEXT, split by getsubopt(3) in COPY (its copy, which
 * getsubopt cuts up); messages quote TEXT, which nothing cuts. */
static int parse_items(struct pspawn_options *o, const char *text, char *copy, char *err,
                       size_t errlen)
{
    int word_given = 0, key_given = 0;
    for (char *p = copy; *p;) {
        if (*p == ',')
            return pspawn_errmsg(err, errlen, "\"%s\": empty item (items are separated by one comma)",
                        text);
        const char *item = text + (p - copy);
        size_t len = strcspn(item, ",");
        char *v;
        int k = getsubopt(&p, item_names, &v);
        int had = word_given;
        if (parse_item(o, k, v, item, len, err, errlen, &word_given) < 0)
            return -1;
        if (word_given == had)
            key_given = 1;
        if (item[len] == ',' && !item[len + 1])
            return pspawn_errmsg(err, errlen, "\"%s\": ends with a comma", text);
    }
    if (key_given && !word_given) {
        o->word = PSPAWN_WORD_ON;
        o->given |= PSPAWN_OPT_WORD;
    }
    return 0;
}

int pspawn_options_is_key(const char *name, size_t len)
{
    for (int i = 0; i < ITEM_OFF; i++)
        if (strlen(item_names[i]) == len && strncmp(name, item_names[i], len) == 0)
            return 1;
    return 0;
}

int pspawn_options_parse(struct pspawn_options *o, const char *text, char *err, size_t errlen)
{
    if (errlen > 0)
        err[0] = 0;
    if (!text)
        return 0;
    char *copy = strdup(text);
    if (!copy)
        return pspawn_errmsg(err, errlen, "no memory to parse \"%.64s\"", text);
    int r = parse_items(o, text, copy, err, errlen);
    free(copy);
    if (r < 0)
        return -1;
    if (o->subzygote == PSPAWN_SUB_CGROUP && !o->cgroup[0])
        return pspawn_errmsg(err, errlen, "subzygote=cgroup needs cgroup=DIR (a cgroup v2 directory)");
    /* PiP tasks share one address space and one loader: one root makes
     * them all (at most PSPAWN_PIP_MAX_TASKS namespaces), and it never
     * unloads a finished task's, so it serves one step.  mode=pip wins
     * over a fan-out or reuse=job, wherever they were set (a site's
     * default under a user's --pspawn=mode=pip). */
    if (o->pip) {
        o->fanout = PSPAWN_FANOUT_NONE;
        o->reuse_job = 0;
    }
    return 0;
}

const char *pspawn_fanout_name(const struct pspawn_options *o, char *buf, size_t size)
{
    if (o->fanout == PSPAWN_FANOUT_CORES) {
        snprintf(buf, size, "%d", o->cores_per_group);
        return buf;
    }
    return fanout_names[o->fanout];
}

const char *pspawn_subzygote_name(int subzygote)
{
    return subzygote >= 0 && subzygote < N_OF(subzygote_names) ? subzygote_names[subzygote] : "?";
}

int pspawn_options_format(const struct pspawn_options *o, char *buf, size_t size)
{
    char n[16];
    int len = snprintf(buf, size, "fanout=%s,subzygote=%s,start=%s%s%s,python=%s",
                       pspawn_fanout_name(o, n, sizeof n), pspawn_subzygote_name(o->subzygote),
                       o->lazy ? "lazy" : "eager", o->cgroup[0] ? ",cgroup=" : "", o->cgroup,
                       o->python ? "auto" : "off");
    if (len < 0 || (size_t)len >= size)
        return -1;
    if (o->reuse_job) {
        int m = snprintf(buf + len, size - (size_t)len, ",reuse=job,idle=%d,zygotes=%d",
                         o->idle_s, o->max_zygotes);
        if (m < 0 || (size_t)m >= size - (size_t)len)
            return -1;
        len += m;
    }
    if (o->pip) {
        int m = snprintf(buf + len, size - (size_t)len, ",mode=pip");
        if (m < 0 || (size_t)m >= size - (size_t)len)
            return -1;
        len += m;
    }
    if (o->preload[0]) {
        int m = snprintf(buf + len, size - (size_t)len, ",preload=%s", o->preload);
        if (m < 0 || (size_t)m >= size - (size_t)len)
            return -1;
        len += m;
    }
    if (o->modules[0]) {
        /* back to the colons the syntax uses */
        int m = snprintf(buf + len, size - (size_t)len, ",modules=%s", o->modules);
        if (m < 0 || (size_t)m >= size - (size_t)len)
            return -1;
        for (char *c = buf + len; *c; c++)
            if (*c == ',' && c != buf + len)
                *c = ':';
    }
    return 0;
}

int pspawn_timeout_parse(const char *text, int *ms)
{
    char *end;
    errno = 0;
    double s = text ? strtod(text, &end) : 0;
    /* !(s > 0) also refuses nan */
    if (!text || end == text || *end || errno || !(s > 0) || s > 86400)
        return EINVAL;
    int v = (int)(s * 1000);
    *ms = v > 0 ? v : 1;
    return 0;
}
