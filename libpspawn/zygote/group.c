/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A zygote becoming its group's (fan-out, fanout.c): bound to the group's
 * CPUs, its memory preferred on the group's NUMA node, and the pages only
 * it maps moved there, once at once and, for a forked sub-zygote, once
 * more before its first task (zygote_settle_pages, from zygote_clone).
 */
#include "config.h"

#include <errno.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zygote.h"

int zygote_any_cpu(const unsigned char *cpus)
{
    for (size_t i = 0; i < PSPAWN_CPUSET_BYTES; i++)
        if (cpus[i])
            return 1;
    return 0;
}

/* Move the pages only we map in private mappings to NODE: written ones,
 * and the relocated copies that RELRO has made read-only since.  Those
 * still shared copy-on-write with our maker stay where they are (moving
 * them needs MPOL_MF_MOVE_ALL, and would take them from our siblings).
 * Returns how many moved. */
static long move_private_pages(int node)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    long page = sysconf(_SC_PAGESIZE), moved = 0, looked = 0;
    enum { BATCH = 1024 };
    void **pages = malloc(BATCH * sizeof *pages);
    int *nodes = malloc(BATCH * sizeof *nodes), *status = malloc(BATCH * sizeof *status);
    char line[512];
    int n = 0;
    while (pages && nodes && status && fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perm) != 3 || perm[3] != 'p')
            continue;
        for (unsigned long a = start; a < end && looked < (1L << 20); a += (unsigned long)page) {
            pages[n] = (void *)a;
            nodes[n] = node;
            looked++;
            if (++n < BATCH && !(a + (unsigned long)page >= end))
                continue;
            /* A page busy at that moment (under load) is tried once more. */
            for (int tries = 0; n > 0 && tries < 2; tries++) {
                if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, nodes, status,
                            MPOL_MF_MOVE) < 0)
                    break;
                int busy = 0;
                for (int i = 0; i < n; i++) {
                    moved += status[i] == node;
                    if (status[i] == -EBUSY || status[i] == -EAGAIN)
                        pages[busy++] = pages[i];
                }
                n = busy;
            }
            n = 0;
        }
    }
    fclose(f);
    free(pages);
    free(nodes);
    free(status);
    return moved;
}

/* A forked sub-zygote's node, until it has moved its pages a second time
 * (zygote_settle_pages); -1 after, and in every other zygote. */
static int settle_node = -1;
static int making_children;

/* A forked sub-zygote shares its maker's pages copy-on-write.  Each one
 * the maker writes after the fork (while it makes our siblings, or serves
 * its first requests) becomes ours alone, but stays on the maker's node:
 * zygote_become_group, right after the fork, could not move it yet.  So
 * before the first task we make, when the maker has done most of that,
 * we move what is ours alone once more.  (Pages the maker splits off
 * later stay where they are, as those still shared with it do.) */
void zygote_settle_pages_later(int node)
{
    if (node >= 0 && node < PSPAWN_NODEMASK_BYTES * 8)
        settle_node = node;
}

void zygote_making_subs(int on)
{
    making_children = on;
}

void zygote_settle_pages(void)
{
    if (settle_node < 0 || making_children)
        return;
    move_private_pages(settle_node);
    settle_node = -1;
}

void zygote_become_group(const struct wire_group *g)
{
    parked.group = g->index;
    if (zygote_any_cpu(g->cpus) &&
        sched_setaffinity(0, PSPAWN_CPUSET_BYTES, (const cpu_set_t *)g->cpus) == 0)
        memcpy(parked.cpuset, g->cpus, sizeof parked.cpuset);
    if (g->node < 0 || g->node >= PSPAWN_NODEMASK_BYTES * 8)
        return;
    unsigned long mask[PSPAWN_NODEMASK_BYTES / sizeof(unsigned long)] = { 0 };
    mask[g->node / (8 * sizeof mask[0])] |= 1UL << (g->node % (8 * sizeof mask[0]));
    /* Preferred, not bound: a full node must not fail the zygote.  (The
     * kernel reads one bit less than it is told.) */
    if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask,
                (unsigned long)PSPAWN_NODEMASK_BYTES * 8 + 1) == 0) {
        parked.mempolicy = MPOL_PREFERRED;
        memcpy(parked.nodemask, mask, sizeof parked.nodemask);
        parked.have_mempolicy = 1;
    }
    move_private_pages(g->node);
}
