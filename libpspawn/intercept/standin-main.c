/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pspawn-standin: what a launcher's child execs, instead of the program,
 * when libpspawn-intercept.so routes the launch (PSPAWN_STANDIN_EXEC
 * names the program; argv and the rest of the environment are the
 * task's).  It is the process the launcher knows: it hands the zygote of
 * its scope everything exec would have given the task (argv,
 * environment, cwd, umask, limits, affinity, signal mask and ignored
 * signals, process group, every inherited fd at its own number), passes
 * on the signals meant for it alone, and ends as the task ended.  The
 * first stand-in of a program starts its zygote, which nobody waits on:
 * it ends after PSPAWN_INTERCEPT_IDLE seconds without a task.  Whenever
 * the zygote cannot serve, the stand-in execs the program itself.
 *
 * Static, so that it needs nothing from the task's environment (and the
 * interception library, preloaded there, is not loaded here).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <termios.h>
#include <unistd.h>

#include "gain.h"
#include "hash.h"
#include "identity.h"
#include "intercept.h"
#include "internal.h"
#include "pidfd.h"
#include "priority.h"
#include "procfs.h"
#include "route.h"
#include "sayline.h"

extern char **environ;

static int debug;
/* The controlling terminal we gave up for our task (its fd), or -1. */
static int ctty_given = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (!debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    pspawn_vsay_line("pspawn-standin", fmt, ap);
    va_end(ap);
}

static void log_line(const char *msg)
{
    say("%s", msg);
}

/* What exec would have done: no stand-in any more, the program itself. */
static void __attribute__((noreturn)) exec_plain(const char *path, char **argv, const char *why)
{
    if (why)
        say("plain exec of %s: %s", path, why);
    /* Ours again: no task took it. */
    if (ctty_given >= 0 && ioctl(ctty_given, TIOCSCTTY, 0) < 0)
        say("could not take back the controlling terminal: %s", strerror(errno));
    route_standin_remove(getpid());
    execve(path, argv, environ);
    int e = errno;
    fprintf(stderr, "pspawn-standin: %s: %s\n", path, strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Our variable, copied, its value wiped in the block that
 * /proc/PID/environ shows, and dropped: the task gets the environment
 * the launcher gave. */
static char *take_var(const char *name)
{
    const char *v = getenv(name);
    char *copy = v ? strdup(v) : NULL;
    size_t n = strlen(name);
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            memset(*e + n + 1, 0, strlen(*e + n + 1));
    unsetenv(name);
    return copy;
}

/* Remember, for the whole scope, that PATH cannot have a zygote: its
 * later launches are not routed. */
static void refuse_program(const char *path, uint32_t verdict)
{
    struct stat st;
    struct route_program *e;
    if (stat(path, &st) == 0 && (e = route_program_entry(route_program_key(&st, environ))))
        __atomic_store_n(&e->verdict, verdict, __ATOMIC_RELEASE);
}

/* The name of the scope's zygote for this launch: the user, the scope,
 * and the program's identity with what a fork of a zygote keeps of its
 * exec (group ids; the session, which a task can join only from within,
 * unless it leads one of its own: NEW_SESSION; the scheduling, which an
 * unprivileged task cannot raise back from a zygote started lowered). */
static int zygote_key(const char *path, char **argv, const char *scope, const char *options,
                      int new_session, char *key, size_t len)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return -1;
    uint64_t h = pspawn_program_identity(geteuid(), path, &st, argv, environ, options);
    pid_t sid = new_session ? 0 : getsid(0);
    gid_t gid = getegid(), groups[256];
    int ng = getgroups(256, groups);
    pspawn_hash(&h, &sid, sizeof sid);
    pspawn_hash(&h, &gid, sizeof gid);
    priority_hash_scheduling(&h);
    if (ng > 0)
        pspawn_hash(&h, groups, (size_t)ng * sizeof groups[0]);
    int n = snprintf(key, len, "i%u.%s.%016llx", (unsigned)geteuid(), scope,
                     (unsigned long long)h);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* While the task runs: the signals we take and whom they are for. */
struct signals {
    int fd;
    sigset_t set;
    pid_t task;
    int task_pidfd;
    int own_group;          /* the task is not in our process group */
};

/* Whether a signal that reached us was meant for us alone, and so is the
 * task's: not one the terminal or the launcher sent our whole process
 * group (the task is in it and had it too).  The launcher's kill() of us
 * alone comes marked by the interception library (sigqueue). */
static int meant_for_us(const struct signals *s, const struct signalfd_siginfo *si)
{
    if (si->ssi_code == SI_KERNEL)
        return 0;
    if (s->own_group)
        return 1;
    if (si->ssi_code == SI_QUEUE && si->ssi_int == PSPAWN_KILL_MARK)
        return 1;
    return !(si->ssi_code == SI_USER && (pid_t)si->ssi_pid == getppid());
}

/* Stop as a stopped task would show to the launcher: by the same signal. */
static void stop_like(struct signals *s, int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    sigprocmask(SIG_BLOCK, &s->set, NULL);
}

static void take_signals(void *arg)
{
    struct signals *s = arg;
    struct signalfd_siginfo si;
    while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (meant_for_us(s, &si)) {
            say("passing signal %d on to task %d", sig, (int)s->task);
            if (s->task_pidfd >= 0)
                syscall(SYS_pidfd_send_signal, s->task_pidfd, sig, NULL, 0);
            else
                kill(s->task, sig);
        }
        if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
            stop_like(s, sig);
    }
}

/* Every signal a task could be sent, but those the kernel raises for
 * what a process does itself (and SIGCHLD: our own children's). */
static void relayed_set(sigset_t *set)
{
    sigfillset(set);
    static const int own[] = { SIGKILL, SIGSTOP, SIGCHLD, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                               SIGTRAP, SIGSYS, SIGPIPE };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        sigdelset(set, own[i]);
}

static long idle_ms(void)
{
    const char *v = getenv(ROUTE_ENV_IDLE);
    char *end;
    double s = v ? strtod(v, &end) : 0;
    if (!v || *end || !(s > 0) || s > 86400)
        s = PSPAWN_INTERCEPT_IDLE_S;
    return (long)(s * 1000);
}

/* Join the interception scope (else exec), take our name and the spawn
 * site's priority, and count ourselves a stand-in.  The scope. */
static const char *enter_scope(const char *path, char **argv)
{
    /* The name exec would have given us (our comm), for ps and top. */
    const char *base = strrchr(path, '/');
    prctl(PR_SET_NAME, base ? base + 1 : path, 0, 0, 0);
    char *verdict = take_var(PRIORITY_ENV_STANDIN);
    const char *scope = getenv(ROUTE_ENV_SCOPE);
    if (!scope || route_attach(scope, 0) < 0)
        exec_plain(path, argv, "no interception scope");
    /* A routed posix_spawn's prediction (spawn-site priorities): ours
     * before we choose a zygote by our scheduling. */
    if (verdict) {
        struct priority_config pc;
        priority_config_from_env(&pc, route_table->base_nice);
        priority_apply(0, &pc, !strcmp(verdict, "long") ? VERDICT_LONG
                               : !strcmp(verdict, "short") ? VERDICT_SHORT : VERDICT_NONE);
        free(verdict);
    }
    route_standin_add(getpid());
    return scope;
}

/* The program, inspected; one no zygote can serve is exec'd. */
static void inspect_or_exec(const char *path, char **argv, struct program *prog)
{
    if (pspawn_program_inspect(prog, path) != 0)
        exec_plain(path, argv, "the program cannot be inspected");
    if (prog->fallback || prog->ninterp) {
        refuse_program(path, ROUTE_NO);
        exec_plain(path, argv, prog->fallback ? prog->fallback : "#! script: exec'd as is");
    }
}

/* A session leader with a controlling terminal (the child of script, of
 * Python's pty.spawn, of an sshd session): its task is to lead a session
 * with that terminal, as the program exec'd would have kept it.  A
 * terminal is one session's, so we give it up (TIOCNOTTY, which sends our
 * foreground group, us alone, a SIGHUP and a SIGCONT) and the task takes it once it leads its own (REQ_CTTY).  It must be at
 * one of fds 0-2, which the task gets at the same numbers: that fd, or -1
 * when we have no terminal.  Any other case is exec'd. */
static int give_up_ctty(const char *path, char **argv)
{
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty < 0)
        return -1;
    close(tty);
    /* TIOCGSID answers only for the caller's controlling terminal. */
    int at = -1;
    for (int fd = 0; fd <= 2 && at < 0; fd++)
        if (tcgetsid(fd) == getpid())
            at = fd;
    if (at < 0)
        exec_plain(path, argv, "its controlling terminal is none of fds 0-2");
    if (tcgetpgrp(at) != getpgrp())
        exec_plain(path, argv, "its terminal's foreground process group is another's");
    /* That SIGHUP comes from us (SI_USER, our pid: the kernel sends it on
     * behalf of the ioctl's caller), and is taken here, blocked, so that
     * neither we nor, if we exec after all, the program get it; one that
     * someone else sent meanwhile is sent again. */
    sigset_t hup, mask;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    sigprocmask(SIG_BLOCK, &hup, &mask);
    int r = ioctl(at, TIOCNOTTY);
    siginfo_t si;
    const struct timespec now = { 0, 0 };
    int resend = 0;
    while (sigtimedwait(&hup, &si, &now) == SIGHUP)
        resend |= !(si.si_code == SI_USER && si.si_pid == getpid());
    if (resend)
        kill(getpid(), SIGHUP);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    if (r < 0)
        exec_plain(path, argv, "its controlling terminal could not be handed on");
    ctty_given = at;
    return at;
}

/* Send our task's request on SOCK (held, bound to us, in our process
 * group or, NEW_SESSION, a session of its own), check the zygote's hello,
 * and wait for its pid (*SETUP: its setup pipe); exec where any fails. */
static pid_t request_task(int sock, const char *path, char **argv, const char *scope,
                          struct pspawn_standin_client *client, int new_session,
                          int wait_ms, struct pspawn_hold *hold, int *setup)
{
    /* The task joins our process group, as it would be after exec (the
     * zygote shares our session: our session is in its name), or leads a
     * session of its own as we do; it dies with us if we are killed. */
    int ctty = new_session ? give_up_ctty(path, argv) : -1;
    int err = pspawn_standin_send(sock, argv, scope, NULL, 0, hold,
                                  REQ_HOLD | REQ_STANDIN_BOUND |
                                  (new_session ? REQ_SETSID : REQ_SETPGROUP) |
                                  (ctty >= 0 ? REQ_CTTY : 0), getpgrp(), ctty);
    if (err) {
        char why[160];
        snprintf(why, sizeof why, err == EMFILE ? "more inherited fds than a request passes"
                 : "the request was not sent: %s", strerror(err));
        exec_plain(path, argv, why);
    }
    /* The zygote's hello, read after the request (pspawn_standin_connect
     * left it): a zygote that is not ours for this task has its task
     * cancelled before it ran. */
    char why[256];
    if (pspawn_standin_hello(client, sock, why, sizeof why) != 0) {
        pspawn_standin_go(hold, 0);
        close(sock);
        exec_plain(path, argv, why);
    }
    const char *refused;
    pid_t task = pspawn_standin_started(sock, wait_ms, setup, &refused);
    if (task < 0) {
        pspawn_standin_go(hold, 0);
        close(sock);
        exec_plain(path, argv, refused);
    }
    return task;
}

/* Wait for the task's end on SOCK (or, the zygote KEY lost, from its
 * keeper or the task's pidfd), relaying signals meanwhile, and exit as it
 * did. */
static void __attribute__((noreturn)) wait_and_exit_like(int sock, const char *key,
                                                         unsigned long long start,
                                                         struct signals *sigs, int wait_ms)
{
    pid_t task = sigs->task;
    struct pspawn_standin_signals from = { sigs->fd, take_signals, sigs };
    int status = pspawn_standin_task_status(sock, task, sigs->task_pidfd, wait_ms / 3, &from);
    close(sock);
    if (status == -1) {
        say("lost the zygote: waiting for task %d through the zygote's keeper", (int)task);
        const char *told;
        status = pspawn_standin_lost_status(key, task, start, sigs->task_pidfd, &from, &told);
        if (status != -1)
            say("task %d's wait status (0x%x) from %s", (int)task, (unsigned)status, told);
    }
    route_standin_remove(getpid());
    if (status == -1) {
        /* Which kernel feature would have told: without a pidfd (before
         * 5.3) the task cannot even be waited for once the zygote is gone. */
        fprintf(stderr, "pspawn-standin: lost the zygote before task %d ended: its exit "
                "status is unknown (no keeper of the zygote answered; %s)\n", (int)task,
                sigs->task_pidfd >= 0 ? "Linux 6.15 or later keeps it"
                                      : "no pidfd_open: Linux 5.3 or later waits for it");
        _exit(1);
    }
    pspawn_standin_exit_like(status);
}

int main(int argc, char **argv)
{
    /* What the start costs from here, routed (gain.h): our exec, so far. */
    uint64_t cpu_us = gain_cpu_us(), t0_us = gain_now_us();
    debug = pspawn_debug_wanted();
    char *path = take_var(ROUTE_ENV_EXEC);
    if (!path || argc < 1 || !argv[0]) {
        fprintf(stderr, "pspawn-standin: started by libpspawn-intercept.so, not by hand\n");
        return 127;
    }
    const char *scope = enter_scope(path, argv);
    struct program prog;
    inspect_or_exec(path, argv, &prog);
    const char *options = getenv("PSPAWN_OPTIONS");
    /* A launcher's child that leads a session of its own (setsid, as
     * mpiexec.hydra's ranks): so does its task, in a session of its own. */
    int new_session = getsid(0) == getpid();
    char key[160];
    if (zygote_key(path, argv, scope, options, new_session, key, sizeof key) < 0)
        exec_plain(path, argv, "no name for its zygote");
    struct pspawn_standin_client client = {
        .path = path, .key = key, .token = scope, .local_tasks = "0", .options = options,
        .argv = argv, .prog = &prog, .log = log_line, .detach = 1, .idle_ms = idle_ms(),
    };
    int sock = pspawn_standin_connect(&client);
    if (sock < 0) {
        if (client.start_failed)
            refuse_program(path, ROUTE_REFUSED);
        exec_plain(path, argv, "no zygote to serve the task");
    }
    int wait_ms = pspawn_standin_wait_ms();
    struct timeval snd = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
    struct pspawn_hold hold = { .held = 0 };
    int setup;
    pid_t task = request_task(sock, path, argv, scope, &client, new_session, wait_ms, &hold,
                              &setup);
    /* For a launcher's SIGSTOP of us, which we could not pass on: set
     * while the task is held, cleared when we leave the scope's set. */
    route_standin_set_task(getpid(), task);
    /* Held, the task cannot have exited: this pidfd is its own.  It is
     * released at once, before its setup is through (it runs its program
     * only once that has succeeded): it need not wait for us to be
     * scheduled twice more. */
    struct signals sigs = { .task = task, .task_pidfd = (int)syscall(SYS_pidfd_open, task, 0),
                            .own_group = new_session };
    /* Its start time, held: with its pid, it names the task to the
     * zygote's keeper (there may be no pidfd). */
    unsigned long long start = 0;
    pspawn_proc_stat(task, 22, 22, &start);
    sigset_t mask;
    relayed_set(&sigs.set);
    sigprocmask(SIG_BLOCK, &sigs.set, &mask);
    sigs.fd = signalfd(-1, &sigs.set, SFD_CLOEXEC | SFD_NONBLOCK);
    pspawn_standin_go(&hold, 1);
    const char *refused;
    if (setup >= 0 && pspawn_standin_setup_done(setup, task, &refused) < 0) {
        /* It exits without having run its program (or was killed, stuck). */
        close(sock);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        exec_plain(path, argv, refused);
    }
    say("task %d (%s) forked by the zygote", (int)task, path);
    struct stat st;
    if (!client.not_at_once && stat(path, &st) == 0) {  /* a zygote's start is not a task's */
        uint64_t us = cpu_us + gain_now_us() - t0_us;
        say("the routed start cost %llu.%03llu ms", (unsigned long long)us / 1000,
            (unsigned long long)us % 1000);
        gain_note_routed(route_program_key(&st, environ), us);
    }
    wait_and_exit_like(sock, key, start, &sigs, wait_ms);
}
