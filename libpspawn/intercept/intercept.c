/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpspawn-intercept.so: preloaded into a launcher that nobody here
 * wrote (make, xargs, GNU parallel, Python's subprocess, mpiexec.hydra,
 * prterun...), it routes the launcher's starts of one program, from the
 * Nth on, through a zygote of that program, and changes nothing else.
 *
 * What is intercepted, and how:
 *  - execve, execv, execvp, execvpe, execl, execle, execlp: in the process
 *    that is about to become the program (a fork or vfork child of the
 *    launcher, or a shell that execs a command).  A routed exec runs the
 *    static stand-in pspawn-standin instead, with the same argv and
 *    environment plus PSPAWN_STANDIN_EXEC=PATH: the process the launcher
 *    knows stays the one it knows, hands its task's state (fds, cwd,
 *    limits, signal state, ...) to the zygote, passes signals on and ends
 *    as the task ends.  This is all a vfork child may do: the wrapper
 *    uses the stack and system calls only, and vfork itself is not
 *    wrapped (a wrapper's return would pull the stack from under the
 *    parent).  An exec of the stand-in that fails is followed by the
 *    exec asked for, so every error is exec's own.
 *  - posix_spawn, posix_spawnp: in the launcher; a routed one spawns the
 *    stand-in with the caller's file actions and attributes (glibc
 *    applies them to the stand-in, which hands the result on).
 *  - system() and popen() are not wrapped: glibc starts /bin/sh through
 *    its internal posix_spawn, and the command the shell execs is routed
 *    at that exec.
 *  - kill(): a launcher's kill() of one of its stand-ins goes as
 *    sigqueue() with a mark, so that the stand-in passes it on, while a
 *    signal to the process group (which reaches the task itself) is not
 *    passed on twice.  A SIGSTOP, which no process can catch, is sent to
 *    the stand-in's task too, from here (the table has its pid).
 *  - wait, waitpid, wait3, wait4, waitid (reap.c): a reaped stand-in
 *    leaves the scope's set, and a measured child gives its spawn site
 *    its run time; what the launcher sees is unchanged.
 *  - With spawn-site priorities (PSPAWN_INTERCEPT_PRIORITY, off by
 *    default; predict.h) every exec and posix_spawn above is measured
 *    and started as its site predicts, routed or not.
 *  - execveat() and fexecve(): routed as execve() of the path their
 *    directory fd or file fd stands for (/proc/self/fd), when that path
 *    is still the same file; AT_SYMLINK_NOFOLLOW passes through.
 *  - Nothing else: fork(), vfork() and clone() pass through, and so does
 *    every launch that is not routed.
 *
 * The zygote is never the launcher's child, nor any of its children's
 * (pspawn-standin starts it through a child that exits): a launcher's
 * wait(-1) never sees it.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "execargs.h"
#include "execpath.h"
#include "gain.h"
#include "intercept.h"
#include "nolibc.h"
#include "predict.h"
#include "route.h"
#include "sayline.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
typedef int (*kill_fn)(pid_t, int);

/* Read in the constructor, never written after: a vfork child reads it. */
static struct {
    execve_fn execve;
    execvpe_fn execvpe;
    execveat_fn execveat;
    fexecve_fn fexecve;
    spawn_fn posix_spawn, posix_spawnp;
    kill_fn kill;
    int active;             /* routing on */
    int route_all;          /* PSPAWN_INTERCEPT_ROUTE=all: whether it pays or not */
    int debug;
    unsigned after;         /* route from the Nth start on */
    char standin[PATH_MAX];
    char skip[2048];        /* PSPAWN_INTERCEPT_SKIP, ':' between entries */
    char scope[ROUTE_SCOPE_LEN + 1];
} cfg;

/* SRC into DST (LEN), cut short if need be: every process of the scope
 * runs the constructor, and snprintf's pages would cost each a few page
 * faults (nolibc.h). */
static void copy_in(char *dst, size_t len, const char *src)
{
    size_t n = nl_len(src);
    if (n >= len)
        n = len - 1;
    nl_copy(dst, src, n);
    dst[n] = '\0';
}

static void debug_line(const char *what, const char *path)
{
    intercept_say("%s %s", what, path);
}

static int skipped(const char *path)
{
    if (!cfg.skip[0])
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = cfg.skip; *p;) {
        size_t n = strcspn(p, ":");
        if (n && ((strlen(path) == n && !strncmp(p, path, n)) ||
                  (strlen(base) == n && !strncmp(p, base, n))))
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* How a start goes: exec'd as asked, through a stand-in, or exec'd
 * without the interception library (a leaf, gain.h). */
enum want { WANT_EXEC, WANT_ROUTE, WANT_BARE };

/* How the start of PATH with ARGV and ENVP goes.  Counts the start.
 * Under PSPAWN_DEBUG, says why one is not routed. */
static enum want wanted(const char *path, char *const argv[], char *const envp[])
{
    if (!cfg.active || !route_table || !path || !argv || !argv[0])
        return WANT_EXEC;
    size_t envc = 0;
    for (; envp && envp[envc]; envc++)
        if (nl_prefix(envp[envc], "PSPAWN_ZYGOTE_") || nl_prefix(envp[envc], ROUTE_ENV_EXEC "="))
            return WANT_EXEC;   /* a zygote's own exec (a sub-zygote), or a stand-in's */
    if (skipped(path)) {
        debug_line("not routed (--skip):", path);
        return WANT_EXEC;
    }
    /* By name: in a fork or vfork child, each system call and each page
     * touched is paid by every start, routed or not (gain.h). */
    struct stat st;
    struct statfs sf;
    if (stat(path, &st) != 0) {
        debug_line("not routed (not found: exec gives its error):", path);
        return WANT_EXEC;
    }
    int ok = S_ISREG(st.st_mode);
    struct route_program *e = ok ? route_program_entry(route_program_key(&st, envp)) : NULL;
    const char *why = NULL;
    char gain_why[160];
    unsigned starts = 0;
    int bare = 0;
    if (e) {
        starts = __atomic_add_fetch(&e->starts, 1, __ATOMIC_ACQ_REL);
        uint32_t v = __atomic_load_n(&e->verdict, __ATOMIC_ACQUIRE);
        if (v == ROUTE_UNKNOWN) {
            uint32_t unknown = ROUTE_UNKNOWN;
            int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
            struct stat now;
            /* the file stat named (else unknown still: exec'd, asked again) */
            if (fd >= 0 && fstat(fd, &now) == 0 && now.st_ino == st.st_ino &&
                now.st_dev == st.st_dev) {
                v = route_program_verdict(fd, &st);
                if (!__atomic_compare_exchange_n(&e->verdict, &unknown, v, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
                    v = unknown;
            }
            if (fd >= 0)
                close(fd);
        }
        /* Exec must be able to run it, or its own error is the answer. */
        if (v == ROUTE_UNKNOWN)
            why = "cannot be read: exec gives its error";
        else if (v != ROUTE_YES)
            why = route_verdict_why(v);
        else if (starts < cfg.after)
            why = "";       /* counted: routed from start cfg.after on */
        else if ((why = gain_refusal(e, path, cfg.route_all, cfg.debug ? gain_why : NULL,
                                     sizeof gain_why)))
            bare = gain_leaf(e, path);  /* it costs less exec'd than routed */
        else if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0)
            why = "not executable: exec gives its error";
        else if (statfs(path, &sf) != 0 || (sf.f_flags & ST_NOEXEC))
            why = "on a noexec mount: exec gives its error";
    } else {
        why = ok ? "the scope's table of programs is full" : "not a regular file";
    }
    if (why) {
        if (!*why)
            intercept_say("not routed (start %u of %u before routing): %s", starts, cfg.after,
                          path);
        else
            intercept_say("not routed (%s%s): %s", why,
                          bare ? "; a leaf, started without the interception library" : "",
                          path);
        return bare ? WANT_BARE : WANT_EXEC;
    }
    struct rlimit stack;
    uint64_t limit = getrlimit(RLIMIT_STACK, &stack) == 0 ? stack.rlim_cur : RLIM_INFINITY;
    if (pspawn_args_too_big_plus(cfg.standin, argv, envp, limit,
                                 sizeof ROUTE_ENV_EXEC + strlen(path) + 1, 1) != 0) {
        debug_line("not routed (its arguments leave no room for the stand-in's):", path);
        return WANT_EXEC;
    }
    return WANT_ROUTE;
}

/* ENVP with PSPAWN_STANDIN_EXEC=PATH and EXTRA (if not NULL) added, into
 * OUT (ENVC + 3 slots) and VAR; false if PATH does not fit. */
static int standin_env(char **out, char *var, size_t varlen, const char *path,
                       char *const envp[], size_t envc, const char *extra)
{
    if (sizeof ROUTE_ENV_EXEC + strlen(path) + 1 > varlen)
        return 0;
    memcpy(var, ROUTE_ENV_EXEC "=", sizeof ROUTE_ENV_EXEC);
    strcpy(var + sizeof ROUTE_ENV_EXEC, path);
    for (size_t i = 0; i < envc; i++)
        out[i] = envp[i];
    out[envc] = var;
    out[envc + 1] = (char *)extra;
    out[envc + 2] = NULL;
    return 1;
}

static size_t count(char *const v[])
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* The exec of a leaf, without us in LD_PRELOAD: returns if it fails.
 * Its buffers are as small as the variable (a fork child pays a page
 * fault for each page of stack it touches). */
static __attribute__((noinline)) void exec_bare(const char *path, char *const argv[],
                                                char *const envp[])
{
    size_t envc = count(envp), len = 0;
    for (size_t i = 0; i < envc && !len; i++)
        if (nl_prefix(envp[i], "LD_PRELOAD="))
            len = nl_len(envp[i]) + 1;
    if (!len || len > PATH_MAX * 4)
        return;
    char *bare[envc + 1], var[len];
    if (gain_env_bare(bare, var, len, envp, envc))
        cfg.execve(path, argv, bare);
}

/* The stand-in's exec in place of PATH's: returns if it fails. */
static __attribute__((noinline)) void exec_standin(const char *path, char *const argv[],
                                                   char *const envp[])
{
    size_t envc = count(envp);
    char *env[envc + 3];
    char var[sizeof ROUTE_ENV_EXEC + PATH_MAX + 1];
    if (standin_env(env, var, sizeof var, path, envp, envc, NULL)) {
        debug_line("routed:", path);
        cfg.execve(cfg.standin, argv, env);
    }
}

/* Before an exec of PATH (the file it will run) in the process that
 * becomes the program (it may be a vfork child), called from RET: measured
 * and started as its site predicts (MARK), and if routed, the stand-in's
 * exec in its place, which returns only if it fails: the exec asked for
 * follows, so that every error is exec's own. */
static void before_exec(const char *path, char *const argv[], char *const envp[],
                        const void *ret, struct child_mark *mark)
{
    predict_exec(ret, path, argv, mark);
    gain_note_launch();
    enum want how = wanted(path, argv, envp);
    if (how == WANT_BARE)
        exec_bare(path, argv, envp);
    else if (how == WANT_ROUTE)
        exec_standin(path, argv, envp);
}

static int routed_execve(const char *path, char *const argv[], char *const envp[],
                         const void *ret)
{
    struct child_mark mark = { -1, -1 };
    before_exec(path, argv, envp, ret, &mark);
    int r = cfg.execve(path, argv, envp);
    predict_exec_failed(&mark);
    return r;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return routed_execve(path, argv, envp, __builtin_return_address(0));
}

EXPORT int execv(const char *path, char *const argv[])
{
    return routed_execve(path, argv, environ, __builtin_return_address(0));
}


/* Before execveat's or fexecve's exec (DIRFD, PATH, FLAGS as execveat
 * takes them), called from RET: as before an execve of the path they
 * stand for. */
static void route_at(int dirfd, const char *path, int flags, char *const argv[],
                     char *const envp[], const void *ret, struct child_mark *mark)
{
    char resolved[PATH_MAX];
    if (path && exec_path_at(dirfd, path, flags, resolved, sizeof resolved))
        before_exec(resolved, argv, envp, ret, mark);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                    int flags)
{
    struct child_mark mark = { -1, -1 };
    route_at(dirfd, path, flags, argv, envp, __builtin_return_address(0), &mark);
    /* glibc has had execveat since 2.34 only. */
    int r = cfg.execveat ? cfg.execveat(dirfd, path, argv, envp, flags)
                         : (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
    predict_exec_failed(&mark);
    return r;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    struct child_mark mark = { -1, -1 };
    route_at(fd, "", AT_EMPTY_PATH, argv, envp, __builtin_return_address(0), &mark);
    int r = cfg.fexecve(fd, argv, envp);
    predict_exec_failed(&mark);
    return r;
}


static int routed_execvpe(const char *file, char *const argv[], char *const envp[],
                          const void *ret)
{
    char path[PATH_MAX];
    struct child_mark mark = { -1, -1 };
    int found = file && *file && exec_search_path(file, path, sizeof path);
    if (found)
        before_exec(path, argv, envp, ret, &mark);
    int r = cfg.execvpe(file, argv, envp);
    predict_exec_failed(&mark);
    return r;
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return routed_execvpe(file, argv, environ, __builtin_return_address(0));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return routed_execvpe(file, argv, envp, __builtin_return_address(0));
}

/* The execl family: the arguments into an argv on the stack. */
#define ARGV_FROM_VA(arg, ap, argv)                                      \
    size_t argc_ = 1;                                                    \
    va_start(ap, arg);                                                   \
    while (va_arg(ap, char *))                                           \
        argc_++;                                                         \
    va_end(ap);                                                          \
    char *argv[argc_ + 1];                                               \
    argv[0] = (char *)arg;                                               \
    va_start(ap, arg);                                                   \
    for (size_t i_ = 1; i_ <= argc_; i_++)                               \
        argv[i_] = va_arg(ap, char *);

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv)
    va_end(ap);
    return routed_execve(path, argv, environ, __builtin_return_address(0));
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv)
    va_end(ap);
    return routed_execvpe(file, argv, environ, __builtin_return_address(0));
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return routed_execve(path, argv, envp, __builtin_return_address(0));
}

/* A launcher that became a child subreaper since it started would adopt
 * its zygotes: it is asked again at each spawn it makes itself. */
static int adopts_orphans(void)
{
    int sub = 0;
    return getpid() == 1 || (prctl(PR_GET_CHILD_SUBREAPER, &sub, 0, 0, 0) == 0 && sub);
}

/* The stand-in told what the child's site predicts: it starts its task
 * so before it asks for a zygote (applied to it from here, it could
 * already be asking). */
static const char *standin_verdict(enum priority_verdict v)
{
    return v == VERDICT_LONG ? PRIORITY_ENV_STANDIN "=long"
           : v == VERDICT_SHORT ? PRIORITY_ENV_STANDIN "=short" : NULL;
}

static int routed_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[],
                        enum priority_verdict verdict)
{
    size_t envc = count(envp);
    char *env[envc + 3];
    char var[sizeof ROUTE_ENV_EXEC + PATH_MAX + 1];
    if (!standin_env(env, var, sizeof var, path, envp, envc, standin_verdict(verdict)))
        return -1;
    debug_line("routed (posix_spawn):", path);
    /* Not retried with PATH on failure: the caller's file actions (an
     * O_EXCL open...) would run twice.  The stand-in was found at start. */
    return cfg.posix_spawn(pid, cfg.standin, fa, attr, argv, env);
}

/* posix_spawn (SEARCH: posix_spawnp) of FILE, which is the program at
 * PATH (NULL: none found), from RET. */
static int spawn(pid_t *pid, const char *file, const char *path,
                 const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[], int search, const void *ret)
{
    enum priority_verdict verdict = VERDICT_NONE;
    uint64_t site = path ? predict_spawn(ret, path, argv, &verdict) : 0;
    int r = -1, routed = 0;
    gain_note_launch();
    enum want how = path && !adopts_orphans() ? wanted(path, argv, envp) : WANT_EXEC;
    size_t envc = how == WANT_BARE ? count(envp) : 0;
    char *bare[envc + 1], var[how == WANT_BARE ? PATH_MAX * 4 : 1];
    if (how == WANT_ROUTE)
        routed = (r = routed_spawn(pid, path, fa, attr, argv, envp, verdict)) >= 0;
    else if (how == WANT_BARE && gain_env_bare(bare, var, sizeof var, envp, envc))
        envp = bare;    /* the same program, without us: its errors are its own */
    if (!routed)
        r = search ? cfg.posix_spawnp(pid, file, fa, attr, argv, envp)
                   : cfg.posix_spawn(pid, file, fa, attr, argv, envp);
    if (r == 0 && pid)
        predict_spawned(*pid, site, verdict, routed);
    return r;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn(pid, path, path, fa, attr, argv, envp, 0, __builtin_return_address(0));
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    char path[PATH_MAX];
    int found = *file && exec_search_path(file, path, sizeof path);
    return spawn(pid, file, found ? path : NULL, fa, attr, argv, envp, 1,
                 __builtin_return_address(0));
}

EXPORT int kill(pid_t pid, int sig)
{
    if (pid > 0 && route_standin_is(pid)) {
        /* SIGSTOP cannot be caught, so the stand-in cannot pass it on:
         * its task gets it from here, first (SIGCONT, which can be, it
         * passes on itself once it runs again). */
        pid_t task = sig == SIGSTOP ? route_standin_task(pid) : 0;
        if (task > 0)
            cfg.kill(task, SIGSTOP);
        union sigval mark = { .sival_int = PSPAWN_KILL_MARK };
        return sigqueue(pid, sig, mark);
    }
    return cfg.kill(pid, sig);
}

static int env_off(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"));
}

/* A new scope's name, in our environment for every process below us. */
static const char *new_scope(void)
{
    unsigned char raw[ROUTE_SCOPE_LEN / 2];
    static char hex[ROUTE_SCOPE_LEN + 1];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return NULL;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    /* libc's setenv: a program's own (bash's binds a shell variable before
     * its main) would not put it in the environment its children get. */
    int (*libc_setenv)(const char *, const char *, int) =
        (int (*)(const char *, const char *, int))dlsym(RTLD_NEXT, "setenv");
    return libc_setenv && libc_setenv(ROUTE_ENV_SCOPE, hex, 1) == 0 ? hex : NULL;
}

void *intercept_next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f)
        abort();    /* no libc under us: nothing could run */
    return f;
}

__attribute__((constructor)) static void intercept_init(void)
{
    cfg.execve = (execve_fn)intercept_next("execve");
    cfg.execvpe = (execvpe_fn)intercept_next("execvpe");
    cfg.execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
    cfg.fexecve = (fexecve_fn)intercept_next("fexecve");
    cfg.posix_spawn = (spawn_fn)intercept_next("posix_spawn");
    cfg.posix_spawnp = (spawn_fn)intercept_next("posix_spawnp");
    cfg.kill = (kill_fn)intercept_next("kill");
    cfg.debug = pspawn_debug_wanted();
    intercept_say_on(cfg.debug);
    if (env_off(ROUTE_ENV_OFF))
        return;
    const char *standin = getenv(ROUTE_ENV_STANDIN);
    copy_in(cfg.standin, sizeof cfg.standin, standin && *standin ? standin : PSPAWN_STANDIN_PATH);
    const char *after = getenv(ROUTE_ENV_AFTER);
    char *end;
    long n = after ? strtol(after, &end, 10) : 2;
    cfg.after = after && (*end || n < 1 || n > 1000000) ? 2 : (unsigned)n;
    const char *skip = getenv(ROUTE_ENV_SKIP);
    copy_in(cfg.skip, sizeof cfg.skip, skip ? skip : "");
    const char *scope = getenv(ROUTE_ENV_SCOPE);
    int made = !scope || !*scope;
    if (made && !(scope = new_scope()))
        return;
    /* Only a new scope makes its table: one that is gone has ended (a
     * process that outlives it routes nothing). */
    if (route_attach(scope, made) < 0) {
        debug_line("no scope table; nothing is routed:", scope);
        return;
    }
    /* A bare LD_PRELOAD: the process that made the scope removes its
     * table at its end, even if it exec'd another program since. */
    if (made) {
        __atomic_store_n(&route_table->creator, (int32_t)getpid(), __ATOMIC_RELEASE);
        debug_line("made the interception scope", scope);
    }
    copy_in(cfg.scope, sizeof cfg.scope, scope);
    /* What this start of ours cost, first: the rest is not loading. */
    gain_note_exec(environ);
    const char *route = getenv(ROUTE_ENV_ROUTE);
    cfg.route_all = route && !strcmp(route, "all");
    predict_init();
    cfg.active = access(cfg.standin, X_OK) == 0 && !adopts_orphans();
    if (!cfg.active)
        debug_line("nothing is routed: no stand-in at, or we adopt orphans:", cfg.standin);
}

/* The scope a process made ends with it (children of its own that exit
 * through exit() leave it; `pspawn --intercept` removes its own). */
__attribute__((destructor)) static void intercept_fini(void)
{
    if (route_table && __atomic_load_n(&route_table->creator, __ATOMIC_ACQUIRE) == getpid()) {
        char path[128];
        route_table_path(cfg.scope, path, sizeof path);
        unlink(path);
    }
}
