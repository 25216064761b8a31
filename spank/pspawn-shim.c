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
 *   PSPAWN_SHIM_SIGNAL_CHILDREN 1: cgroup.conf's SignalChildrenProcesses=yes
 *                          (proctrack/cgroup signals every process of the
 *                          step, the task too: signals=auto relays none)
 *   PSPAWN_SHIM_DEBUG      1: say what happens on stderr
 *   PSPAWN_SHIM_OPTIONS    the step's libpspawn options (fanout=...)
 *   PSPAWN_SHIM_ARGV0      the task's argv[0] when the plugin replaced it
 *                          in place (Slurm < 23.02.5)
 *   PSPAWN_SHIM_MOVER      the step's mover in slurmstepd: the task is held
 *                          until the mover has put it into our cgroups
 *                          (see pspawn_cgroup.h)
 *   PSPAWN_SHIM_JOB        1: KEY names the job's zygote, which root
 *                          started for the step; the task gets its own
 *                          process group (the zygote is in another session)
 *
 * `pspawn-shim --job-zygote PROG ARGS` is the starter of a job's zygote
 * (shim-job.c), exec'd by the plugin in slurmstepd with the job's user's
 * credentials in the job's extern step: PSPAWN_SHIM_LOCK_FD, the lock
 * name it holds, and PSPAWN_SHIM_IDLE_MS, the zygote's idle limit.
 * Their values are wiped in place in our initial environment block before
 * anything else runs: /proc/PID/environ shows that block, and the token
 * must not be read there.
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
#include "pidfd.h"
#include "procfs.h"
#include "protocol.h"
#include "pspawn_cgroup.h"
#include "shim.h"

#define say shim_say
#include "unixsock.h"

extern char **environ;

static int debug;
static int sig_pipe[2] = { -1, -1 };
static int starter;     /* --job-zygote: starts a job's zygote, runs no task */

void shim_say(const char *fmt, ...)
{
    if (!debug)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* The wall clock, to the ms: the lines line up with slurmd's log (the
     * job's zygote's start overlapping Slurm's setup, bench/README.md). */
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &tm);
    fprintf(stderr, "pspawn-shim[%d] %02d:%02d:%02d.%03ld: %s\n", (int)getpid(), tm.tm_hour,
            tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, buf);
}

/* A plain task: what slurmstepd would have done. */
static void __attribute__((noreturn)) exec_plain(const char *path, char **argv, const char *why)
{
    if (starter) {
        /* The lock goes with us: the step's stand-ins exec their tasks. */
        say("no job's zygote: %s", why ? why : "the program is not one to fork");
        _exit(1);
    }
    if (why)
        say("plain exec: %s", why);
    execve(path, argv, environ);
    int e = errno;
    fprintf(stderr, "slurmstepd: error: execve(): %s: %s\n", argv[0], strerror(e));
    _exit(e);
}

/* PSPAWN_SHIM_* from the plugin, taken out of the environment. */
static struct {
    char *key, *token, *tasks, *signals, *proctrack, *signal_children, *options,
        *argv0, *mover, *job, *lock_fd, *idle_ms;
} shim;

/* Copy our variables, then overwrite their values in the block the kernel
 * shows as /proc/PID/environ (unsetenv only drops the pointers), and drop
 * them: the task sees the environment plain srun gives. */
static void take_shim_vars(void)
{
    static const struct {
        const char *name;
        char **to;
    } vars[] = {
        { "PSPAWN_SHIM_KEY", &shim.key }, { "PSPAWN_SHIM_TOKEN", &shim.token },
        { "PSPAWN_SHIM_LOCAL_TASKS", &shim.tasks }, { "PSPAWN_SHIM_SIGNALS", &shim.signals },
        { "PSPAWN_SHIM_PROCTRACK", &shim.proctrack },
        { "PSPAWN_SHIM_SIGNAL_CHILDREN", &shim.signal_children },
        { "PSPAWN_SHIM_OPTIONS", &shim.options },
        { "PSPAWN_SHIM_ARGV0", &shim.argv0 }, { "PSPAWN_SHIM_MOVER", &shim.mover },
        { "PSPAWN_SHIM_JOB", &shim.job }, { "PSPAWN_SHIM_LOCK_FD", &shim.lock_fd },
        { "PSPAWN_SHIM_IDLE_MS", &shim.idle_ms },
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].name);
        *vars[i].to = v ? strdup(v) : NULL;
    }
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "PSPAWN_SHIM_", 12) == 0) {
            char *eq = strchr(*e, '=');
            if (eq)
                memset(eq + 1, 0, strlen(eq + 1));
        }
    for (char **e = environ; *e;) {
        char *name = strncmp(*e, "PSPAWN_SHIM_", 12) == 0 ? strndup(*e, strcspn(*e, "=")) : NULL;
        int gone = name && unsetenv(name) == 0;
        free(name);
        e = gone ? environ : e + 1;
    }
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

/* Whether TASK (not ours to wait for) has ended: gone, or a zombie. */
static int task_ended(pid_t task)
{
    unsigned long long state;
    return pspawn_proc_stat(task, 3, 3, &state) < 0 ? errno == ESRCH : state == 'Z';
}

/* Wait for the zygote's word on FD while the task runs, relaying
 * signals.  The zygote sends it once it has reaped the task; should it
 * not come within GRACE_MS of the task's end (TASK_PIDFD), the zygote is
 * taken as gone (or stopped), whoever still holds its end of FD. */
static void wait_task(int fd, pid_t task, int task_pidfd, int grace_ms)
{
    double ended_at = -1;
    for (;;) {
        struct pollfd p[3] = { { fd, POLLIN, 0 }, { sig_pipe[0], POLLIN, 0 },
                               { ended_at >= 0 ? -1 : task_pidfd, POLLIN, 0 } };
        /* Without a pidfd (Linux before 5.3), a look each second. */
        int r = poll(p, 3, ended_at >= 0 ? 1000 : task_pidfd < 0 ? 1000 : -1);
        if (r < 0)
            continue;
        if (p[1].revents & POLLIN)
            relay_signals(task, task_pidfd);
        if (p[0].revents)
            return;
        if (ended_at < 0 && (p[2].revents || (task_pidfd < 0 && task_ended(task))))
            ended_at = pspawn_now_ms();
        if (ended_at >= 0 && pspawn_now_ms() - ended_at >= grace_ms)
            return;     /* the task ended long ago, and no word */
    }
}

/* Our child the zygote serves the step's other stand-ins until their
 * tasks are done: wait for it, but not for one stopped for WAIT_MS (it
 * serves nobody; its tasks' stand-ins see to them). */
static void wait_zygote(pid_t zpid, int wait_ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, zpid, 0);
    double stopped_since = -1;
    for (;;) {
        pid_t r = waitpid(zpid, NULL, WNOHANG);
        if (r > 0 || (r < 0 && errno != EINTR))
            break;
        struct pollfd p = { pidfd, POLLIN, 0 };
        if (pidfd >= 0)
            poll(&p, 1, 1000);
        else
            poll(NULL, 0, 200);
        unsigned long long state;
        if (pspawn_proc_stat(zpid, 3, 3, &state) < 0 || (state != 'T' && state != 't'))
            stopped_since = -1;
        else if (stopped_since < 0)
            stopped_since = pspawn_now_ms();
        else if (pspawn_now_ms() - stopped_since >= wait_ms) {
            say("zygote %d stopped for %d ms: not waited for", (int)zpid, wait_ms);
            break;
        }
    }
    if (pidfd >= 0)
        close(pidfd);
}

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
/* A task that has ended and is not reaped yet (its zygote stopped, or its
 * new parent not at it yet) shows its wait status in /proc (stat field 52,
 * exit_code); its pidfd, still alive after, says it was our task's. */
static int zombie_status(pid_t task, int pidfd)
{
    unsigned long long state, code;
    if (pspawn_proc_stat(task, 3, 3, &state) < 0 || state != 'Z' ||
        pspawn_proc_stat(task, 52, 52, &code) < 0 ||
        syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0)
        return -1;
    return (int)code;
}

static int orphan_status(pid_t task, int pidfd)
{
    if (pidfd < 0)
        return -1;
    say("lost the zygote: waiting for task %d through its pidfd", (int)task);
    wait_relaying(pidfd, task, pidfd);
    /* Exited; its exit status is kept once its new parent has reaped it. */
    for (int tries = 0; tries < 200; tries++) {
        int zombie = zombie_status(task, pidfd);
        if (zombie >= 0)
            return zombie;
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

/* What we do with signals while the task runs: relay them to it, or,
 * where they reach it by themselves, ignore them (not die before it). */
static void set_signals(int relay)
{
    struct sigaction sa = { .sa_handler = relay ? on_signal : SIG_IGN };
    sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++) {
        int mine = relay ? sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGSEGV &&
                               sig != SIGBUS && sig != SIGFPE && sig != SIGILL && sig != SIGTRAP &&
                               sig != SIGPIPE && !(sig >= 32 && sig < SIGRTMIN)
                         : sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT ||
                               sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGALRM || sig == SIGCONT;
        if (mine)
            sigaction(sig, &sa, NULL);
    }
}

/* Whether TASK descends from the zygote at the other end of SOCK (its
 * child, or a sub-zygote's: fan-out nests at most a few levels): a pid
 * that does not cannot be ours to signal, move or wait for. */
static int zygote_made(int sock, pid_t task)
{
    struct ucred zygote;
    if (pspawn_peer_cred(sock, &zygote) != 0)
        return 0;
    unsigned long long pid = (unsigned long long)task;
    for (int depth = 0; depth < 4; depth++) {
        if (pspawn_proc_stat((pid_t)pid, 4, 4, &pid) != 0 || pid <= 1)
            return 0;
        if ((pid_t)pid == zygote.pid)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    debug = pspawn_env_true("PSPAWN_SHIM_DEBUG");
    take_shim_vars();
    char **targv;
    starter = argc > 2 && !strcmp(argv[1], "--job-zygote");
    if (starter) {
        argv++;
        argc--;
    }
    if (shim.argv0) {
        /* In place: argv[0] became the shim; the rest is the task's. */
        targv = calloc((size_t)argc + 1, sizeof *targv);
        targv[0] = shim.argv0;
        for (int i = 1; i < argc; i++)
            targv[i] = argv[i];
    } else {
        if (argc < 2) {
            fprintf(stderr, "usage: pspawn-shim PROG [ARGS...] (run by the pspawn SPANK plugin)\n");
            return 2;
        }
        targv = argv + 1;
    }
    /* Stand-ins' sub-zygotes are forked from the root unless the step
     * asks otherwise: with exec'd ones, stand-ins the root forwarded while
     * a sub-zygote was still starting have been seen, under load, to run
     * by plain exec instead (correct, but the slow path). */
    const char *asked = shim.options;
    char *options = NULL;
    if (asked && strstr(asked, "subzygote="))
        options = strdup(asked);
    else if (asprintf(&options, "%s%ssubzygote=fork", asked ? asked : "",
                      asked && *asked ? "," : "") < 0)
        options = NULL;
    /* signals=auto: only proctrack/cgroup signals the shims alone (and
     * with SignalChildrenProcesses=yes, the tasks too). */
    int relay = shim.signals && !strcmp(shim.signals, "yes");
    if (!shim.signals || !strcmp(shim.signals, "auto"))
        relay = shim.proctrack && strstr(shim.proctrack, "cgroup") &&
                !(shim.signal_children && !strcmp(shim.signal_children, "1"));

    char path[PATH_MAX];
    targv[0] = slurm_build_path(targv[0]);
    snprintf(path, sizeof path, "%s", targv[0]);
    if (!shim.key || !shim.token || strlen(shim.token) >= PSPAWN_TOKEN_LEN)
        exec_plain(path, targv, "no step key or token");
    say("%s for %s", starter ? "starter of the job's zygote" : "stand-in", path);
    struct program prog;
    int err = pspawn_program_inspect(&prog, path);
    if (err)
        exec_plain(path, targv, NULL);
    if (prog.fallback)
        exec_plain(path, targv, prog.fallback);
    if (prog.ninterp)
        exec_plain(path, targv, "#! script: exec'd as is");

    struct pspawn_standin_client client = {
        .path = path, .key = shim.key, .token = shim.token, .local_tasks = shim.tasks,
        .log = log_line, .options = options, .argv = targv, .prog = &prog,
        .job = shim.job && !strcmp(shim.job, "1"),
    };
    if (starter)
        return shim_start_job(&client, shim.lock_fd, shim.idle_ms);
    int sock = pspawn_standin_connect(&client);
    pid_t zpid = client.zpid;
    int fail_fd = client.fail_fd;
    if (sock < 0)
        exec_plain(path, targv, "no zygote to serve the task");
    /* The zygote answers within milliseconds of its turn; one that does
     * not within 3 x PSPAWN_TIMEOUT (the library's wait for a zygote,
     * default 10 s) is taken as gone (the held task, if any, is
     * cancelled and never runs).  Our request never waits longer. */
    int wait_ms = pspawn_standin_wait_ms();
    struct timeval snd = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        exec_plain(path, targv, "no pipe");
    /* The task waits, set up, before its first instruction, until we
     * have its pid: if the zygote dies before telling us, we cancel it
     * and exec instead, and no task runs twice. */
    struct pspawn_hold hold = { .held = 0 };
    /* A job's zygote is in a session of its own, whose groups a task
     * cannot join: it leads a group of its own, as task 0 of a plain step
     * does (a kill(0) of one task reaches no other step's). */
    if ((err = pspawn_standin_send(sock, targv, shim.token, sig_pipe, 2, &hold,
                                   client.job ? REQ_SETPGROUP : 0))) {
        char why[160];
        if (err == EMFILE)
            snprintf(why, sizeof why, "more inherited fds than a request passes (%d with 0-2): "
                     "none is left out", PSPAWN_FD_MAX);
        else
            snprintf(why, sizeof why, "the request was not sent: %s", strerror(err));
        exec_plain(path, targv, why);
    }
    struct standin_reply r;
    ssize_t got = recv_within(sock, &r, sizeof r, wait_ms);
    if (got != (ssize_t)sizeof r || r.magic != PSPAWN_MAGIC || r.kind != STANDIN_STARTED) {
        int timed_out = got < 0 && errno == ETIMEDOUT;
        pspawn_standin_go(&hold, 0);
        close(sock);
        exec_plain(path, targv, got == 0 ? "zygote lost before it started the task"
                                : timed_out ? "zygote did not answer in time (3 x PSPAWN_TIMEOUT)"
                                            : "zygote refused the task");
    }
    if (r.pid <= 0 || !zygote_made(sock, r.pid)) {
        pspawn_standin_go(&hold, 0);
        close(sock);
        exec_plain(path, targv, "zygote named a task that is not its child");
    }
    pid_t task = r.pid;
    if (shim.mover && (err = shim_move_task(shim.mover, task, shim.token, wait_ms))) {
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
    /* Our signal dispositions before the task runs: a signal that comes
     * meanwhile waits, blocked, and is then relayed (or ignored). */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    set_signals(relay);
    pspawn_standin_go(&hold, 1);
    sigprocmask(SIG_SETMASK, &old, NULL);
    say("task %d forked by the zygote (relay signals: %s)", (int)task, relay ? "yes" : "no");

    int status = -1;
    wait_task(sock, task, task_pidfd, wait_ms / 3);   /* PSPAWN_TIMEOUT, 10 s by default */
    got = recv(sock, &r, sizeof r, MSG_DONTWAIT);
    if (got == (ssize_t)sizeof r && r.magic == PSPAWN_MAGIC && r.kind == STANDIN_EXITED &&
        r.pid == task)
        status = r.status;
    close(sock);
    if (zpid > 0)
        wait_zygote(zpid, wait_ms);
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
