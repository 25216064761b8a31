/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * forkcost - what fork and exit alone cost for a process with many
 * libraries loaded: the floor under any zygote-based launcher.
 *
 *   forkcost 'GLOB' [--merge-ro | --cow PAGES]
 *
 * dlopens every file GLOB matches (RTLD_NOW | RTLD_GLOBAL, as a zygote
 * holds them), then times 200 times fork() alone, and 200 times fork()
 * plus the child's _exit(0) and the parent's waitpid(), nothing run.
 * With --merge-ro it then makes every read-only private mapping of those
 * files executable (r--p -> r-xp), so that each library's adjacent
 * read-only and text mappings merge, and times it again: an experiment
 * (it changes /proc/self/maps and makes read-only data executable), not
 * something libpspawn does.  With --cow PAGES it times fork + _exit +
 * waitpid again with the child first writing one byte to each of PAGES
 * pages that the parent has written (so each write is a copy-on-write
 * fault), and prints the difference per page: what one copy-on-write
 * fault costs here, which a task of the zygote pays for every page of
 * library data and loader state it writes (bench/faults.py counts them).
 * PAGES must be large enough (hundreds) for the copies to outweigh the
 * noise of fork and exit themselves.
 * Built by `make` (noinst); for example
 *
 *   _build/bench/bench/forkcost "_build/bench/work/libs-500/lib/lib*.so"
 */
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 200 };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n++;
    if (f)
        fclose(f);
    return n;
}

/* ms per fork() call, and per fork + _exit + waitpid (returned); the
 * child first writes one byte to each of the NCOW pages at COW. */
static double measure(const char *what, volatile char *cow, long ncow)
{
    double in_fork = 0, t0 = now_ms();
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < ROUNDS; i++) {
        double a = now_ms();
        pid_t p = fork();
        if (p == 0) {
            for (long k = 0; k < ncow; k++)
                cow[k * page] = 2;
            _exit(0);
        }
        in_fork += now_ms() - a;
        waitpid(p, NULL, 0);
    }
    double total = now_ms() - t0;
    printf("%-28s %5d mappings: fork() %.3f ms, fork + _exit + waitpid %.3f ms\n", what,
           count_maps(), in_fork / ROUNDS, total / ROUNDS);
    return total / ROUNDS;
}

/* What one copy-on-write fault costs: fork + _exit + waitpid with and
 * without the child writing to NPAGES shared pages, three pairs. */
static int cow_cost(long npages)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)(npages * page), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("forkcost: mmap");
        return 1;
    }
    memset(m, 1, (size_t)(npages * page));
    char what[64];
    snprintf(what, sizeof what, "child writes %ld pages:", npages);
    for (int pair = 0; pair < 3; pair++) {
        double plain = measure("child writes nothing:", m, 0);
        double cow = measure(what, m, npages);
        printf("  one copy-on-write fault: %.2f us\n", (cow - plain) * 1e3 / (double)npages);
    }
    munmap(m, (size_t)(npages * page));
    return 0;
}

static int merge_read_only(glob_t *g)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int changed = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perm[8], path[4096] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &start, &end, perm, path) < 3 ||
            strcmp(perm, "r--p") != 0)
            continue;
        for (size_t i = 0; i < g->gl_pathc; i++) {
            char real[4096];
            if (realpath(g->gl_pathv[i], real) && strcmp(real, path) == 0) {
                changed += mprotect((void *)start, end - start, PROT_READ | PROT_EXEC) == 0;
                break;
            }
        }
    }
    if (f)
        fclose(f);
    return changed;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: forkcost 'GLOB' [--merge-ro | --cow PAGES]\n");
        return 2;
    }
    long ncow = 0;
    int merge = argc > 2 && strcmp(argv[2], "--merge-ro") == 0;
    if (argc > 2 && strcmp(argv[2], "--cow") == 0) {
        ncow = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
        if (ncow <= 0) {
            fprintf(stderr, "forkcost: --cow wants a number of pages, not '%s'\n",
                    argc > 3 ? argv[3] : "");
            return 2;
        }
    } else if (argc > 2 && !merge) {
        fprintf(stderr, "forkcost: unknown option %s\n", argv[2]);
        return 2;
    }
    glob_t g;
    if (glob(argv[1], 0, NULL, &g) != 0) {
        fprintf(stderr, "forkcost: nothing matches %s\n", argv[1]);
        return 1;
    }
    size_t loaded = 0;
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL))
            loaded++;
        else
            fprintf(stderr, "forkcost: %s\n", dlerror());
    printf("%zu of %zu libraries loaded\n", loaded, g.gl_pathc);
    int rc = 0;
    measure("as loaded:", NULL, 0);
    if (merge) {
        printf("%d read-only mappings made r-x\n", merge_read_only(&g));
        measure("read-only mappings merged:", NULL, 0);
    } else if (ncow > 0) {
        rc = cow_cost(ncow);
    }
    globfree(&g);
    return rc;
}
