/*
 * parity-api - a task created from the zygote must be indistinguishable
 * from one created by exec.
 *
 * The probe (tests/fixtures/probe.c) is launched three ways with the same argv,
 * envp, fds, cwd, umask, rlimits, signal state, process group and CPU set:
 *   zygote     pspawn_ex() / pspawn() / pspawn_n() / pspawn_vector()
 *   exec       pspawn_exec() (the library's own exec path, its fallback)
 *   reference  posix_spawn(3), set up by hand to give the same result
 * and the zygote and exec reports are compared with the reference group
 * by group (one TAP line per group), with the differing keys on failure.
 *
 * The launcher changes its own state (umask, cwd, signals, rlimits,
 * affinity, nice, open fds) after one zygote has started and before
 * another starts, so a task must reflect the launcher's state at spawn
 * time, never the zygote's.
 *
 * Usage: parity-api [PROBE]   (default: $TESTS_BUILDDIR/probe)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/mempolicy.h>
#include <linux/seccomp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pspawn.h"
#include "../fixtures/tap.h"

extern char **environ;

/* ---- reports ------------------------------------------------------------ */

struct report {
    int n;
    char **key;
    char **val;
    int complete;
};

static const char *const groups[] = {
    "argv", "env", "progname", "cmdline", "exe", "fd", "sig", "sigmask",
    "cwd", "umask", "rlimit", "pgrp", "cpus", "threads", "globals",
    "parent", "sched", "misc", "other",
};
#define NGROUPS (sizeof groups / sizeof groups[0])

static void report_free(struct report *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->key[i]);
        free(r->val[i]);
    }
    free(r->key);
    free(r->val);
    memset(r, 0, sizeof *r);
}

/* Parse one report starting at *TEXT; advance *TEXT past it.  Returns 0 if
 * there was none left. */
static int report_parse(struct report *r, const char **text)
{
    const char *p = strstr(*text, "probe=begin\n");

    memset(r, 0, sizeof *r);
    if (!p)
        return 0;
    p += strlen("probe=begin\n");
    while (*p) {
        const char *nl = strchr(p, '\n'), *eq;
        size_t len = nl ? (size_t)(nl - p) : strlen(p);

        if (len == strlen("probe=end") && strncmp(p, "probe=end", len) == 0) {
            r->complete = 1;
            p += len + (nl ? 1 : 0);
            break;
        }
        if (len == strlen("probe=begin") && strncmp(p, "probe=begin", len) == 0)
            break;
        eq = memchr(p, '=', len);
        if (eq) {
            r->key = realloc(r->key, (size_t)(r->n + 1) * sizeof *r->key);
            r->val = realloc(r->val, (size_t)(r->n + 1) * sizeof *r->val);
            if (!r->key || !r->val)
                tap_bail("out of memory");
            r->key[r->n] = strndup(p, (size_t)(eq - p));
            r->val[r->n] = strndup(eq + 1, len - (size_t)(eq - p) - 1);
            r->n++;
        }
        p += len + (nl ? 1 : 0);
    }
    *text = p;
    return 1;
}

static const char *report_get(const struct report *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0)
            return r->val[i];
    return NULL;
}

/* The group of KEY: what precedes the first '.', "other" for an unknown
 * one, NULL for keys never compared ("x.*"). */
static const char *group_of(const char *key)
{
    size_t len = strcspn(key, ".");

    if (len == 1 && key[0] == 'x')
        return NULL;
    for (size_t g = 0; g < NGROUPS; g++)
        if (strlen(groups[g]) == len && strncmp(groups[g], key, len) == 0)
            return groups[g];
    return groups[NGROUPS - 1];     /* "other" */
}

static void diag_value(const char *what, const char *v)
{
    if (!v)
        tap_diag("      %s: (absent)", what);
    else if (strlen(v) > 160)
        tap_diag("      %s: %.160s... (%zu bytes)", what, v, strlen(v));
    else
        tap_diag("      %s: %s", what, v);
}

/* One TAP line per group: GOT (from METHOD) against REF (posix_spawn). */
static void compare_reports(const char *label, const char *method,
                            const struct report *got, const struct report *ref,
                            int skip_cmdline)
{
    for (size_t g = 0; g < NGROUPS; g++) {
        int bad = 0;

        if (skip_cmdline && strcmp(groups[g], "cmdline") == 0)
            continue;
        for (int pass = 0; pass < 2; pass++) {
            const struct report *a = pass ? got : ref, *b = pass ? ref : got;
            for (int i = 0; i < a->n; i++) {
                const char *grp = group_of(a->key[i]), *other;
                if (!grp || grp != groups[g])
                    continue;
                other = report_get(b, a->key[i]);
                if (pass == 1 && other)
                    continue;   /* already compared in the first pass */
                if (other && strcmp(other, a->val[i]) == 0)
                    continue;
                if (bad++ == 0)
                    printf("not ok %d - %s: %s: %s as after exec\n", ++tap_count,
                           label, method, groups[g]);
                if (bad <= 6) {
                    tap_diag("    %s", a->key[i]);
                    diag_value(method, pass ? a->val[i] : other);
                    diag_value("posix_spawn", pass ? other : a->val[i]);
                }
            }
        }
        if (bad > 6)
            tap_diag("    ... %d differences in all", bad);
        if (bad)
            tap_failed++;
        else
            tap_ok(1, "%s: %s: %s as after exec", label, method, groups[g]);
    }
}

/* ---- scenarios ---------------------------------------------------------- */

static const unsigned long node0 = 1;  /* a nodemask with node 0 */

/* set_mempolicy(2) with libnuma's maxnode convention (one bit more). */
static int set_mempolicy_node0(int mode)
{
    return (int)syscall(SYS_set_mempolicy, mode, mode ? &node0 : NULL,
                        mode ? 8 * sizeof node0 + 1 : 0UL);
}

enum fa_kind { FA_DUP2, FA_OPEN, FA_CLOSE, FA_INHERIT };

struct file_action {
    enum fa_kind kind;
    int fd;
    int src;            /* FA_DUP2: the launcher's fd */
    const char *path;   /* FA_OPEN */
    int oflag;
    mode_t mode;
};

/* Everything a launcher can ask for a task, described once and turned
 * into a pspawn attribute and into the equivalent posix_spawn setup. */
struct scenario {
    const char *name;
    char **argv;
    char **envp;            /* NULL: environ */
    int null_attr;          /* pass attr NULL to pspawn_ex/pspawn_exec */
    struct file_action fa[8];
    int nfa;
    const char *cwd;
    int set_umask;
    mode_t umask;
    struct { int res; struct rlimit rl; } rl[4];
    int nrl;
    int set_sigmask;
    sigset_t sigmask;
    int set_sigdef;
    sigset_t sigdef;
    int set_pgroup;
    pid_t pgroup;
    int setsid;
    int set_cpus;
    cpu_set_t cpus;
    int set_mempolicy;      /* mode, over node 0 */
    int mempolicy;
    int skip_cmdline;       /* argv too long to fit in place */
};

static void scenario_attr(const struct scenario *sc, pspawn_attr_t *attr,
                          unsigned flags)
{
    int rc = pspawn_attr_init(attr);

    for (int i = 0; rc == 0 && i < sc->nfa; i++) {
        const struct file_action *a = &sc->fa[i];
        switch (a->kind) {
        case FA_DUP2: rc = pspawn_attr_adddup2(attr, a->src, a->fd); break;
        case FA_OPEN: rc = pspawn_attr_addopen(attr, a->fd, a->path, a->oflag, a->mode); break;
        case FA_CLOSE: rc = pspawn_attr_addclose(attr, a->fd); break;
        case FA_INHERIT: rc = pspawn_attr_addinherit(attr, a->fd); break;
        }
    }
    if (rc == 0 && sc->cwd)
        rc = pspawn_attr_setcwd(attr, sc->cwd);
    if (rc == 0 && sc->set_umask)
        rc = pspawn_attr_setumask(attr, sc->umask);
    for (int i = 0; rc == 0 && i < sc->nrl; i++)
        rc = pspawn_attr_setrlimit(attr, sc->rl[i].res, &sc->rl[i].rl);
    if (rc == 0 && sc->set_sigmask)
        rc = pspawn_attr_setsigmask(attr, &sc->sigmask);
    if (rc == 0 && sc->set_sigdef)
        rc = pspawn_attr_setsigdefault(attr, &sc->sigdef);
    if (rc == 0 && sc->set_pgroup)
        rc = pspawn_attr_setpgroup(attr, sc->pgroup);
    if (rc == 0 && sc->setsid)
        rc = pspawn_attr_setsid(attr);
    if (rc == 0 && sc->set_cpus)
        rc = pspawn_attr_setcpuset(attr, sizeof sc->cpus, &sc->cpus);
    if (rc == 0 && sc->set_mempolicy)
        rc = pspawn_attr_setmempolicy(attr, sc->mempolicy, &node0, 1);
    if (rc == 0 && flags)
        rc = pspawn_attr_setflags(attr, flags);
    if (rc != 0)
        tap_bail("%s: building the pspawn attributes: %s", sc->name, strerror(rc));
}

/* The reference: posix_spawn with file actions and attributes that give
 * what pspawn promises (fds 0-2, then the actions in order, every other
 * fd closed), and the launcher's own umask, rlimits and affinity set for
 * the duration of the call where posix_spawn has no attribute for them. */
static int reference_spawn(pid_t *pid, const char *path, const struct scenario *sc)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t sa;
    int keep[64] = { 1, 1, 1 }, maxfd = 2, rc;
    short flags = 0;
    mode_t old_umask = 0;
    struct rlimit old_rl[4];
    cpu_set_t old_cpus;
    int old_mode = 0;
    unsigned long old_nodes[1024 / (8 * sizeof(unsigned long))] = { 0 };

    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&sa);
    for (int i = 0; i < sc->nfa; i++) {
        const struct file_action *a = &sc->fa[i];
        switch (a->kind) {
        case FA_DUP2: posix_spawn_file_actions_adddup2(&fa, a->src, a->fd); keep[a->fd] = 1; break;
        case FA_OPEN: posix_spawn_file_actions_addopen(&fa, a->fd, a->path, a->oflag, a->mode); keep[a->fd] = 1; break;
        case FA_CLOSE: posix_spawn_file_actions_addclose(&fa, a->fd); keep[a->fd] = 0; break;
        /* dup2 onto itself clears FD_CLOEXEC (glibc >= 2.29) */
        case FA_INHERIT: posix_spawn_file_actions_adddup2(&fa, a->fd, a->fd); keep[a->fd] = 1; break;
        }
        if (a->fd > maxfd)
            maxfd = a->fd;
    }
    for (int fd = 3; fd <= maxfd; fd++)
        if (!keep[fd])
            posix_spawn_file_actions_addclose(&fa, fd);
    posix_spawn_file_actions_addclosefrom_np(&fa, maxfd + 1);
    if (sc->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, sc->cwd);
    if (sc->set_sigmask) {
        posix_spawnattr_setsigmask(&sa, &sc->sigmask);
        flags |= POSIX_SPAWN_SETSIGMASK;
    }
    if (sc->set_sigdef) {
        posix_spawnattr_setsigdefault(&sa, &sc->sigdef);
        flags |= POSIX_SPAWN_SETSIGDEF;
    }
    if (sc->set_pgroup) {
        posix_spawnattr_setpgroup(&sa, sc->pgroup);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    if (sc->setsid)
        flags |= POSIX_SPAWN_SETSID;
    posix_spawnattr_setflags(&sa, flags);

    if (sc->set_umask)
        old_umask = umask(sc->umask);
    for (int i = 0; i < sc->nrl; i++) {
        getrlimit(sc->rl[i].res, &old_rl[i]);
        if (setrlimit(sc->rl[i].res, &sc->rl[i].rl) != 0)
            tap_bail("setrlimit(%d): %s", sc->rl[i].res, strerror(errno));
    }
    if (sc->set_cpus) {
        sched_getaffinity(0, sizeof old_cpus, &old_cpus);
        sched_setaffinity(0, sizeof sc->cpus, &sc->cpus);
    }
    if (sc->set_mempolicy) {
        if (syscall(SYS_get_mempolicy, &old_mode, old_nodes, 1024UL, NULL, 0UL) != 0 ||
            set_mempolicy_node0(sc->mempolicy) != 0)
            tap_bail("%s: set_mempolicy: %s", sc->name, strerror(errno));
    }

    rc = posix_spawn(pid, path, &fa, &sa, sc->argv, sc->envp ? sc->envp : environ);

    if (sc->set_mempolicy)
        syscall(SYS_set_mempolicy, old_mode, old_nodes, 1025UL);
    if (sc->set_cpus)
        sched_setaffinity(0, sizeof old_cpus, &old_cpus);
    for (int i = sc->nrl - 1; i >= 0; i--)
        setrlimit(sc->rl[i].res, &old_rl[i]);
    if (sc->set_umask)
        umask(old_umask);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&sa);
    return rc;
}

/* ---- running the probe -------------------------------------------------- */

static char tmpdir[256];
static char capture_path[PATH_MAX];
static int saved_stdout = -1;

/* The probe writes to the launcher's fd 1, which is pointed at the same
 * capture file (same path, so the same fd 1 target) for every run. */
static void capture_begin(void)
{
    int fd;

    fflush(stdout);
    fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        tap_bail("open %s: %s", capture_path, strerror(errno));
    saved_stdout = fcntl(1, F_DUPFD_CLOEXEC, 40);
    dup2(fd, 1);
    close(fd);
}

static void capture_end(void)
{
    dup2(saved_stdout, 1);
    close(saved_stdout);
}

/* What the tasks wrote; call once they have been reaped. */
static char *capture_read(void)
{
    FILE *f;
    char *text;
    long len;

    f = fopen(capture_path, "re");
    if (!f)
        tap_bail("open %s: %s", capture_path, strerror(errno));
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = malloc((size_t)len + 1);
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len)
        tap_bail("reading %s", capture_path);
    text[len] = '\0';
    fclose(f);
    return text;
}

static const char *wait_status(pid_t pid, int *ok)
{
    static char buf[64];
    int st;

    if (waitpid(pid, &st, 0) != pid) {
        snprintf(buf, sizeof buf, "waitpid: %s", strerror(errno));
        *ok = 0;
    } else if (WIFEXITED(st)) {
        snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(st));
        *ok = WEXITSTATUS(st) == 0;
    } else {
        snprintf(buf, sizeof buf, "signal %d", WTERMSIG(st));
        *ok = 0;
    }
    return buf;
}

enum method { ZYGOTE, EXEC, REFERENCE };
static const char *const method_name[] = { "zygote", "pspawn_exec", "posix_spawn" };

/* Launch the probe once by METHOD and parse its report.  Prints one TAP
 * line for the launch itself unless METHOD is the reference (a failed
 * reference is a broken test: bail out). */
static void run_probe(enum method m, pspawn_context_t *ctx, const char *path,
                      const struct scenario *sc, struct report *r)
{
    pspawn_attr_t attr;
    pid_t pid = -1;
    int rc, ok = 0;
    const char *st = "not started";
    char *text;
    const char *p;

    if (!sc->null_attr)
        scenario_attr(sc, &attr, 0);
    capture_begin();
    switch (m) {
    case ZYGOTE:
        rc = pspawn_ex(&pid, ctx, sc->null_attr ? NULL : &attr, sc->argv, sc->envp);
        break;
    case EXEC:
        rc = pspawn_exec(&pid, path, sc->null_attr ? NULL : &attr, sc->argv, sc->envp);
        break;
    default:
        rc = reference_spawn(&pid, path, sc);
        break;
    }
    capture_end();
    if (!sc->null_attr)
        pspawn_attr_destroy(&attr);
    if (rc == 0)
        st = wait_status(pid, &ok);
    text = capture_read();
    p = text;
    report_parse(r, &p);
    if (m == REFERENCE) {
        if (rc != 0 || !ok || !r->complete)
            tap_bail("%s: the reference posix_spawn run failed: %s, %s", sc->name,
                     rc ? strerror(rc) : "spawned", st);
    } else {
        tap_ok(rc == 0 && ok && r->complete, "%s: %s: spawned, exited 0, full report",
               sc->name, method_name[m]);
        if (rc != 0)
            tap_diag("    spawn returned %d (%s)", rc, strerror(rc));
        else if (!ok || !r->complete)
            tap_diag("    task: %s; report %s", st, r->complete ? "complete" : "incomplete");
    }
    free(text);
}

/* The fast path was really taken: no fallback, and the task is a copy of
 * the zygote (the proxy is mapped in it, never in an exec'd task). */
static void check_served_by_zygote(const char *label, const pspawn_context_t *ctx,
                                   const struct report *r)
{
    const char *reason = pspawn_context_reason(ctx);
    const char *mapped = report_get(r, "x.proxy_mapped");

    tap_ok(pspawn_context_uses_zygote(ctx) && !reason && mapped && strcmp(mapped, "1") == 0,
           "%s: served by the zygote (no fallback, task forked from it)", label);
    if (reason)
        tap_diag("    fallback reason: %s", reason);
    if (!mapped || strcmp(mapped, "1") != 0)
        tap_diag("    the proxy is not mapped in the task: it was exec'd");
}

/* The whole comparison for one scenario: reference, zygote, pspawn_exec. */
static void check_scenario(pspawn_context_t *ctx, const char *path,
                           const struct scenario *sc)
{
    struct report ref, got;

    run_probe(REFERENCE, NULL, path, sc, &ref);

    run_probe(ZYGOTE, ctx, path, sc, &got);
    check_served_by_zygote(sc->name, ctx, &got);
    compare_reports(sc->name, "zygote", &got, &ref, sc->skip_cmdline);
    report_free(&got);

    run_probe(EXEC, NULL, path, sc, &got);
    compare_reports(sc->name, "pspawn_exec", &got, &ref, sc->skip_cmdline);
    report_free(&got);

    report_free(&ref);
}

/* pspawn() and pspawn_n(): the paper's calls, caller's state throughout. */
static void check_paper_calls(pspawn_context_t *ctx, const char *path)
{
    char *argv[] = { (char *)path, "paper", "call", NULL };
    struct scenario sc = { .name = "pspawn_n", .argv = argv, .null_attr = 1 };
    struct report ref, got[4];
    pid_t pids[3] = { -1, -1, -1 }, pid;
    char *text;
    const char *p;
    int rc, all_ok = 1, nrep = 0;

    run_probe(REFERENCE, NULL, path, &sc, &ref);

    capture_begin();
    rc = pspawn_n(pids, ctx, 3, argv);
    capture_end();
    for (int i = 0; i < 3; i++) {
        int ok = 0;
        const char *st = pids[i] > 0 ? wait_status(pids[i], &ok) : "no pid";
        if (!ok) {
            tap_diag("    task %d: %s", i, st);
            all_ok = 0;
        }
    }
    tap_ok(rc == 0 && all_ok, "pspawn_n: 3 tasks spawned and exited 0 (rc %d)", rc);
    text = capture_read();
    p = text;
    while (nrep < 3 && report_parse(&got[nrep], &p))
        nrep++;
    tap_ok(nrep == 3, "pspawn_n: 3 reports (got %d)", nrep);
    for (int i = 0; i < nrep; i++) {
        char label[32];
        snprintf(label, sizeof label, "pspawn_n[%d]", i);
        check_served_by_zygote(label, ctx, &got[i]);
    }
    for (int i = 0; i < nrep; i++) {
        char label[32];
        snprintf(label, sizeof label, "pspawn_n[%d]", i);
        compare_reports(label, "zygote", &got[i], &ref, 0);
        report_free(&got[i]);
    }
    free(text);

    capture_begin();
    pid = pspawn(ctx, argv);
    rc = pid < 0 ? errno : 0;
    capture_end();
    {
        int ok = 0;
        const char *st = pid > 0 ? wait_status(pid, &ok) : strerror(rc);
        tap_ok(pid > 0 && ok, "pspawn: spawned and exited 0 (%s)", st);
    }
    text = capture_read();
    p = text;
    report_parse(&got[0], &p);
    check_served_by_zygote("pspawn", ctx, &got[0]);
    compare_reports("pspawn", "zygote", &got[0], &ref, 0);
    report_free(&got[0]);
    free(text);
    report_free(&ref);
}

/* pidfd of a vector task: must refer to that task. */
static int pidfd_matches(int pidfd, pid_t pid)
{
    char path[64], buf[4096], *p;
    FILE *f;
    long got = -1;

    if (pidfd < 0)
        return 0;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f))
        if ((p = strstr(buf, "Pid:")) == buf)
            got = strtol(p + 4, NULL, 10);
    fclose(f);
    return got == (long)pid;
}

/* pspawn_vector: per-task argv, envp and CPU set over a shared attribute
 * and envp; through the zygote and with PSPAWN_FORCE_EXEC. */
static void check_vector(pspawn_context_t *ctx, const char *path, int data_fd,
                         const cpu_set_t *first, const cpu_set_t *last,
                         char *expect_ppid)
{
    char *argv0[] = { (char *)path, "vec0", NULL };
    char *argv1[] = { (char *)path, "vec1", "second", NULL };
    char *env0[] = { "VEC=task0", expect_ppid, NULL };
    char *envcall[] = { "VEC=call", "OTHER=x", expect_ppid, NULL };
    /* The shared attribute, and the two tasks as plain scenarios. */
    struct scenario shared = {
        .name = "vector", .nfa = 1, .fa = { { FA_DUP2, 5, data_fd, NULL, 0, 0 } },
        .set_umask = 1, .umask = 0007, .set_cpus = 1, .cpus = *last,
    };
    struct scenario sc[2];
    pspawn_attr_t attr;

    sc[0] = shared;
    sc[0].argv = argv0;
    sc[0].envp = env0;
    sc[0].cpus = *first;
    sc[1] = shared;
    sc[1].argv = argv1;
    sc[1].envp = envcall;

    for (int force = 0; force < 2; force++) {
        const char *method = force ? "vector+FORCE_EXEC" : "vector";
        struct report ref[2], got[2];
        pspawn_task_t tasks[2];
        char *text;
        const char *p;
        int rc, nrep = 0, all_ok = 1;

        memset(tasks, 0, sizeof tasks);
        tasks[0].argv = argv0;
        tasks[0].envp = env0;
        tasks[0].cpuset = first;
        tasks[0].cpusetsize = sizeof *first;
        tasks[1].argv = argv1;
        for (int i = 0; i < 2; i++)
            run_probe(REFERENCE, NULL, path, &sc[i], &ref[i]);

        scenario_attr(&shared, &attr, PSPAWN_PIDFD | (force ? PSPAWN_FORCE_EXEC : 0));
        capture_begin();
        rc = pspawn_vector(ctx, tasks, 2, &attr, envcall);
        capture_end();
        pspawn_attr_destroy(&attr);
        /* Before reaping: the pidfd of a reaped task shows no pid. */
        tap_ok(pidfd_matches(tasks[0].pidfd, tasks[0].pid) &&
               pidfd_matches(tasks[1].pidfd, tasks[1].pid),
               "%s: PSPAWN_PIDFD gives each task a pidfd for its pid", method);
        for (int i = 0; i < 2; i++) {
            int ok = 0;
            const char *st = tasks[i].pid > 0 ? wait_status(tasks[i].pid, &ok) : "no pid";
            if (!ok || tasks[i].error) {
                tap_diag("    task %d: error %d, %s", i, tasks[i].error, st);
                all_ok = 0;
            }
        }
        tap_ok(rc == 0 && all_ok, "%s: 2 tasks spawned and exited 0 (rc %d)", method, rc);
        for (int i = 0; i < 2; i++)
            if (tasks[i].pidfd >= 0)
                close(tasks[i].pidfd);
        text = capture_read();
        p = text;
        memset(got, 0, sizeof got);
        while (nrep < 2) {
            struct report r;
            const char *a1;
            if (!report_parse(&r, &p))
                break;
            a1 = report_get(&r, "argv.1");
            if (a1 && strcmp(a1, "vec0") == 0 && !got[0].n)
                got[0] = r;
            else if (a1 && strcmp(a1, "vec1") == 0 && !got[1].n)
                got[1] = r;
            else
                report_free(&r);
            nrep++;
        }
        tap_ok(got[0].n && got[1].n, "%s: one report from each task", method);
        for (int i = 0; i < 2; i++) {
            char label[40];
            snprintf(label, sizeof label, "%s[%d]", method, i);
            if (!force)
                check_served_by_zygote(label, ctx, &got[i]);
            else
                tap_ok(report_get(&got[i], "x.proxy_mapped") &&
                       strcmp(report_get(&got[i], "x.proxy_mapped"), "0") == 0,
                       "%s: exec'd (PSPAWN_FORCE_EXEC)", label);
            compare_reports(label, force ? "pspawn_exec" : "zygote", &got[i], &ref[i], 0);
            report_free(&got[i]);
            report_free(&ref[i]);
        }
        free(text);
    }
}

/* ---- the launcher's own state ------------------------------------------- */

static mode_t orig_umask;
static int have_numa;           /* set_mempolicy works here */
static int orig_personality, orig_ioprio, orig_timerslack;
static char orig_cwd[PATH_MAX];
static struct rlimit orig_nofile, orig_core;
static cpu_set_t orig_cpus;

static void on_usr1(int sig)
{
    (void)sig;
}

/* What a real launcher often has: signals ignored, handled and blocked, a
 * umask, a cwd, rlimits, a binding and a memory policy of its own; and
 * what fork and exec both keep: personality, THP switch, I/O priority,
 * timer slack. */
static void launcher_state_change(const cpu_set_t *first)
{
    struct sigaction sa;
    struct rlimit rl;
    sigset_t set;

    umask(027);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (chdir(tmpdir) != 0)
        tap_bail("chdir %s: %s", tmpdir, strerror(errno));
    rl = orig_nofile;
    rl.rlim_cur = rl.rlim_max < 4000 ? rl.rlim_max : 4000;
    setrlimit(RLIMIT_NOFILE, &rl);
    rl = orig_core;
    rl.rlim_cur = rl.rlim_max < 1 << 20 ? rl.rlim_max : 1 << 20;
    setrlimit(RLIMIT_CORE, &rl);
    sched_setaffinity(0, sizeof *first, first);
    if (have_numa && set_mempolicy_node0(MPOL_PREFERRED) != 0)
        tap_bail("set_mempolicy(MPOL_PREFERRED): %s", strerror(errno));
    if (personality((unsigned long)orig_personality | ADDR_NO_RANDOMIZE) < 0 ||
        prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 ||
        syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 7) != 0 ||   /* best effort, lowest */
        prctl(PR_SET_TIMERSLACK, 123456, 0, 0, 0) != 0)
        tap_bail("personality, THP, ioprio or timer slack: %s", strerror(errno));
    /* Raising nice needs no privilege; it is not undone. */
    errno = 0;
    if (nice(1) == -1 && errno)
        tap_diag("nice(1): %s", strerror(errno));
}

static void launcher_state_restore(void)
{
    struct sigaction sa;
    sigset_t set;

    umask(orig_umask);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    if (chdir(orig_cwd) != 0)
        tap_bail("chdir %s: %s", orig_cwd, strerror(errno));
    setrlimit(RLIMIT_NOFILE, &orig_nofile);
    setrlimit(RLIMIT_CORE, &orig_core);
    sched_setaffinity(0, sizeof orig_cpus, &orig_cpus);
    if (have_numa)
        set_mempolicy_node0(MPOL_DEFAULT);
    personality((unsigned long)orig_personality);
    prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    syscall(SYS_ioprio_set, 1, 0, orig_ioprio);
    prctl(PR_SET_TIMERSLACK, (unsigned long)orig_timerslack, 0, 0, 0);
}

/* ---- helpers ------------------------------------------------------------ */

static int open_at(const char *name, int oflag, int want_fd)
{
    char path[PATH_MAX];
    int fd, moved;

    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    fd = open(path, oflag, 0644);
    if (fd < 0)
        tap_bail("open %s: %s", path, strerror(errno));
    if (fd == want_fd)
        return fd;
    moved = dup3(fd, want_fd, oflag & O_CLOEXEC);
    if (moved < 0)
        tap_bail("dup3: %s", strerror(errno));
    close(fd);
    return moved;
}

static void write_script(const char *name, const char *interp_line)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    f = fopen(path, "we");
    if (!f || fprintf(f, "%s\necho never reached\n", interp_line) < 0 || fclose(f) != 0)
        tap_bail("writing %s", path);
    chmod(path, 0755);
}

static void context_create(pspawn_context_t *ctx, const char *path)
{
    int rc = pspawn_context_create(ctx, path, -1);

    if (rc != 0)
        tap_bail("pspawn_context_create(%s): %s", path, strerror(rc));
}

static char *repeat_char(char c, size_t n)
{
    char *s = malloc(n + 1);

    if (!s)
        tap_bail("out of memory");
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void remove_tmpdir(void)
{
    static const char *const names[] = {
        "out", "data.txt", "inherit.txt", "stray.txt", "stray-cloexec.txt",
        "created.txt", "script-opt", "script-plain",
    };
    char path[PATH_MAX];

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/sub", tmpdir);
    rmdir(path);
    if (rmdir(tmpdir) != 0)
        tap_diag("rmdir %s: %s", tmpdir, strerror(errno));
}

/* ---- privileges the launcher gives up ----------------------------------- */

/* exec keeps no_new_privs and memory-deny-write-execute (Linux 6.3): a
 * launcher that set one (prctl OPTION, 1) after its zygote started must
 * not get tasks without it.  KEY is the probe's report of it. */
static void check_gained(pspawn_context_t *ctx, const char *probe, const char *name,
                         int option, const char *key)
{
    char *args[] = { (char *)probe, (char *)key, NULL };
    struct scenario sc = { .name = name, .argv = args, .null_attr = 1 };
    struct report ref;
    const char *v;

    if (prctl(option, 1, 0, 0, 0) != 0) {
        if (option == PR_SET_NO_NEW_PRIVS)
            tap_bail("%s: prctl: %s", name, strerror(errno));
        tap_skip(strerror(errno), "%s: prctl does not work here", name);
        return;
    }
    check_scenario(ctx, probe, &sc);
    run_probe(REFERENCE, NULL, probe, &sc, &ref);
    v = report_get(&ref, key);
    tap_ok(v && strcmp(v, "1") == 0,
           "%s: the reference task has it (the comparison means something)", name);
    report_free(&ref);
}

/* A launcher that put itself under a seccomp filter after its zygote
 * started: a fork of the zygote would escape the filter, so the task is
 * exec'd (and is under it), and the reason says why. */
static void check_seccomp(pspawn_context_t *ctx, const char *probe)
{
    char *args[] = { (char *)probe, "seccomp", NULL };
    struct scenario sc = { .name = "launcher under a seccomp filter", .argv = args,
                           .null_attr = 1 };
    struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
    struct sock_fprog prog = { 1, allow };
    struct report ref, got;
    const char *mapped, *reason;

    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        tap_bail("PR_SET_SECCOMP: %s", strerror(errno));
    run_probe(REFERENCE, NULL, probe, &sc, &ref);
    run_probe(ZYGOTE, ctx, probe, &sc, &got);
    compare_reports(sc.name, "zygote", &got, &ref, 0);
    mapped = report_get(&got, "x.proxy_mapped");
    reason = pspawn_context_reason(ctx);
    tap_ok(mapped && strcmp(mapped, "0") == 0 && reason && strstr(reason, "seccomp"),
           "%s: the task was exec'd, and the reason says why", sc.name);
    tap_diag("    reason: %s", reason ? reason : "(none)");
    report_free(&got);
    report_free(&ref);
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *builddir = getenv("TESTS_BUILDDIR");
    char probe[PATH_MAX], script_opt[PATH_MAX], script_plain[PATH_MAX];
    char line[PATH_MAX + 8], sub[PATH_MAX], created[PATH_MAX];
    char expect_ppid[64];
    cpu_set_t first, last;
    pspawn_context_t ctx_a, ctx_b, ctx_script, ctx_plain, ctx_rel;
    int data_fd, inherit_fd, ncpus = 0, lo = -1, hi = -1;
    pid_t holder;

    tap_watchdog(200);
    if (argc > 1)
        snprintf(probe, sizeof probe, "%s", argv[1]);
    else if (builddir)
        snprintf(probe, sizeof probe, "%s/probe", builddir);
    else
        tap_bail("usage: parity-api PROBE (or set TESTS_BUILDDIR)");
    if (access(probe, X_OK) != 0)
        tap_bail("%s: %s", probe, strerror(errno));

    snprintf(tmpdir, sizeof tmpdir, "/tmp/pspawn-parity.XXXXXX");
    if (!mkdtemp(tmpdir))
        tap_bail("mkdtemp: %s", strerror(errno));
    snprintf(capture_path, sizeof capture_path, "%s/out", tmpdir);
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    mkdir(sub, 0755);
    snprintf(created, sizeof created, "%s/created.txt", tmpdir);

    orig_umask = umask(022);
    umask(orig_umask);
    if (!getcwd(orig_cwd, sizeof orig_cwd))
        tap_bail("getcwd: %s", strerror(errno));
    getrlimit(RLIMIT_NOFILE, &orig_nofile);
    getrlimit(RLIMIT_CORE, &orig_core);
    orig_personality = personality(0xffffffff);
    orig_ioprio = (int)syscall(SYS_ioprio_get, 1, 0);
    orig_timerslack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    sched_getaffinity(0, sizeof orig_cpus, &orig_cpus);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &orig_cpus)) {
            ncpus++;
            if (lo < 0)
                lo = c;
            hi = c;
        }
    CPU_ZERO(&first);
    CPU_SET(lo, &first);
    CPU_ZERO(&last);
    CPU_SET(hi, &last);
    tap_diag("probe %s, %d CPUs (%d..%d), scratch %s", probe, ncpus, lo, hi, tmpdir);
    /* Memory policies are compared where the kernel has them (CONFIG_NUMA;
     * a container's seccomp profile may forbid them). */
    have_numa = set_mempolicy_node0(MPOL_DEFAULT) == 0;
    if (!have_numa)
        tap_skip(strerror(errno), "memory policies: set_mempolicy does not work here");

    snprintf(expect_ppid, sizeof expect_ppid, "PROBE_EXPECT_PPID=%ld", (long)getpid());
    putenv(expect_ppid);

    /* A stray fd that no task may see, open before any zygote starts. */
    open_at("stray.txt", O_WRONLY | O_CREAT, 21);

    snprintf(script_opt, sizeof script_opt, "%s/script-opt", tmpdir);
    snprintf(line, sizeof line, "#!%s -x", probe);
    write_script("script-opt", line);
    snprintf(script_plain, sizeof script_plain, "%s/script-plain", tmpdir);
    snprintf(line, sizeof line, "#!%s", probe);
    write_script("script-plain", line);

    context_create(&ctx_a, probe);
    context_create(&ctx_script, script_opt);
    context_create(&ctx_plain, script_plain);

    /* ---- phase 1: the launcher as it was when the zygotes started ---- */
    {
        char *args[] = { probe, "one", "two words", "", "tab\there\nnewline",
                         "\xc3\xbcn\xc3\xaf", NULL };
        struct scenario sc = { .name = "default", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        /* A zygote pinned to one CPU while it loads: its tasks still get
         * the caller's affinity. */
        char *args[] = { probe, "pinned", NULL };
        struct scenario sc = { .name = "zygote pinned to a CPU", .argv = args, .null_attr = 1 };
        pspawn_context_t ctx_pinned;
        int rc = pspawn_context_create(&ctx_pinned, probe, hi);
        if (rc != 0)
            tap_bail("pspawn_context_create(%s, core %d): %s", probe, hi, strerror(rc));
        check_scenario(&ctx_pinned, probe, &sc);
        pspawn_context_destroy(&ctx_pinned);
    }
    {
        char *args[] = { script_opt, "s1", "s 2", NULL };
        struct scenario sc = { .name = "script with #! argument", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_script, script_opt, &sc);
    }
    {
        char *args[] = { "argv0-is-replaced", "p1", NULL };
        struct scenario sc = { .name = "script without #! argument", .argv = args, .null_attr = 1 };
        check_scenario(&ctx_plain, script_plain, &sc);
    }

    /* ---- phase 2: the launcher changed its state after the zygote started */
    launcher_state_change(&first);
    data_fd = open_at("data.txt", O_RDWR | O_CREAT, 20);
    inherit_fd = open_at("inherit.txt", O_RDONLY | O_CREAT, 9);
    open_at("stray-cloexec.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 22);
    holder = fork();
    if (holder == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, 0);
        for (;;)
            pause();
    }
    setpgid(holder, holder);

    {
        char *args[] = { probe, "state", NULL };
        char *env[] = { "A=1", "B=two words", "EMPTY=", "PATH=/usr/bin:/bin",
                        expect_ppid, NULL };
        struct scenario sc = { .name = "launcher state changed", .argv = args,
                               .envp = env, .null_attr = 1 };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        char *args[] = { probe, "attrs", NULL };
        char *env[] = { "ONLY=this", expect_ppid, NULL };
        struct scenario sc = {
            .name = "all attributes", .argv = args, .envp = env,
            .nfa = 4, .fa = {
                { FA_DUP2, 5, data_fd, NULL, 0, 0 },
                { FA_OPEN, 7, -1, "/dev/null", O_WRONLY | O_APPEND, 0 },
                { FA_INHERIT, inherit_fd, -1, NULL, 0, 0 },
                { FA_CLOSE, 0, -1, NULL, 0, 0 },
            },
            .cwd = sub, .set_umask = 1, .umask = 0077,
            .nrl = 2, .rl = {
                { RLIMIT_NOFILE, { 256, orig_nofile.rlim_max } },
                { RLIMIT_STACK, { 4 << 20, RLIM_INFINITY } },
            },
            .set_sigmask = 1, .set_sigdef = 1, .set_pgroup = 1, .pgroup = 0,
            .set_cpus = 1, .cpus = last,
            .set_mempolicy = have_numa, .mempolicy = MPOL_INTERLEAVE,
        };
        struct rlimit stack;
        getrlimit(RLIMIT_STACK, &stack);
        sc.rl[1].rl.rlim_max = stack.rlim_max;
        if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < (4 << 20))
            sc.rl[1].rl.rlim_cur = stack.rlim_max;
        sigemptyset(&sc.sigmask);
        sigaddset(&sc.sigmask, SIGUSR1);
        sigaddset(&sc.sigmask, SIGTERM);
        sigemptyset(&sc.sigdef);
        sigaddset(&sc.sigdef, SIGUSR2);
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        /* A file created by a file action gets the launcher's umask. */
        char *args[] = { probe, "create", NULL };
        struct scenario sc = {
            .name = "file created by addopen", .argv = args, .nfa = 1, .fa = {
                { FA_OPEN, 3, -1, created, O_WRONLY | O_CREAT | O_TRUNC, 0666 },
            },
        };
        struct report ref, got;

        /* each run creates the file afresh */
        unlink(created);
        run_probe(REFERENCE, NULL, probe, &sc, &ref);
        unlink(created);
        run_probe(ZYGOTE, &ctx_a, probe, &sc, &got);
        check_served_by_zygote(sc.name, &ctx_a, &got);
        compare_reports(sc.name, "zygote", &got, &ref, 0);
        report_free(&got);
        unlink(created);
        run_probe(EXEC, NULL, probe, &sc, &got);
        compare_reports(sc.name, "pspawn_exec", &got, &ref, 0);
        report_free(&got);
        report_free(&ref);
        unlink(created);
    }
    {
        char *args[] = { probe, "setsid", NULL };
        struct scenario sc = { .name = "new session", .argv = args, .setsid = 1 };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        char *args[] = { probe, "join", NULL };
        struct scenario sc = { .name = "join a process group", .argv = args,
                               .set_pgroup = 1, .pgroup = holder };
        check_scenario(&ctx_a, probe, &sc);
    }
    {
        enum { NARGS = 200, ARGLEN = 1000 };
        char *args[NARGS + 2];
        struct scenario sc = { .name = "long argv", .argv = args, .null_attr = 1,
                               .skip_cmdline = 1 };
        args[0] = probe;
        for (int i = 1; i <= NARGS; i++)
            args[i] = repeat_char((char)('a' + i % 26), ARGLEN);
        args[NARGS + 1] = NULL;
        check_scenario(&ctx_a, probe, &sc);
        for (int i = 1; i <= NARGS; i++)
            free(args[i]);
    }
    {
        /* A context on a relative path: "relative to the cwd", which is
         * tmpdir now. */
        char *args[] = { "script-opt", "r1", NULL };
        struct scenario sc = { .name = "script by relative path", .argv = args,
                               .null_attr = 1 };
        context_create(&ctx_rel, "script-opt");
        check_scenario(&ctx_rel, "script-opt", &sc);
        pspawn_context_destroy(&ctx_rel);
    }
    {
        /* A launcher with a low fd limit (ulimit -n 256) can still have a
         * zygote. */
        char *args[] = { probe, "low-nofile", NULL };
        struct scenario sc = { .name = "zygote started under RLIMIT_NOFILE 256",
                               .argv = args, .null_attr = 1 };
        struct rlimit rl = orig_nofile, cur;
        pspawn_context_t ctx_low;
        getrlimit(RLIMIT_NOFILE, &cur);
        rl.rlim_cur = rl.rlim_max < 256 ? rl.rlim_max : 256;
        setrlimit(RLIMIT_NOFILE, &rl);
        context_create(&ctx_low, probe);
        setrlimit(RLIMIT_NOFILE, &cur);
        check_scenario(&ctx_low, probe, &sc);
        pspawn_context_destroy(&ctx_low);
    }
    check_paper_calls(&ctx_a, probe);
    check_vector(&ctx_a, probe, data_fd, &first, &last, expect_ppid);

    /* ---- phase 3: a zygote started in that state, the launcher restored */
    context_create(&ctx_b, probe);
    launcher_state_restore();
    close(data_fd);
    close(inherit_fd);
    close(22);
    {
        char *args[] = { probe, "restored", NULL };
        struct scenario sc = { .name = "launcher state restored", .argv = args,
                               .null_attr = 1 };
        check_scenario(&ctx_b, probe, &sc);
    }

    /* ---- phase 4: the launcher gave up privileges (for good: last) ---- */
    check_gained(&ctx_b, probe, "launcher set no_new_privs", PR_SET_NO_NEW_PRIVS,
                 "misc.no_new_privs");
    check_gained(&ctx_b, probe, "launcher set memory-deny-write-execute",
                 65 /* PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 1 */, "misc.mdwe");
    check_seccomp(&ctx_b, probe);

    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    pspawn_context_destroy(&ctx_a);
    pspawn_context_destroy(&ctx_b);
    pspawn_context_destroy(&ctx_script);
    pspawn_context_destroy(&ctx_plain);
    close(21);
    remove_tmpdir();
    return tap_done();
}
