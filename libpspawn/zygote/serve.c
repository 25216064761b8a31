/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote's life around its requests: who started it (watched from the
 * proxy's constructor on), the wait for work (and for a change on disk of
 * what it loaded, watch.c); and direct mode, where
 * the launcher asked for its tasks itself.  Each is a clone(CLONE_PARENT)
 * of this zygote (the root or a sub-zygote, itself the launcher's child),
 * so the launcher's own child.  The kernel writes its pid into the
 * request before it can run; the zygote then releases it.
 */
#include "config.h"

#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "go.h"
#include "pidfd.h"
#include "procfs.h"
#include "replica.h"
#include "sayline.h"
#include "unixsock.h"
#include "zygote.h"

/* FD, named by a variable we inherited, is still the channel it names: a
 * seqpacket socket made by PARENT (a socketpair's peer credentials are
 * its creator's) or a pipe's write end. */
int zygote_is_channel(int fd, int sock, pid_t parent)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return 0;
    if (!sock)
        return S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY;
    int type = 0;
    struct ucred peer;
    socklen_t tl = sizeof type;
    return S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_SEQPACKET &&
           pspawn_peer_cred(fd, &peer) == 0 && peer.pid == parent;
}

/* ---- who started us ------------------------------------------------------
 *
 * PSPAWN_ENV_PARENT names the process that exec'd the zygote: its launcher
 * (direct mode), or the stand-in, the root or the launcher that started
 * an exec'd one.  A process that finds our variables but has another
 * parent is one of two:
 *  - a program a zygote's constructor started (system(), popen(),
 *    posix_spawn()), which inherits the zygote's variables and channels
 *    (not close-on-exec until our constructor runs, after the other
 *    libraries' constructors): it must not park, it lets go of the
 *    channels and runs as it would without us;
 *  - a zygote whose starter died while it was loading, and which the
 *    kernel gave to a reaper: nobody will ever send it a request, and it
 *    must never go on into the program's main.
 * The first has the starter among its ancestors (unless it left them,
 * double-forked as a daemon), the second cannot (a reaper is older than
 * the starter's death) and was exec'd by what the starter gave the kernel
 * (PSPAWN_ENV_EXEC: AT_EXECFN is the program's fd link, or its path).
 * Without /proc, the channel tells: the starter gone has hung up its end. */
static int descends_from(pid_t ancestor)
{
    pid_t p = getppid();
    for (int depth = 0; depth < 4096 && p > 1; depth++) {
        if (p == ancestor)
            return 1;
        unsigned long long up;
        if (pspawn_proc_stat(p, 4, 4, &up) < 0)
            return -1;
        p = (pid_t)up;
    }
    return p == ancestor;
}

static int hung_up(int fd)
{
    struct pollfd p = { fd, POLLIN, 0 };
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* Whether AT_EXECFN is what our starter exec'd (EXEC: PSPAWN_ENV_EXEC's
 * "FD:PATH"), or -1 if we cannot tell. */
static int execd_by_starter(const char *exec)
{
    const char *fn = (const char *)getauxval(AT_EXECFN);
    char *end, link[64];
    long fd = exec ? strtol(exec, &end, 10) : -1;
    if (!fn || fd < 0 || *end != ':')
        return -1;
    snprintf(link, sizeof link, "/proc/self/fd/%ld", fd);
    return strcmp(fn, link) == 0 || strcmp(fn, end + 1) == 0;
}

static enum origin origin_of(pid_t starter, int sock, const char *exec)
{
    if (getppid() == starter)
        return STARTED;
    int d = descends_from(starter);
    if (d >= 0)
        return d || execd_by_starter(exec) == 0 ? INHERITED : ORPHANED;
    if (zygote_is_channel(sock, 1, starter) && hung_up(sock))
        return ORPHANED;
    return INHERITED;
}

/* Watch the process that started us from now on.  The pidfd is opened
 * before getppid() is asked: a parent that is still ours then is the
 * process the pidfd refers to, not a later one with its pid.
 * (PR_SET_PDEATHSIG is no use: it fires when the thread that forked us
 * exits, which in a launcher that forks from several threads, as PRRTE
 * does, is no sign of its death.) */
enum origin zygote_watch_starter(pid_t starter, int sock, const char *exec)
{
    int pidfd = (int)syscall(SYS_pidfd_open, starter, 0);
    enum origin o = origin_of(starter, sock, exec);
    if (o == STARTED)
        parked.launcher_pidfd = zygote_move_high(pidfd);
    else if (pidfd >= 0)
        close(pidfd);
    return o;
}

int zygote_starter_gone(void)
{
    if (parked.launcher_pidfd >= 0) {
        struct pollfd p = { parked.launcher_pidfd, POLLIN, 0 };
        return poll(&p, 1, 0) == 1;
    }
    /* No pidfds here: a parent that is no longer ours. */
    return parked.launcher > 0 && getppid() != parked.launcher;
}

/* ---- the zygote's own life -------------------------------------------- */

void zygote_watch(void)
{
    /* A stand-in root outlives the stand-in that started it, once parked:
     * it serves the step's other stand-ins. */
    if (parked.listen_name && parked.launcher_pidfd >= 0) {
        close(parked.launcher_pidfd);
        parked.launcher_pidfd = -1;
    }
    if (parked.root > 0)
        parked.root_pidfd = (int)syscall(SYS_pidfd_open, parked.root, 0);
    else
        parked.root_pidfd = -1;
}

int zygote_wait(int sock, int extra, int timeout_ms)
{
    for (;;) {
        struct pollfd p[5] = {
            { sock, POLLIN, 0 }, { extra, POLLIN, 0 },
            { parked.launcher_pidfd, POLLIN, 0 }, { parked.root_pidfd, POLLIN, 0 },
            { zygote_libraries_fd(), POLLIN, 0 },
        };
        int r = poll(p, 5, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -1;
        /* Its launcher or its root gone, a zygote has nobody to serve. */
        if ((p[2].revents | p[3].revents) & POLLIN)
            zygote_exit(0);
        /* A library replaced: a task of ours would not be what exec makes. */
        const char *stale = zygote_libraries_stale(p[0].revents != 0);
        if (stale)
            zygote_exit_stale(stale);
        if (p[1].revents)
            return 1;
        if (p[0].revents)
            return 0;
    }
}

/* Clone the request's tasks.  Returns 1 in a task (with *ts filled), 0 in
 * the zygote, which has let go of the request before it counts itself out
 * of it: once the launcher has every request done, the zygote holds none
 * of their fds. */
static int serve_request(char *base, size_t size, struct wire_go *go, int go_fd, uint32_t id,
                         int *fds, int nfds, struct task_start *ts)
{
    struct wire_request *w = (struct wire_request *)base;
    struct child_setup tmpl;
    int detail = 0;
    const int chan[2] = { parked.report, parked.sock };
    int refusal = zygote_parse_request(base, size, fds, nfds, chan, &tmpl, &detail);
    if (refusal) {
        zygote_drop_request(base, size, go, fds, nfds);
        zygote_report(parked.report, id, PSPAWN_REPORT_DONE, detail, refusal);
        return 0;
    }
    uint32_t ntasks = w->ntasks;
    for (uint32_t i = 0; i < ntasks; i++) {
        pid_t pid = parked.pip ? zygote_pip_clone(CLONE_PARENT, &go->pid[i], base, size, go_fd, id,
                                                  i, &tmpl, nfds, 0, NULL, 0)
                               : zygote_clone(CLONE_PARENT, &go->pid[i]);
        if (pid == 0) {
            *ts = zygote_task_main(base, size, go, id, i, &tmpl, nfds, 0);
            return 1;
        }
        if (pid < 0) {
            zygote_report(parked.report, id, i, -1, errno);
            if (pspawn_go_arrive(go, i, SETUP_FAILED))
                zygote_report(parked.report, id, PSPAWN_REPORT_DONE, 0, 0);
        } else if (!(w->flags & REQ_LAUNCHER_GO)) {
            pspawn_go_swap(&go->go[i], GO_RUN);
        }
    }
    zygote_drop_request(base, size, NULL, fds, nfds);
    /* Our tasks may all be set up already: then we say it. */
    if (pspawn_go_count_out(go))
        zygote_report(parked.report, id, PSPAWN_REPORT_DONE, 0, 0);
    munmap(go, sizeof *go);
    return 0;
}

struct task_start zygote_serve(void)
{
    /* Nobody to tell we parked: nobody will ask for a task. */
    if (zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group) < 0)
        zygote_exit(0);
    for (;;) {
        struct request_msg msg = { 0 };
        void *base;
        struct wire_go *go;
        int fds[ZYGOTE_MSG_FDS], nfds;
        zygote_wait(parked.sock, -1, -1);
        int r = zygote_recv_request(parked.sock, &msg, &base, &go, fds, &nfds);
        if (r == 0)
            zygote_exit(0);     /* the launcher hung up */
        if (r < 0) {
            zygote_report(parked.report, msg.id, PSPAWN_REPORT_DONE, 0, REFUSE_MALFORMED);
            continue;
        }
        close(fds[0]);  /* the memfd: read */
        if (msg.magic == PSPAWN_FANOUT_MAGIC) {
            int sub = zygote_fanout(base, msg.size, fds + 1, nfds - 1, 0);
            munmap(base, msg.size);
            if (sub)    /* a new sub-zygote, on its own socket */
                zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group);
            continue;
        }
        /* The go block: mapped (a PiP task maps it for itself). */
        int go_fd = fds[1];
        if (!parked.pip)
            close(go_fd);
        struct task_start ts;
        int in_task = serve_request(base, msg.size, go, go_fd, msg.id, fds + ZYGOTE_REQ_HEAD,
                                    nfds - ZYGOTE_REQ_HEAD, &ts);
        if (in_task)
            return ts;
        if (parked.pip)
            close(go_fd);
    }
}
