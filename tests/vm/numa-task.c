/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * numa-task - a task that says where its memory comes from: it allocates
 * and touches 8 MB, asks the kernel on which NUMA node each page is
 * (libnuma: numa_move_pages with no target), and prints
 *
 *   RANK cpu C cpunode N memnode M policy P
 *
 * (M: the node most of its pages are on; P: its memory policy mode).
 * Launched by tests/vm/numa-vm inside the NUMA guest.
 */
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    enum { PAGES = 2048 };
    long page = sysconf(_SC_PAGESIZE);
    char *mem = malloc((size_t)PAGES * (size_t)page);
    void *pages[PAGES];
    int status[PAGES], count[64] = { 0 };
    if (!mem || numa_available() < 0)
        return 2;
    memset(mem, 1, (size_t)PAGES * (size_t)page);
    for (int i = 0; i < PAGES; i++)
        pages[i] = mem + (size_t)i * (size_t)page;
    if (numa_move_pages(0, PAGES, pages, NULL, status, 0) < 0)
        return 3;
    int best = -1;
    for (int i = 0; i < PAGES; i++)
        if (status[i] >= 0 && status[i] < 64 && ++count[status[i]] > (best < 0 ? 0 : count[best]))
            best = status[i];
    int cpu = sched_getcpu(), mode = -1;
    get_mempolicy(&mode, NULL, 0, NULL, 0);
    const char *rank = getenv("PSPAWN_RANK");
    printf("%s cpu %d cpunode %d memnode %d policy %d\n", rank ? rank : "-", cpu,
           numa_node_of_cpu(cpu), best, mode);
    return 0;
}
