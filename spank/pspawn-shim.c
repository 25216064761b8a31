/* SPDX-License-Identifier: BSD-3-Clause */
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
 *                          in place (Slurm before 23.11)
 *   PSPAWN_SHIM_MOVER_FD   our end of the socket pair to the step's mover
 *                          in slurmstepd: the task is held until the mover
 *                          has put it into our cgroups, and exec'd by us
 *                          instead if it does not (see pspawn_cgroup.h)
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
#include "options.h"
#include "sayline.h"
#include "shim.h"
#include "tally.h"

#define say shim_say
#include "unixsock.h"

extern char **environ;

static int debug;
static int verbose;     /* --pspawn=verbose: the node's line, when we are its last task */
static int sig_pipe[2] = { -1, -1 };
static int starter;     /* --job-zygote: starts a job's zygote, runs no task */

void shim_say(const char *fmt, ...)
{
    if (!debug)
        return;
    /* The wall clock, to the ms: the lines line up with slurmd's log (the
     * job's zygote's start overlapping Slurm's setup, bench/README.md). */
    va_list ap;
    va_start(ap, fmt);
    pspawn_vsay_line("pspawn-shim", fmt, ap);
    va_end(ap);
}

/* PSPAWN_SHIM_* from the plugin, taken out of the environment. */
static struct {
    char *key, *token, *tasks, *signals, *proctrack, *signal_children, *options,
        *argv0, *mover, *job, *lock_fd, *idle_ms;
    int mover_fd;       /* -1: the step has no mover */
} shim = { .mover_fd = -1 };

/* A plain task: what slurmstepd would have done, and the step's tally
 * told why. */
static void __attribute__((noreturn)) exec_plain(const char *path, char **argv, const char *why)
{
    if (starter) {
        /* The lock goes with us: the step's stand-ins exec their tasks. */
        say("no job's zygote: %s", why);
        _exit(1);
    }
    say("plain exec: %s", why);
    shim_report(shim.mover_fd, shim.token, 0, PSPAWN_ZYGOTE_NONE, 0, 0, 0, why, verbose);
    execve(path, argv, environ);
    int e = errno;
    fprintf(stderr, "slurmstepd: error: execve(): %s: %s\n", argv[0], strerror(e));
    _exit(e);
}

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
        { "PSPAWN_SHIM_ARGV0", &shim.argv0 }, { "PSPAWN_SHIM_MOVER_FD", &shim.mover },
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

/* Our end to the step's mover, if PSPAWN_SHIM_MOVER_FD names one: a
 * socket, at once close-on-exec (neither the zygote we may start nor a
 * task we exec may hold it).  -1 if none, or it is not what it should be
 * (the task is then exec'd: it could not be moved). */
static int take_mover_fd(void)
{
    char *end;
    long fd = shim.mover ? strtol(shim.mover, &end, 10) : -1;
    struct stat st;
    if (!shim.mover)
        return -1;
    if (*end || fd < 3 || fd > INT_MAX || fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
        say("PSPAWN_SHIM_MOVER_FD=%s is no socket", shim.mover);
        return -2;
    }
    return (int)fd;
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
struct relay_target {
    pid_t task;
    int pidfd;
};
static void relay_signals(void *arg)
{
    const struct relay_target *t = arg;
    unsigned char s[64];
    ssize_t k;
    while ((k = read(sig_pipe[0], s, sizeof s)) > 0)
        for (ssize_t i = 0; i < k; i++)
            if (t->pidfd >= 0)
                syscall(SYS_pidfd_send_signal, t->pidfd, s[i], NULL, 0);
            else
                kill(t->task, s[i]);
}

/* The zygote ZPID serves the step's other stand-ins until their tasks are
 * done, and its keeper, our child, lives as long: wait for the keeper,
 * but not while the zygote has been stopped for WAIT_MS (it serves
 * nobody; its tasks' stand-ins see to them). */
static void wait_keeper(pid_t keeper, pid_t zpid, int wait_ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, keeper, 0);
    double stopped_since = -1;
    for (;;) {
        pid_t r = waitpid(keeper, NULL, WNOHANG);
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

/* The task's command line: in place (argv[0] became the shim; the rest
 * is the task's), or after ours.  NULL (said) when there is none. */
static char **command_line(int argc, char **argv)
{
    char **targv;
    if (shim.argv0) {
        targv = calloc((size_t)argc + 1, sizeof *targv);
        if (!targv) {
            perror("pspawn-shim");
            return NULL;
        }
        targv[0] = shim.argv0;
        for (int i = 1; i < argc; i++)
            targv[i] = argv[i];
    } else {
        if (argc < 2) {
            fprintf(stderr, "usage: pspawn-shim PROG [ARGS...] (run by the pspawn SPANK plugin)\n");
            return NULL;
        }
        targv = argv + 1;
    }
    return targv;
}

/* The step's options, with subzygote=fork unless it names one: with exec'd
 * sub-zygotes, stand-ins the root forwarded while a sub-zygote was still
 * starting have been seen, under load, to run by plain exec instead
 * (correct, but the slow path).  NULL: no memory. */
static char *step_options(void)
{
    const char *asked = shim.options;
    char *options = NULL;
    if (asked && strstr(asked, "subzygote="))
        options = strdup(asked);
    else if (asprintf(&options, "%s%ssubzygote=fork", asked ? asked : "",
                      asked && *asked ? "," : "") < 0)
        options = NULL;
    return options;
}

/* Whether we relay signals to the task.  signals=auto: only
 * proctrack/cgroup signals the shims alone (and with
 * SignalChildrenProcesses=yes, the tasks too). */
static int relay_wanted(void)
{
    int relay = shim.signals && !strcmp(shim.signals, "yes");
    if (!shim.signals || !strcmp(shim.signals, "auto"))
        relay = shim.proctrack && strstr(shim.proctrack, "cgroup") &&
                !(shim.signal_children && !strcmp(shim.signal_children, "1"));
    return relay;
}

/* The program, inspected; one no zygote can serve is exec'd. */
static void inspect_or_exec(const char *path, char **targv, struct program *prog)
{
    int err = pspawn_program_inspect(prog, path);
    if (err) {
        char why[96];
        snprintf(why, sizeof why, "the program cannot be read: %s", strerror(err));
        exec_plain(path, targv, why);
    }
    if (prog->fallback)
        exec_plain(path, targv, prog->fallback);
    if (prog->ninterp)
        exec_plain(path, targv, "#! script: exec'd as is");
}

/* Send the task's request on SOCK and wait until it is set up, held
 * (HOLD); exec where either fails.  Its pid. */
static pid_t request_task(int sock, const char *path, char **targv, int job, int wait_ms,
                          struct pspawn_hold *hold)
{
    /* A job's zygote is in a session of its own, whose groups a task
     * cannot join: it leads a group of its own, as task 0 of a plain step
     * does (a kill(0) of one task reaches no other step's). */
    int err = pspawn_standin_send(sock, targv, shim.token, sig_pipe, 2, hold,
                                  REQ_HOLD | (job ? REQ_SETPGROUP : 0), 0, -1);
    if (err) {
        char why[160];
        if (err == EMFILE)
            snprintf(why, sizeof why, "more inherited fds than a request passes (%d with 0-2): "
                     "none is left out", PSPAWN_FD_MAX);
        else
            snprintf(why, sizeof why, "the request was not sent: %s", strerror(err));
        exec_plain(path, targv, why);
    }
    const char *refused;
    int setup;
    pid_t task = pspawn_standin_started(sock, wait_ms, &setup, &refused);
    /* Set up before it is moved or released: held, it runs nothing of its
     * program until then. */
    if (task > 0 && setup >= 0 && pspawn_standin_setup_done(setup, task, &refused) < 0)
        task = -1;
    if (task < 0) {
        pspawn_standin_go(hold, 0);
        close(sock);
        exec_plain(path, targv, refused);
    }
    return task;
}

/* Into the step's cgroups (the mover), where the step has one.  A task
 * the mover did not move would run in the zygote's cgroups (with
 * reuse=job, outside its step): it is cancelled, never run, and we exec
 * the program ourselves, in our own cgroups. */
static void move_task(int sock, const char *path, char **targv, pid_t task, int wait_ms,
                      struct pspawn_hold *hold)
{
    int err;
    if (shim.mover_fd == -1 ||
        !(err = shim.mover_fd < 0 ? EBADF : shim_move_task(shim.mover_fd, task, shim.token, wait_ms)))
        return;
    /* ESRCH with the zygote gone: it died since it replied, and the held
     * task is init's. */
    char why[96];
    snprintf(why, sizeof why, "the mover did not move task %d into our cgroups: %s%s", (int)task,
             strerror(err), err == ESRCH && zygote_gone(sock) ? " (zygote lost)" : "");
    pspawn_standin_go(hold, 0);
    close(sock);
    exec_plain(path, targv, why);
}

/* Release the held task, our signal dispositions set before it runs: a
 * signal that comes meanwhile waits, blocked, and is then relayed (or
 * ignored). */
static void release_task(pid_t task, int relay, struct pspawn_hold *hold)
{
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    set_signals(relay);
    pspawn_standin_go(hold, 1);
    sigprocmask(SIG_SETMASK, &old, NULL);
    say("task %d forked by the zygote (relay signals: %s)", (int)task, relay ? "yes" : "no");
}

/* Wait for the task's end on SOCK (or, the zygote lost, from its keeper
 * or its pidfd), relaying signals meanwhile, wait for our zygote's keeper
 * (C->keeper, if ours), and exit as the task did. */
static void __attribute__((noreturn)) wait_and_exit_like(int sock, pid_t task, int task_pidfd,
                                                         unsigned long long start,
                                                         const struct pspawn_standin_client *c,
                                                         int wait_ms)
{
    struct relay_target relayed = { task, task_pidfd };
    struct pspawn_standin_signals relay_from = { sig_pipe[0], relay_signals, &relayed };
    /* PSPAWN_TIMEOUT (10 s by default) for the zygote's word after the end. */
    int status = pspawn_standin_task_status(sock, task, task_pidfd, wait_ms / 3, &relay_from);
    close(sock);
    if (status == -1) {
        say("lost the zygote: waiting for task %d through the zygote's keeper", (int)task);
        const char *told;
        status = pspawn_standin_lost_status(c->key, task, start, task_pidfd, &relay_from, &told);
        if (status != -1)
            say("task %d's wait status (0x%x) from %s", (int)task, (unsigned)status, told);
    }
    if (c->keeper > 0)
        wait_keeper(c->keeper, c->zpid, wait_ms);
    if (c->fail_fd >= 0)
        close(c->fail_fd);
    if (status == -1) {
        /* Which kernel feature would have told: without a pidfd (before
         * 5.3) the task cannot even be waited for once the zygote is gone. */
        fprintf(stderr, "pspawn-shim: lost the zygote before task %d ended: its exit status "
                "is unknown (no keeper of the zygote answered; %s)\n", (int)task,
                task_pidfd >= 0 ? "Linux 6.15 or later keeps it"
                                : "no pidfd_open: Linux 5.3 or later waits for it");
        _exit(1);
    }
    pspawn_standin_exit_like(status);
}

int main(int argc, char **argv)
{
    debug = pspawn_env_true("PSPAWN_SHIM_DEBUG");
    take_shim_vars();
    shim.mover_fd = take_mover_fd();
    starter = argc > 2 && !strcmp(argv[1], "--job-zygote");
    if (starter) {
        argv++;
        argc--;
    }
    char **targv = command_line(argc, argv);
    if (!targv)
        return 2;
    char *options = step_options();
    int relay = relay_wanted();
    struct pspawn_options asked;
    char bad[160];
    pspawn_options_defaults(&asked);
    verbose = pspawn_options_parse(&asked, shim.options, bad, sizeof bad) == 0 && asked.verbose;

    char path[PATH_MAX];
    targv[0] = slurm_build_path(targv[0]);
    snprintf(path, sizeof path, "%s", targv[0]);
    if (!shim.key || !shim.token || strlen(shim.token) >= PSPAWN_TOKEN_LEN)
        exec_plain(path, targv, "no step key or token");
    say("%s for %s", starter ? "starter of the job's zygote" : "stand-in", path);
    struct program prog;
    inspect_or_exec(path, targv, &prog);

    struct pspawn_standin_client client = {
        .path = path, .key = shim.key, .token = shim.token, .local_tasks = shim.tasks,
        .log = log_line, .options = options, .argv = targv, .prog = &prog,
        .job = shim.job && !strcmp(shim.job, "1"),
    };
    if (starter)
        return shim_start_job(&client, shim.lock_fd, shim.idle_ms);
    int sock = pspawn_standin_connect(&client);
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
    pid_t task = request_task(sock, path, targv, client.job, wait_ms, &hold);
    move_task(sock, path, targv, task, wait_ms, &hold);
    /* Held, the task cannot have exited: this pidfd is its own, and this
     * start time, which with its pid names it to the zygote's keeper
     * (there may be no pidfd). */
    int task_pidfd = (int)syscall(SYS_pidfd_open, task, 0);
    unsigned long long start = 0;
    pspawn_proc_stat(task, 22, 22, &start);
    release_task(task, relay, &hold);
    struct ucred zygote;
    shim_report(shim.mover_fd, shim.token, 1, client.job ? PSPAWN_ZYGOTE_JOB : PSPAWN_ZYGOTE_NEW,
                pspawn_peer_cred(sock, &zygote) == 0 ? pspawn_proc_start_ms(zygote.pid) : 0,
                client.zygote_objects, client.zygote_python, NULL, verbose);
    wait_and_exit_like(sock, task, task_pidfd, start, &client, wait_ms);
}
