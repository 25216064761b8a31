/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * String helpers for the code that runs in a launcher's fork or vfork
 * child, between fork and exec, on every start (intercept.c, gain.c,
 * route.c).  A fork copies no page-table entry of a file's read-only
 * mapping, so each page of libc's text that the child touches is a page
 * fault of its own (about 2-3 µs with the fault-around), paid by every
 * start, routed or not: libc's strncmp, strrchr and strcspn alone were
 * three of them.  These are inlined into our own few pages instead.
 */
#ifndef PSPAWN_NOLIBC_H
#define PSPAWN_NOLIBC_H

#include <stddef.h>

/* Whether S starts with PREFIX. */
static inline int nl_prefix(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return 1;
}

static inline size_t nl_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static inline int nl_equal(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The part of PATH after its last '/'. */
static inline const char *nl_base(const char *path)
{
    const char *base = path;
    for (; *path; path++)
        if (*path == '/')
            base = path + 1;
    return base;
}

/* The length of S's first run without A or B (strcspn of the two). */
static inline size_t nl_span_to(const char *s, char a, char b)
{
    size_t n = 0;
    while (s[n] && s[n] != a && s[n] != b)
        n++;
    return n;
}

/* Whether the N bytes at A and B are the same. */
static inline int nl_same(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static inline void nl_copy(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

#endif
