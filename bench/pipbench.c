/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipbench - the Process-in-Process benchmark (bench/pip runs it; what it
 * measures: bench/README.md, "Process-in-Process").  PiP tasks (pspawn
 * mode=pip) against pthreads and processes, side by side in one run:
 *
 *   pt     page tables (VmPTE) while N tasks have touched one shared segment
 *   ctxsw  two tasks on CPU 0 handing a futex back and forth, a memcpy at
 *          each turn: round trip, switch overhead, switch counters
 *   spawn  15 tasks created, then waited for, on CPU 0, against fork&exec,
 *          vfork&exec, posix_spawn and pspawn
 *
 *   pipbench [--quick] [-r R] [-k K] [--max-n N] [--only pt,ctxsw,spawn]
 *            [--iters I] [--bytes B] [--seg-mb M] [--task PATH] [--csv FILE]
 *
 * The tasks are bench/pip-task.  Every figure printed is measured in this
 * run; CSV lines (measurement,variant,n,metric,value,unit) go to FILE.
 *
 * The groups of tasks are pipbench-groups.c's, the measurements
 * pipbench-measures.c's.
 */
#include "pipbench.h"

#ifndef PIP_TASK_PATH
#error "build with -DPIP_TASK_PATH='\"<builddir>/bench/pip-task\"'"
#endif

const char *vname[NV] = {"PiP", "pthreads", "processes"};

const char *task = PIP_TASK_PATH;
static FILE *csv;
char pip_off[512];
char paths[3][64];

void csv_row(const char *m, const char *v, int n, const char *metric, double val,
             const char *unit)
{
    if (csv)
        fprintf(csv, "%s,%s,%d,%s,%.6g,%s\n", m, v, n, metric, val, unit);
}

static void cleanup(void)
{
    for (int i = 0; i < 3; i++)
        if (paths[i][0])
            unlink(paths[i]);
}

void die(const char *what, const char *arg)
{
    fprintf(stderr, "pipbench: %s %s\n", what, arg);
    exit(1);
}

/* Whether mode=pip makes PiP tasks: two that map a page, each checked to
 * be in its root's address space; pip_off says why not. */
static void pip_probe(void)
{
    struct pipctl *c = make_shared(2, "probe", PIP_PAGE);
    char addr[32], size[32];
    snprintf(addr, sizeof addr, "%#llx", CTL_ADDR);
    snprintf(size, sizeof size, "%u", PIP_PAGE);
    char *one[] = {"pip-task", "pt", paths[2], addr, size, NULL};
    struct group g;
    if (group_ready(&g, c, V_PIP, 2, one, NULL, "probe"))
        ;
    else if (group_end(&g, c, 0))
        report_fail("probe", &g);
    else
        printf("PiP: mode=pip makes tasks in the root's address space (kcmp KCMP_VM)\n");
    munmap(c, PIP_PAGE);
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: pipbench [--quick] [-r R] [-k K] [--max-n N] [--only pt,ctxsw,spawn]\n"
               "                [--iters I] [--bytes B] [--seg-mb M] [--task PATH] [--csv FILE]\n");
    return rc;
}

int main(int argc, char **argv)
{
    long rounds = 20, krounds = 21, maxn = MAXN, iters = 1000, bytes = 32768, seg_mb = 128;
    int quick = 0;
    const char *only = "pt,ctxsw,spawn", *csv_path = NULL;
    struct { const char *opt; long *num; const char **str; } opts[] = {
        {"-r", &rounds, NULL}, {"-k", &krounds, NULL}, {"--max-n", &maxn, NULL},
        {"--iters", &iters, NULL}, {"--bytes", &bytes, NULL}, {"--seg-mb", &seg_mb, NULL},
        {"--only", NULL, &only}, {"--task", NULL, &task}, {"--csv", NULL, &csv_path}};
    for (int i = 1; i < argc; i++) {
        int k = 0, nk = (int)(sizeof opts / sizeof opts[0]);
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
            continue;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout, 0);
        while (k < nk && strcmp(argv[i], opts[k].opt))
            k++;
        if (k == nk || i + 1 == argc)
            return usage(stderr, 2);
        if (opts[k].num)
            *opts[k].num = atol(argv[++i]);
        else
            *opts[k].str = argv[++i];
    }
    if (quick && rounds == 20)
        rounds = 5;
    if (quick && krounds == 21)
        krounds = 5;
    if (rounds < 1 || krounds < 1 || rounds > MAXR || krounds > MAXR || maxn < 1 ||
        maxn > MAXN || iters < 1 || bytes < 1 || seg_mb < 1)
        return usage(stderr, 2);
    if (access(task, X_OK))
        die("no task program", task);
    if (csv_path && !(csv = fopen(csv_path, "w")))
        die("cannot write", csv_path);
    if (csv)
        fprintf(csv, "measurement,variant,n,metric,value,unit\n");
    atexit(cleanup);
    setvbuf(stdout, NULL, _IOLBF, 0);

    char msg[256];
    printf("tasks: %s\n", task);
    if (pspawn_options_check("mode=pip", msg, sizeof msg)) {
        snprintf(pip_off, sizeof pip_off, "this libpspawn has no mode=pip: %s", msg);
        printf("PiP: not available (%s)\n", pip_off);
    } else
        pip_probe();
    if (strstr(only, "pt")) {
        int ns[MAXN], nns = 0;
        for (int n = 1; n <= maxn; n++)
            if (!quick || n == 1 || n == 2 || n == 4 || n == 8 || n == maxn)
                ns[nns++] = n;
        measure_pt(ns, nns, (size_t)seg_mb << 20);
    }
    if (strstr(only, "ctxsw"))
        measure_ctxsw((int)krounds, iters, bytes);
    if (strstr(only, "spawn"))
        measure_spawn((int)rounds, MAXN);
    if (pip_off[0])
        printf("\nPiP: not available (%s)\n", pip_off);
    if (csv)
        fclose(csv);
    return 0;
}

