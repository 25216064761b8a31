/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stand-in mode: the launcher (slurmstepd) already forked a child it
 * tracks, which became a stand-in (pspawn-shim).  Each stand-in connects
 * to this zygote's abstract name, hears its hello (the environment the
 * loader read), and sends its task's request; the zygote forks the task
 * as its own child, tells the stand-in its pid, and later its exit
 * status.  No stand-in can stop it: it waits on none, and it exits once
 * it is useless (every task of the node served or refused, or nobody
 * left to serve).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pidfd.h"
#include "procfs.h"
#include "standin.h"
#include "unixsock.h"
#include "zygote.h"

#define MAX_CLIENTS 1024

/* A root with nothing to do (no stand-in connected, no task of its own or
 * of a sub-zygote's running) is useless once no more stand-ins come, and
 * its starter (our parent: it keeps us in the step's process tree) waits
 * for it, and the step with it.  So it exits after IDLE_MS, or after
 * IDLE_STARTER_DONE_MS once its starter's own task is done: the step's
 * stand-ins start together, and one that comes later starts a new zygote. */
#define IDLE_MS 2000
#define IDLE_STARTER_DONE_MS 300

struct client {
    int fd;
    struct pspawn_pin peer;     /* the stand-in, pinned at its connect */
    pid_t task;
    unsigned char starter;  /* the stand-in that started us */
    unsigned char counted;  /* one of the step's stand-ins (its token matched) */
    unsigned char bound;    /* REQ_STANDIN_BOUND: the task dies with its stand-in */
};

/* What the stand-in zygote serves with: its listening socket (the root)
 * or the socket the root forwards stand-ins on (a sub-zygote), signalfd
 * and one entry per stand-in connection, kept (with fd -1) after the
 * stand-in hung up for as long as its task runs: only those tasks are
 * reaped as ours (a child a constructor made is not). */
static struct {
    int lfd, sfd, n;
    int terminated;                             /* a job's zygote got SIGTERM */
    struct client c[MAX_CLIENTS];
    pid_t starter;
    int starter_pidfd, starter_done;
    char *hello;
    size_t hello_len;
} standin;     /* zero (in .bss, no page of the file's): start_serving sets the fds */

/* Done with C's connection (its entry stays while its task runs). */
static void drop_conn(struct client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    pspawn_pin_close(&c->peer);
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* In a task just cloned: drop every fd the zygote serves with.  Held, the
 * task must not keep its stand-in's connection open: if the zygote dies
 * before it replies, the stand-in must see the connection close, cancel
 * the task and exec instead. */
static void close_serving_fds(void)
{
    close(standin.lfd);
    close(standin.sfd);
    if (standin.starter_pidfd >= 0)
        close(standin.starter_pidfd);
    for (int i = 0; i < standin.n; i++)
        if (standin.c[i].fd >= 0)
            close(standin.c[i].fd);
    for (int g = 0; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0)
            close(parked.groups[g].fwd);
}

/* A PiP task's first step: what a forked task closes at once.  It only
 * closes: the zygote's tables are read, not changed (the zygote waits). */
static void pip_task_first(int errpipe_r)
{
    close(errpipe_r);
    close_serving_fds();
}

/* Never blocks: a stand-in whose queue is full (it cannot be: two
 * replies at most) loses the reply and times out. */
static void standin_reply(int fd, int kind, pid_t pid, int status)
{
    struct standin_reply r = { PSPAWN_MAGIC, kind, (int32_t)pid, status };
    send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The CPUs a stand-in's task is bound to: its own, else the request's. */
static const unsigned char *request_cpus(const char *base, size_t size)
{
    const struct wire_request *w = (const struct wire_request *)base;
    if (size < sizeof *w)
        return NULL;
    /* Read before the request is parsed: its offset is checked here. */
    if (w->ntasks == 1 && w->tasks <= size && size - w->tasks >= sizeof(struct wire_task) &&
        w->tasks % _Alignof(struct wire_task) == 0) {
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
    /* The socket does not block (a stopped sub-zygote must not stop us):
     * a full one leaves this stand-in ours. */
    int err = pspawn_send_fds(parked.groups[g].fwd, msg, sizeof *msg, all, nfds + 1);
    if (err == EAGAIN)
        return -1;
    if (err) {
        close(parked.groups[g].fwd);
        parked.groups[g].fwd = -1;
        return -1;
    }
    standin_sub_forwarded(g);
    c->counted = 1;
    drop_conn(c);
    return 0;
}

/* Serve stand-in C's request (MSG, our copy of it at BASE, its go block
 * GO, and FDS as zygote_recv_request gives them): fork its task as our
 * own child, its pid written into GO by the kernel before it runs, and
 * tell the stand-in with the task's setup pipe: the stand-in, not we,
 * waits for the setup (a held task runs nothing of its program before its
 * stand-in releases it anyway).  Returns 1 in the task, 0 here, -1 when C
 * is done with. */
static int serve_one(struct client *c, const struct request_msg *msg, char *base,
                     struct wire_go *go, int *fds, int nfds, struct task_start *ts)
{
    const struct wire_request *w = (const struct wire_request *)base;
    struct child_setup tmpl;
    int detail = 0, err = 0, errpipe[2] = { -1, -1 };
    close(fds[0]);
    /* The go block: mapped (a PiP task maps it for itself). */
    if (!parked.pip)
        close(fds[1]);
    /* One of the step's stand-ins, whether we serve it or not. */
    c->counted = msg->size >= sizeof *w &&
                 pspawn_tokens_equal(w->token, parked.token, PSPAWN_TOKEN_LEN);
    c->bound = c->counted && (w->flags & REQ_STANDIN_BOUND) != 0;
    if (!c->counted || w->ntasks != 1)
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
    if (!err && parked.pip) {
        pid = zygote_pip_clone(0, &go->pid[0], base, msg->size, fds[1], msg->id, 0, &tmpl,
                               nfds - ZYGOTE_REQ_HEAD, 1, pip_task_first, errpipe[0]);
        if (pid < 0)
            err = errno;
    } else if (!err) {
        /* The task waits for its go while this stand-in lives: it checks
         * on it through this pin, which it inherits. */
        parked.standin_peer = c->peer;
        pid = zygote_clone(0, &go->pid[0]);
        if (pid == 0) {
            close(errpipe[0]);
            close_serving_fds();
            *ts = zygote_task_main(base, msg->size, go, msg->id, 0, &tmpl,
                                   nfds - ZYGOTE_REQ_HEAD, 1);
            return 1;
        }
        if (pid < 0)
            err = errno;
    }
    if (parked.pip)
        close(fds[1]);
    if (errpipe[1] >= 0)
        close(errpipe[1]);
    zygote_drop_request(base, msg->size, go, fds + ZYGOTE_REQ_HEAD, nfds - ZYGOTE_REQ_HEAD);
    if (err) {
        if (errpipe[0] >= 0)
            close(errpipe[0]);
        standin_reply(c->fd, STANDIN_FAILED, -1, err);
        return -1;
    }
    c->task = pid;
    struct standin_reply r = { PSPAWN_MAGIC, STANDIN_STARTED, (int32_t)pid, 0 };
    pspawn_send_fds(c->fd, &r, sizeof r, &errpipe[0], 1);
    close(errpipe[0]);
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
    if (r != 0)
        standin_sub_received();     /* the root counts what it forwarded */
    if (r <= 0)
        return r == 0 ? -1 : 0;
    if (msg.magic != PSPAWN_MAGIC || standin.n >= MAX_CLIENTS) {
        close(conn);
        zygote_drop_request(base, msg.size, go, fds, nfds);
        return 0;
    }
    struct client *c = &standin.c[standin.n++];
    struct ucred cred;
    *c = (struct client){ conn, PSPAWN_PIN_NONE, 0, 0, 0, 0 };
    if (pspawn_pin_peer(&c->peer, conn, &cred) < 0) {
        zygote_drop_request(base, msg.size, go, fds, nfds);     /* the stand-in is gone */
        drop_conn(c);
        return 0;
    }
    int rr = serve_one(c, &msg, base, go, fds, nfds, ts);
    if (rr == 1)
        return 1;
    if (rr < 0)
        drop_conn(c);   /* dropped at the next round */
    return 0;
}

/* The root is done serving: nobody else connects (a stand-in that comes
 * later starts another zygote), and its sub-zygotes finish their
 * stand-ins and exit (it waits for them: the step's first stand-in waits
 * for the root). */
static void drain(void)
{
    if (standin.lfd >= 0)
        close(standin.lfd);
    standin.lfd = -1;
    standin_subs_drain();
}

/* Drop the entries of stand-ins that are done with (hung up, and no task
 * of theirs running); the starter's says its task is done. */
static void compact(void)
{
    int k = 0;
    for (int i = 0; i < standin.n; i++) {
        if (standin.c[i].fd >= 0 || standin.c[i].task > 0)
            standin.c[k++] = standin.c[i];
        else if (standin.c[i].starter)
            standin.starter_done = 1;
    }
    standin.n = k;
}

/* Reap what exited: our stand-ins' tasks (tell each stand-in) and, in the
 * root, sub-zygotes.  The entries stay where they are (the serving loop
 * compacts them after it has matched this round's poll results to them:
 * compacting here made one stand-in's hang-up another's). */
static void reap(void)
{
    struct signalfd_siginfo si;
    while (read(standin.sfd, &si, sizeof si) > 0)
        if (si.ssi_signo == SIGTERM)
            standin.terminated = 1;
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < standin.n; i++)
            if (standin.c[i].task == pid) {
                if (standin.c[i].fd >= 0)
                    standin_reply(standin.c[i].fd, STANDIN_EXITED, pid, st);
                drop_conn(&standin.c[i]);
                standin.c[i].task = 0;
            }
        standin_sub_reaped(pid);
    }
}

/* A new stand-in on the root's listening socket: only our own user, on
 * every connection; it hears our hello first. */
static void admit(void)
{
    struct ucred peer;
    int cfd = accept4(standin.lfd, NULL, NULL, SOCK_CLOEXEC);
    if (cfd < 0)
        return;
    struct pspawn_pin pin = PSPAWN_PIN_NONE;
    if (standin.n >= MAX_CLIENTS || pspawn_pin_peer(&pin, cfd, &peer) < 0 || peer.uid != geteuid()) {
        pspawn_pin_close(&pin);
        close(cfd);
        return;
    }
    /* (Too big for this socket's buffer: the hello alone, nothing compared.) */
    if (standin.hello && send(cfd, standin.hello, standin.hello_len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        struct standin_reply h;
        memcpy(&h, standin.hello, sizeof h);
        h.status |= HELLO_NO_ENV;
        send(cfd, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    standin.c[standin.n++] = (struct client){ cfd, pin, 0, peer.pid == standin.starter, 0, 0 };
}

/* Whether STANDIN.STARTER still is the process that had us started: our
 * parent, or, under a keeper, our parent's parent. */
static int starter_is_ours(void)
{
    unsigned long long up = (unsigned long long)getppid();
    if (parked.starter > 0 && pspawn_proc_stat((pid_t)up, 4, 4, &up) < 0)
        return 0;
    return (pid_t)up == standin.starter;
}

/* The root has nothing to do when no stand-in is connected and no task of
 * its own or of a sub-zygote's runs.  Returns the ms it may still wait for
 * one more stand-in (-1: not idle), or 0 when it is time to drain. */
static int idle_left(long long *since)
{
    if (standin.starter_pidfd < 0 && !starter_is_ours())
        standin.starter_done = 1;   /* no pidfd to tell us: reparented */
    if (standin.n > 0 || standin_subs_busy()) {
        *since = -1;
        return -1;
    }
    long long now = now_ms();
    if (*since < 0)
        *since = now;
    /* A job's zygote outlives its starter: only time without a stand-in
     * ends it (or SIGTERM, or the job's end). */
    long long limit = parked.idle_ms > 0 ? parked.idle_ms
                      : standin.starter_done ? IDLE_STARTER_DONE_MS : IDLE_MS;
    long long left = limit - (now - *since);
    return left > 0 ? (int)left : 0;
}

/* Listen for stand-ins, block the signals the zygote must outlive, say
 * it is ready and, the step's root, take its fan-out.  1 in a sub-zygote
 * just forked from it, which is to start serving afresh. */
static int start_serving(void)
{
    standin.lfd = standin.sfd = standin.starter_pidfd = -1;
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
    /* A job's zygote evicted for another program's (SIGTERM, from root in
     * a later step's slurmstepd): it takes no new stand-in, finishes the
     * tasks it runs, and ends.  A step's zygote ignores SIGTERM sent to
     * the step's process group. */
    if (parked.idle_ms > 0 && !parked.forwarded)
        sigaddset(&chld, SIGTERM);
    standin.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group) < 0)
        zygote_exit(0);     /* the starter is gone: no one to serve */
    if (parked.forwarded)
        return 0;
    if (standin_await_fanout())
        return 1;   /* a forked sub-zygote (fanout.c closed the root's fds) */
    close(parked.sock);
    parked.sock = -1;
    /* A stand-in's connect never blocks us, nor a full sub-zygote. */
    fcntl(standin.lfd, F_SETFL, fcntl(standin.lfd, F_GETFL) | O_NONBLOCK);
    for (int g = 1; g < parked.ngroups; g++)
        if (parked.groups[g].fwd >= 0)
            fcntl(parked.groups[g].fwd, F_SETFL,
                  fcntl(parked.groups[g].fwd, F_GETFL) | O_NONBLOCK);
    /* Our starter, pinned: if it no longer is once the pidfd is open, the
     * pidfd may be another process's, and the starter is gone. */
    standin.starter = parked.starter > 0 ? (pid_t)parked.starter : getppid();
    standin.starter_pidfd = (int)syscall(SYS_pidfd_open, standin.starter, 0);
    if (!starter_is_ours()) {
        if (standin.starter_pidfd >= 0)
            close(standin.starter_pidfd);
        standin.starter_pidfd = -1;
        standin.starter_done = 1;
    }
    standin.hello = zygote_hello(&standin.hello_len);
    return 0;
}

/* A zygote that serves more than one step (a job's, an interception
 * scope's), idle once it has served some: one parked inside a runtime
 * loads what their tasks learned since (its mode's hook: a warm Python
 * one imports, python-embed.c), and its forked sub-zygotes are made again
 * from it.  1 in a new sub-zygote. */
static int between_steps(void)
{
    int n = parked.mode && parked.mode->between_steps ? parked.mode->between_steps() : 0;
    if (n < 0) {
        zygote_say("a thread was left after importing between steps: it ends");
        standin.terminated = 1;     /* it drains */
        return 0;
    }
    if (n == 0)
        return 0;
    zygote_say("imported %d more modules its tasks learned, between steps%s", n,
               parked.ngroups > 1 ? "; its sub-zygotes are made again" : "");
    return standin_subs_remake();
}

/* What the serving loop polls, in PFD: the listening socket (or the
 * root's, forwarded), the signalfd, the root's and the starter's pidfds,
 * the NG sub-zygotes' forwarding sockets, the stand-ins.  How many. */
static int serving_pollfds(struct pollfd *pfd, int ng, int root_done)
{
    int np = 0;
    pfd[np++] = (struct pollfd){ parked.forwarded ? (root_done ? -1 : parked.sock)
                                                  : standin.lfd, POLLIN, 0 };
    pfd[np++] = (struct pollfd){ standin.sfd, POLLIN, 0 };
    pfd[np++] = (struct pollfd){ parked.root_pidfd, POLLIN, 0 };
    pfd[np++] = (struct pollfd){ standin.starter_done ? -1 : standin.starter_pidfd, POLLIN, 0 };
    for (int g = 0; g < ng; g++)
        pfd[np++] = (struct pollfd){ g > 0 ? parked.groups[g].fwd : -1, POLLIN, 0 };
    for (int i = 0; i < standin.n; i++)
        pfd[np++] = (struct pollfd){ standin.c[i].fd, POLLIN, 0 };  /* -1: ignored */
    return np;
}

/* What the stand-ins said (their poll results from PFD): 1 in a task just
 * forked for one (*TS), else 0; *SERVED counts the requests served. */
static int hear_standins(const struct pollfd *pfd, long *served, struct task_start *ts)
{
    for (int i = 0; i < standin.n; i++) {
        struct client *c = &standin.c[i];
        short ev = pfd[i].revents;
        if (c->fd < 0 || !ev)
            continue;
        if (c->task == 0 && (ev & POLLIN)) {
            int rr = standin_request(c, ts);
            if (rr == 1)
                return 1;
            *served += c->counted;
            if (rr != -1)
                continue;
        } else if (!(ev & (POLLHUP | POLLERR))) {
            /* Nothing more comes from a stand-in whose task runs: what
             * it sends anyway is dropped (left, it would spin our poll). */
            char junk[64];
            if (recv(c->fd, junk, sizeof junk, MSG_DONTWAIT) != 0)
                continue;
        }
        /* Failed, or the stand-in hung up: its task (if any) runs on,
         * reaped here with nobody to tell; unless it was bound to its
         * stand-in, which only hangs up first when it is killed (a
         * SIGKILL the task, as the same process, would have had). */
        if (c->task > 0 && c->bound)
            kill(c->task, SIGKILL);
        drop_conn(c);
    }
    return 0;
}

/* Serve stand-ins until every task this node expects has been served (or
 * refused) and has exited, or nobody is left to serve (the root), or
 * until the root is done with us and our stand-ins' tasks have exited (a
 * sub-zygote).  The zygote must outlive signals sent to the step's process
 * group: it blocks them (its tasks set their own mask). */
struct task_start zygote_serve_standin(void)
{
    if (start_serving())
        return zygote_serve_standin();
    int ng = parked.forwarded ? 0 : parked.ngroups;
    static struct pollfd pfd[MAX_CLIENTS + PSPAWN_FANOUT_MAX + 4];
    long served = 0, looked_at = 0;
    long long idle_since = -1;
    int draining = 0, root_done = 0;
    struct task_start ts;
    for (;;) {
        int wait_ms = -1;
        if (!parked.forwarded && !draining) {
            wait_ms = idle_left(&idle_since);
            if (wait_ms == 0 || standin.terminated ||
                (standin.n == 0 && parked.expect_tasks > 0 && served >= parked.expect_tasks)) {
                drain();
                draining = 1;
                wait_ms = -1;
            } else if (wait_ms > 0 && served != looked_at && parked.idle_ms > 0 &&
                       parked.mode) {
                looked_at = served;
                if (between_steps())
                    return zygote_serve_standin();
                idle_since = -1;
                continue;
            }
        }
        if (standin.n == 0 && (parked.forwarded ? root_done : draining && !standin_subs_alive()))
            zygote_exit(0);
        if (parked.forwarded && !root_done)
            standin_tell_load(standin.n);
        int np = serving_pollfds(pfd, ng, root_done);
        int r = poll(pfd, (nfds_t)np, wait_ms);
        if (r <= 0)
            continue;
        if (pfd[1].revents & POLLIN)
            reap();
        if (pfd[2].revents & POLLIN)
            root_done = 1;  /* the root is gone */
        if (pfd[3].revents & POLLIN)
            standin.starter_done = 1;
        for (int g = 1; g < ng; g++)
            if (pfd[4 + g].revents && parked.groups[g].fwd >= 0)
                standin_hear_sub(g, pfd[4 + g].revents);
        if (hear_standins(pfd + 4 + ng, &served, &ts))
            return ts;
        compact();
        if (!(pfd[0].revents & (POLLIN | POLLHUP)))
            continue;
        if (parked.forwarded) {
            int rr = forwarded_request(&ts);
            if (rr == 1)
                return ts;
            if (rr < 0)
                root_done = 1;
        } else {
            admit();
        }
    }
}
