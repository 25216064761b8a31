/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a Python interpreter's command line and environment fix at start:
 * the launcher compares a task's with its warm zygote's (a task that
 * differs is exec'd), and starts the zygote with the same options.
 */
#ifndef PSPAWN_PYTHON_H
#define PSPAWN_PYTHON_H

/* What the interpreter would run after its options. */
enum pspawn_py_run {
    PSPAWN_PY_SCRIPT,   /* a path (file, directory or zip: decided in the task) */
    PSPAWN_PY_COMMAND,  /* -c CMD */
    PSPAWN_PY_MODULE,   /* -m MOD */
    PSPAWN_PY_STDIN,    /* no argument, or "-": a program read from stdin */
    PSPAWN_PY_OTHER,    /* -i, -h, -V, --help..., an unknown option: exec decides */
};

/* Split ARGV (a python3 command line, argv[0] the interpreter) as CPython
 * 3.8-3.13 does: argv[1] up to *OPTS_END are interpreter options, and
 * argv[*OPTS_END] ("-c", "-m", the script, ...) starts what it runs.
 * Returns an enum pspawn_py_run. */
int pspawn_python_split(char *const argv[], int *opts_end);

/* Whether the environment entry KV ("NAME=value") is read by the
 * interpreter at start: PYTHON*, LANG, LC_* (locale coercion, UTF-8 mode,
 * the filesystem encoding) and HOME (the user site directory). */
int pspawn_python_startup_var(const char *kv);

/* Environment names, passed from the launcher to a zygote that may turn
 * out to be a Python interpreter. */
#define PSPAWN_ENV_PYTHON   "PSPAWN_ZYGOTE_PYTHON"   /* what the first task runs */
#define PSPAWN_ENV_MODULES  "PSPAWN_ZYGOTE_MODULES"  /* comma-separated, or unset */

#endif
