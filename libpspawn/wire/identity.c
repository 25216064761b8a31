/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "identity.h"
#include "loaderenv.h"
#include "python.h"

/* One entry's hash, for a sum that does not depend on ENV's order. */
static uint64_t entry_hash(const char *kv)
{
    uint64_t h = PSPAWN_HASH_INIT;
    pspawn_hash(&h, kv, strlen(kv) + 1);
    return h;
}

int pspawn_python_program(const char *path)
{
    const char *slash = strrchr(path, '/');
    return strncmp(slash ? slash + 1 : path, "python", 6) == 0;
}

uint64_t pspawn_program_identity(uid_t uid, const char *path, const struct stat *st,
                                 char *const argv[], char *const env[], const char *options)
{
    uint64_t h = PSPAWN_HASH_INIT;
    pspawn_hash(&h, &uid, sizeof uid);
    pspawn_hash(&h, path, strlen(path) + 1);
    pspawn_hash(&h, &st->st_dev, sizeof st->st_dev);
    pspawn_hash(&h, &st->st_ino, sizeof st->st_ino);
    pspawn_hash(&h, &st->st_mtim, sizeof st->st_mtim);
    pspawn_hash(&h, &st->st_ctim, sizeof st->st_ctim);   /* a write that kept the mtime (cp -p) */
    pspawn_hash(&h, options ? options : "", options ? strlen(options) + 1 : 1);
    int python = pspawn_python_program(path);
    if (python && argv && argv[0] && argv[1])
        pspawn_hash(&h, argv[1], strlen(argv[1]) + 1);     /* the script it warms */
    uint64_t vars = 0;
    const char *ctor_vars = getenv(PSPAWN_ENV_CTOR_VARS);
    for (size_t i = 0; env && env[i]; i++)
        if (pspawn_loader_var_listed(env[i], ctor_vars) ||
            (python && (pspawn_python_startup_var(env[i]) ||
                        strncmp(env[i], "PSPAWN_PRELOAD_MODULES=", 23) == 0)))
            vars += entry_hash(env[i]);
    pspawn_hash(&h, &vars, sizeof vars);
    return h;
}
