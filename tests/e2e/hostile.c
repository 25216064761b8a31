/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostile - the other user of tests/e2e/hostile.sh (run as bob on a
 * compute node), against alice's srun --pspawn steps.
 *
 *   hostile squat [--full] SECONDS NAME...
 *       binds each abstract NAME first (SOCK_SEQPACKET, listening, and the
 *       same name as SOCK_STREAM and SOCK_DGRAM), answers every connection
 *       with bait (a zygote's hello, a "task started" reply, a mover's
 *       "moved" reply) and reads what the caller sends, for SECONDS.
 *       --full: the SEQPACKET listener's queue is kept full (backlog 0,
 *       filled by ourselves), so that a caller's connect gets EAGAIN.
 *       Prints "squat NAME TYPE ok|ERRNO" per bind, "conn NAME uid=U
 *       pid=P bytes=B" per connection when it ends, and at the end
 *       "squat-done conns=C foreign=F bytes=B" (F: connections of another
 *       uid than ours, B: what they sent us).
 *   hostile probe [--pid PID] NAME...
 *       connects to each abstract NAME and sends what a caller could:
 *       nothing, junk, an oversized message, a request with the right
 *       magic and a 1 GiB sparse memfd, a mover request for PID (default
 *       1) with a made-up token; then a burst of 64 connections at once.
 *       Prints "attempt NAME WHAT RESULT", RESULT one of refused:ERRNO
 *       (no connection), closed (hung up without a word), eperm (a mover's
 *       refusal), nothing (connected, never answered: a name that does not
 *       accept, within 2 s), data:HEX (anything else: a leak).
 *   hostile flood SECONDS PREFIX
 *       for SECONDS, connects to every abstract name in /proc/net/unix
 *       that starts with PREFIX (looked up again every 100 ms), as fast as
 *       it can, keeping up to 900 connections open.  Prints "flood
 *       names=N conns=C".
 *   hostile signal PID...
 *       tries each signal and each way to reach another user's process:
 *       kill (0, KILL, TERM, STOP, CONT, INT, USR1), its process group,
 *       pidfd_send_signal, ptrace, process_vm_readv, pidfd_getfd, prlimit,
 *       setpriority, sched_setaffinity, /proc/PID/{environ,mem,fd}.
 *       Prints "attempt PID WHAT RESULT", RESULT an errno name (EPERM,
 *       EACCES...; ESRCH: the process is gone) or "ALLOWED".
 *
 * Every wait has a timeout; no attempt can block.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "pspawn_cgroup.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static socklen_t abstract(struct sockaddr_un *a, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t len = strlen(name);
    if (len + 1 >= sizeof a->sun_path)
        len = sizeof a->sun_path - 2;
    memcpy(a->sun_path + 1, name, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static const char *errname(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- squat ---------------------------------------------------------- */

#define MAX_CONNS 512

struct conn {
    int fd;
    const char *name;
    struct ucred peer;
    long bytes;
};

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* What a caller that trusted us would take for its zygote's or mover's
 * words. */
static void bait(int fd)
{
    struct standin_reply hello = { PSPAWN_MAGIC, 4 /* hello */, (int32_t)getpid(), 0 };
    struct standin_reply started = { PSPAWN_MAGIC, STANDIN_STARTED, (int32_t)getpid(), 0 };
    struct pspawn_mover_reply moved = { PSPAWN_MOVER_MAGIC, 0, 1 };
    send(fd, &hello, sizeof hello, MSG_NOSIGNAL | MSG_DONTWAIT);
    send(fd, &started, sizeof started, MSG_NOSIGNAL | MSG_DONTWAIT);
    send(fd, &moved, sizeof moved, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int squat(int argc, char **argv)
{
    int full = 0, i = 2;
    if (i < argc && !strcmp(argv[i], "--full")) {
        full = 1;
        i++;
    }
    if (i >= argc)
        return 2;
    int seconds = atoi(argv[i++]);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    int nl = argc - i;
    if (nl > 64) {
        fprintf(stderr, "hostile squat: at most 64 names\n");
        return 2;
    }
    int *lfd = calloc((size_t)nl, sizeof *lfd);
    static struct conn conns[MAX_CONNS];
    int nconns = 0;
    for (int k = 0; k < nl; k++) {
        const char *name = argv[i + k];
        struct sockaddr_un a;
        socklen_t alen = abstract(&a, name);
        static const struct { int type; const char *what; } types[] = {
            { SOCK_SEQPACKET, "seqpacket" }, { SOCK_STREAM, "stream" }, { SOCK_DGRAM, "dgram" } };
        lfd[k] = -1;
        for (size_t t = 0; t < 3; t++) {
            int fd = socket(AF_UNIX, types[t].type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            int r = bind(fd, (struct sockaddr *)&a, alen);
            if (r == 0 && types[t].type != SOCK_DGRAM)
                r = listen(fd, full && types[t].type == SOCK_SEQPACKET ? 0 : 64);
            printf("squat %s %s %s\n", name, types[t].what, r == 0 ? "ok" : errname(errno));
            if (r < 0) {
                close(fd);
                continue;
            }
            if (types[t].type == SOCK_SEQPACKET) {
                lfd[k] = fd;
                /* Our own connections fill the queue: nobody else gets in. */
                for (int f = 0; full && f < 4; f++) {
                    int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                    if (connect(c, (struct sockaddr *)&a, alen) < 0)
                        close(c);
                }
            }
            /* the others just hold the name */
        }
    }
    fflush(stdout);
    long long end = now_ms() + 1000LL * seconds;
    long foreign = 0, bytes = 0, total = 0;
    while (!stop && now_ms() < end) {
        struct pollfd p[MAX_CONNS + 64];
        int np = 0;
        for (int k = 0; k < nl && np < 64; k++)
            p[np++] = (struct pollfd){ full ? -1 : lfd[k], POLLIN, 0 };
        for (int c = 0; c < nconns; c++)
            p[np++] = (struct pollfd){ conns[c].fd, POLLIN, 0 };
        if (poll(p, (nfds_t)np, 200) <= 0)
            continue;
        for (int k = 0; k < nl; k++) {
            if (!(p[k].revents & POLLIN) || nconns >= MAX_CONNS)
                continue;
            int fd = accept4(lfd[k], NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0)
                continue;
            struct conn *c = &conns[nconns++];
            socklen_t len = sizeof c->peer;
            *c = (struct conn){ fd, argv[i + k], { 0, 0, 0 }, 0 };
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len);
            bait(fd);
        }
        for (int c = nconns - 1; c >= 0; c--) {
            if (!p[nl + c].revents)
                continue;
            char buf[65536];
            ssize_t n;
            while ((n = recv(conns[c].fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
                conns[c].bytes += n;
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                struct conn *x = &conns[c];
                printf("conn %s uid=%d pid=%d bytes=%ld\n", x->name, (int)x->peer.uid,
                       (int)x->peer.pid, x->bytes);
                fflush(stdout);
                total++;
                if (x->peer.uid != getuid()) {
                    foreign++;
                    bytes += x->bytes;
                }
                close(x->fd);
                conns[c] = conns[--nconns];
            }
        }
    }
    for (int c = 0; c < nconns; c++) {
        struct conn *x = &conns[c];
        char buf[65536];
        ssize_t n;
        while ((n = recv(x->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
            x->bytes += n;
        printf("conn %s uid=%d pid=%d bytes=%ld (still open)\n", x->name, (int)x->peer.uid,
               (int)x->peer.pid, x->bytes);
        total++;
        if (x->peer.uid != getuid()) {
            foreign++;
            bytes += x->bytes;
        }
    }
    printf("squat-done conns=%ld foreign=%ld bytes=%ld\n", total, foreign, bytes);
    return 0;
}

/* ---- probe ---------------------------------------------------------- */

/* A connection to NAME, or -1 with errno (never blocks). */
static int dial(const char *name)
{
    struct sockaddr_un a;
    socklen_t alen = abstract(&a, name);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, alen) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* What the other end says within MS: closed, eperm (a mover's refusal,
 * nothing else in it), nothing, or data:HEX. */
static void answer(int fd, int ms, char *res, size_t len)
{
    long long end = now_ms() + ms;
    unsigned char buf[256];
    for (;;) {
        int left = (int)(end - now_ms());
        struct pollfd p = { fd, POLLIN, 0 };
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            snprintf(res, len, "nothing");
            return;
        }
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EAGAIN)
            continue;
        if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
            snprintf(res, len, "closed");
            return;
        }
        if (n < 0) {
            snprintf(res, len, "closed:%s", errname(errno));
            return;
        }
        struct pspawn_mover_reply r;
        if (n == (ssize_t)sizeof r) {
            memcpy(&r, buf, sizeof r);
            if (r.magic == PSPAWN_MOVER_MAGIC && r.err == EPERM && r.moved == 0) {
                /* then the mover hangs up */
                char more[8];
                struct pollfd q = { fd, POLLIN, 0 };
                if (poll(&q, 1, 2000) == 1 && recv(fd, more, sizeof more, MSG_DONTWAIT) > 0)
                    snprintf(res, len, "data:more-after-eperm");
                else
                    snprintf(res, len, "eperm");
                return;
            }
        }
        size_t at = (size_t)snprintf(res, len, "data:");
        for (ssize_t k = 0; k < n && k < 24 && at + 3 < len; k++)
            at += (size_t)snprintf(res + at, len - at, "%02x", buf[k]);
        return;
    }
}

/* Send what a hostile caller would, on a fresh connection each. */
static void attempt(const char *name, const char *what, const void *msg, size_t len,
                    const int *fds, int nfds)
{
    char res[128];
    int fd = dial(name);
    if (fd < 0) {
        printf("attempt %s %s refused:%s\n", name, what, errname(errno));
        fflush(stdout);
        return;
    }
    if (msg) {
        union {
            char buf[CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } cm;
        struct iovec iov = { (void *)msg, len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (nfds > 0) {
            mh.msg_control = cm.buf;
            mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
            struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
            ch->cmsg_level = SOL_SOCKET;
            ch->cmsg_type = SCM_RIGHTS;
            ch->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
            memcpy(CMSG_DATA(ch), fds, (size_t)nfds * sizeof(int));
        }
        /* Non-blocking: a full queue or a too big message is an answer
         * too, not a reason to wait. */
        if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EPIPE &&
            errno != ECONNRESET) {
            int e = errno;
            answer(fd, 2000, res, sizeof res);
            printf("attempt %s %s %s (send: %s)\n", name, what, res, errname(e));
            fflush(stdout);
            close(fd);
            return;
        }
    }
    answer(fd, 2000, res, sizeof res);
    printf("attempt %s %s %s\n", name, what, res);
    fflush(stdout);
    close(fd);
}

static int probe(int argc, char **argv)
{
    int i = 2;
    pid_t victim = 1;
    if (i + 1 < argc && !strcmp(argv[i], "--pid")) {
        victim = atoi(argv[i + 1]);
        i += 2;
    }
    signal(SIGPIPE, SIG_IGN);
    static char junk[65536], huge[4 << 20];
    for (size_t k = 0; k < sizeof junk; k++)
        junk[k] = (char)(k * 131 + 7);
    memset(huge, 0x5a, sizeof huge);
    /* A request as the zygote reads them, with a memfd that claims more
     * than it holds and a "go block" of the wrong size. */
    int memfd = memfd_create("hostile-request", MFD_CLOEXEC);
    int gofd = memfd_create("hostile-go", MFD_CLOEXEC);
    if (memfd < 0 || gofd < 0 || ftruncate(memfd, 1L << 30) < 0 || ftruncate(gofd, 3) < 0)
        perror("memfd");
    struct request_msg req = { PSPAWN_MAGIC, 1, 0xffffff00u, 2 };
    int reqfds[2] = { memfd, gofd };
    struct request_msg fanout = { PSPAWN_FANOUT_MAGIC, 1, 64, 0 };
    struct pspawn_mover_req mq = { PSPAWN_MOVER_MAGIC, (int32_t)victim, { 0 } };
    memset(mq.token, 'a', sizeof mq.token - 1);
    struct pspawn_mover_req mq_short = mq;
    for (; i < argc; i++) {
        const char *name = argv[i];
        attempt(name, "connect", NULL, 0, NULL, 0);
        attempt(name, "junk-16", junk, 16, NULL, 0);
        attempt(name, "junk-64k", junk, sizeof junk, NULL, 0);
        attempt(name, "oversized-4m", huge, sizeof huge, NULL, 0);
        attempt(name, "request-1g-memfd", &req, sizeof req, reqfds, 2);
        attempt(name, "fanout-no-fds", &fanout, sizeof fanout, NULL, 0);
        attempt(name, "mover-request", &mq, sizeof mq, NULL, 0);
        attempt(name, "mover-request-truncated", &mq_short, 6, NULL, 0);
        /* A burst: 64 connections at once, each with junk, then all
         * answered (or not) together. */
        int fds[64], n = 0, refused = 0, closed = 0, eperm = 0, nothing = 0, data = 0;
        for (int k = 0; k < 64; k++) {
            fds[n] = dial(name);
            if (fds[n] < 0) {
                refused++;
                continue;
            }
            send(fds[n], junk, 100, MSG_NOSIGNAL | MSG_DONTWAIT);
            n++;
        }
        for (int k = 0; k < n; k++) {
            char res[128];
            answer(fds[k], k == 0 ? 2000 : 200, res, sizeof res);
            if (!strncmp(res, "closed", 6))
                closed++;
            else if (!strcmp(res, "eperm"))
                eperm++;
            else if (!strcmp(res, "nothing"))
                nothing++;
            else
                data++;
            close(fds[k]);
        }
        printf("attempt %s burst-64 %s (refused %d closed %d eperm %d nothing %d data %d)\n",
               name, data ? "data:burst" : "burst-refused", refused, closed, eperm, nothing, data);
        fflush(stdout);
    }
    return 0;
}

/* ---- signal --------------------------------------------------------- */

static void result(pid_t pid, const char *what, int r)
{
    printf("attempt %d %s %s\n", (int)pid, what, r < 0 ? errname(errno) : "ALLOWED");
}

static int signals(int argc, char **argv)
{
    static const struct { int sig; const char *what; } sigs[] = {
        { 0, "kill-0" }, { SIGKILL, "kill-KILL" }, { SIGTERM, "kill-TERM" },
        { SIGSTOP, "kill-STOP" }, { SIGCONT, "kill-CONT" }, { SIGINT, "kill-INT" },
        { SIGUSR1, "kill-USR1" } };
    for (int i = 2; i < argc; i++) {
        pid_t pid = atoi(argv[i]);
        if (pid <= 1)
            continue;
        for (size_t s = 0; s < sizeof sigs / sizeof sigs[0]; s++)
            result(pid, sigs[s].what, kill(pid, sigs[s].sig));
        pid_t pgid = getpgid(pid);
        if (pgid > 1)
            result(pid, "kill-group-KILL", kill(-pgid, SIGKILL));
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd >= 0) {
            result(pid, "pidfd_send_signal-KILL",
                   (int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0));
            int got = (int)syscall(SYS_pidfd_getfd, pidfd, 0, 0);
            result(pid, "pidfd_getfd", got);
            if (got >= 0)
                close(got);
            close(pidfd);
        } else {
            result(pid, "pidfd_open", -1);
        }
        long r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
        result(pid, "ptrace-seize", (int)r);
        if (r == 0)
            ptrace(PTRACE_DETACH, pid, NULL, NULL);
        char buf[64];
        struct iovec local = { buf, sizeof buf }, remote = { (void *)0x400000, sizeof buf };
        result(pid, "process_vm_readv", (int)process_vm_readv(pid, &local, 1, &remote, 1, 0));
        struct rlimit rl = { 0, 0 };
        result(pid, "prlimit-NOFILE", prlimit(pid, RLIMIT_NOFILE, &rl, NULL));
        result(pid, "setpriority", setpriority(PRIO_PROCESS, (id_t)pid, 19));
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        result(pid, "sched_setaffinity", sched_setaffinity(pid, sizeof set, &set));
        static const char *files[] = { "environ", "mem", "fd", "cwd/." };
        for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
            char path[64], what[32];
            snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, files[f]);
            snprintf(what, sizeof what, "open-%.*s", (int)strcspn(files[f], "/"), files[f]);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            /* /proc/PID/environ opens for others on some kernels; what
             * matters is that nothing can be read. */
            if (fd >= 0) {
                char c;
                ssize_t n = read(fd, &c, 1);
                close(fd);
                if (n <= 0 && !strcmp(files[f], "environ")) {
                    if (n == 0)
                        errno = EACCES;
                    fd = -1;
                }
            }
            result(pid, what, fd < 0 ? -1 : 0);
        }
        fflush(stdout);
    }
    return 0;
}

/* ---- flood --------------------------------------------------------- */

/* The abstract names now listening that start with PREFIX, into NAMES. */
static int names_now(const char *prefix, char names[][108], int max)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    int n = 0;
    while (f && n < max && fgets(line, sizeof line, f)) {
        char *at = strchr(line, '@');
        if (at && !strncmp(at + 1, prefix, strlen(prefix))) {
            at[strcspn(at, " \n")] = '\0';
            snprintf(names[n++], 108, "%s", at + 1);
        }
    }
    if (f)
        fclose(f);
    return n;
}

static int flood(int argc, char **argv)
{
    long long end = now_ms() + 1000LL * atoi(argv[2]), next_look = 0;
    static char names[64][108];
    static int held[900];
    int nn = 0, n = 0, at = 0, seen = 0;
    long conns = 0;
    (void)argc;
    while (now_ms() < end) {
        if (now_ms() >= next_look) {
            nn = names_now(argv[3], names, 64);
            seen = nn > seen ? nn : seen;
            next_look = now_ms() + 100;
        }
        for (int i = 0; i < nn; i++) {
            struct sockaddr_un a;
            socklen_t len = abstract(&a, names[i]);
            int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) < 0) {
                if (fd >= 0)
                    close(fd);
                continue;
            }
            conns++;
            if (n == 900)
                close(held[at]);
            else
                n++;
            held[at] = fd;
            at = (at + 1) % 900;
        }
        if (!nn) {
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    printf("flood names=%d conns=%ld\n", seen, conns);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && !strcmp(argv[1], "flood"))
        return flood(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "squat"))
        return squat(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "probe"))
        return probe(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "signal"))
        return signals(argc, argv);
    fprintf(stderr, "usage: hostile squat [--full] SECONDS NAME... | probe [--pid PID] NAME... | "
            "flood SECONDS PREFIX | signal PID...\n");
    return 2;
}
