/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <string.h>

#include "python.h"

/* CPython's short options (Python/getopt.c): those taking an argument,
 * and those that are plain flags. */
static const char takes_arg[] = "WX";
static const char flags[] = "bBdEIOPqsStuvx";

int pspawn_python_split(char *const argv[], int *opts_end)
{
    int i = argv && argv[0] ? 1 : 0;
    for (; argv && argv[i]; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == 0) {
            *opts_end = i;
            return a[0] == '-' ? PSPAWN_PY_STDIN : PSPAWN_PY_SCRIPT;
        }
        if (strcmp(a, "--") == 0) {
            *opts_end = i + 1;
            return argv[i + 1] && strcmp(argv[i + 1], "-") != 0 ? PSPAWN_PY_SCRIPT
                                                                 : PSPAWN_PY_STDIN;
        }
        if (a[1] == '-') {
            /* The one long option that is not help or version. */
            if (strcmp(a, "--check-hash-based-pycs") == 0 && argv[i + 1]) {
                i++;
                continue;
            }
            *opts_end = i;
            return PSPAWN_PY_OTHER;
        }
        if ((a[1] == 'c' || a[1] == 'm')) {
            *opts_end = i;
            /* "-cCMD" and "-c CMD" alike; "-c" with nothing is an error */
            if (!a[2] && !argv[i + 1])
                return PSPAWN_PY_OTHER;
            return a[1] == 'c' ? PSPAWN_PY_COMMAND : PSPAWN_PY_MODULE;
        }
        for (int j = 1; a[j]; j++) {
            if (strchr(takes_arg, a[j])) {
                if (!a[j + 1] && !argv[++i]) {
                    *opts_end = i - 1;
                    return PSPAWN_PY_OTHER;
                }
                break;
            }
            if (!strchr(flags, a[j])) {
                /* -i, -h, -V, -?, -c or -m after flags in one word,
                 * or an option this table does not know */
                *opts_end = i;
                return PSPAWN_PY_OTHER;
            }
        }
    }
    *opts_end = i;
    return PSPAWN_PY_STDIN;
}

int pspawn_python_startup_var(const char *kv)
{
    return strncmp(kv, "PYTHON", 6) == 0 || strncmp(kv, "LANG=", 5) == 0 ||
           strncmp(kv, "LC_", 3) == 0 || strncmp(kv, "HOME=", 5) == 0;
}
