/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overheadbench: what keeping zygotes costs a node.  For each program given
 * (-p, in order), a context with OPTIONS is made and TASKS tasks of it are
 * run to their end (so that fan-out's sub-zygotes exist and have served);
 * then every zygote of every context is measured as it waits for more:
 * its resident, proportional (PSS) and unique (USS: private clean+dirty)
 * memory from /proc/PID/smaps_rollup and its page tables (VmPTE), summed;
 * and, with -i S, the CPU time (utime+stime) the zygotes spend in S
 * seconds of waiting.  Prints one CSV line:
 *
 *   zygotes,rss_kb,pss_kb,uss_kb,pte_kb,idle_s,idle_cpu_ms
 *
 *   overheadbench [-o OPTIONS] [-t TASKS] [-i SECONDS] -p PROG [-a ARG]... [-p PROG ...]
 *
 * -a adds an argument to the last -p's command line (a Python zygote
 * reads its script's from it).  bench/overhead runs the cases of
 * bench/README.md's table.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "pspawn.h"

#define MAX_PROGS 8
#define MAX_ARGS 16

extern char **environ;

struct prog {
    char *argv[MAX_ARGS + 1];
    int argc;
    pspawn_context_t ctx;
};

/* Field NAME (kB) of a /proc file's "Name:   N kB" lines, or -1. */
static long field_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* utime + stime of PID, in clock ticks, or -1 (wire/procfs.c reads it). */
static long long cpu_ticks(pid_t pid)
{
    unsigned long long t[2];
    return pspawn_proc_stat(pid, 14, 15, t) < 0 ? -1 : (long long)(t[0] + t[1]);
}

static void usage(void)
{
    fprintf(stderr, "usage: overheadbench [-o OPTIONS] [-t TASKS] [-i SECONDS] -p PROG [-a ARG]... "
                    "[-p PROG [-a ARG]...]...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct prog progs[MAX_PROGS];
    int nprogs = 0, tasks = 4, idle_s = 0, opt;
    const char *options = "";
    while ((opt = getopt(argc, argv, "o:t:i:p:a:")) != -1) {
        switch (opt) {
        case 'o': options = optarg; break;
        case 't': tasks = atoi(optarg); break;
        case 'i': idle_s = atoi(optarg); break;
        case 'p':
            if (nprogs == MAX_PROGS)
                usage();
            memset(&progs[nprogs], 0, sizeof progs[nprogs]);
            progs[nprogs].argv[0] = optarg;
            progs[nprogs].argc = 1;
            nprogs++;
            break;
        case 'a':
            if (nprogs == 0 || progs[nprogs - 1].argc == MAX_ARGS)
                usage();
            progs[nprogs - 1].argv[progs[nprogs - 1].argc++] = optarg;
            break;
        default: usage();
        }
    }
    if (nprogs == 0 || tasks < 1 || idle_s < 0)
        usage();

    pid_t zpids[256];
    size_t nz = 0;
    for (int i = 0; i < nprogs; i++) {
        struct prog *p = &progs[i];
        int err = pspawn_context_create_argv(&p->ctx, p->argv[0], p->argv, environ, options);
        if (err) {
            fprintf(stderr, "overheadbench: %s: %s\n", p->argv[0], strerror(err));
            return 1;
        }
        pid_t *pids = calloc((size_t)tasks, sizeof *pids);
        if (!pids || (err = pspawn_n(pids, &p->ctx, (size_t)tasks, p->argv)) != 0) {
            fprintf(stderr, "overheadbench: %s: tasks: %s\n", p->argv[0], strerror(err ? err : ENOMEM));
            return 1;
        }
        for (int t = 0; t < tasks; t++) {
            int st;
            if (pids[t] > 0 && waitpid(pids[t], &st, 0) == pids[t] &&
                !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
                fprintf(stderr, "overheadbench: %s: a task ended with status 0x%x\n", p->argv[0], st);
        }
        free(pids);
        if (!pspawn_context_uses_zygote(&p->ctx)) {
            fprintf(stderr, "overheadbench: %s: exec'd, not forked: %s\n", p->argv[0],
                    pspawn_context_reason(&p->ctx) ? pspawn_context_reason(&p->ctx) : "?");
            return 1;
        }
        pspawn_zygote_info_t info[64];
        size_t n = pspawn_context_zygotes(&p->ctx, info, 64);
        for (size_t k = 0; k < n && k < 64 && nz < 256; k++)
            if (info[k].pid > 0)
                zpids[nz++] = info[k].pid;
    }
    /* A moment for the zygotes to settle back into their wait. */
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    long rss = 0, pss = 0, uss = 0, pte = 0;
    long long cpu0 = 0;
    for (size_t k = 0; k < nz; k++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)zpids[k]);
        rss += field_kb(path, "Rss");
        pss += field_kb(path, "Pss");
        uss += field_kb(path, "Private_Clean") + field_kb(path, "Private_Dirty");
        snprintf(path, sizeof path, "/proc/%d/status", (int)zpids[k]);
        pte += field_kb(path, "VmPTE");
        cpu0 += cpu_ticks(zpids[k]);
    }
    double idle_cpu_ms = 0;
    if (idle_s > 0) {
        sleep((unsigned)idle_s);
        long long cpu1 = 0;
        for (size_t k = 0; k < nz; k++)
            cpu1 += cpu_ticks(zpids[k]);
        idle_cpu_ms = (double)(cpu1 - cpu0) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
    }
    printf("%zu,%ld,%ld,%ld,%ld,%d,%.0f\n", nz, rss, pss, uss, pte, idle_s, idle_cpu_ms);
    for (int i = 0; i < nprogs; i++)
        pspawn_context_destroy(&progs[i].ctx);
    return 0;
}
