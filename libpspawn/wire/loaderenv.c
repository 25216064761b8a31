/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <string.h>

#include "loaderenv.h"

int pspawn_loader_var(const char *kv)
{
    if (strncmp(kv, "LD_", 3) == 0)
        return strncmp(kv, "LD_BIND_NOW=", 12) != 0;   /* the zygote binds anyway */
    return strncmp(kv, "GLIBC_TUNABLES=", 15) == 0 || strncmp(kv, "MALLOC_", 7) == 0;
}
