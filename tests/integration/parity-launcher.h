/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parity-launcher.h - the launcher side of the three API parity programs
 * (header only; parity-api.h launches and compares): the launcher's own
 * state, which it changes after its zygote started and restores, so that
 * a task must reflect the launcher's state at spawn time, never the
 * zygote's; the files and fds it has open; the start and end of main.
 */
#ifndef TESTS_PARITY_LAUNCHER_H
#define TESTS_PARITY_LAUNCHER_H

#include <sys/personality.h>
#include <sys/prctl.h>

#include "parity-api.h"

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

__attribute__((unused))
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

__attribute__((unused))
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


/* ---- start and end of main ---------------------------------------------- */

/* What every parity program starts from. */
static struct {
    char probe[PATH_MAX];
    char expect_ppid[64];       /* "PROBE_EXPECT_PPID=<our pid>", in environ */
    cpu_set_t first, last;      /* our first and our last CPU, each alone */
    int last_cpu;               /* the number of the last */
} parity;

/* The probe (ARGV[1], default $TESTS_BUILDDIR/probe), a scratch
 * directory, the launcher's original state, and a stray fd (21) that no
 * task may see, open before any zygote starts.  REPORT_NUMA: print the
 * skip where memory policies cannot be compared (one program does). */
static void parity_start(int argc, char **argv, const char *name, int report_numa)
{
    const char *builddir = getenv("TESTS_BUILDDIR");
    int ncpus = 0, lo = -1, hi = -1;

    tap_watchdog(200);
    if (argc > 1)
        snprintf(parity.probe, sizeof parity.probe, "%s", argv[1]);
    else if (builddir)
        snprintf(parity.probe, sizeof parity.probe, "%s/probe", builddir);
    else
        tap_bail("usage: %s PROBE (or set TESTS_BUILDDIR)", name);
    if (access(parity.probe, X_OK) != 0)
        tap_bail("%s: %s", parity.probe, strerror(errno));

    snprintf(tmpdir, sizeof tmpdir, "/tmp/pspawn-parity.XXXXXX");
    if (!mkdtemp(tmpdir))
        tap_bail("mkdtemp: %s", strerror(errno));
    snprintf(capture_path, sizeof capture_path, "%s/out", tmpdir);

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
    CPU_ZERO(&parity.first);
    CPU_SET(lo, &parity.first);
    CPU_ZERO(&parity.last);
    CPU_SET(hi, &parity.last);
    parity.last_cpu = hi;
    tap_diag("probe %s, %d CPUs (%d..%d), scratch %s", parity.probe, ncpus, lo, hi, tmpdir);
    /* Memory policies are compared where the kernel has them (CONFIG_NUMA;
     * a container's seccomp profile may forbid them). */
    have_numa = set_mempolicy_node0(MPOL_DEFAULT) == 0;
    if (!have_numa && report_numa)
        tap_skip(strerror(errno), "memory policies: set_mempolicy does not work here");

    snprintf(parity.expect_ppid, sizeof parity.expect_ppid, "PROBE_EXPECT_PPID=%ld",
             (long)getpid());
    putenv(parity.expect_ppid);

    open_at("stray.txt", O_WRONLY | O_CREAT, 21);
}

/* The fds the launcher opens once its zygote started. */
struct parity_fds {
    int data;       /* 20, data.txt, read-write: for pspawn_attr_adddup2 */
    int inherit;    /* 9, inherit.txt: for pspawn_attr_addinherit */
};

/* The launcher changes its state after its zygote started and opens
 * fds: two a task may be given, one close-on-exec (22) that it may not. */
static void parity_launcher_change(struct parity_fds *fds)
{
    launcher_state_change(&parity.first);
    fds->data = open_at("data.txt", O_RDWR | O_CREAT, 20);
    fds->inherit = open_at("inherit.txt", O_RDONLY | O_CREAT, 9);
    open_at("stray-cloexec.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 22);
}

static void parity_launcher_restore(const struct parity_fds *fds)
{
    launcher_state_restore();
    close(fds->data);
    close(fds->inherit);
    close(22);
}

/* The end of main: the stray fd closed, the scratch directory removed,
 * the plan printed. */
static int parity_finish(void)
{
    close(21);
    remove_tmpdir();
    return tap_done();
}

#endif
