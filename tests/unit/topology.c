/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topology - how fan-out splits a machine into groups of CPUs, one zygote
 * each, and which group a task goes to (launcher/topology.c, the dispatch
 * of wire/groups.c), on fake topologies of 1, 2, 4 and 8 NUMA nodes
 * (HWLOC_SYNTHETIC), with L3 caches, and on one whose cgroup lets the
 * launcher use 2 of its 4 nodes (HWLOC_XMLFILE, tests/fixtures).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../fixtures/tap.h"

static int isset(const unsigned char *m, int i)
{
    return m[i / 8] >> (i % 8) & 1;
}

static int count(const unsigned char *m)
{
    int n = 0;
    for (int i = 0; i < PSPAWN_CPUSET_BYTES * 8; i++)
        n += isset(m, i);
    return n;
}

static void cpus_of(int lo, int hi, unsigned char *m)
{
    memset(m, 0, PSPAWN_CPUSET_BYTES);
    for (int i = lo; i <= hi; i++)
        m[i / 8] |= (unsigned char)(1u << (i % 8));
}

/* Groups of TOPO (synthetic, or an XML file when it starts with '/') for
 * OPTIONS; bails out if they cannot be made. */
static void groups(const char *topo, const char *options, struct pspawn_topology *t)
{
    struct pspawn_options o;
    char err[256];
    unsetenv("HWLOC_SYNTHETIC");
    unsetenv("HWLOC_XMLFILE");
    setenv(topo[0] == '/' ? "HWLOC_XMLFILE" : "HWLOC_SYNTHETIC", topo, 1);
    pspawn_options_defaults(&o);
    if (pspawn_options_parse(&o, options, err, sizeof err) < 0)
        tap_bail("%s: %s", options, err);
    if (pspawn_topology_groups(&o, 0, t) != 0)
        tap_bail("%s, %s: %s", topo, options, t->describe);
}

/* Every CPU of the topology is in exactly one group, and none is bound
 * (a fake topology is not this machine's). */
static void partition(const struct pspawn_topology *t, int ncpus, const char *what)
{
    int twice = 0, missing = 0;
    for (int c = 0; c < ncpus; c++) {
        int in = 0;
        for (int g = 0; g < t->ngroups; g++)
            in += isset(t->groups[g].cpus, c);
        twice += in > 1;
        missing += in == 0;
    }
    tap_ok(!twice && !missing && !t->thissystem,
           "%s: the groups split the %d CPUs, each in one (%d twice, %d missing), nothing bound",
           what, ncpus, twice, missing);
}

static void numa_domains(int nodes)
{
    struct pspawn_topology t;
    char topo[64], what[96];
    snprintf(topo, sizeof topo, "node:%d core:2 pu:1", nodes);
    snprintf(what, sizeof what, "%d NUMA node%s, fanout=numa", nodes, nodes > 1 ? "s" : "");
    groups(topo, "fanout=numa", &t);
    tap_ok(t.ngroups == nodes, "%s: %d groups (got %d)", what, nodes, t.ngroups);
    partition(&t, 2 * nodes, what);
    int good = 1;
    for (int g = 0; g < t.ngroups; g++) {
        unsigned char want[PSPAWN_CPUSET_BYTES];
        cpus_of(2 * g, 2 * g + 1, want);
        good &= memcmp(want, t.groups[g].cpus, sizeof want) == 0 &&
                t.groups[g].node == (nodes > 1 ? g : -1) &&
                t.groups[g].parent == (g ? 0 : -1);
    }
    tap_ok(good, "%s: group g has node g's CPUs, memory from node g%s, made by the root", what,
           nodes > 1 ? "" : " (none: one node)");

    /* Dispatch by binding: a task bound to CPU c goes to c's group. */
    unsigned turn = 0;
    good = 1;
    for (int c = 0; c < 2 * nodes; c++) {
        unsigned char one[PSPAWN_CPUSET_BYTES];
        cpus_of(c, c, one);
        good &= pspawn_topology_group_of(&t, one, &turn) == c / 2;
    }
    tap_ok(good, "%s: a task bound to one CPU goes to that CPU's group", what);

    /* Unbound (all CPUs): spread evenly. */
    int per[8] = { 0 };
    unsigned char all[PSPAWN_CPUSET_BYTES];
    cpus_of(0, 2 * nodes - 1, all);
    for (int i = 0; i < 8 * nodes; i++)
        per[pspawn_topology_group_of(&t, all, &turn)]++;
    good = 1;
    for (int g = 0; g < nodes; g++)
        good &= per[g] == 8;
    tap_ok(good, "%s: %d unbound tasks spread evenly, 8 per group", what, 8 * nodes);
    pspawn_topology_free(&t);
}

/* A binding over two groups alternates between them; one outside every
 * group goes to any, in turn. */
static void case_binding_over_groups(void)
{
    struct pspawn_topology t;
    groups("node:4 core:2 pu:1", "fanout=numa", &t);
    unsigned char two[PSPAWN_CPUSET_BYTES], none[PSPAWN_CPUSET_BYTES];
    cpus_of(1, 2, two);
    cpus_of(100, 100, none);
    unsigned turn = 0;
    int hits[4] = { 0 }, other = 0;
    for (int i = 0; i < 10; i++)
        hits[pspawn_topology_group_of(&t, two, &turn)]++;
    tap_ok(hits[0] == 5 && hits[1] == 5 && !hits[2] && !hits[3],
           "a task bound to CPUs 1-2 goes to group 0 or 1, in turn (%d, %d, %d, %d)", hits[0],
           hits[1], hits[2], hits[3]);
    memset(hits, 0, sizeof hits);
    for (int i = 0; i < 8; i++)
        hits[pspawn_topology_group_of(&t, none, &turn)]++;
    for (int g = 0; g < 4; g++)
        other += hits[g] == 2;
    tap_ok(other == 4, "a task bound outside every group is spread over all (2 each: %d)", other);
    pspawn_topology_free(&t);
}

/* The cgroup lets the launcher use CPUs 2-5 (nodes 1 and 2) of 4 nodes. */
static void case_cgroup_allows_two_nodes(const char *src)
{
    struct pspawn_topology t;
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/4nodes-2allowed.xml", src);
    groups(xml, "fanout=numa", &t);
    unsigned char g0[PSPAWN_CPUSET_BYTES], g1[PSPAWN_CPUSET_BYTES];
    cpus_of(2, 3, g0);
    cpus_of(4, 5, g1);
    tap_ok(t.ngroups == 2 && !memcmp(t.groups[0].cpus, g0, sizeof g0) &&
           !memcmp(t.groups[1].cpus, g1, sizeof g1) && t.groups[0].node == 1 &&
           t.groups[1].node == 2,
           "a launcher restricted to 2 of 4 NUMA nodes: 2 groups, CPUs 2-3 (node 1) and 4-5 "
           "(node 2) (got %d groups)", t.ngroups);
    pspawn_topology_free(&t);
}

/* auto: groups of a few cores, never across a NUMA node. */
static void case_fanout_auto(void)
{
    struct pspawn_topology t;
    groups("node:2 core:8 pu:1", "fanout=auto", &t);
    int across = 0, small = 1;
    for (int g = 0; g < t.ngroups; g++) {
        int lo = 0, hi = 0;
        for (int c = 0; c < 8; c++)
            lo += isset(t.groups[g].cpus, c);
        for (int c = 8; c < 16; c++)
            hi += isset(t.groups[g].cpus, c);
        across += lo && hi;
        small &= count(t.groups[g].cpus) >= 2 && count(t.groups[g].cpus) <= 3;
    }
    tap_ok(t.ngroups == 6 && !across && small,
           "fanout=auto, 2 nodes of 8 cores: 6 groups of 2-3 cores, none across a node (%d)",
           t.ngroups);
    partition(&t, 16, "fanout=auto, 2 nodes of 8 cores");
    /* The root makes the first group of the other node, which makes the
     * rest of its own. */
    int tree = t.groups[0].parent == -1;
    for (int g = 1; g < t.ngroups; g++) {
        int first_of_node = t.groups[g].node != t.groups[g - 1].node;
        tree &= t.groups[g].parent == (first_of_node || t.groups[g].node == t.groups[0].node
                                       ? 0 : 3);
    }
    tap_ok(tree, "fanout=auto: node 1's first group is made by the root, the rest of node 1 by it");
    pspawn_topology_free(&t);

    groups("node:1 core:3 pu:2", "fanout=auto", &t);
    tap_ok(t.ngroups == 1, "fanout=auto, 3 cores: one zygote (got %d groups)", t.ngroups);
    pspawn_topology_free(&t);
}

/* L3 caches, packages, cores, N cores. */
static void case_fanout_levels(void)
{
    struct pspawn_topology t;
    const char *l3 = "pack:2 l3:2 core:4 pu:2";
    static const struct {
        const char *options;
        int groups, cpus;
    } splits[] = {
        { "fanout=l3", 4, 8 }, { "fanout=package", 2, 16 }, { "fanout=core", 16, 2 },
        { "fanout=2", 8, 4 }, { "fanout=4", 4, 8 }, { "fanout=3", 8, 4 }, { "fanout=none", 1, 32 },
        { "fanout=numa", 1, 32 },
    };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        groups(l3, splits[i].options, &t);
        int good = t.ngroups == splits[i].groups;
        for (int g = 0; good && g < t.ngroups; g++)
            good = count(t.groups[g].cpus) == splits[i].cpus;
        tap_ok(good, "%s on %s: %d groups of %d CPUs (got %d: %s)", splits[i].options, l3,
               splits[i].groups, splits[i].cpus, t.ngroups, t.describe);
        pspawn_topology_free(&t);
    }
}

/* The text the static shim reads back from pspawn-topology. */
static void case_text_round_trip(void)
{
    struct pspawn_topology t;
    groups("node:4 core:2 pu:1", "fanout=numa", &t);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pspawn_topology_write(&t, f);
    fclose(f);
    struct pspawn_topology back;
    int same = pspawn_topology_read(text, &back) == 0 && back.ngroups == t.ngroups &&
               back.thissystem == t.thissystem && !strcmp(back.describe, t.describe);
    for (int g = 0; same && g < t.ngroups; g++)
        same = !memcmp(&back.groups[g], &t.groups[g], sizeof back.groups[g]);
    tap_ok(same, "the groups as text read back the same");
    pspawn_topology_free(&back);
    tap_ok(pspawn_topology_read("groups 2 thissystem 1\ngroup 0 0 1 zz\n", &back) != 0,
           "text that does not parse is refused");
    pspawn_topology_free(&back);
    pspawn_topology_free(&t);
    free(text);
}

int main(void)
{
    const char *src = getenv("TESTS_SRCDIR");
    if (!src)
        tap_bail("TESTS_SRCDIR is not set");

    for (int nodes = 1; nodes <= 8; nodes *= 2)
        numa_domains(nodes);
    case_binding_over_groups();
    case_cgroup_allows_two_nodes(src);
    case_fanout_auto();
    case_fanout_levels();
    case_text_round_trip();
    return tap_done();
}
