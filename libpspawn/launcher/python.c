/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The warm Python zygote, launcher side: the command line and start-up
 * environment the zygote is exec'd with, and which tasks it may serve.
 * Whether the program is a Python interpreter at all, the zygote finds out
 * (its ready message says so): a program that is not ignores all this.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "python.h"

static char **copy_argv(char *const argv[], int n)
{
    char **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; v && i < n; i++)
        if (!(v[i] = strdup(argv[i]))) {
            pspawn_strv_free(v);
            return NULL;
        }
    return v;
}

int pspawn_python_start(const struct pspawn_options *o, const struct program *prog,
                        char *const argv[], struct python_start *ps)
{
    memset(ps, 0, sizeof *ps);
    if (!o->python)
        return 0;
    /* A #! script's interpreter line, as binfmt_script runs it. */
    char *own[2 * PSPAWN_MAX_INTERP + 2];
    char *path_only[] = { prog->path, NULL };
    char *const *cmd = argv && argv[0] ? argv : path_only;
    if (prog->ninterp) {
        int k = 0;
        for (int j = 0; j < prog->ninterp && j < 2 * PSPAWN_MAX_INTERP; j++)
            own[k++] = prog->interp_argv[j];
        own[k++] = prog->path;
        own[k] = NULL;
        cmd = own;
    }
    int end;
    int kind = pspawn_python_split(cmd, &end);
    const char *first = kind == PSPAWN_PY_SCRIPT ? cmd[end]
                        : kind == PSPAWN_PY_COMMAND ? "-c"
                        : kind == PSPAWN_PY_MODULE ? "-m" : "";
    /* asprintf leaves its pointer undefined when it fails */
    if (!(ps->argv = copy_argv(cmd, end)) ||
        (asprintf(&ps->first_var, PSPAWN_ENV_PYTHON "=%s", first) < 0 && !(ps->first_var = NULL)) ||
        (o->modules[0] && asprintf(&ps->modules_var, PSPAWN_ENV_MODULES "=%s", o->modules) < 0 &&
         !(ps->modules_var = NULL))) {
        pspawn_python_start_free(ps);
        return ENOMEM;
    }
    return 0;
}

char *const *pspawn_python_exec_argv(const struct program *prog, const struct python_start *ps,
                                     char *first_only[2])
{
    /* For a #! script the kernel puts the interpreter and its options
     * from the script's first line in front: only argv[0] is ours. */
    if (!ps->argv || !prog->ninterp)
        return ps->argv;
    first_only[0] = ps->argv[0];
    first_only[1] = NULL;
    return first_only;
}

void pspawn_python_start_free(struct python_start *ps)
{
    pspawn_strv_free(ps->argv);
    free(ps->first_var);
    free(ps->modules_var);
    memset(ps, 0, sizeof *ps);
}

int pspawn_python_prepare(struct pspawn_zygote *z, char *const argv[], char *const envp[])
{
    if (!z->opts.python)
        return 0;
    int err = pspawn_python_start(&z->opts, &z->prog, argv, &z->py_start);
    if (!err && !(z->py_env = pspawn_env_subset(envp ? envp : environ, pspawn_python_startup_var)))
        err = ENOMEM;
    return err;
}

void pspawn_python_free(struct pspawn_zygote *z)
{
    pspawn_python_start_free(&z->py_start);
    pspawn_strv_free(z->py_env);
    z->py_env = NULL;
}

const char *pspawn_python_argv_refusal(const struct pspawn_zygote *z, char *const argv[])
{
    int end;
    int kind = pspawn_python_split(argv, &end);
    if (kind == PSPAWN_PY_STDIN)
        return "it reads its program from standard input";
    if (kind == PSPAWN_PY_OTHER)
        return "its interpreter options ask for no program (-i, -h, -V) or are unknown";
    int mine = 0;
    while (z->py_start.argv[mine])
        mine++;
    int same = end == mine;
    for (int i = 1; same && i < end; i++)
        same = strcmp(argv[i], z->py_start.argv[i]) == 0;
    return same ? NULL : "its interpreter options differ from the warm interpreter's (they are "
                         "fixed at start)";
}

const char *pspawn_python_env_differs(const struct pspawn_zygote *z, char *const envp[],
                                      size_t *namelen)
{
    return pspawn_env_subset_differs(z->py_env, envp, pspawn_python_startup_var, namelen);
}
