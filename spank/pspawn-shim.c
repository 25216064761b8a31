/*
 * pspawn-shim: the stand-in that slurmstepd execs instead of a task's
 * program when the step runs with --pspawn.
 *
 * It hands everything exec would have given the task (argv, environment,
 * cwd, umask, rlimits, affinity, signal mask and ignored signals, and every
 * open fd at its own number, PMI_FD and friends included) to the step's
 * zygote on this node, which forks the task; then it relays signals where
 * they would not arrive by themselves and exits exactly as the task did.
 * The first shim of a step on a node starts the zygote.  Whenever the
 * zygote cannot serve, the shim execs the program itself: a plain task.
 *
 * Environment (set by the SPANK plugin, removed before the task sees it):
 *   PSPAWN_SHIM_KEY        uid.jobid.stepid: names the step's zygote
 *   PSPAWN_SHIM_TOKEN      the step's secret; the zygote refuses others
 *   PSPAWN_SHIM_LOCAL_TASKS tasks of the step on this node
 *   PSPAWN_SHIM_SIGNALS    auto|yes|no: relay signals to the task
 *   PSPAWN_SHIM_PROCTRACK  Slurm's ProctrackType (for signals=auto)
 *   PSPAWN_SHIM_DEBUG      1: say what happens on stderr
 *   PSPAWN_SHIM_OPTIONS    the step's libpspawn options (fanout=...)
 *   PSPAWN_SHIM_ARGV0      the task's argv[0] when the plugin replaced it
 *                          in place (Slurm < 23.02.5)
 *   PSPAWN_SHIM_MOVER      the step's mover in slurmstepd: the task is held
 *                          until the mover has put it into our cgroups
 *                          (see pspawn_cgroup.h)
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "protocol.h"
#include "pspawn_cgroup.h"
#include "unixsock.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

extern char **environ;

static int debug;
static int sig_pipe[2] = { -1, -1 };

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (!debug)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "pspawn-shim[%d]: %s\n", (int)getpid(), buf);
}

/* A plain task: what slurmstepd would have done. */
static void __attribute__((noreturn)) exec_plain(const char *path, char **argv, const char *why)
{
    if (why)
        say("plain exec: %s", why);
    execve(path, argv, environ);
    int e = errno;
    fprintf(stderr, "slurmstepd: error: execve(): %s: %s\n", argv[0], strerror(e));
    _exit(e);
}

/* The library's stand-in client says what happens through this. */
static void log_line(const char *msg)
{
    say("%s", msg);
}

/* The path slurmstepd makes of argv[0] before it execs a task (it does
 * this after spank's task_init, so for the shim's own path, not the
 * task's): a name starting with '.' is made absolute from the cwd, any
 * other relative name is looked up in PATH (the first entry that exists
 * and is not a directory), a name not found is left as it is.  The task
 * sees the result as its argv[0], so ours must be the same. */
static char *slurm_build_path(char *name)
{
    if (name[0] == '/')
        return name;
    char buf[PATH_MAX * 2], cwd[PATH_MAX];
    if (name[0] == '.') {
        if (!getcwd(cwd, sizeof cwd))
            return name;
        snprintf(buf, sizeof buf, "%s/%s", cwd, name);
        return strdup(buf);
    }
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *colon = strchrnul(p, ':');
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(colon - p), p, name);
        struct stat st;
        if (stat(buf, &st) == 0 && !S_ISDIR(st.st_mode))
            return strdup(buf);
        p = *colon ? colon + 1 : colon;
    }
    return name;
}

static void on_signal(int sig)
{
    int e = errno;
    unsigned char c = (unsigned char)sig;
    if (write(sig_pipe[1], &c, 1) < 0) {
        /* full: the loop is awake anyway */
    }
    errno = e;
}

/* Exit as the task did: the same code, or the same signal with no core. */
static void __attribute__((noreturn)) exit_like(int status)
{
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no);
        signal(sig, SIG_DFL);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    _exit(1);
}

/* Whether the zygote's end of SOCK is closed (it died: a task closes its
 * copies as soon as it is cloned). */
static int zygote_gone(int sock)
{
    struct pollfd p = { sock, POLLIN, 0 };
    char c;
    return poll(&p, 1, 0) == 1 && ((p.revents & (POLLHUP | POLLERR)) ||
                                   recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0);
}

/* Pass the signals our handler queued on to the task (through its pidfd
 * where there is one: the pid may be another's once the task is reaped). */
static void relay_signals(pid_t task, int pidfd)
{
    unsigned char s[64];
    ssize_t k;
    while ((k = read(sig_pipe[0], s, sizeof s)) > 0)
        for (ssize_t i = 0; i < k; i++)
            if (pidfd >= 0)
                syscall(SYS_pidfd_send_signal, pidfd, s[i], NULL, 0);
            else
                kill(task, s[i]);
}

/* Wait until FD is readable or closed, relaying to the task the signals
 * that come meanwhile. */
static void wait_relaying(int fd, pid_t task, int pidfd)
{
    for (;;) {
        struct pollfd p[2] = { { fd, POLLIN, 0 }, { sig_pipe[0], POLLIN, 0 } };
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents & POLLIN)
            relay_signals(task, pidfd);
        if (p[0].revents)
            return;
    }
}

/* Wait for the zygote's word on FD while the task runs, relaying
 * signals.  The zygote sends it once it has reaped the task; should it
 * not come within EXITED_GRACE_MS of the task's end (TASK_PIDFD), the
 * zygote is taken as gone, whoever still holds its end of FD. */
#define EXITED_GRACE_MS 10000
#define STARTED_TIMEOUT_MS 30000
static void wait_task(int fd, pid_t task, int task_pidfd)
{
    int ended = 0;
    for (;;) {
        struct pollfd p[3] = { { fd, POLLIN, 0 }, { sig_pipe[0], POLLIN, 0 },
                               { ended ? -1 : task_pidfd, POLLIN, 0 } };
        int r = poll(p, 3, ended ? EXITED_GRACE_MS : -1);
        if (r < 0)
            continue;
        if (r == 0)
            return;     /* the task ended long ago, and no word */
        if (p[1].revents & POLLIN)
            relay_signals(task, task_pidfd);
        if (p[0].revents)
            return;
        if (p[2].revents)
            ended = 1;
    }
}

/* The zygote's answer to a request, at most 3 x PSPAWN_TIMEOUT (the
 * library's wait for a zygote, default 10 s) after it was sent. */
/* recv() of one reply, for at most MS ms: -1 with ETIMEDOUT after that. */
static ssize_t recv_within(int fd, void *buf, size_t len, int ms)
{
    struct pollfd p = { fd, POLLIN, 0 };
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return recv(fd, buf, len, MSG_DONTWAIT);
}

/* PIDFD_GET_INFO (Linux 6.15): a process's exit status, read through a
 * pidfd by anyone who holds one, even after another process reaped it. */
struct shim_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define SHIM_PIDFD_GET_INFO _IOWR(0xFF, 11, struct shim_pidfd_info)
#define SHIM_PIDFD_INFO_EXIT 8u

/* The zygote (our task's parent) is gone while TASK runs: it is someone
 * else's child now.  Wait until it has ended, as we would have, and give
 * its wait status where the kernel kept it for PIDFD (else -1). */
static int orphan_status(pid_t task, int pidfd)
{
    if (pidfd < 0)
        return -1;
    say("lost the zygote: waiting for task %d through its pidfd", (int)task);
    wait_relaying(pidfd, task, pidfd);
    /* Exited; its exit status is kept once its new parent has reaped it. */
    for (int tries = 0; tries < 200; tries++) {
        struct shim_pidfd_info info;
        memset(&info, 0, sizeof info);
        info.mask = SHIM_PIDFD_INFO_EXIT;
        if (ioctl(pidfd, SHIM_PIDFD_GET_INFO, &info) < 0 && errno != ESRCH)
            return -1;      /* ENOTTY, EINVAL: a kernel before 6.15 */
        if (info.mask & SHIM_PIDFD_INFO_EXIT)
            return info.exit_code;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Ask the step's mover (slurmstepd, root) to put TASK into our own
 * cgroups.  Returns 0 or an errno; the task runs either way. */
static int move_task(const char *mover, pid_t task, const char *token)
{
    /* Only slurmstepd, as root, may hear our token.  A listen queue that is
     * full (every task of a big node asking at once) is retried, within
     * the same 30 s as the answer. */
    int fd, waited = 0;
    while ((fd = pspawn_connect_abstract(mover, 0)) < 0 && errno == EAGAIN && waited < 30000) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        waited += 5;
    }
    if (fd < 0)
        return errno;
    struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, (int32_t)task, { 0 } };
    snprintf(q.token, sizeof q.token, "%s", token);
    struct pspawn_mover_reply r;
    struct pollfd p = { fd, POLLIN, 0 };
    int err = 0;
    if (send(fd, &q, sizeof q, MSG_NOSIGNAL) != (ssize_t)sizeof q &&
        errno != EPIPE && errno != ECONNRESET)
        err = errno;    /* (after those, the mover's refusal is still to read) */
    else if (poll(&p, 1, 30000 - waited) != 1 || recv(fd, &r, sizeof r, 0) != (ssize_t)sizeof r ||
             r.magic != PSPAWN_MOVER_MAGIC)
        err = ETIMEDOUT;
    else if (r.err)
        err = r.err;
    else
        say("task %d moved into our cgroups (%d hierarch%s)", (int)task, r.moved,
            r.moved == 1 ? "y" : "ies");
    close(fd);
    return err;
}

int main(int argc, char **argv)
{
    const char *argv0 = getenv("PSPAWN_SHIM_ARGV0");
    char **targv;
    if (argv0) {
        /* In place: argv[0] became the shim; the rest is the task's. */
        targv = calloc((size_t)argc + 1, sizeof *targv);
        targv[0] = strdup(argv0);
        for (int i = 1; i < argc; i++)
            targv[i] = argv[i];
    } else {
        if (argc < 2) {
            fprintf(stderr, "usage: pspawn-shim PROG [ARGS...] (run by the pspawn SPANK plugin)\n");
            return 2;
        }
        targv = argv + 1;
    }
    debug = pspawn_env_true("PSPAWN_SHIM_DEBUG");
    char *key = getenv("PSPAWN_SHIM_KEY") ? strdup(getenv("PSPAWN_SHIM_KEY")) : NULL;
    char *token = getenv("PSPAWN_SHIM_TOKEN") ? strdup(getenv("PSPAWN_SHIM_TOKEN")) : NULL;
    char *tasks = getenv("PSPAWN_SHIM_LOCAL_TASKS") ? strdup(getenv("PSPAWN_SHIM_LOCAL_TASKS")) : NULL;
    const char *sigmode = getenv("PSPAWN_SHIM_SIGNALS");
    const char *proctrack = getenv("PSPAWN_SHIM_PROCTRACK");
    char *mover = getenv("PSPAWN_SHIM_MOVER") ? strdup(getenv("PSPAWN_SHIM_MOVER")) : NULL;
    /* Stand-ins' sub-zygotes are forked from the root unless the step
     * asks otherwise: with exec'd ones, stand-ins the root forwarded while
     * a sub-zygote was still starting have been seen, under load, to run
     * by plain exec instead (correct, but the slow path). */
    const char *asked = getenv("PSPAWN_SHIM_OPTIONS");
    char *options = NULL;
    if (asked && strstr(asked, "subzygote="))
        options = strdup(asked);
    else if (asprintf(&options, "%s%ssubzygote=fork", asked ? asked : "",
                      asked && *asked ? "," : "") < 0)
        options = NULL;
    int relay = sigmode && !strcmp(sigmode, "yes");
    if (!sigmode || !strcmp(sigmode, "auto"))
        relay = proctrack && strstr(proctrack, "cgroup");
    /* The task sees the environment plain srun gives. */
    static const char *const ours[] = { "PSPAWN_SHIM_KEY", "PSPAWN_SHIM_TOKEN",
        "PSPAWN_SHIM_LOCAL_TASKS", "PSPAWN_SHIM_SIGNALS", "PSPAWN_SHIM_PROCTRACK",
        "PSPAWN_SHIM_DEBUG", "PSPAWN_SHIM_ARGV0", "PSPAWN_SHIM_MOVER", "PSPAWN_SHIM_OPTIONS" };
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        unsetenv(ours[i]);

    char path[PATH_MAX];
    targv[0] = slurm_build_path(targv[0]);
    snprintf(path, sizeof path, "%s", targv[0]);
    if (!key || !token || strlen(token) >= PSPAWN_TOKEN_LEN)
        exec_plain(path, targv, "no step key or token");
    struct program prog;
    int err = pspawn_program_inspect(&prog, path);
    if (err)
        exec_plain(path, targv, NULL);
    if (prog.fallback)
        exec_plain(path, targv, prog.fallback);
    if (prog.ninterp)
        exec_plain(path, targv, "#! script: exec'd as is");

    struct pspawn_standin_client client = {
        .path = path, .key = key, .token = token, .local_tasks = tasks, .log = log_line,
        .options = options, .argv = targv, .prog = &prog,
    };
    int sock = pspawn_standin_connect(&client);
    pid_t zpid = client.zpid;
    int fail_fd = client.fail_fd;
    if (sock < 0)
        exec_plain(path, targv, "zygote cannot be reached");

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        exec_plain(path, targv, "no pipe");
    /* The task waits, set up, before its first instruction, until we
     * have its pid: if the zygote dies before telling us, we cancel it
     * and exec instead, and no task runs twice. */
    struct pspawn_hold hold = { .held = 0 };
    if ((err = pspawn_standin_send(sock, targv, token, sig_pipe, 2, &hold)))
        exec_plain(path, targv, strerror(err));
    /* The zygote answers within milliseconds of its turn; one that does
     * not within STARTED_TIMEOUT_MS is taken as gone (the held task, if
     * any, is cancelled and never runs). */
    struct standin_reply r;
    const char *limit = getenv("PSPAWN_TIMEOUT");     /* libpspawn's, in seconds */
    double limit_s = limit && *limit ? strtod(limit, NULL) : 0;
    int started_ms = limit_s > 0 ? (int)(3000 * limit_s) : STARTED_TIMEOUT_MS;
    ssize_t got = recv_within(sock, &r, sizeof r, started_ms);
    if (got != (ssize_t)sizeof r || r.magic != PSPAWN_MAGIC || r.kind != STANDIN_STARTED) {
        int timed_out = got < 0 && errno == ETIMEDOUT;
        pspawn_standin_go(&hold, 0);
        close(sock);
        exec_plain(path, targv, got == 0 ? "zygote lost before it started the task"
                                : timed_out ? "zygote did not answer in time (3 x PSPAWN_TIMEOUT)"
                                            : "zygote refused the task");
    }
    pid_t task = r.pid;
    if (mover && (err = move_task(mover, task, token))) {
        /* Not the step's any more: the zygote died since it replied, and
         * the held task is init's.  Cancel it and exec, in our cgroups. */
        if (err == ESRCH && zygote_gone(sock)) {
            pspawn_standin_go(&hold, 0);
            close(sock);
            exec_plain(path, targv, "zygote lost before its task was moved");
        }
        say("task %d stays in the zygote's cgroups: mover: %s", (int)task, strerror(err));
    }
    /* Held, the task cannot have exited: this pidfd is its own. */
    int task_pidfd = (int)syscall(SYS_pidfd_open, task, 0);
    pspawn_standin_go(&hold, 1);
    say("task %d forked by the zygote (relay signals: %s)", (int)task, relay ? "yes" : "no");

    if (relay) {
        struct sigaction sa = { .sa_handler = on_signal };
        sigemptyset(&sa.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGSEGV &&
                sig != SIGBUS && sig != SIGFPE && sig != SIGILL && sig != SIGTRAP &&
                sig != SIGPIPE && !(sig >= 32 && sig < SIGRTMIN))
                sigaction(sig, &sa, NULL);
    } else {
        /* Signals reach the task by themselves: do not die before it. */
        for (int sig = 1; sig < NSIG; sig++)
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT ||
                sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGALRM || sig == SIGCONT)
                signal(sig, SIG_IGN);
    }
    int status = -1;
    wait_task(sock, task, task_pidfd);
    got = recv(sock, &r, sizeof r, MSG_DONTWAIT);
    if (got == (ssize_t)sizeof r && r.kind == STANDIN_EXITED)
        status = r.status;
    close(sock);
    if (zpid > 0) {
        /* The zygote is our child: it stays in the step's process tree
         * until every task of the node has been served. */
        while (waitpid(zpid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (fail_fd >= 0)
        close(fail_fd);
    if (status == -1)
        status = orphan_status(task, task_pidfd);
    if (status == -1) {
        fprintf(stderr, "pspawn-shim: lost the zygote before task %d ended: its exit status "
                "is unknown (Linux 6.15 or later keeps it)\n", (int)task);
        _exit(1);
    }
    exit_like(status);
}
