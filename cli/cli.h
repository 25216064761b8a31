/* SPDX-License-Identifier: BSD-3-Clause */
/* The pspawn command: what its command line asked for (args.c). */
#ifndef PSPAWN_CLI_H
#define PSPAWN_CLI_H

#include <stdio.h>

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

#endif
