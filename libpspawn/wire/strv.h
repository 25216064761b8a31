/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NULL-terminated string vectors (argv, environ) built by strdup: shared by
 * the launcher's environments and the zygote's sub-zygote environments.
 */
#ifndef PSPAWN_STRV_H
#define PSPAWN_STRV_H

#include <stddef.h>

/* Free V's strings and V itself; NULL is fine. */
void pspawn_strv_free(char **v);

/* V when its first N entries are all set (an strdup or asprintf of each
 * succeeded), else NULL with V and what it holds freed. */
char **pspawn_strv_complete(char **v, size_t n);

#endif
