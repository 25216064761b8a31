/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parity-api.h - what the three API parity programs share (header only):
 * launching the probe (tests/fixtures/probe.c) three ways with the same
 * argv, envp, fds, cwd, umask, rlimits, signal state, process group and
 * CPU set:
 *   zygote     pspawn_ex() (the programs add pspawn(), pspawn_n(),
 *              pspawn_vector())
 *   exec       pspawn_exec() (the library's own exec path, its fallback)
 *   reference  posix_spawn(3), set up by hand to give the same result
 * and comparing the zygote and exec reports with the reference group by
 * group (one TAP line per group), with the differing keys on failure.
 *
 * The programs: tests/integration/parity-api-state (the launcher's own
 * state), parity-api-attrs (the attributes) and parity-api-calls (the
 * calls and the forms of the program); parity-launcher.h has their
 * launcher's state and their start and end.
 */
#ifndef TESTS_PARITY_API_H
#define TESTS_PARITY_API_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/mempolicy.h>
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

#endif
