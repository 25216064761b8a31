/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors - the errors of a program are those exec gives, through the API,
 * the same as posix_spawn(3) gives for the same call:
 *   missing program ENOENT, not executable (0644) EACCES, a directory
 *   EACCES, a file with the x bit that is no program ENOEXEC, a #! script
 *   whose interpreter is missing ENOENT (not executable: EACCES);
 *   one argument longer than MAX_ARG_STRLEN E2BIG, argv + envp over the
 *   limit E2BIG, and just under the per-string limit no error at all;
 * a NUMA memory policy the kernel refuses gives set_mempolicy's error, and
 * one the attribute cannot hold EINVAL;
 * and a failed task leaves no process behind.
 * Also pspawn_resolve(), the PATH search that execvp(3) does.
 *
 * Uses $TESTS_BUILDDIR/task.
 */
#include <dirent.h>
#include <linux/mempolicy.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

extern char **environ;

static char tmpdir[256];

static const char *errname(int e)
{
    switch (e) {
    case 0: return "0";
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case ENOEXEC: return "ENOEXEC";
    case E2BIG: return "E2BIG";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return strerror(e);
    }
}

/* Children of this process other than EXCEPT, zombies included. */
static int count_children(pid_t except)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;

    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        char path[300], buf[512], *p;
        long ppid;
        FILE *f;

        if (de->d_name[0] < '0' || de->d_name[0] > '9' || atol(de->d_name) == (long)except)
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        f = fopen(path, "re");
        if (!f)
            continue;
        p = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == (long)getpid())
            n++;
    }
    closedir(d);
    return n;
}

static int reap_ok(pid_t pid)
{
    int st;

    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* posix_spawn's answer: the reference. */
static int reference(const char *path, char *const argv[], char *const envp[])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int rc, devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, devnull, 1);
    rc = posix_spawn(&pid, path, &fa, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    close(devnull);
    if (rc == 0 && !reap_ok(pid))
        tap_diag("    posix_spawn's task of %s did not exit 0", path);
    return rc;
}

static int with_stdout_null_begin(void)
{
    int saved, devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

    fflush(stdout);
    saved = fcntl(1, F_DUPFD_CLOEXEC, 10);
    dup2(devnull, 1);
    close(devnull);
    return saved;
}

static void with_stdout_null_end(int saved)
{
    dup2(saved, 1);
    close(saved);
}

/* ---- errors of the program file ----------------------------------------- */

static void write_file(const char *name, const char *text, mode_t mode, char *path, size_t size)
{
    FILE *f;

    snprintf(path, size, "%s/%s", tmpdir, name);
    f = fopen(path, "we");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chmod(path, mode) != 0)
        tap_bail("writing %s: %s", path, strerror(errno));
}

static void check_program_error(const char *name, const char *path, int want)
{
    char *argv[] = { (char *)path, NULL };
    pspawn_context_t ctx;
    pid_t pid = -1;
    int ref = reference(path, argv, NULL), rc, saved;

    rc = pspawn_context_create(&ctx, path, -1);
    tap_ok(rc == want && rc == ref, "%s: pspawn_context_create gives %s (want %s, posix_spawn %s)",
           name, errname(rc), errname(want), errname(ref));
    if (rc == 0) {
        /* It must not serve: the spawn must fail the same way. */
        saved = with_stdout_null_begin();
        rc = pspawn_ex(&pid, &ctx, NULL, argv, NULL);
        with_stdout_null_end(saved);
        tap_diag("    then pspawn_ex gives %s", errname(rc));
        if (rc == 0)
            reap_ok(pid);
        pspawn_context_destroy(&ctx);
    }
    saved = with_stdout_null_begin();
    rc = pspawn_exec(&pid, path, NULL, argv, NULL);
    with_stdout_null_end(saved);
    tap_ok(rc == want && rc == ref, "%s: pspawn_exec gives %s (want %s)", name, errname(rc),
           errname(want));
    if (rc == 0)
        reap_ok(pid);
    tap_ok(count_children(-1) == 0, "%s: no process left behind", name);
}

/* ---- errors of the arguments -------------------------------------------- */

static char *repeat_char(char c, size_t n)
{
    char *s = malloc(n + 1);

    if (!s)
        tap_bail("out of memory");
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* ARGV/ENVP through pspawn_ex (zygote) and pspawn_exec against posix_spawn;
 * WANT is what exec gives. */
static void check_args(pspawn_context_t *ctx, const char *task, const char *name,
                       char *const argv[], char *const envp[], int want)
{
    int ref = reference(task, argv, envp), rc, saved;
    pid_t pid = -1;

    saved = with_stdout_null_begin();
    rc = pspawn_ex(&pid, ctx, NULL, argv, envp);
    with_stdout_null_end(saved);
    tap_ok(rc == want && rc == ref, "%s: pspawn_ex gives %s (want %s, posix_spawn %s)", name,
           errname(rc), errname(want), errname(ref));
    if (rc == 0)
        tap_ok(reap_ok(pid), "%s: pspawn_ex's task exited 0", name);

    saved = with_stdout_null_begin();
    rc = pspawn_exec(&pid, task, NULL, argv, envp);
    with_stdout_null_end(saved);
    tap_ok(rc == want && rc == ref, "%s: pspawn_exec gives %s (want %s)", name, errname(rc),
           errname(want));
    if (rc == 0)
        tap_ok(reap_ok(pid), "%s: pspawn_exec's task exited 0", name);
}

/* A memory policy: refused by the setter when it cannot be held, by the
 * kernel (as set_mempolicy refuses it) when it names a node that is not
 * there. */
static void check_mempolicy(pspawn_context_t *ctx, const char *task)
{
    unsigned long big[1024 / (8 * sizeof(unsigned long)) + 1] = { 0 };
    unsigned long node1023[1024 / (8 * sizeof(unsigned long))] = { 0 };
    const unsigned long bits = 8 * sizeof(unsigned long);
    char *argv[] = { (char *)task, "exit", "0", NULL };
    pspawn_attr_t attr;
    pid_t pid = -1;
    int ref, rc, saved;

    pspawn_attr_init(&attr);
    tap_ok(pspawn_attr_setmempolicy(&attr, -1, NULL, 0) == EINVAL,
           "memory policy: a negative mode is EINVAL");
    big[1024 / bits] = 1;
    tap_ok(pspawn_attr_setmempolicy(&attr, MPOL_BIND, big, 1025) == EINVAL,
           "memory policy: node 1024 is EINVAL");
    tap_ok(pspawn_attr_setmempolicy(&attr, MPOL_BIND, NULL, 4) == EINVAL,
           "memory policy: a NULL mask of 4 nodes is EINVAL");

    node1023[1023 / bits] = 1UL << (1023 % bits);
    ref = syscall(SYS_set_mempolicy, MPOL_BIND, node1023, 1025UL) == 0 ? 0 : errno;
    if (ref == ENOSYS || ref == EPERM) {
        tap_skip(strerror(ref), "memory policy on node 1023: set_mempolicy does not work here");
        pspawn_attr_destroy(&attr);
        return;
    }
    if (ref == 0) {
        syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL);
        tap_bail("set_mempolicy accepted node 1023: this test needs a node that is not there");
    }
    rc = pspawn_attr_setmempolicy(&attr, MPOL_BIND, node1023, 1024);
    tap_ok(rc == 0, "memory policy: node 1023 can be named (%s)", errname(rc));
    saved = with_stdout_null_begin();
    rc = pspawn_ex(&pid, ctx, &attr, argv, NULL);
    with_stdout_null_end(saved);
    tap_ok(rc == ref, "memory policy on node 1023: pspawn_ex gives %s (set_mempolicy %s)",
           errname(rc), errname(ref));
    saved = with_stdout_null_begin();
    rc = pspawn_exec(&pid, task, &attr, argv, NULL);
    with_stdout_null_end(saved);
    tap_ok(rc == ref, "memory policy on node 1023: pspawn_exec gives %s (set_mempolicy %s)",
           errname(rc), errname(ref));
    pspawn_attr_destroy(&attr);
}

static void check_paper_calls(pspawn_context_t *ctx, const char *task, char *big)
{
    char *argv[] = { (char *)task, "append", "/dev/null", big, NULL };
    pid_t pids[2] = { 0, 0 }, pid;
    int rc, saved;

    saved = with_stdout_null_begin();
    errno = 0;
    pid = pspawn(ctx, argv);
    rc = errno;
    with_stdout_null_end(saved);
    tap_ok(pid == -1 && rc == E2BIG, "oversized argument: pspawn returns -1 with errno %s",
           errname(rc));
    if (pid > 0)
        reap_ok(pid);

    saved = with_stdout_null_begin();
    rc = pspawn_n(pids, ctx, 2, argv);
    with_stdout_null_end(saved);
    tap_ok(rc == E2BIG && pids[0] == -1 && pids[1] == -1,
           "oversized argument: pspawn_n gives E2BIG and pids -1 (%s, %ld, %ld)",
           errname(rc), (long)pids[0], (long)pids[1]);
    for (int i = 0; i < 2; i++)
        if (pids[i] > 0)
            reap_ok(pids[i]);
}

/* One bad task in a vector: the others are still created. */
static void check_vector(pspawn_context_t *ctx, const char *task, char *big)
{
    char *good[] = { (char *)task, "exit", "0", NULL };
    char *bad[] = { (char *)task, "append", "/dev/null", big, NULL };
    pspawn_task_t tasks[3];
    int rc, saved, ok = 1;

    memset(tasks, 0, sizeof tasks);
    tasks[0].argv = good;
    tasks[1].argv = bad;
    tasks[2].argv = good;
    saved = with_stdout_null_begin();
    rc = pspawn_vector(ctx, tasks, 3, NULL, NULL);
    with_stdout_null_end(saved);
    tap_ok(rc == E2BIG && tasks[1].error == E2BIG && tasks[1].pid == -1,
           "vector with one oversized task: returns E2BIG, that task's error E2BIG, pid -1 "
           "(rc %s, error %s, pid %ld)", errname(rc), errname(tasks[1].error),
           (long)tasks[1].pid);
    for (int i = 0; i < 3; i += 2) {
        if (tasks[i].error != 0 || tasks[i].pid <= 0 || !reap_ok(tasks[i].pid)) {
            tap_diag("    task %d: error %s, pid %ld", i, errname(tasks[i].error),
                     (long)tasks[i].pid);
            ok = 0;
        }
    }
    tap_ok(ok, "vector with one oversized task: the other two run and exit 0");
}

/* ---- pspawn_resolve: PATH search as execvp ------------------------------ */

static void check_resolve(const char *task)
{
    char dir1[300], dir2[300], path_env[700], out[PATH_MAX], want[PATH_MAX], small[8];
    char *envp[] = { path_env, NULL };
    char *no_path[] = { "HOME=/", NULL };
    int rc;

    snprintf(dir1, sizeof dir1, "%s/p1", tmpdir);
    snprintf(dir2, sizeof dir2, "%s/p2", tmpdir);
    mkdir(dir1, 0755);
    mkdir(dir2, 0755);
    /* p1/prog is not executable, p2/prog is: execvp skips the first. */
    snprintf(out, sizeof out, "%s/prog", dir1);
    close(open(out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    chmod(out, 0644);
    snprintf(out, sizeof out, "%s/prog", dir2);
    if (symlink(task, out) != 0)
        tap_bail("symlink %s: %s", out, strerror(errno));
    snprintf(out, sizeof out, "%s/only-bad", dir1);
    close(open(out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    chmod(out, 0644);
    snprintf(path_env, sizeof path_env, "PATH=%s:%s", dir1, dir2);

    rc = pspawn_resolve("prog", envp, out, sizeof out);
    snprintf(want, sizeof want, "%s/prog", dir2);
    tap_ok(rc == 0 && strcmp(out, want) == 0,
           "pspawn_resolve: skips a non-executable match, finds the next (%s, %s)",
           errname(rc), rc == 0 ? out : "-");
    rc = pspawn_resolve("only-bad", envp, out, sizeof out);
    tap_ok(rc == EACCES, "pspawn_resolve: only a non-executable match gives EACCES (%s)",
           errname(rc));
    rc = pspawn_resolve("no-such-program", envp, out, sizeof out);
    tap_ok(rc == ENOENT, "pspawn_resolve: no match gives ENOENT (%s)", errname(rc));
    rc = pspawn_resolve("./some/relative", envp, out, sizeof out);
    tap_ok(rc == 0 && strcmp(out, "./some/relative") == 0,
           "pspawn_resolve: a name with a slash is not searched (%s, %s)", errname(rc),
           rc == 0 ? out : "-");
    rc = pspawn_resolve("sh", no_path, out, sizeof out);
    tap_ok(rc == 0 && (strcmp(out, "/bin/sh") == 0 || strcmp(out, "/usr/bin/sh") == 0),
           "pspawn_resolve: without PATH, the default search path (%s, %s)", errname(rc),
           rc == 0 ? out : "-");
    rc = pspawn_resolve("prog", envp, small, sizeof small);
    tap_ok(rc == ENAMETOOLONG, "pspawn_resolve: a result longer than OUTLEN gives ENAMETOOLONG (%s)",
           errname(rc));

    snprintf(out, sizeof out, "%s/prog", dir1);
    unlink(out);
    snprintf(out, sizeof out, "%s/only-bad", dir1);
    unlink(out);
    snprintf(out, sizeof out, "%s/prog", dir2);
    unlink(out);
    rmdir(dir1);
    rmdir(dir2);
}

/* A copy of the task program without its x bit, in path. */
static void copy_not_executable(const char *task, char *path, size_t size)
{
    char buf[65536];
    int in = open(task, O_RDONLY | O_CLOEXEC), out;
    ssize_t n;
    snprintf(path, size, "%s/not-executable", tmpdir);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            break;
    close(in);
    close(out);
    chmod(path, 0644);
}

static void case_program_errors(const char *task)
{
    char path[PATH_MAX], line[PATH_MAX + 16];

    snprintf(path, sizeof path, "%s/missing", tmpdir);
    check_program_error("missing program", path, ENOENT);

    copy_not_executable(task, path, sizeof path);
    check_program_error("mode 0644", path, EACCES);

    snprintf(path, sizeof path, "%s/directory", tmpdir);
    mkdir(path, 0755);
    check_program_error("a directory", path, EACCES);

    write_file("garbage", "this is not a program\n", 0755, path, sizeof path);
    check_program_error("not a program (x bit set)", path, ENOEXEC);

    write_file("empty", "", 0755, path, sizeof path);
    check_program_error("empty file (x bit set)", path, ENOEXEC);

    write_file("no-interpreter", "#!/nonexistent/interpreter -x\n", 0755, path, sizeof path);
    check_program_error("#! with a missing interpreter", path, ENOENT);

    snprintf(line, sizeof line, "#!%s/garbage-ro\n", tmpdir);
    write_file("garbage-ro", "not a program\n", 0644, path, sizeof path);
    write_file("bad-interpreter", line, 0755, path, sizeof path);
    check_program_error("#! with an interpreter that is not executable", path, EACCES);
}

/* 8 MB in all, in strings each under MAX_ARG_STRLEN: over ARG_MAX as
 * arguments, then as environment. */
static void case_8mb_of_args_and_env(pspawn_context_t *ctx, char *task, char *const argv_exit0[])
{
    enum { NMANY = 80, MANYLEN = 100000 };
    char *many[NMANY + 2];

    many[0] = task;
    for (int i = 1; i <= NMANY; i++)
        many[i] = repeat_char('m', MANYLEN);
    many[NMANY + 1] = NULL;
    check_args(ctx, task, "8 MB of arguments", many, NULL, E2BIG);
    for (int i = 1; i <= NMANY; i++) {
        free(many[i]);
        many[i] = repeat_char('m', MANYLEN);
        memcpy(many[i], "E=", 2);
    }
    check_args(ctx, task, "8 MB of environment", argv_exit0, many + 1, E2BIG);
    for (int i = 1; i <= NMANY; i++)
        free(many[i]);
}

static void case_argument_sizes(pspawn_context_t *ctx, char *task)
{
    /* MAX_ARG_STRLEN is 32 pages, NUL included. */
    long page = sysconf(_SC_PAGESIZE);
    char *fits = repeat_char('a', (size_t)(32 * page - 1));
    char *over = repeat_char('b', (size_t)(32 * page));
    char *big = repeat_char('c', 200000);
    char *argv_fits[] = { task, "append", "/dev/null", fits, NULL };
    char *argv_over[] = { task, "append", "/dev/null", over, NULL };
    char *argv_big[] = { task, "append", "/dev/null", big, NULL };
    char *argv_exit0[] = { task, "exit", "0", NULL };
    char *env_big[] = { "A=1", NULL, NULL };
    char *env_str = malloc(200000 + 3);

    if (!env_str)
        tap_bail("out of memory");
    memcpy(env_str, "B=", 2);
    memset(env_str + 2, 'e', 200000);
    env_str[200002] = '\0';
    env_big[1] = env_str;

    check_args(ctx, task, "argument of MAX_ARG_STRLEN-1 bytes", argv_fits, NULL, 0);
    check_args(ctx, task, "argument of MAX_ARG_STRLEN bytes", argv_over, NULL, E2BIG);
    check_args(ctx, task, "argument of 200000 bytes", argv_big, NULL, E2BIG);
    check_args(ctx, task, "environment string of 200000 bytes", argv_exit0, env_big, E2BIG);
    case_8mb_of_args_and_env(ctx, task, argv_exit0);

    check_paper_calls(ctx, task, big);
    check_vector(ctx, task, big);
    check_mempolicy(ctx, task);

    tap_ok(pspawn_context_uses_zygote(ctx) && !pspawn_context_reason(ctx),
           "argument errors did not make the context fall back");
    free(fits);
    free(over);
    free(big);
    free(env_str);
}

static void remove_tmpdir(void)
{
    static const char *const names[] = {
        "not-executable", "garbage", "empty", "no-interpreter", "garbage-ro",
        "bad-interpreter",
    };
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/directory", tmpdir);
    rmdir(path);
    rmdir(tmpdir);
}

int main(void)
{
    const char *b = getenv("TESTS_BUILDDIR");
    char task[PATH_MAX];
    pspawn_context_t ctx;
    pid_t zygote;
    int rc;

    tap_watchdog(120);
    if (!b)
        tap_bail("TESTS_BUILDDIR is not set");
    snprintf(task, sizeof task, "%s/task", b);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pspawn-errors.XXXXXX");
    if (!mkdtemp(tmpdir))
        tap_bail("mkdtemp: %s", strerror(errno));

    case_program_errors(task);
    check_resolve(task);

    rc = pspawn_context_create(&ctx, task, -1);
    if (rc != 0)
        tap_bail("pspawn_context_create(%s): %s", task, strerror(rc));
    zygote = pspawn_context_zygote_pid(&ctx);
    case_argument_sizes(&ctx, task);
    tap_ok(count_children(zygote) == 0, "argument errors: no process left behind but the zygote");
    pspawn_context_destroy(&ctx);

    remove_tmpdir();
    return tap_done();
}
