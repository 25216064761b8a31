/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The warm Python zygote's interpreter, started and run from C as
 * Py_BytesMain would, so that no Python frame of ours is active while it
 * parks or while a task's code runs.  The interpreter is initialised
 * from the tasks' interpreter options (PyConfig, as Py_BytesMain does);
 * the bootstrap (warm.py) runs in a namespace of its own and returns,
 * with the function that makes each task's interpreter the task's; the
 * zygote parks from here; in each task that function returns what to run
 * (the script's or -c's code object, or runpy for -m), which is called
 * from here, and the task ends as Py_RunMain ends.  So the task's __main__
 * is the bottom frame, as in an exec'd interpreter: sys._getframe(1)
 * raises ValueError, warnings.warn(stacklevel=2) at module level names
 * sys:1, tracebacks and faulthandler show the script's frames only, and
 * the recursion limit leaves the same depth.
 *
 * The interpreter's C API is the program's own (the interpreter exports
 * it, or its libpython does): found with dlsym, since the proxy links
 * against no Python.  PyConfig is used through its functions only (its
 * layout changes between versions); PyStatus has kept its layout since
 * 3.8, which introduced both.
 */
#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "python.h"
#include "zygote.h"

typedef struct py_object py_object;     /* PyObject, never looked into */
struct py_status {                      /* PyStatus */
    int type;
    const char *func, *err_msg;
    int exitcode;
};
#define PY_FILE_INPUT 257               /* Py_file_input */

/* The bootstrap's refresh function (the parking tuple holds it). */
static py_object *refresh;

/* The bootstrap's source, made from warm.py at build time. */
static const char warm_py[] =
#include "warm.inc"
    ;

static struct {
    void (*config_init)(void *);
    struct py_status (*config_set_argv)(void *, ssize_t, char *const *);
    struct py_status (*initialize)(const void *);
    void (*config_clear)(void *);
    py_object *(*run_string)(const char *, int, py_object *, py_object *, void *);
    py_object *(*dict_new)(void);
    int (*dict_set)(py_object *, const char *, py_object *);
    py_object *(*dict_get)(py_object *, const char *);
    int (*dict_del)(py_object *, const char *);
    py_object *(*builtins)(void);
    py_object *(*call)(py_object *, py_object *);
    py_object *(*call_args)(py_object *, ...);
    py_object *(*bytes)(const char *, ssize_t);
    py_object *(*tuple_item)(py_object *, ssize_t);
    py_object *(*eval_code)(py_object *, py_object *, py_object *);
    long (*as_long)(py_object *);
    unsigned long long (*as_ull)(py_object *);
    py_object *(*add_module)(const char *);
    py_object *(*module_dict)(py_object *);
    py_object *(*occurred)(void);
    void (*fetch)(py_object **, py_object **, py_object **);
    void (*restore)(py_object *, py_object *, py_object *);
    void (*print)(void);
    void (*clear)(void);
    int (*finalize)(void);
    void (*decref)(py_object *);
    py_object **keyboard_interrupt;
} py;

#define FIND(field, name) ((*(void **)&py.field = dlsym(RTLD_DEFAULT, name)) != NULL)

/* The C API we use, all of it found: 1, else 0. */
static int find_api(void)
{
    return FIND(config_init, "PyConfig_InitPythonConfig") &&
           FIND(config_set_argv, "PyConfig_SetBytesArgv") &&
           FIND(initialize, "Py_InitializeFromConfig") && FIND(config_clear, "PyConfig_Clear") &&
           FIND(run_string, "PyRun_StringFlags") && FIND(dict_new, "PyDict_New") &&
           FIND(dict_set, "PyDict_SetItemString") && FIND(dict_get, "PyDict_GetItemString") &&
           FIND(dict_del, "PyDict_DelItemString") && FIND(builtins, "PyEval_GetBuiltins") &&
           FIND(call, "PyObject_CallObject") && FIND(call_args, "PyObject_CallFunctionObjArgs") &&
           FIND(bytes, "PyBytes_FromStringAndSize") && FIND(tuple_item, "PyTuple_GetItem") &&
           FIND(eval_code, "PyEval_EvalCode") &&
           FIND(as_long, "PyLong_AsLong") && FIND(as_ull, "PyLong_AsUnsignedLongLong") &&
           FIND(add_module, "PyImport_AddModule") && FIND(module_dict, "PyModule_GetDict") &&
           FIND(occurred, "PyErr_Occurred") && FIND(fetch, "PyErr_Fetch") &&
           FIND(restore, "PyErr_Restore") && FIND(print, "PyErr_Print") &&
           FIND(clear, "PyErr_Clear") && FIND(finalize, "Py_FinalizeEx") &&
           FIND(decref, "Py_DecRef") && FIND(keyboard_interrupt, "PyExc_KeyboardInterrupt");
}

static void __attribute__((noreturn)) bootstrap_failed(void)
{
    if (parked.sock >= 0)
        zygote_send_ready(parked.sock, ZYGOTE_PYTHON_REFUSED, PYTHON_BOOTSTRAP);
    _exit(1);
}

/* Whether the interpreter, started with ARGV's first END words, would show
 * what a task imports (-X importtime: each import's time) or allocates
 * (-X tracemalloc): what the zygote imported ahead would be missing from
 * it.  Asked before the interpreter starts: it would show the zygote's. */
static int shows_imports(int end, char **argv)
{
    const char *v = getenv("PYTHONPROFILEIMPORTTIME");
    if (v && *v)
        return 1;
    v = getenv("PYTHONTRACEMALLOC");
    if (v && *v && strcmp(v, "0") != 0)
        return 1;
    for (int i = 1; i < end; i++) {
        const char *x = argv[i][0] == '-' && argv[i][1] != '-' ? strchr(argv[i], 'X') : NULL;
        const char *opt = x && x[1] ? x + 1 : x && i + 1 < end ? argv[i + 1] : NULL;
        if (opt && (!strncmp(opt, "importtime", 10) || !strncmp(opt, "tracemalloc", 11)))
            return 1;
    }
    return 0;
}

/* The interpreter as Py_BytesMain would start it from ARGV's first END
 * words (the interpreter and its options). */
static void initialize(int end, char **argv)
{
    /* PyConfig's size differs between versions: more than any has. */
    static _Alignas(16) unsigned char config[16384];
    py.config_init(config);
    struct py_status st = py.config_set_argv(config, end, argv);
    if (!st.type)
        st = py.initialize(config);
    py.config_clear(config);
    if (st.type) {
        if (st.err_msg)
            fprintf(stderr, "libpspawn: warm python: %s\n", st.err_msg);
        bootstrap_failed();
    }
}

/* The interpreter's options, NUL-separated, as a bytes object. */
static py_object *options_bytes(int end, char **argv)
{
    size_t len = 0;
    for (int i = 1; i < end; i++)
        len += strlen(argv[i]) + 1;
    char *buf = malloc(len + 1), *p = buf;
    if (!buf)
        return NULL;
    for (int i = 1; i < end; i++)
        p = stpcpy(p, argv[i]) + 1;
    py_object *b = py.bytes(buf, len ? (ssize_t)len - 1 : 0);
    free(buf);
    return b;
}

/* What PyRun_SimpleFile does once a script has run, before it reports an
 * error: flush sys.stderr and sys.stdout (the bootstrap's FLUSH). */
static void flush_io(py_object *flush)
{
    py_object *type, *value, *tb;
    py.fetch(&type, &value, &tb);
    py_object *r = py.call(flush, NULL);
    if (r)
        py.decref(r);
    else
        py.clear();
    py.restore(type, value, tb);
}

/* What the task's (KIND, FN, ARGS) runs: FN(*ARGS), runpy's for -m; for
 * a script or -c, the code that compile(*ARGS) makes, evaluated in
 * __main__ as the interpreter's main evaluates it (no call of ours under
 * it: the recursion limit leaves the same depth).  Its result, or NULL
 * with the error set. */
static py_object *run(long kind, py_object *fn, py_object *args)
{
    py_object *result = py.call(fn, args);
    if (!result || kind == PSPAWN_PY_MODULE)
        return result;
    py_object *code = result;
    py_object *main_dict = py.module_dict(py.add_module("__main__"));
    result = py.eval_code(code, main_dict, main_dict);
    py.decref(code);
    return result;
}

/* Run the task's code (what TASK, PARKING's, returns) as Py_RunMain
 * would, and end as it ends. */
static void __attribute__((noreturn)) run_task(py_object *parking, py_object *task,
                                               py_object *flush)
{
    py_object *what = py.call(task, NULL);
    int rc = 0, sigint = 0;
    if (!what) {
        /* The task's set-up failed (an exit() there ends it here). */
        py.print();
        rc = 1;
    } else {
        long kind = py.as_long(py.tuple_item(what, 0));
        py_object *result = run(kind, py.tuple_item(what, 1), py.tuple_item(what, 2));
        if (kind == PSPAWN_PY_SCRIPT)
            flush_io(flush);
        if (!result) {
            /* As an exec'd interpreter: an uncaught KeyboardInterrupt
             * ends it by SIGINT once finalized; SystemExit ends it here. */
            sigint = py.occurred() == *py.keyboard_interrupt;
            py.print();
            rc = 1;
        } else {
            py.decref(result);
        }
        if (kind == PSPAWN_PY_SCRIPT) {
            py_object *main_dict = py.module_dict(py.add_module("__main__"));
            if (py.dict_del(main_dict, "__file__") < 0 || py.dict_del(main_dict, "__cached__") < 0)
                py.clear();
        }
        py.decref(what);
    }
    /* Our last hold on __main__'s namespace (the bootstrap's task function
     * refers to it): let go, so that finalizing clears it as an exec'd
     * interpreter's (an unclosed file's buffer is written then). */
    py.decref(parking);
    if (py.finalize() < 0)
        rc = 120;
    if (sigint) {
        fflush(NULL);
        signal(SIGINT, SIG_DFL);
        kill(getpid(), SIGINT);
    }
    exit(rc);
}

/* The bootstrap's refresh: how many modules it imported; *OWN_SIGS as the
 * bootstrap's start gave them. */
static int refresh_imports(unsigned long long *own_sigs)
{
    py_object *r = refresh ? py.call(refresh, NULL) : NULL;
    if (!r) {
        if (refresh)
            py.clear();     /* (the bootstrap catches what it can) */
        return 0;
    }
    long n = py.as_long(py.tuple_item(r, 0));
    *own_sigs = py.as_ull(py.tuple_item(r, 1));
    py.decref(r);
    if (py.occurred()) {
        py.clear();
        return 0;
    }
    return n > 0 ? (int)n : 0;
}

/* A zygote that serves more than one step, idle between them: the
 * modules its tasks learned since, imported, and what the park recorded
 * of the process recorded again for them.  How many; -1 when it can no
 * longer fork (a module left a thread). */
static int between_steps(void)
{
    /* The imports see what they saw at the start: the zygote's working
     * directory (a parked zygote holds none, park.c). */
    if (parked.cwd_released && chdir(parked.cwd) != 0)
        return 0;
    unsigned long long own = 0;
    int n = refresh_imports(&own);
    if (parked.cwd_released && chdir("/") != 0)
        return -1;
    if (n <= 0)
        return 0;
    if (zygote_thread_count() != 1)
        return -1;
    zygote_python_record_again(own);
    zygote_libraries_watch();
    fflush(NULL);
    return n;
}

/* What the warm interpreter plugs into the park. */
static const struct zygote_mode python_mode = {
    .before_fork = zygote_python_before_fork,
    .after_fork_parent = zygote_python_after_fork_parent,
    .task_signals = zygote_python_task_signals,
    .between_steps = between_steps,
};

int zygote_python_main(int argc, char **argv, char **envp)
{
    (void)envp;
    /* Only the interpreter's options: never what a task would run (the
     * kernel puts a #! script's path after them). */
    int end;
    pspawn_python_split(argv, &end);
    if (end > 1 && strcmp(argv[end - 1], "--") == 0)
        end--;
    if (end > argc)
        end = argc;
    if (!find_api()) {
        fprintf(stderr, "libpspawn: warm python: the interpreter lacks the PyConfig API (3.8)\n");
        bootstrap_failed();
    }
    if (shows_imports(end, argv)) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_PYTHON_REFUSED, PYTHON_IMPORTS_SHOWN);
        _exit(0);
    }
    zygote_python_find_fork_hooks();
    initialize(end, argv);
    py_object *ns = py.dict_new();
    py_object *opts = options_bytes(end, argv);
    if (!ns || !opts || py.dict_set(ns, "__builtins__", py.builtins()) < 0)
        bootstrap_failed();
    py_object *r = py.run_string(warm_py, PY_FILE_INPUT, ns, ns, NULL);
    py_object *prepare = r ? py.dict_get(ns, "_pspawn_prepare") : NULL;
    py_object *flush = r ? py.dict_get(ns, "_pspawn_flush") : NULL;
    /* (OWN_SIGS, TASK, REFRESH): the bootstrap has preloaded, and parks. */
    py_object *parking = prepare && flush ? py.call_args(prepare, opts, NULL) : NULL;
    if (!parking) {
        py.print();
        bootstrap_failed();
    }
    py.decref(r);
    py.decref(opts);
    unsigned long long own_sigs = py.as_ull(py.tuple_item(parking, 0));
    refresh = py.tuple_item(parking, 2);
    zygote_python_park(own_sigs, &python_mode);
    run_task(parking, py.tuple_item(parking, 1), flush);
}
