/* SPDX-License-Identifier: BSD-3-Clause */
/* The pspawn command: what its command line asked for (args.c). */
#ifndef PSPAWN_CLI_H
#define PSPAWN_CLI_H

#include <stdio.h>

#include "pspawn.h"

extern const char *progname;

struct cli_options {
    int n;
    int bind_mode;          /* 0 none, 1 core, 2 list */
    int *bind_list;
    int nbind;
    char **extra_env;
    int nextra;
    int force_exec;
    int pip;                /* --pip */
    int label;
    double timeout;
    int verbose;
    char *options;          /* --options, with --fanout, --preload... merged in */
};

/* Parse ARGV into O.  Returns the index of the program's name, or the
 * exit status negated (0 after --help or --version, -2 for a usage error,
 * said on stderr). */
int cli_parse(int argc, char **argv, struct cli_options *o);

/* pspawn --intercept ... (intercept.c): the exit status. */
int cli_intercept(int argc, char **argv);

/* report.c: what -v says. */
/* The zygotes of CTX and what each served, on stderr. */
void cli_print_zygotes(const pspawn_context_t *ctx);
/* The launch of N tasks through CTX as the node's line (tally.h), into
 * LINE (SIZE bytes): forked by its zygote (USED_ZYGOTE), or exec'd for WHY. */
void cli_tally_line(const pspawn_context_t *ctx, int n, int used_zygote, const char *why,
                    char *line, size_t size);

#endif
