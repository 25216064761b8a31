/*
 * The stand-in client: what a process that holds its task's place (the
 * Slurm shim, pspawn-shim) uses to have its step's zygote on this node
 * fork the task.  The first stand-in of a step starts the zygote; the
 * others wait for it to park and connect.  The wire format is the one every
 * front door uses (request.c encodes it).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "unixsock.h"

extern char **environ;

static void say(const struct pspawn_standin_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct pspawn_standin_client *c, const char *fmt, ...)
{
    if (!c->log)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->log(buf);
}

static int connect_step(const char *name)
{
    return pspawn_connect_abstract(name, geteuid());
}

/* The root, parked, makes its sub-zygotes for the step's CPUs on this
 * node (not only ours: task/affinity bound us to our task's), or, hearing
 * nothing but the end of the connection, serves alone. */
static void fan_out(const struct pspawn_standin_client *c, const struct pspawn_options *o,
                    int sock)
{
    struct pspawn_topology t;
    if (o->fanout == PSPAWN_FANOUT_NONE || pspawn_topology_groups(o, 1, &t) != 0)
        return;
    say(c, "%s", t.describe);
    if (t.ngroups > 1 && (errno = pspawn_fanout_send_standin(sock, &t, o)) != 0)
        say(c, "could not send the fan-out: %s", strerror(errno));
    pspawn_topology_free(&t);
}

/* Start the zygote as our child, with /dev/null as its stdio (it must not
 * hold our task's pipes open), and wait until it parked. */
static pid_t start_zygote(const struct pspawn_standin_client *c, const char *name)
{
    int rs[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rs) < 0)
        return -1;
    char listen_var[256], token_var[128], tasks_var[64];
    snprintf(listen_var, sizeof listen_var, PSPAWN_ENV_LISTEN "=%s", name);
    snprintf(token_var, sizeof token_var, PSPAWN_ENV_TOKEN "=%s", c->token);
    snprintf(tasks_var, sizeof tasks_var, PSPAWN_ENV_TASKS "=%s",
             c->local_tasks ? c->local_tasks : "0");
    /* The step's options; ones that do not parse are said, and the
     * defaults used, without fan-out. */
    struct pspawn_options o;
    char msg[256];
    pspawn_options_defaults(&o);
    if (pspawn_options_parse(&o, c->options, msg, sizeof msg) < 0) {
        say(c, "options \"%s\": %s: the defaults, no fan-out", c->options, msg);
        pspawn_options_defaults(&o);
        o.fanout = PSPAWN_FANOUT_NONE;
    }
    /* A Python interpreter starts warm, with this task's options. */
    struct python_start ps = { 0 };
    if (c->prog && pspawn_python_start(&o, c->prog, c->argv, &ps) != 0)
        memset(&ps, 0, sizeof ps);
    char preload_var[PATH_MAX + 64] = PSPAWN_ENV_PRELOAD_LIBS "=";
    strncat(preload_var, o.preload, PATH_MAX);
    char *first_only[2];
    const char *const extra[] = { listen_var, token_var, tasks_var, PSPAWN_ENV_SOCK "=3",
                                  o.preload[0] ? preload_var : "", ps.first_var, ps.modules_var,
                                  NULL };
    struct zygote_exec x = {
        .path = c->path, .argv = c->prog ? pspawn_python_exec_argv(c->prog, &ps, first_only) : NULL,
        .extra_env = extra, .null_stdio = 1, .record = !strcmp(o.preload, "auto"),
        .fds = { rs[1] }, .at = { 3 }, .nfds = 1,
    };
    pid_t pid;
    int err = pspawn_zygote_exec(&x, &pid);
    pspawn_python_start_free(&ps);
    close(rs[1]);
    if (err) {
        close(rs[0]);
        say(c, "could not start the zygote: %s", strerror(err));
        return -1;
    }
    struct zygote_ready ready;
    err = pspawn_zygote_await(rs[0], pid, 120000, &ready);
    if (err || ready.status != ZYGOTE_PARKED) {
        close(rs[0]);
        char why[160];
        if (err == ETIMEDOUT)
            snprintf(why, sizeof why, "no answer from the zygote");
        else if (err)
            snprintf(why, sizeof why, "the zygote died or sent no ready message");
        else
            pspawn_zygote_refusal(why, sizeof why, (int)ready.status, ready.detail);
        say(c, "zygote did not park: %s", why);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    fan_out(c, &o, rs[0]);
    close(rs[0]);
    return pid;
}

int pspawn_standin_connect(struct pspawn_standin_client *c)
{
    char name[200], lock[220], fail[220];
    snprintf(name, sizeof name, "pspawn-%s", c->key);
    snprintf(lock, sizeof lock, "%s.lock", name);
    snprintf(fail, sizeof fail, "%s.fail", name);
    c->zpid = -1;
    c->fail_fd = -1;
    int fd = connect_step(name);
    if (fd >= 0)
        return fd;
    if (errno == EPERM)
        say(c, "%s is served by another user: ignored", name);
    /* The lock listens, so that the others can wait on it: it closes once
     * the zygote parked or failed, which resets their connections. */
    int lfd = pspawn_listen_abstract(lock, SOMAXCONN);
    if (lfd >= 0) {
        say(c, "starting the zygote %s", name);
        c->zpid = start_zygote(c, name);
        if (c->zpid < 0) {
            /* Tell the others to give up waiting. */
            c->fail_fd = pspawn_listen_abstract(fail, SOMAXCONN);
            close(lfd);
            return -1;
        }
        close(lfd);
        say(c, "zygote %d parked", (int)c->zpid);
        return connect_step(name);
    }
    /* Someone else is starting it: wait until its lock closes (up to the
     * 120 s it gives the zygote), then poll (a lock that another user's
     * process squats, or a listen queue that is full, is not waited on:
     * the connect neither accepts the one nor blocks on the other). */
    int w = connect_step(lock);
    if (w >= 0) {
        struct pollfd p = { w, POLLIN, 0 };
        while (poll(&p, 1, 125000) < 0 && errno == EINTR)
            ;
        close(w);
        if ((fd = connect_step(name)) >= 0)
            return fd;
    }
    for (int waited = 0; waited < 120000; waited += 20) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if ((fd = connect_step(name)) >= 0)
            return fd;
        int f = connect_step(fail);
        if (f >= 0) {
            close(f);
            return -1;
        }
        /* Nobody is starting it any more, yet it does not answer: it
         * parked (its name was there before the lock went) and is gone. */
        if ((f = pspawn_listen_abstract(lock, 0)) >= 0) {
            close(f);
            if ((fd = connect_step(name)) >= 0)
                return fd;
            say(c, "the zygote %s is gone", name);
            return -1;
        }
    }
    return -1;
}

static int skipped(int fd, const int *skip, int nskip)
{
    for (int i = 0; i < nskip; i++)
        if (skip[i] == fd)
            return 1;
    return 0;
}

int pspawn_standin_send(int sock, char **argv, const char *token, const int *skip, int nskip,
                        struct pspawn_hold *hold)
{
    struct call *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    int err = pspawn_call_init(c, NULL, environ);
    if (err) {
        free(c);
        return err;
    }
    /* Every fd we hold, at its own number (0-2 are already in). */
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d) || fd == sock ||
            skipped(fd, skip, nskip) || c->nfds >= PSPAWN_FD_MAX)
            continue;
        if (fcntl(fd, F_GETFD) & FD_CLOEXEC)
            continue;   /* exec would have closed it */
        c->fds[c->nfds] = fd;
        c->actions[c->nactions++] = (struct child_action){ FA_DUP2, fd, c->nfds, 0, 0, NULL };
        c->nfds++;
    }
    if (d)
        closedir(d);
    if (hold)
        c->flags |= REQ_HOLD;
    pspawn_task_t t = { .argv = argv };
    err = pspawn_send_standin(sock, c, &t, token, hold);
    free(c);
    return err;
}
