/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * median.h - the median of a benchmark's repeats (header only), for
 * spawnbench and sessionbench.
 */
#ifndef BENCH_MEDIAN_H
#define BENCH_MEDIAN_H

#include <stdlib.h>

static int median_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of V[0..N) (N > 0), which it sorts. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, median_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
