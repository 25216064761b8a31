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

int pspawn_loader_var_listed(const char *kv, const char *ctor_vars)
{
    if (strncmp(kv, "LD_", 3) == 0)
        return strncmp(kv, "LD_BIND_NOW=", 12) != 0;   /* the zygote binds anyway */
    if (strncmp(kv, "GLIBC_TUNABLES=", 15) == 0 || strncmp(kv, "MALLOC_", 7) == 0)
        return 1;
    /* coreutils' libstdbuf.so (stdbuf, LD_PRELOADed) sets the standard
     * streams' buffering in its constructor from these */
    if (strncmp(kv, "_STDBUF_", 8) == 0)
        return 1;
    /* what the user says other constructors read, and the list itself */
    if (strncmp(kv, PSPAWN_ENV_CTOR_VARS "=", sizeof PSPAWN_ENV_CTOR_VARS) == 0)
        return 1;
    return ctor_vars && *ctor_vars && listed(kv, ctor_vars);
}

int pspawn_loader_var(const char *kv)
{
    return pspawn_loader_var_listed(kv, getenv(PSPAWN_ENV_CTOR_VARS));
}
