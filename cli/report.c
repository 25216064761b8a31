/* SPDX-License-Identifier: BSD-3-Clause */
/* What `pspawn -v` says about a launch: its zygotes, and the node's line
 * that every front door prints the same way (tally.h). */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "tally.h"

void cli_print_zygotes(const pspawn_context_t *ctx)
{
    pspawn_zygote_info_t z[64];
    size_t n = pspawn_context_zygotes(ctx, z, 64);
    if (pspawn_context_topology(ctx))
        fprintf(stderr, "%s: %s\n", progname, pspawn_context_topology(ctx));
    for (size_t i = 0; i < n && i < 64; i++) {
        char cpus[256] = "";
        size_t k = 0;
        for (int c = 0; c < CPU_SETSIZE && k + 16 < sizeof cpus; c++)
            if (CPU_ISSET(c, &z[i].cpus))
                k += (size_t)snprintf(cpus + k, sizeof cpus - k, "%s%d", k ? "," : "", c);
        fprintf(stderr, "%s:   %s %d: pid %ld, CPUs %s, node %d, %lu tasks (%s)\n", progname,
                i ? "sub-zygote" : "zygote", z[i].group, (long)z[i].pid, cpus, z[i].node,
                z[i].tasks, z[i].state);
    }
    if (n > 64)
        fprintf(stderr, "%s:   (%zu more)\n", progname, n - 64);
}

void cli_tally_line(const pspawn_context_t *ctx, int n, int used_zygote, const char *why,
                    char *line, size_t size)
{
    struct pspawn_tally t;
    pspawn_tally_init(&t, n > 0 ? (unsigned)n : 0);
    pspawn_zygote_info_t root;
    long long start = used_zygote && pspawn_context_zygotes(ctx, &root, 1) >= 1
                          ? pspawn_proc_start_ms(root.pid) : 0;
    /* The context serves all its tasks from its zygote, or execs them
     * all (the reason says why). */
    for (int i = 0; used_zygote && i < n; i++)
        pspawn_tally_forked(&t, PSPAWN_ZYGOTE_NEW, start);
    if (!used_zygote)
        pspawn_tally_exec(&t, t.tasks, why);
    char node[256] = "-";
    if (gethostname(node, sizeof node) < 0)
        snprintf(node, sizeof node, "-");
    node[sizeof node - 1] = '\0';
    pspawn_tally_format(&t, node, NULL, line, size);
}
