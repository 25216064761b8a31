/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fallback-creds - a launcher whose credentials no longer let a fork of
 * its zygote be what an exec would be: it gave up a privilege after its
 * zygote started (root, its groups, a capability, one of its bounding or
 * ambient set), or its user cannot enter its working directory by path
 * (an exec'd task inherits it; a fork would have to chdir).  The task is
 * exec'd, runs exactly once, as the launcher is now, and the reason is
 * readable (pspawn_context_reason(), PSPAWN_DEBUG=1).  Needs root.
 *
 * Uses $TESTS_BUILDDIR/task, copied where uid 65534 can run it.
 */
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "fallback.h"

/* The scratch directory open to every uid, with what uid 65534 runs in it
 * (the task, and the proxy a zygote it starts preloads), whatever the
 * build tree's permissions (a 0700 home, mktemp -d): PROXY keeps the
 * proxy's path, for done_for_nobody. */
static void for_nobody(char proxy[PATH_MAX])
{
    char from[PATH_MAX], to[PATH_MAX];

    chmod(tmpdir, 0777);    /* the launcher that gave up root writes there */
    snprintf(from, sizeof from, "%s/task", builddir);
    snprintf(to, sizeof to, "%s/task-for-nobody", tmpdir);
    copy_file(from, to, 0755);
    proxy[0] = 0;
    if (getenv("PSPAWN_PROXY"))
        snprintf(proxy, PATH_MAX, "%s", getenv("PSPAWN_PROXY"));
    if (proxy[0]) {
        snprintf(to, sizeof to, "%s/proxy-for-nobody.so", tmpdir);
        copy_file(proxy, to, 0755);
        setenv("PSPAWN_PROXY", to, 1);
    }
}

static void done_for_nobody(const char proxy[PATH_MAX])
{
    chmod(tmpdir, 0700);
    if (proxy[0])
        setenv("PSPAWN_PROXY", proxy, 1);
}

/* A launcher that gives up a privilege after its zygote started (drops
 * root, its groups, a capability, a capability from its bounding or
 * ambient set): a fork of the zygote would keep it, so the task is exec'd,
 * and the zygote is not used again.  Runs in a child process (this one
 * stays root), whose exit status carries the results that become TAP
 * lines here. */
enum {
    CR_SERVED = 1, CR_RAN = 2, CR_REASON = 4, CR_FOR_GOOD = 8, CR_OWNER = 16,
    CR_CAP_AS_EXEC = 32, CR_EXEC_LACKS = 64,
};
enum { CR_ROOT, CR_GROUPS, CR_CAP, CR_BOUNDING, CR_AMBIENT };

/* Whether a task ("task wait") started by CTX, or by posix_spawn where
 * CTX is NULL, has CAP_NET_RAW in its effective set (/proc/PID/status);
 * -1 where it did not start. */
static int task_has_net_raw(pspawn_context_t *ctx, const char *task)
{
    char *argv[] = { (char *)task, "ready-wait", NULL };
    char path[64], line[256], c;
    unsigned long long eff;
    int has = -1, p[2], rc;
    pid_t pid;
    FILE *f;
    struct pollfd pfd;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    if (ctx) {
        pspawn_attr_t attr;
        pspawn_attr_init(&attr);
        pspawn_attr_adddup2(&attr, p[1], 1);
        rc = pspawn_ex(&pid, ctx, &attr, argv, NULL);
        pspawn_attr_destroy(&attr);
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        rc = posix_spawn(&pid, task, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    /* Read its capabilities once it is in main: a vfork-based spawn
     * returns before exec has installed the new credentials. */
    pfd = (struct pollfd){ p[0], POLLIN, 0 };
    if (rc == 0 && (poll(&pfd, 1, 10000) != 1 || read(p[0], &c, 1) != 1))
        rc = -1;
    close(p[0]);
    if (rc != 0) {
        if (rc < 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    if ((f = fopen(path, "r"))) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "CapEff: %llx", &eff) == 1)
                has = (int)(eff >> CAP_NET_RAW & 1);
        fclose(f);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return has;
}

/* capset(2) with CAP_NET_RAW in SETS ("e", "p", "i": effective, permitted,
 * inheritable) or not. */
static int set_net_raw(const char *sets, int on)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    __u32 bit = 1u << CAP_NET_RAW;

    if (syscall(SYS_capget, &h, d) != 0)
        return -1;
    if (strchr(sets, 'e'))
        d[0].effective = on ? d[0].effective | bit : d[0].effective & ~bit;
    if (strchr(sets, 'p'))
        d[0].permitted = on ? d[0].permitted | bit : d[0].permitted & ~bit;
    if (strchr(sets, 'i'))
        d[0].inheritable = on ? d[0].inheritable | bit : d[0].inheritable & ~bit;
    return (int)syscall(SYS_capset, &h, d);
}

static int creds_child(int what, const char *word)
{
    char task[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome o;
    struct stat st;
    int bits = 0;

    /* The copies in our scratch directory (case_creds): uid 65534 may
     * not reach the build tree (a 0700 home or mktemp -d above it). */
    snprintf(task, sizeof task, "%s/task-for-nobody", tmpdir);
    /* A working directory every uid here can enter (the build tree's may
     * be closed to 65534: case_closed_cwd is about that). */
    if (chdir(tmpdir) != 0)
        return 0x80;
    if (what == CR_AMBIENT) {
        /* A launcher that is not root and hands CAP_NET_RAW to what it
         * runs through its ambient set: so does the zygote's exec. */
        gid_t none[1];
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setgroups(0, none) != 0 ||
            setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
            set_net_raw("epi", 1) != 0 ||
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) != 0)
            return 0x80;
    }
    if (create_context(&ctx, task, NULL) != 0)
        return 0x80;
    if (task_has_net_raw(&ctx, task) != 1)
        return 0x80;        /* the change below would not be seen */
    spawn_task(&ctx, task, "x", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && pspawn_context_uses_zygote(&ctx) &&
        !pspawn_context_reason(&ctx))
        bits |= CR_SERVED;
    outcome_free(&o);
    if (what == CR_ROOT) {
        gid_t none[1];
        if (setgroups(0, none) != 0 || setresgid(65534, 65534, 65534) != 0 ||
            setresuid(65534, 65534, 65534) != 0)
            return 0x80;
    } else if (what == CR_GROUPS) {
        gid_t other[1] = { 12345 };
        if (setgroups(1, other) != 0)
            return 0x80;
    } else if (what == CR_CAP) {
        if (set_net_raw("ep", 0) != 0)
            return 0x80;
    } else if (what == CR_BOUNDING) {
        /* Still root with every capability, but an exec'd task (root's
         * file capabilities are the bounding set) no longer gets it. */
        if (prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) != 0)
            return 0x80;
    } else if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_RAW, 0, 0) != 0) {
        return 0x80;
    }
    spawn_task(&ctx, task, "x", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && o.pid_matches)
        bits |= CR_RAN;
    if (pspawn_context_reason(&ctx) && strstr(pspawn_context_reason(&ctx), word))
        bits |= CR_REASON;
    tap_diag("    reason: %s", pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "(none)");
    if (!pspawn_context_uses_zygote(&ctx))
        bits |= CR_FOR_GOOD;
    if (stat(append_path, &st) == 0 &&
        st.st_uid == (what == CR_ROOT || what == CR_AMBIENT ? 65534 : 0))
        bits |= CR_OWNER;
    if (what != CR_ROOT && what != CR_GROUPS) {
        int exec_has = task_has_net_raw(NULL, task);
        if (exec_has >= 0 && task_has_net_raw(&ctx, task) == exec_has)
            bits |= CR_CAP_AS_EXEC;
        if (exec_has == 0)
            bits |= CR_EXEC_LACKS;
    }
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
    fflush(stdout);
    return bits;
}

static void case_creds(const char *name, int what, const char *word)
{
    pid_t pid;
    int st, bits;

    if (geteuid() != 0) {
        tap_skip("not root", "%s: falls back to exec", name);
        return;
    }
    char proxy[PATH_MAX];
    for_nobody(proxy);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(creds_child(what, word));
    bits = waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 0x80;
    done_for_nobody(proxy);
    if (bits & 0x80)
        tap_bail("%s: the launcher could not set itself up (status %#x)", name, (unsigned)st);
    tap_ok(bits & CR_SERVED, "%s: before, the zygote served the task", name);
    tap_ok(bits & CR_RAN, "%s: after, the task ran exactly once and exited 0", name);
    tap_ok(bits & CR_REASON, "%s: reason mentions \"%s\"", name, word);
    tap_ok(bits & CR_FOR_GOOD, "%s: the context uses exec from then on", name);
    tap_ok(bits & CR_OWNER, "%s: the task ran as the launcher does now (uid %d owns its file)",
           name, what == CR_ROOT || what == CR_AMBIENT ? 65534 : 0);
    if (what != CR_ROOT && what != CR_GROUPS)
        tap_ok(bits & CR_CAP_AS_EXEC, "%s: a task started then has CAP_NET_RAW or not, as an "
               "exec'd one (%s)", name, bits & CR_EXEC_LACKS ? "lacks it" : "has it: root");
    if (what == CR_BOUNDING || what == CR_AMBIENT)
        tap_ok(bits & CR_EXEC_LACKS, "%s: an exec'd task lacks CAP_NET_RAW, which the zygote "
               "has (the comparison means something)", name);
}


/* The launcher's working directory is one its user cannot enter by path:
 * $tmp/closed (root's, 0700) / inner (65534's).  An exec'd task inherits
 * it; so the call is exec'd, with the reason, and the task runs there;
 * from a directory it can enter, the next call is the zygote's again.
 * The child (uid 65534) moves with fds opened while root: fchdir needs
 * no path. */
enum { CW_SERVED = 1, CW_RAN_THERE = 2, CW_REASON = 4, CW_SERVED_AGAIN = 8 };

static int closed_cwd_child(const char *inner)
{
    char task[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome o;
    int bits = 0, open_fd, inner_fd;
    gid_t none[1];

    snprintf(task, sizeof task, "%s/task-for-nobody", tmpdir);
    open_fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    inner_fd = open(inner, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (open_fd < 0 || inner_fd < 0 || setgroups(0, none) != 0 ||
        setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
        fchdir(open_fd) != 0 || create_context(&ctx, task, NULL) != 0)
        return 0x80;
    spawn_task(&ctx, task, "open", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && pspawn_context_uses_zygote(&ctx) &&
        !pspawn_context_reason(&ctx))
        bits |= CW_SERVED;
    outcome_free(&o);
    /* In the closed directory: the task appends to "here", relative. */
    char *argv[] = { task, "append", "here", NULL };
    if (fchdir(inner_fd) != 0)
        return 0x80;
    spawn_collect(&ctx, argv, NULL, "- ", &o);
    if (o.rc == 0 && o.exited0 && faccessat(inner_fd, "here", F_OK, 0) == 0)
        bits |= CW_RAN_THERE;
    if (pspawn_context_reason(&ctx) && strstr(pspawn_context_reason(&ctx), "working directory"))
        bits |= CW_REASON;
    tap_diag("    reason: %s", pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "(none)");
    outcome_free(&o);
    if (fchdir(open_fd) != 0)
        return 0x80;
    spawn_task(&ctx, task, "open again", &o);
    if (o.rc == 0 && o.exited0 && o.runs == 1 && pspawn_context_uses_zygote(&ctx))
        bits |= CW_SERVED_AGAIN;
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
    fflush(stdout);
    return bits;
}

static void case_closed_cwd(void)
{
    const char *name = "launcher's working directory closed to its user";
    char closed[PATH_MAX], inner[PATH_MAX + 8], here[PATH_MAX + 16], proxy[PATH_MAX];
    pid_t pid;
    int st, bits;

    if (geteuid() != 0) {
        tap_skip("not root", "%s: the task runs there, exec'd", name);
        return;
    }
    for_nobody(proxy);
    snprintf(closed, sizeof closed, "%s/closed", tmpdir);
    snprintf(inner, sizeof inner, "%s/inner", closed);
    snprintf(here, sizeof here, "%s/here", inner);
    if (mkdir(closed, 0700) != 0 || mkdir(inner, 0755) != 0 || chown(inner, 65534, 65534) != 0)
        tap_bail("%s: cannot make %s: %s", name, inner, strerror(errno));
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(closed_cwd_child(inner));
    bits = waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 0x80;
    done_for_nobody(proxy);
    unlink(here);
    rmdir(inner);
    rmdir(closed);
    if (bits & 0x80)
        tap_bail("%s: the launcher could not set itself up (status %#x)", name, (unsigned)st);
    tap_ok(bits & CW_SERVED, "%s: from a directory it can enter, the zygote served the task", name);
    tap_ok(bits & CW_RAN_THERE, "%s: from one it cannot enter by path, the task ran, exit 0, "
           "in that directory (its relative file is there)", name);
    tap_ok(bits & CW_REASON, "%s: reason mentions \"working directory\"", name);
    tap_ok(bits & CW_SERVED_AGAIN, "%s: back in the first, the zygote serves again", name);
}

int main(int argc, char **argv)
{
    (void)argc;
    fallback_start(argv);
    case_creds("launcher dropped root", CR_ROOT, "user IDs");
    case_creds("launcher changed its groups", CR_GROUPS, "supplementary groups");
    case_creds("launcher dropped a capability", CR_CAP, "capabilities");
    case_creds("launcher dropped a capability from its bounding set", CR_BOUNDING,
               "bounding capability set");
    case_creds("launcher lowered an ambient capability", CR_AMBIENT, "ambient capabilities");
    case_closed_cwd();
    return fallback_finish();
}
