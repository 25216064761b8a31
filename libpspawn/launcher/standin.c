/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in client: what a process that holds its task's place (the
 * Slurm shim, pspawn-shim) uses to have its step's zygote on this node
 * fork the task.  The first stand-in of a step starts the zygote; the
 * others wait for it to park and connect.  The wire format is the one every
 * front door uses (request.c encodes it).
 *
 * The step's names (pspawn-KEY, its .lock and .fail) are abstract, so
 * anyone may bind one first: a name another user holds is never waited
 * on, and every wait here has a limit.
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
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"
#include "python.h"
#include "unixsock.h"

extern char **environ;



int pspawn_standin_wait_ms(void)
{
    /* PSPAWN_TIMEOUT: the library's wait for a zygote (10 s unset). */
    const char *t = getenv("PSPAWN_TIMEOUT");
    int ms;
    return t && *t && pspawn_timeout_parse(t, &ms) == 0 ? 3 * ms : 30000;
}

/* One of the step's names, as our own user's: the fd, or -1 with errno
 * ECONNREFUSED (nobody listens), EPERM (another user's: a squatter), or
 * EAGAIN (its listen queue is full). */
static int connect_step(const char *name)
{
    return pspawn_connect_abstract(name, geteuid());
}

/* Whether NAME, whose queue is full, is another user's (said at once:
 * nobody could serve us there). */
static int squatted(const struct pspawn_standin_client *c, const char *name)
{
    uid_t owner;
    if (pspawn_abstract_owner(name, &owner) < 0 || owner == geteuid())
        return 0;
    pspawn_standin_say(c, "@%s is another user's (uid %d): ignored", name, (int)owner);
    return 1;
}

/* A busy zygote (its queue full: every task of a big node connects at
 * once) takes one connection after the other: retry until MS have passed.
 * The fd, or -1 with errno. */
static int connect_busy(const struct pspawn_standin_client *c, const char *name, int ms)
{
    int fd;
    if ((fd = connect_step(name)) >= 0 || errno != EAGAIN)
        return fd;
    if (squatted(c, name)) {
        errno = EPERM;
        return -1;
    }
    for (int waited = 0; waited < ms; waited += 5) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if ((fd = connect_step(name)) >= 0 || errno != EAGAIN)
            return fd;
    }
    pspawn_standin_say(c, "@%s takes no connection: its queue stays full", name);
    errno = ETIMEDOUT;
    return -1;
}

/* The loader's variables (and a warm interpreter's start-up ones) of the
 * zygote behind FD, from its hello, against ours: NULL when they agree,
 * else what differs, in WHY.  The hello comes within MS. */
static const char *zygote_env_differs(struct pspawn_standin_client *c, int fd, int ms,
                                      char *why, size_t len)
{
    char *buf = malloc(sizeof(struct standin_reply) + HELLO_MAX + 1);
    if (!buf)
        return "no memory to read the zygote's hello";
    struct pollfd p = { fd, POLLIN, 0 };
    int pr;
    while ((pr = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    ssize_t got = pr == 1 ? recv(fd, buf, sizeof(struct standin_reply) + HELLO_MAX,
                                 MSG_DONTWAIT) : -1;
    struct standin_reply h;
    if (got < (ssize_t)sizeof h) {
        free(buf);
        return pr == 0 ? "the zygote said no hello in time (3 x PSPAWN_TIMEOUT)"
                       : "the zygote hung up before its hello";
    }
    memcpy(&h, buf, sizeof h);
    if (h.magic != PSPAWN_MAGIC || h.kind != STANDIN_HELLO) {
        free(buf);
        return "the zygote's hello is not one";
    }
    c->zygote_objects = HELLO_OBJECTS_OF(h.status);
    c->zygote_python = ((uint32_t)h.status & HELLO_PYTHON) != 0;
    if ((uint32_t)h.status & HELLO_NO_ENV) {
        pspawn_standin_say(c, "the zygote's environment is too big to send: loader variables not compared");
        free(buf);
        return NULL;
    }
    /* Its "K=V" strings, in place. */
    size_t end = (size_t)got, n = 0;
    buf[end] = 0;
    for (size_t i = sizeof h; i < end; i++)
        n += buf[i] == 0;
    char **theirs = calloc(n + 2, sizeof *theirs);
    for (size_t i = sizeof h, k = 0; theirs && i < end; i += strlen(buf + i) + 1)
        theirs[k++] = buf + i;
    /* Ours as the starter exec'd its zygote (the proxy in LD_PRELOAD). */
    struct pspawn_options o;
    char msg[256];
    pspawn_options_defaults(&o);
    if (pspawn_options_parse(&o, c->options, msg, sizeof msg) < 0)
        pspawn_options_defaults(&o);
    /* (A PiP root's loader has room for 16 namespaces: the same
     * GLIBC_TUNABLES a zygote of ours would get.) */
    char **mine = theirs ? pspawn_zygote_environ(NULL, environ, !strcmp(o.preload, "auto"), o.pip)
                         : NULL;
    char **loader = theirs ? pspawn_loader_env_of(theirs) : NULL;
    char **py = theirs ? pspawn_env_subset(theirs, pspawn_python_startup_var) : NULL;
    const char *var = NULL, *res = NULL;
    size_t vlen = 0;
    if (!mine || !loader || !py)
        res = "no memory to compare the zygote's environment";
    else if ((var = pspawn_env_subset_differs(loader, mine, pspawn_loader_var, &vlen)))
        snprintf(why, len, "its %.*s differs from the zygote's (read before main: by the "
                 "loader, libc or a constructor)", (int)vlen, var);
    else if (((uint32_t)h.status & HELLO_PYTHON) &&
             (var = pspawn_env_subset_differs(py, environ, pspawn_python_startup_var, &vlen)))
        snprintf(why, len, "its %.*s differs from the warm interpreter's (read at start)",
                 (int)vlen, var);
    if (var)
        res = why;
    pspawn_strv_free(mine);
    pspawn_strv_free(loader);
    pspawn_strv_free(py);
    free(theirs);
    free(buf);
    return res;
}

/* The namespace of ours (/proc/self/ns/KIND) that the zygote PID's
 * tasks would not share: its KIND for children (pid, time) or its KIND.
 * NULL when they would share all, or one cannot be read (ours and its
 * are then those of the same user's processes of one job: a job's
 * zygote is started into the job's namespaces, a step's by its step). */
static const char *namespace_differs(pid_t zpid)
{
    static const char *const kinds[][2] = {
        { "mnt", "mnt" }, { "pid", "pid_for_children" }, { "net", "net" }, { "ipc", "ipc" },
        { "uts", "uts" }, { "user", "user" }, { "cgroup", "cgroup" },
        { "time", "time_for_children" },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char mine[64], theirs[64], path[96];
        ssize_t a, b;
        snprintf(path, sizeof path, "/proc/self/ns/%s", kinds[i][0]);
        if ((a = readlink(path, mine, sizeof mine - 1)) < 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)zpid, kinds[i][1]);
        if ((b = readlink(path, theirs, sizeof theirs - 1)) < 0)
            continue;
        if (a != b || memcmp(mine, theirs, (size_t)a) != 0)
            return kinds[i][0];
    }
    return NULL;
}

/* Whether the zygote PID's tasks would be in other cgroups than ours
 * (a launcher may start its children in cgroups of their own): 1 if so,
 * 0 if not or if one cannot be read. */
static int cgroups_differ(pid_t zpid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)zpid);
    char *mine = pspawn_read_file("/proc/self/cgroup"), *theirs = pspawn_read_file(path);
    int differ = mine && theirs && strcmp(mine, theirs) != 0;
    free(mine);
    free(theirs);
    return differ;
}

int pspawn_standin_hello(struct pspawn_standin_client *c, int fd, char *why, size_t len)
{
    const char *differs = zygote_env_differs(c, fd, pspawn_standin_wait_ms(), why, len);
    if (differs && differs != why)
        snprintf(why, len, "%s", differs);
    return differs ? -1 : 0;
}

/* Our connection to the step's zygote, which says hello first: -1 if it
 * is not one we may use (then C's log says why).  A launcher's zygote's
 * hello is read after the request (C->detach: its name already covers
 * the loader's variables, so a mismatch is all but impossible, and the
 * request need not wait a round trip of the zygote's). */
static int use_zygote(struct pspawn_standin_client *c, int fd)
{
    char why[256];
    const char *differs = fd < 0 || c->detach ? NULL
                          : zygote_env_differs(c, fd, pspawn_standin_wait_ms(), why, sizeof why);
    struct ucred z;
    const char *ns;
    /* A job's zygote, or a launcher's, was started by another process
     * than ours, which may have been in other namespaces or cgroups. */
    if (!differs && fd >= 0 && (c->job || c->detach) && pspawn_peer_cred(fd, &z) == 0) {
        if ((ns = namespace_differs(z.pid))) {
            snprintf(why, sizeof why, "the %s zygote is in another %s namespace",
                     c->job ? "job's" : "launcher's", ns);
            differs = why;
        } else if (c->detach && cgroups_differ(z.pid)) {
            differs = "the launcher's zygote is in other cgroups";
        }
    }
    if (differs) {
        pspawn_standin_say(c, "the zygote cannot serve this task: %s", differs);
        close(fd);
        return -1;
    }
    return fd;
}

int pspawn_standin_start_job(struct pspawn_standin_client *c, int lock_fd)
{
    char name[200];
    snprintf(name, sizeof name, "pspawn-%s", c->key);
    pspawn_standin_say(c, "starting the %s zygote %s", c->detach ? "launcher's" : "job's", name);
    c->keeper = pspawn_keeper_start(c, name, lock_fd);
    /* Waiting stand-ins connect once the lock goes; after a failure they
     * find no zygote, and exec. */
    close(lock_fd);
    if (c->keeper < 0)
        return -1;
    pspawn_standin_say(c, "the %s zygote %d parked", c->detach ? "launcher's" : "job's", (int)c->zpid);
    return 0;
}

/* A launcher's zygote (C->detach) must be nobody's child in the
 * launcher's tree: the launcher would see it among its children, or we
 * would have to outlive our task to wait for it.  An intermediate child
 * starts it, holding the lock LFD, and exits once it parked; the zygote,
 * orphaned, serves until it has been idle for C->idle_ms. */
static int start_detached(struct pspawn_standin_client *c, int lfd)
{
    pid_t mid = fork();
    if (mid == 0) {
        /* A group of its own: the launcher's kill(0, ...) and the
         * terminal's signals are for its tasks, not for it. */
        setpgid(0, 0);
        _exit(pspawn_standin_start_job(c, lfd) == 0 ? 0 : 1);
    }
    close(lfd);
    if (mid < 0)
        return -1;
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The names of a step's zygote: it listens on NAME, LOCK while one is
 * being started, FAIL once its start failed. */
struct step_names {
    char name[200], lock[220], fail[220];
};

/* We hold the lock LFD (listening): start the zygote and connect to it.
 * A job's zygote is never started here. */
static int start_as_elected(struct pspawn_standin_client *c, const struct step_names *n,
                            int lfd, int wait_ms)
{
    /* The lock may be ours because another stand-in's zygote parked (and
     * its lock closed) between our first try of the name and our bind of
     * the lock: a zygote whose lock is gone listens already.  Starting a
     * second one would find the name taken, and exec. */
    int fd = connect_busy(c, n->name, wait_ms);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 || err == ETIMEDOUT || err == EPERM) {
        close(lfd);
        if (err == EPERM) {
            pspawn_standin_say(c, "%s is another user's: no zygote", n->name);
            return -1;
        }
        pspawn_standin_say(c, "the zygote %s parked while we took its lock", n->name);
        errno = err;
        return use_zygote(c, fd);
    }
    if (c->job) {
        /* Root starts a job's zygote before the step's tasks, holding its
         * lock from then on: with neither there, it did not start, or it
         * has ended since (idle, evicted); nor may a stand-in start one in
         * its step, where it would die with the step. */
        close(lfd);
        pspawn_standin_say(c, "the job's zygote %s is not there", n->name);
        return -1;
    }
    if (c->detach) {
        if (start_detached(c, lfd) < 0) {
            c->start_failed = 1;
            return -1;
        }
        return use_zygote(c, connect_busy(c, n->name, wait_ms));
    }
    pspawn_standin_say(c, "starting the zygote %s", n->name);
    c->keeper = pspawn_keeper_start(c, n->name, lfd);
    if (c->keeper < 0) {
        /* Tell the others to give up waiting. */
        c->fail_fd = pspawn_listen_abstract(n->fail, SOMAXCONN);
        close(lfd);
        return -1;
    }
    close(lfd);
    pspawn_standin_say(c, "keeper %d keeps the zygote", (int)c->keeper);
    pspawn_standin_say(c, "zygote %d parked", (int)c->zpid);
    return use_zygote(c, connect_busy(c, n->name, wait_ms));
}

/* Someone else is starting it: wait until its lock closes (up to the
 * 120 s it gives the zygote), and connect.  1 with *RESULT (use_zygote's,
 * or -1) when that settled it, 0 when the zygote is to be polled for.  A
 * lock that another user's process holds is not waited on; nor is one
 * whose queue is full when the kernel says it is another user's (else it
 * may be the lock of a node with more stand-ins than a listen queue
 * holds: polled). */
static int wait_for_lock(struct pspawn_standin_client *c, const struct step_names *n,
                         int wait_ms, int *result)
{
    int w = connect_step(n->lock);
    *result = -1;
    if (w < 0 && (errno == EPERM || (errno == EAGAIN && squatted(c, n->lock)))) {
        pspawn_standin_say(c, "%s is another user's: no zygote", n->lock);
        return 1;
    }
    if (w < 0)
        return 0;
    struct pollfd p = { w, POLLIN, 0 };
    int pr, fd;
    double since = pspawn_now_ms();
    while ((pr = poll(&p, 1, 125000)) < 0 && errno == EINTR)
        ;
    close(w);
    pspawn_standin_say(c, "waited %.1f ms for the %szygote to park", pspawn_now_ms() - since,
        c->job ? "job's " : "");
    if (pr == 0) {
        pspawn_standin_say(c, "%s is held past the zygote's start time: no zygote", n->lock);
        return 1;
    }
    if ((fd = connect_busy(c, n->name, wait_ms)) >= 0 || errno == ETIMEDOUT) {
        *result = use_zygote(c, fd);
        return 1;
    }
    return 0;
}

/* Poll for the zygote every 20 ms (120 s at most) until it answers, its
 * start failed, or nobody is starting it any more. */
static int poll_for_zygote(struct pspawn_standin_client *c, const struct step_names *n,
                           int wait_ms)
{
    int fd;
    for (int waited = 0; waited < 120000; waited += 20) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if ((fd = connect_busy(c, n->name, wait_ms)) >= 0 || errno == ETIMEDOUT)
            return use_zygote(c, fd);
        if (errno == EPERM)
            return -1;
        int f = connect_step(n->fail);
        if (f >= 0) {
            close(f);
            return -1;
        }
        /* Nobody is starting it any more, yet it does not answer: it
         * parked (its name was there before the lock went) and is gone. */
        if ((f = pspawn_listen_abstract(n->lock, 0)) >= 0) {
            close(f);
            if ((fd = connect_busy(c, n->name, wait_ms)) >= 0 || errno == ETIMEDOUT)
                return use_zygote(c, fd);
            pspawn_standin_say(c, "the zygote %s is gone", n->name);
            return -1;
        }
        if (errno != EADDRINUSE) {
            pspawn_standin_say(c, "%s: %s", n->lock, strerror(errno));
            return -1;
        }
    }
    return -1;
}

int pspawn_standin_connect(struct pspawn_standin_client *c)
{
    struct step_names n;
    snprintf(n.name, sizeof n.name, "pspawn-%s", c->key);
    snprintf(n.lock, sizeof n.lock, "%s.lock", n.name);
    snprintf(n.fail, sizeof n.fail, "%s.fail", n.name);
    c->zpid = c->keeper = -1;
    c->not_at_once = 0;
    c->fail_fd = -1;
    int wait_ms = pspawn_standin_wait_ms();
    /* Anyone can bind an abstract name first.  Another user's, on any of
     * the step's names, is never waited on: no zygote of ours can listen
     * there, nor any stand-in of ours elect itself there. */
    int fd = connect_busy(c, n.name, wait_ms);
    if (fd >= 0 || errno == ETIMEDOUT)
        return use_zygote(c, fd);
    c->not_at_once = 1;
    if (errno == EPERM) {
        pspawn_standin_say(c, "%s is another user's: no zygote", n.name);
        return -1;
    }
    /* The lock listens, so that the others can wait on it: it closes once
     * the zygote parked or failed, which resets their connections. */
    int lfd = pspawn_listen_abstract(n.lock, SOMAXCONN);
    if (lfd >= 0)
        return start_as_elected(c, &n, lfd, wait_ms);
    int result;
    if (wait_for_lock(c, &n, wait_ms, &result))
        return result;
    return poll_for_zygote(c, &n, wait_ms);
}

static int skipped(int fd, const int *skip, int nskip)
{
    for (int i = 0; i < nskip; i++)
        if (skip[i] == fd)
            return 1;
    return 0;
}

int pspawn_standin_send(int sock, char **argv, const char *token, const int *skip, int nskip,
                        struct pspawn_hold *hold, unsigned flags, pid_t pgroup, int ctty_fd)
{
    struct call *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    int err = pspawn_call_init(c, NULL, environ);
    if (err) {
        free(c);
        return err;
    }
    /* Every fd we hold, at its own number (0-2 are already in).  More
     * than a request passes: none is left out, the task is exec'd. */
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (!err && d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d) || fd == sock ||
            skipped(fd, skip, nskip))
            continue;
        if (fcntl(fd, F_GETFD) & FD_CLOEXEC)
            continue;   /* exec would have closed it */
        if (c->nfds >= PSPAWN_FD_MAX) {
            err = EMFILE;
            break;
        }
        c->fds[c->nfds] = fd;
        c->actions[c->nactions++] = (struct child_action){ FA_DUP2, fd, c->nfds, 0, 0, NULL };
        c->nfds++;
    }
    if (d)
        closedir(d);
    else
        err = errno;    /* the fds would be unknown: none may be lost */
    if (err) {
        free(c);
        return err;
    }
    c->flags |= flags & REQ_HOLD;
    c->flags |= flags & (REQ_STANDIN_BOUND | REQ_SETSID | REQ_CTTY);
    c->ctty_fd = ctty_fd;
    if (flags & REQ_SETPGROUP) {
        c->flags |= REQ_SETPGROUP;
        c->pgroup = pgroup;     /* 0: its own */
    }
    pspawn_task_t t = { .argv = argv };
    err = pspawn_send_standin(sock, c, &t, token, hold);
    free(c);
    return err;
}
