/* SPDX-License-Identifier: BSD-3-Clause */
/* pspawn's command line (pspawn(1)). */
#include "config.h"

#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "pspawn.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-n N] [--bind none|core|LIST] [--env K=V]... [--exec] [--label]\n"
            "          [--fanout MODE] [--options LIST] [--preload auto|FILE]\n"
            "          [--preload-modules LIST] [--timeout S] [--pip]\n"
            "          [-v] [--] PROG [ARGS...]\n"
            "   or: %s --intercept [--after N] [--route WHICH] [--idle S] [--skip LIST]\n"
            "          [--priority MODE] [-o LIST] [--] LAUNCHER [ARGS...]\n"
            "Launch N instances of PROG by forking one parked, already-loaded copy of it.\n"
            "With --intercept, run LAUNCHER (make, xargs, parallel, python...) so that its\n"
            "repeated starts of one program fork a zygote of it instead of exec'ing it\n"
            "(pspawn --intercept --help lists its options).\n\n"
            "  -n, --ntasks N      number of tasks (default 1)\n"
            "  -b, --bind MODE     none (default), core (rank r on the r-th allowed CPU),\n"
            "                      or a CPU list such as 0-3,8 (rank r on LIST[r %% len])\n"
            "  -e, --env K=V       set K=V in every task (repeatable)\n"
            "  -x, --exec          plain exec per task (the reference; no zygote)\n"
            "  -l, --label         prefix every output line with the task's rank\n"
            "  -f, --fanout MODE   zygotes that fork the tasks: auto (default), none, numa,\n"
            "                      l3, package, core, or N cores per zygote (pspawn(1))\n"
            "  -o, --options LIST  libpspawn's options: fanout=MODE,subzygote=exec|fork|\n"
            "                      replicate|cgroup,start=eager|lazy,cgroup=DIR,python=auto|off\n"
            "                      (pspawn(3))\n"
            "  -P, --preload auto|FILE\n"
            "                      dlopen in the zygote what earlier tasks loaded after main\n"
            "                      (auto: learned), or the libraries FILE lists\n"
            "  -p, --preload-modules LIST\n"
            "                      Python modules a warm interpreter imports before it parks\n"
            "                      (comma-separated; default: what earlier tasks imported)\n"
            "  -t, --timeout S     terminate the tasks after S seconds (exit 124)\n"
            "      --pip           Process-in-Process: tasks share the zygote's address\n"
            "                      space, each with its own copy of PROG (a PIE linked\n"
            "                      -rdynamic); at most 15 (pspawn(1))\n"
            "  -v, --verbose       print the launch time and the path used\n"
            "  -h, --help          this help\n"
            "  -V, --version       version\n\n"
            "Tasks get PSPAWN_RANK, PSPAWN_SIZE and PSPAWN_LOCAL_RANK.  Exit status: 0 if all\n"
            "tasks exit 0, else the highest task status (128+N for signal N); 127 if PROG\n"
            "is not found, 126 if it cannot be executed, 124 on timeout, 2 on usage errors.\n"
            "PSPAWN_DEBUG=1 prints why a task fell back to exec.  See pspawn(1).\n",
            progname, progname);
}

/* Append PREFIX VALUE to the options, checked as libpspawn reads them. */
static int add_options(struct cli_options *o, const char *prefix, const char *value)
{
    char *item, msg[256];
    if (asprintf(&item, "%s%s", prefix, value) < 0)
        return -1;
    if (pspawn_options_check(item, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: invalid %s'%s': %s\n", progname,
                *prefix == 'f' ? "--fanout " : *prefix == 'm' && prefix[2] == 'd' ? "--pip " : *prefix == 'm' ? "--preload-modules " : *prefix == 'p' ? "--preload " : "--options ",
                value, msg);
        free(item);
        return -1;
    }
    char *all = item;
    if (o->options && asprintf(&all, "%s,%s", o->options, item) < 0)
        all = NULL;
    if (all != item)
        free(item);
    free(o->options);
    o->options = all;
    return all ? 0 : -1;
}

static int parse_cpu_list(const char *s, int **out, int *n)
{
    int cap = 16, k = 0;
    int *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0 || a >= CPU_SETSIZE)
            goto bad;
        b = a;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b >= CPU_SETSIZE)
                goto bad;
        }
        for (long c = a; c <= b; c++) {
            if (k == cap) {
                int *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv)
                    goto bad;
                v = nv;
            }
            v[k++] = (int)c;
        }
        if (*end == ',')
            end++;
        else if (*end)
            goto bad;
        s = end;
    }
    if (!k)
        goto bad;
    *out = v;
    *n = k;
    return 0;
bad:
    free(v);
    return -1;
}

/* -n ARG: 0, or -1 (said). */
static int parse_count(const char *arg, struct cli_options *o)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (*end || n < 1 || n > 1000000) {
        fprintf(stderr, "%s: invalid task count '%s'\n", progname, arg);
        return -1;
    }
    o->n = (int)n;
    return 0;
}

/* --bind ARG: 0, or -1 (said). */
static int parse_bind(const char *arg, struct cli_options *o)
{
    if (strcmp(arg, "none") == 0)
        o->bind_mode = 0;
    else if (strcmp(arg, "core") == 0)
        o->bind_mode = 1;
    else if (parse_cpu_list(arg, &o->bind_list, &o->nbind) == 0)
        o->bind_mode = 2;
    else {
        fprintf(stderr, "%s: invalid --bind '%s' (none, core or a CPU list)\n",
                progname, arg);
        return -1;
    }
    return 0;
}

/* What parses alone but not with the rest: 0, or -1 (said). */
static int check_combined(const struct cli_options *o)
{
    /* Items that parse alone may not go together (mode=pip, fanout=core). */
    char msg[256];
    if (o->options && pspawn_options_check(o->options, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: invalid options '%s': %s\n", progname, o->options, msg);
        return -1;
    }
    /* libpspawn refuses to start a zygote with it: say which and why. */
    const char *tmo = getenv("PSPAWN_TIMEOUT");
    int ms;
    if (tmo && *tmo && pspawn_timeout_parse(tmo, &ms)) {
        fprintf(stderr, "%s: invalid PSPAWN_TIMEOUT '%s': seconds, more than 0 and at most "
                "86400\n", progname, tmo);
        return -1;
    }
    return 0;
}

/* One getopt switch over every option: long, but flat. */
int cli_parse(int argc, char **argv, struct cli_options *o)
{
    static const struct option longopts[] = {
        { "ntasks", required_argument, NULL, 'n' },
        { "bind", required_argument, NULL, 'b' },
        { "env", required_argument, NULL, 'e' },
        { "exec", no_argument, NULL, 'x' },
        { "label", no_argument, NULL, 'l' },
        { "fanout", required_argument, NULL, 'f' },
        { "options", required_argument, NULL, 'o' },
        { "preload-modules", required_argument, NULL, 'p' },
        { "preload", required_argument, NULL, 'P' },
        { "timeout", required_argument, NULL, 't' },
        { "pip", no_argument, NULL, 'I' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    o->extra_env = calloc((size_t)argc, sizeof(char *));
    while ((c = getopt_long(argc, argv, "+n:b:e:xlf:o:p:P:t:vhV", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'n':
            if (parse_count(optarg, o) != 0)
                return -2;
            break;
        case 'b':
            if (parse_bind(optarg, o) != 0)
                return -2;
            break;
        case 'e':
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                fprintf(stderr, "%s: invalid --env '%s' (want K=V)\n", progname, optarg);
                return -2;
            }
            o->extra_env[o->nextra++] = optarg;
            break;
        case 'x': o->force_exec = 1; break;
        case 'l': o->label = 1; break;
        case 'f':
        case 'o':
            if (add_options(o, c == 'f' ? "fanout=" : "", optarg) != 0)
                return -2;
            break;
        case 'p':
            /* commas separate the options' items: modules= takes colons */
            for (char *m = optarg; *m; m++)
                if (*m == ',')
                    *m = ':';
            if (add_options(o, "modules=", optarg) != 0)
                return -2;
            break;
        case 'P':
            if (add_options(o, "preload=", optarg) != 0)
                return -2;
            break;
        case 'I':
            if (add_options(o, "mode=", "pip") != 0)
                return -2;
            o->pip = 1;
            break;
        case 't':
            o->timeout = strtod(optarg, &end);
            if (*end || o->timeout <= 0) {
                fprintf(stderr, "%s: invalid --timeout '%s'\n", progname, optarg);
                return -2;
            }
            break;
        case 'v': o->verbose = 1; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("pspawn %d.%d\n", PSPAWN_VERSION_MAJOR, PSPAWN_VERSION_MINOR); return 0;
        default: usage(stderr); return -2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return -2;
    }
    return check_combined(o) == 0 ? optind : -2;
}
