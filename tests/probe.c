/*
 * probe - print, one "key=value" per line, everything a freshly exec'd
 * process can observe about how it was started, so that a task created
 * from the zygote can be compared field by field with one created by a
 * plain exec (tests/parity-api.c, tests/parity.sh).
 *
 * A key is "group" or "group.name"; the tests compare group by group.
 * Keys of the group "x" are informational and not compared (they
 * legitimately differ).  Values are escaped (\\, \n, \xNN) so that each
 * report line is one line.  Nothing that differs between any two runs
 * (pid, ppid, start time, pipe inode numbers) is printed.
 *
 * The whole report is written with one write() between "probe=begin" and
 * "probe=end", so several probes can share one O_APPEND file.
 *
 * Built without sanitizers: it is the program launched, not the launcher.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

extern char **environ;

/* A task must see the globals as after exactly one run of the
 * constructors, as exec gives. */
static int ctor_runs;
static int ctor_value;
static int static_value = 4242;
static int bss_value;

__attribute__((constructor)) static void probe_ctor(void)
{
    ctor_runs++;
    ctor_value = 1000 + ctor_runs;
}

static FILE *out;

static void put_escaped(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\')
            fputs("\\\\", out);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static void kv(const char *key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void kv(const char *key, const char *fmt, ...)
{
    char *val = NULL;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&val, fmt, ap);
    va_end(ap);
    fprintf(out, "%s=", key);
    if (n >= 0)
        put_escaped(val, (size_t)n);
    fputc('\n', out);
    free(val);
}

static void kv_str(const char *key, const char *val)
{
    fprintf(out, "%s=", key);
    if (val)
        put_escaped(val, strlen(val));
    else
        fputs("(null)", out);
    fputc('\n', out);
}

/* Read a whole small file (a /proc file); returns its length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    ssize_t n;

    if (fd < 0)
        return -1;
    while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

/* One "Name:\tvalue" line of /proc/self/status. */
static const char *status_field(const char *status, const char *name,
                                char *val, size_t size)
{
    size_t nlen = strlen(name);
    const char *p = status;

    while (p && *p) {
        if (strncmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            size_t n;
            while (*v == ' ' || *v == '\t')
                v++;
            n = strcspn(v, "\n");
            if (n >= size)
                n = size - 1;
            memcpy(val, v, n);
            val[n] = '\0';
            return val;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    snprintf(val, size, "(missing)");
    return val;
}

/* Signals 32 and 33 belong to glibc (SIGCANCEL, SIGSETXID): how they are
 * left depends on the launcher's libc (glibc's posix_spawn leaves them
 * ignored, fork+execve does not), not on exec, so they are shown apart. */
#define GLIBC_INTERNAL(sig) ((sig) == 32 || (sig) == 33)

/* A hex signal mask of /proc/self/status as a list of signal numbers,
 * those of the glibc-internal signals (INTERNAL) or the others. */
static void kv_sigmask(const char *key, const char *status, const char *field,
                       int internal)
{
    char hex[64], list[512];
    unsigned long long mask;
    size_t len = 0;

    status_field(status, field, hex, sizeof hex);
    mask = strtoull(hex, NULL, 16);
    list[0] = '\0';
    for (int sig = 1; sig <= 64; sig++)
        if ((mask & (1ULL << (sig - 1))) && !GLIBC_INTERNAL(sig) == !internal)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d",
                                    len ? "," : "", sig);
    kv_str(key, len ? list : "none");
}

static int fd_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Open fds first, before the probe opens anything of its own. */
static void report_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    int fds[1024], nfds = 0;
    struct dirent *de;

    if (!dir) {
        kv_str("fd.error", strerror(errno));
        return;
    }
    while ((de = readdir(dir)) != NULL && nfds < 1024) {
        int fd;
        if (de->d_name[0] == '.')
            continue;
        fd = atoi(de->d_name);
        if (fd != dirfd(dir))
            fds[nfds++] = fd;
    }
    closedir(dir);
    qsort(fds, (size_t)nfds, sizeof fds[0], fd_cmp);
    kv("fd.count", "%d", nfds);
    for (int i = 0; i < nfds; i++) {
        char path[64], target[PATH_MAX], key[32], perm[16];
        struct stat st;
        int fdflags = fcntl(fds[i], F_GETFD), flflags = fcntl(fds[i], F_GETFL);
        ssize_t n;
        const char *acc;
        char *br;

        snprintf(path, sizeof path, "/proc/self/fd/%d", fds[i]);
        n = readlink(path, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = '\0';
        /* Pipes and sockets are new objects in every run: keep the kind. */
        if ((strncmp(target, "pipe:[", 6) == 0 ||
             strncmp(target, "socket:[", 8) == 0) &&
            (br = strchr(target, '[')) != NULL)
            strcpy(br, "[*]");
        switch (flflags & O_ACCMODE) {
        case O_RDONLY: acc = "r"; break;
        case O_WRONLY: acc = "w"; break;
        default: acc = "rw"; break;
        }
        if (fstat(fds[i], &st) == 0 && S_ISREG(st.st_mode))
            snprintf(perm, sizeof perm, " perm=%04o", (unsigned)(st.st_mode & 07777));
        else
            perm[0] = '\0';
        snprintf(key, sizeof key, "fd.%d", fds[i]);
        kv(key, "%s cloexec=%d mode=%s append=%d nonblock=%d%s", target,
           fdflags < 0 ? -1 : !!(fdflags & FD_CLOEXEC), acc,
           !!(flflags & O_APPEND), !!(flflags & O_NONBLOCK), perm);
    }
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void report_env(void)
{
    size_t n = 0;
    char **copy;

    while (environ && environ[n])
        n++;
    copy = calloc(n + 1, sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, environ, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, str_cmp);
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(copy[i], '=');
        fputs("env.", out);
        if (eq) {
            put_escaped(copy[i], (size_t)(eq - copy[i]));
            fputc('=', out);
            put_escaped(eq + 1, strlen(eq + 1));
        } else {
            put_escaped(copy[i], strlen(copy[i]));
            fputs("=(no '=')", out);
        }
        fputc('\n', out);
    }
    free(copy);
    /* environ must be a real, growable environment. */
    setenv("PROBE_SETENV_CHECK", "1", 1);
    kv("misc.setenv_works", "%d",
       getenv("PROBE_SETENV_CHECK") && strcmp(getenv("PROBE_SETENV_CHECK"), "1") == 0);
    unsetenv("PROBE_SETENV_CHECK");
}

static void report_cmdline(void)
{
    static char buf[1 << 20];
    ssize_t n = slurp("/proc/self/cmdline", buf, sizeof buf);

    fputs("cmdline=", out);
    if (n < 0)
        fputs("(unreadable)", out);
    else
        put_escaped(buf, (size_t)n);
    fputc('\n', out);
}

static void report_rlimits(void)
{
    static const struct { int res; const char *name; } rl[] = {
        { RLIMIT_CPU, "CPU" }, { RLIMIT_FSIZE, "FSIZE" },
        { RLIMIT_DATA, "DATA" }, { RLIMIT_STACK, "STACK" },
        { RLIMIT_CORE, "CORE" }, { RLIMIT_RSS, "RSS" },
        { RLIMIT_NPROC, "NPROC" }, { RLIMIT_NOFILE, "NOFILE" },
        { RLIMIT_MEMLOCK, "MEMLOCK" }, { RLIMIT_AS, "AS" },
        { RLIMIT_LOCKS, "LOCKS" }, { RLIMIT_SIGPENDING, "SIGPENDING" },
        { RLIMIT_MSGQUEUE, "MSGQUEUE" }, { RLIMIT_NICE, "NICE" },
        { RLIMIT_RTPRIO, "RTPRIO" }, { RLIMIT_RTTIME, "RTTIME" },
    };

    for (size_t i = 0; i < sizeof rl / sizeof rl[0]; i++) {
        struct rlimit r;
        char key[32], cur[32], max[32];

        snprintf(key, sizeof key, "rlimit.%s", rl[i].name);
        if (getrlimit(rl[i].res, &r) != 0) {
            kv_str(key, strerror(errno));
            continue;
        }
        if (r.rlim_cur == RLIM_INFINITY)
            strcpy(cur, "unlimited");
        else
            snprintf(cur, sizeof cur, "%llu", (unsigned long long)r.rlim_cur);
        if (r.rlim_max == RLIM_INFINITY)
            strcpy(max, "unlimited");
        else
            snprintf(max, sizeof max, "%llu", (unsigned long long)r.rlim_max);
        kv(key, "%s:%s", cur, max);
    }
}

static void report_affinity(const char *status)
{
    cpu_set_t set;
    char list[1024], val[256];
    size_t len = 0;

    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        kv_str("cpus.affinity", strerror(errno));
    } else {
        list[0] = '\0';
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%d",
                                        len ? "," : "", c);
        kv_str("cpus.affinity", list);
    }
    kv_str("cpus.mems_allowed", status_field(status, "Mems_allowed_list", val, sizeof val));
}

static void report_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *de;
    int n = 0;

    if (dir) {
        while ((de = readdir(dir)) != NULL)
            if (de->d_name[0] != '.')
                n++;
        closedir(dir);
    }
    kv("threads", "%d", n);
}

/* Whether PID is the pid named by PROBE_EXPECT_PPID, and its name. */
static void report_parent(void)
{
    const char *expect = getenv("PROBE_EXPECT_PPID");
    char path[64], comm[64];
    ssize_t n;

    if (expect)
        kv("parent.ppid_is_launcher", "%d", atol(expect) == (long)getppid());
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)getppid());
    n = slurp(path, comm, sizeof comm);
    if (n > 0 && comm[n - 1] == '\n')
        comm[n - 1] = '\0';
    kv_str("parent.comm", n < 0 ? "(unreadable)" : comm);
}

/* The NUMA memory policy: mode (with mode flags) and the nodes. */
static void report_mempolicy(void)
{
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = { 0 };
    char list[1024];
    size_t len = 0;
    int mode = -1;

    if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, NULL, 0UL) != 0) {
        kv_str("misc.mempolicy", strerror(errno));
        return;
    }
    list[0] = '\0';
    for (unsigned n = 0; n < 1024; n++)
        if ((mask[n / (8 * sizeof mask[0])] >> (n % (8 * sizeof mask[0]))) & 1)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%u", len ? "," : "", n);
    kv("misc.mempolicy", "mode %#x nodes %s", (unsigned)mode, len ? list : "none");
}

static void report_misc(const char *status)
{
    char val[64];

    stack_t ss;
    struct itimerval it;
    int pdeath = -1, subreaper = -1;

    errno = 0;
    kv("sched.nice", "%d", getpriority(PRIO_PROCESS, 0));
    kv("sched.policy", "%d", sched_getscheduler(0));
    if (sigaltstack(NULL, &ss) == 0)
        kv_str("misc.altstack", (ss.ss_flags & SS_DISABLE) ? "disabled" : "enabled");
    prctl(PR_GET_PDEATHSIG, &pdeath);
    kv("misc.pdeathsig", "%d", pdeath);
    kv("misc.no_new_privs", "%d", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    kv("misc.dumpable", "%d", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
    kv("misc.child_subreaper", "%d", subreaper);
    kv("misc.personality", "%#x", (unsigned)personality(0xffffffff));
    getitimer(ITIMER_REAL, &it);
    kv("misc.itimer_real", "%s", it.it_value.tv_sec || it.it_value.tv_usec ? "armed" : "off");
    report_mempolicy();
    kv("misc.thp_disable", "%d", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    kv("misc.ioprio", "%ld", syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0));
    kv("misc.timerslack_ns", "%d", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    kv("misc.mdwe", "%d", prctl(66 /* PR_GET_MDWE */, 0, 0, 0, 0));
    kv_str("misc.seccomp", status_field(status, "Seccomp", val, sizeof val));
    kv_str("misc.seccomp_filters", status_field(status, "Seccomp_filters", val, sizeof val));
}

int main(int argc, char **argv)
{
    static char status[16384];
    char *buf = NULL, cwd[PATH_MAX], val[PATH_MAX];
    size_t size = 0;
    mode_t mask;
    pid_t pid = getpid(), pgid = getpgid(0), sid = getsid(0);
    ssize_t n;

    out = open_memstream(&buf, &size);
    if (!out)
        return 111;
    fputs("probe=begin\n", out);

    report_fds();

    kv("argv.count", "%d", argc);
    for (int i = 0; i < argc; i++) {
        char key[32];
        snprintf(key, sizeof key, "argv.%d", i);
        kv_str(key, argv[i]);
    }
    kv_str("argv.terminator", argv[argc] ? "not NULL" : "NULL");
    report_env();
    kv_str("progname.invocation_name", program_invocation_name);
    kv_str("progname.invocation_short_name", program_invocation_short_name);
    report_cmdline();

    n = readlink("/proc/self/exe", val, sizeof val - 1);
    val[n < 0 ? 0 : n] = '\0';
    kv_str("exe.path", val);
    n = slurp("/proc/self/comm", val, sizeof val);
    if (n > 0 && val[n - 1] == '\n')
        val[n - 1] = '\0';
    kv_str("exe.comm", n < 0 ? "(unreadable)" : val);

    slurp("/proc/self/status", status, sizeof status);
    kv_sigmask("sig.ignored", status, "SigIgn", 0);
    kv_sigmask("sig.caught", status, "SigCgt", 0);
    kv_sigmask("sigmask.blocked", status, "SigBlk", 0);
    kv_sigmask("sigmask.pending", status, "SigPnd", 0);
    kv_sigmask("sigmask.shared_pending", status, "ShdPnd", 0);
    kv_sigmask("x.glibc_signals_ignored", status, "SigIgn", 1);
    kv_sigmask("x.glibc_signals_caught", status, "SigCgt", 1);
    kv_sigmask("x.glibc_signals_blocked", status, "SigBlk", 1);

    kv_str("cwd", getcwd(cwd, sizeof cwd) ? cwd : strerror(errno));
    mask = umask(0);
    umask(mask);
    kv("umask", "%04o", (unsigned)mask);
    report_rlimits();

    if (pgid == pid)
        kv_str("pgrp.pgid", "self");
    else
        kv("pgrp.pgid", "%ld", (long)pgid);
    if (sid == pid)
        kv_str("pgrp.sid", "self");
    else
        kv("pgrp.sid", "%ld", (long)sid);

    report_affinity(status);
    report_threads();

    kv("globals.ctor_runs", "%d", ctor_runs);
    kv("globals.ctor_value", "%d", ctor_value);
    kv("globals.static_value", "%d", static_value);
    kv("globals.bss_value", "%d", bss_value);

    report_parent();
    report_misc(status);

    /* Differs legitimately between the two paths: shown, not compared. */
    {
        const char *execfn = (const char *)getauxval(AT_EXECFN);
        static char maps[1 << 20];
        kv_str("x.execfn", execfn ? execfn : "(none)");
        slurp("/proc/self/maps", maps, sizeof maps);
        kv("x.proxy_mapped", "%d", strstr(maps, "libpspawn-proxy") != NULL);
    }

    fputs("probe=end\n", out);
    if (fclose(out) != 0)
        return 112;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(1, buf + off, size - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return 113;
        }
        off += (size_t)w;
    }
    free(buf);
    return 0;
}
