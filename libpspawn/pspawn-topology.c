/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pspawn-topology: the groups of CPUs a fan-out would make here, for the
 * static stand-in shim (hwloc's static library needs libraries a node may
 * not have): pspawn-topology --whole|--bound OPTIONS
 *
 * --whole: every CPU of our cgroup (the shim is bound to one task's CPUs,
 * its step has them all); --bound: only those of our binding.  Prints the
 * groups as libpspawn reads them back (pspawn_topology_read).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"

int main(int argc, char **argv)
{
    struct pspawn_options o;
    char err[256];
    pspawn_options_defaults(&o);
    if (argc != 3 || (strcmp(argv[1], "--whole") != 0 && strcmp(argv[1], "--bound") != 0)) {
        fprintf(stderr, "usage: pspawn-topology --whole|--bound OPTIONS\n");
        return 2;
    }
    if (pspawn_options_parse(&o, argv[2], err, sizeof err) < 0) {
        fprintf(stderr, "pspawn-topology: %s\n", err);
        return 2;
    }
    struct pspawn_topology t;
    if (pspawn_topology_groups(&o, strcmp(argv[1], "--whole") == 0, &t) != 0) {
        fprintf(stderr, "pspawn-topology: %s\n", t.describe);
        return 1;
    }
    pspawn_topology_write(&t, stdout);
    pspawn_topology_free(&t);
    return fflush(stdout) == 0 ? 0 : 1;
}
