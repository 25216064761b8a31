/*
 * Stand-in mode: the launcher (slurmstepd) already forked a child it
 * tracks, which became a stand-in (pspawn-shim).  Each stand-in connects
 * to this zygote's abstract name and sends its task's request; the zygote
 * forks the task as its own child, tells the stand-in its pid, and later
 * its exit status.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unixsock.h"
#include "zygote.h"

#define MAX_CLIENTS 1024

struct client {
    int fd;
    pid_t task;
};

/* What the stand-in zygote serves with: its listening socket (the root)
 * or the socket the root forwards stand-ins on (a sub-zygote), signalfd
 * and one entry per stand-in connection, kept (with fd -1) after the
 * stand-in hung up for as long as its task runs: only those tasks are
 * reaped as ours (a child a constructor made is not). */
static struct {
    int lfd, sfd, n;
    struct client c[MAX_CLIENTS];
} standin = { -1, -1, 0, { { 0, 0 } } };

/* In a task just cloned: drop every fd the zygote serves with.  Held, the
 * task must not keep its stand-in's connection open: if the zygote dies
 * before it replies, the stand-in must see the connection close, cancel
 * the task and exec instead. */
static void close_serving_fds(void)
{
    close(standin.lfd);
    close(standin.sfd);
    for (int i = 0; i < standin.n; i++)
        if (standin.c[i].fd >= 0)
            close(standin.c[i].fd);
    for (int g = 0; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0)
            close(parked.groups[g].fwd);
}

static void standin_reply(int fd, int kind, pid_t pid, int status)
{
    struct standin_reply r = { PSPAWN_MAGIC, kind, (int32_t)pid, status };
    send(fd, &r, sizeof r, MSG_NOSIGNAL);
}

/* The CPUs a stand-in's task is bound to: its own, else the request's. */
static const unsigned char *request_cpus(const char *base, size_t size)
{
    const struct wire_request *w = (const struct wire_request *)base;
    if (size < sizeof *w)
        return NULL;
    if (w->ntasks == 1 && w->tasks <= size && size - w->tasks >= sizeof(struct wire_task)) {
        const struct wire_task *t = (const struct wire_task *)(base + w->tasks);
        if (t->has_cpuset)
            return t->cpuset;
    }
    return (w->flags & REQ_CPUSET) ? w->cpuset : NULL;
}

/* The root hands the stand-in C, its request (MSG, the memfd and passed
 * fds in FDS) to the sub-zygote of group G, which serves it from then on.
 * 0, or -1 if that sub-zygote is gone (C is then ours to serve). */
static int forward(struct client *c, int g, const struct request_msg *msg, int *fds, int nfds)
{
    int all[ZYGOTE_MSG_FDS];
    all[0] = c->fd;
    memcpy(all + 1, fds, (size_t)nfds * sizeof(int));
    int err = pspawn_send_fds(parked.groups[g].fwd, msg, sizeof *msg, all, nfds + 1);
    if (err) {
        close(parked.groups[g].fwd);
        parked.groups[g].fwd = -1;
        return -1;
    }
    close(c->fd);
    c->fd = -1;
    return 0;
}

/* Serve stand-in C's request (MSG, our copy of it at BASE, its go block
 * GO, and FDS as zygote_recv_request gives them): fork its task as our
 * own child.  Returns 1 in the task, 0 here, -1 when C is done with. */
static int serve_one(struct client *c, const struct request_msg *msg, char *base,
                     struct wire_go *go, int *fds, int nfds, struct task_start *ts)
{
    const struct wire_request *w = (const struct wire_request *)base;
    struct child_setup tmpl;
    int detail = 0, err = 0, errpipe[2] = { -1, -1 };
    close(fds[0]);
    close(fds[1]);
    if (msg->size < sizeof *w || w->ntasks != 1 ||
        !pspawn_tokens_equal(w->token, parked.token, PSPAWN_TOKEN_LEN))
        err = EPERM;
    else if (pipe2(errpipe, O_CLOEXEC) < 0)
        err = errno;
    else {
        const int chan[2] = { errpipe[1], -1 };
        if (zygote_parse_request(base, msg->size, fds + ZYGOTE_REQ_HEAD, nfds - ZYGOTE_REQ_HEAD,
                                 chan, &tmpl, &detail))
            err = EINVAL;
    }
    pid_t pid = -1;
    if (!err) {
        pid = zygote_clone(0, NULL);
        if (pid == 0) {
            close(errpipe[0]);
            close_serving_fds();
            *ts = zygote_task_main(base, msg->size, go, msg->id, 0, &tmpl,
                                   nfds - ZYGOTE_REQ_HEAD, 1);
            return 1;
        }
        if (pid < 0)
            err = errno;
        close(errpipe[1]);
        int child_err = 0;
        ssize_t got;
        while ((got = read(errpipe[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
            ;
        if (pid > 0 && got == sizeof child_err) {
            err = child_err;
            waitpid(pid, NULL, 0);
            pid = -1;
        }
    }
    if (errpipe[0] >= 0)
        close(errpipe[0]);
    zygote_drop_request(base, msg->size, go, fds + ZYGOTE_REQ_HEAD, nfds - ZYGOTE_REQ_HEAD);
    if (err) {
        standin_reply(c->fd, STANDIN_FAILED, -1, err);
        return -1;
    }
    c->task = pid;
    standin_reply(c->fd, STANDIN_STARTED, pid, 0);
    return 0;
}

/* The request of stand-in C, on its connection: the root forwards it to
 * its group's sub-zygote, or serves it.  As serve_one; 2 when forwarded. */
static int standin_request(struct client *c, struct task_start *ts)
{
    struct request_msg msg = { 0 };
    void *base;
    struct wire_go *go;
    int fds[ZYGOTE_MSG_FDS], nfds;
    int r = zygote_recv_request(c->fd, &msg, &base, &go, fds, &nfds);
    if (r > 0 && msg.magic != PSPAWN_MAGIC) {   /* only the launcher fans out */
        zygote_drop_request(base, msg.size, go, fds, nfds);
        r = -1;
    }
    if (r <= 0)
        return r == 0 ? -1 : (standin_reply(c->fd, STANDIN_FAILED, -1, EINVAL), 0);
    const unsigned char *cpus = parked.ngroups > 1 ? request_cpus(base, msg.size) : NULL;
    int g = cpus ? zygote_group_of(cpus) : 0;
    if (g > 0 && forward(c, g, &msg, fds, nfds) == 0) {
        zygote_drop_request(base, msg.size, go, fds, nfds);
        return 2;
    }
    return serve_one(c, &msg, base, go, fds, nfds, ts);
}

/* A sub-zygote: a stand-in the root forwarded.  Returns 1 in its task, 0
 * here, -1 when the root is done with us. */
static int forwarded_request(struct task_start *ts)
{
    struct request_msg msg = { 0 };
    void *base;
    struct wire_go *go;
    int conn, fds[ZYGOTE_MSG_FDS], nfds;
    int r = zygote_recv_forwarded(parked.sock, &msg, &conn, &base, &go, fds, &nfds);
    if (r <= 0)
        return r == 0 ? -1 : 0;
    if (msg.magic != PSPAWN_MAGIC) {
        close(conn);
        zygote_drop_request(base, msg.size, go, fds, nfds);
        return 0;
    }
    if (standin.n >= MAX_CLIENTS) {
        close(conn);
        zygote_drop_request(base, msg.size, go, fds, nfds);
        return 0;
    }
    struct client *c = &standin.c[standin.n++];
    *c = (struct client){ conn, 0 };
    int rr = serve_one(c, &msg, base, go, fds, nfds, ts);
    if (rr == 1)
        return 1;
    if (rr < 0) {
        close(c->fd);
        c->fd = -1;     /* dropped at the next round */
    }
    return 0;
}

/* The stand-in that started the root sends its fan-out, or hangs up.
 * Returns 1 in a forked sub-zygote. */
static int await_fanout(void)
{
    if (zygote_wait(parked.sock, -1, 30000) != 0)
        return 0;
    struct request_msg msg = { 0 };
    void *base;
    struct wire_go *go;
    int fds[ZYGOTE_MSG_FDS], nfds;
    if (zygote_recv_request(parked.sock, &msg, &base, &go, fds, &nfds) <= 0)
        return 0;
    close(fds[0]);
    int sub = msg.magic == PSPAWN_FANOUT_MAGIC &&
              zygote_fanout(base, msg.size, fds + 1, nfds - 1, 1);
    if (msg.magic != PSPAWN_FANOUT_MAGIC)
        zygote_drop_request(base, msg.size, go, fds + 1, nfds - 1);
    else
        munmap(base, msg.size);
    return sub;
}

static int subs_alive(void)
{
    int n = 0;
    for (int g = 1; g < parked.ngroups; g++)
        n += parked.groups[g].pid > 0;
    return n;
}

/* The root is done serving: its sub-zygotes finish their stand-ins and
 * exit (it waits for them: the step's first stand-in waits for the root). */
static void drain(void)
{
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0) {
            close(parked.groups[g].fwd);
            parked.groups[g].fwd = -1;
        }
}

/* Reap what exited: our stand-ins' tasks (tell each stand-in) and, in the
 * root, sub-zygotes. */
static void reap(void)
{
    struct signalfd_siginfo si;
    while (read(standin.sfd, &si, sizeof si) > 0)
        ;
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < standin.n; i++)
            if (standin.c[i].task == pid) {
                if (standin.c[i].fd >= 0) {
                    standin_reply(standin.c[i].fd, STANDIN_EXITED, pid, st);
                    close(standin.c[i].fd);
                }
                standin.c[i] = (struct client){ -1, 0 };
            }
        for (int g = 1; g < parked.ngroups; g++)
            if (parked.groups[g].pid == pid) {
                parked.groups[g].pid = 0;
                if (parked.groups[g].fwd >= 0)
                    close(parked.groups[g].fwd);
                parked.groups[g].fwd = -1;
            }
    }
}

/* Serve stand-ins until every task this node expects has been served and
 * has exited, or nothing happened for a while (the root), or until the
 * root is done with us and our stand-ins' tasks have exited (a
 * sub-zygote).  The zygote must outlive signals sent to the step's process
 * group: it blocks them (its tasks set their own mask). */
struct task_start zygote_serve_standin(void)
{
    standin.lfd = standin.sfd = -1;
    standin.n = 0;
    if (!parked.forwarded && (standin.lfd = pspawn_listen_abstract(parked.listen_name, 128)) < 0) {
        zygote_send_ready(parked.sock, ZYGOTE_LISTEN_FAILED, errno);
        _exit(1);
    }
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    standin.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group);
    if (!parked.forwarded) {
        if (await_fanout())
            return zygote_serve_standin();  /* a forked sub-zygote */
        close(parked.sock);
        parked.sock = -1;
    }
    int lfd = parked.forwarded ? parked.sock : standin.lfd;
    int ng = parked.forwarded ? 0 : parked.ngroups;
    static struct pollfd pfd[MAX_CLIENTS + PSPAWN_FANOUT_MAX + 3];
    long served = 0;
    int draining = 0, root_done = 0;
    for (;;) {
        if (!parked.forwarded && !draining && standin.n == 0 &&
            parked.expect_tasks > 0 && served >= parked.expect_tasks) {
            drain();
            draining = 1;
        }
        if (standin.n == 0 && (parked.forwarded ? root_done : draining && !subs_alive()))
            zygote_exit(0);
        int np = 0;
        pfd[np++] = (struct pollfd){ draining || root_done ? -1 : lfd, POLLIN, 0 };
        pfd[np++] = (struct pollfd){ standin.sfd, POLLIN, 0 };
        pfd[np++] = (struct pollfd){ parked.root_pidfd, POLLIN, 0 };
        for (int g = 0; g < ng; g++)
            pfd[np++] = (struct pollfd){ g > 0 ? parked.groups[g].fwd : -1, POLLIN, 0 };
        for (int i = 0; i < standin.n; i++)
            pfd[np++] = (struct pollfd){ standin.c[i].fd, POLLIN, 0 };  /* -1: ignored */
        int r = poll(pfd, (nfds_t)np, 60000);
        if (r == 0 && standin.n == 0 && !parked.forwarded && !draining) {
            drain();    /* idle: nobody left to serve */
            draining = 1;
        }
        if (r <= 0)
            continue;
        if (pfd[1].revents & POLLIN)
            reap();
        if (pfd[2].revents & POLLIN)
            root_done = 1;  /* the root is gone */
        for (int g = 1; g < ng; g++) {
            short ev = pfd[3 + g].revents;
            char ready[sizeof(struct zygote_ready)];
            if ((ev & POLLIN) && recv(parked.groups[g].fwd, ready, sizeof ready, MSG_DONTWAIT) > 0)
                continue;   /* its ready message */
            if (ev & (POLLHUP | POLLERR | POLLIN)) {
                /* It died: its share is ours now (what it had queued went
                 * with it, and those stand-ins exec instead). */
                close(parked.groups[g].fwd);
                parked.groups[g].fwd = -1;
            }
        }
        int first = 3 + ng;
        for (int i = 0; i < standin.n; i++) {
            short ev = pfd[first + i].revents;
            if (standin.c[i].fd < 0 || !ev)
                continue;
            if (standin.c[i].task == 0 && (ev & POLLIN)) {
                struct task_start ts;
                int rr = standin_request(&standin.c[i], &ts);
                if (rr == 1)
                    return ts;
                if (rr >= 0)
                    served++;
                if (rr != -1)
                    continue;
            } else if (!(ev & (POLLHUP | POLLERR))) {
                continue;
            }
            /* Failed, or the stand-in hung up: its task (if any) runs on,
             * reaped here with nobody to tell. */
            close(standin.c[i].fd);
            standin.c[i].fd = -1;
        }
        int k = 0;
        for (int i = 0; i < standin.n; i++)
            if (standin.c[i].fd >= 0 || standin.c[i].task > 0)
                standin.c[k++] = standin.c[i];
        standin.n = k;
        if (!(pfd[0].revents & (POLLIN | POLLHUP)))
            continue;
        if (parked.forwarded) {
            struct task_start ts;
            int rr = forwarded_request(&ts);
            if (rr == 1)
                return ts;
            if (rr < 0)
                root_done = 1;
            continue;
        }
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        /* Only our own user, on every connection. */
        if (cfd >= 0 && (standin.n >= MAX_CLIENTS || !pspawn_peer_uid_is(cfd, geteuid()))) {
            close(cfd);
            cfd = -1;
        }
        if (cfd >= 0)
            standin.c[standin.n++] = (struct client){ cfd, 0 };
    }
}
