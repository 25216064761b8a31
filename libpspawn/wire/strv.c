/* SPDX-License-Identifier: BSD-3-Clause */
/* NULL-terminated string vectors (strv.h). */
#include "config.h"

#include <stdlib.h>

#include "strv.h"

void pspawn_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

char **pspawn_strv_complete(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!v[i]) {
            for (size_t j = 0; j < n; j++)
                free(v[j]);
            free(v);
            return NULL;
        }
    return v;
}
