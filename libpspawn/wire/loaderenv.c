/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "loaderenv.h"

/* Whether "K=V" is named by LIST: NAME[:NAME...], where a NAME that ends
 * in '*' is a prefix. */
static int listed(const char *kv, const char *list)
{
    size_t klen = strcspn(kv, "=");
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ":");
        int prefix = n && p[n - 1] == '*';
        if (prefix ? strncmp(kv, p, n - 1) == 0 : n && n == klen && strncmp(kv, p, n) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* strncmp(S, PREFIX, strlen(PREFIX)) == 0, inlined: the interception
 * library calls this between fork and exec, where each page of libc's
 * text touched costs a fault (libpspawn/intercept/nolibc.h). */
static inline int has_prefix(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return 1;
}

int pspawn_loader_var_listed(const char *kv, const char *ctor_vars)
{
    if (has_prefix(kv, "LD_"))
        return 1;
    if (has_prefix(kv, "GLIBC_TUNABLES=") || has_prefix(kv, "MALLOC_"))
        return 1;
    /* coreutils' libstdbuf.so (stdbuf, LD_PRELOADed) sets the standard
     * streams' buffering in its constructor from these */
    if (has_prefix(kv, "_STDBUF_"))
        return 1;
    /* what the user says other constructors read, and the list itself */
    if (has_prefix(kv, PSPAWN_ENV_CTOR_VARS "="))
        return 1;
    return ctor_vars && *ctor_vars && listed(kv, ctor_vars);
}

int pspawn_loader_var(const char *kv)
{
    return pspawn_loader_var_listed(kv, getenv(PSPAWN_ENV_CTOR_VARS));
}
