/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What plays the parts of the root mover's tests (spank-mover.h): the
 * plugin's open(), socketpair() and syscall() (exported, so that the
 * plugin calls these), played shims, processes of the step and outside
 * it, other users flooding names.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <linux/magic.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pidfd.h"
#include "pspawn_cgroup.h"
#include "spank-mover.h"
#include "../fixtures/paused.h"
#include "unixsock.h"

/* The plugin's open() is this one (exported with -export-dynamic), so
 * that a test can end the process whose pid the mover is about to write
 * into a cgroup.procs and give that pid to another process (through
 * ns_last_pid): the race of a pid reused between the mover's checks and
 * its write, made certain. */
struct mover_reuse reuse;

/* A process of UID, in cgroup directory CG (or none), that takes pid
 * WANT (free now) through ns_last_pid, and pauses; its pid, or 0 if the
 * kernel gave another. */
pid_t take_pid(pid_t want, uid_t uid, const char *cg)
{
    char last[32];
    snprintf(last, sizeof last, "%d", (int)want - 1);
    for (int tries = 0; tries < 50; tries++) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/ns_last_pid", O_WRONLY);
        if (fd < 0 || write(fd, last, strlen(last)) < 0) {
            if (fd >= 0)
                close(fd);
            return 0;
        }
        close(fd);
        int ready[2];
        if (pipe(ready) < 0)
            return 0;
        pid_t p = fork();
        if (p == 0) {
            close(ready[0]);
            if (cg) {
                char path[PATH_MAX + 32], buf[32];
                snprintf(path, sizeof path, "%s/cgroup.procs", cg);
                snprintf(buf, sizeof buf, "%d\n", (int)getpid());
                int cfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY);
                if (cfd >= 0) {
                    (void)!write(cfd, buf, strlen(buf));
                    close(cfd);
                }
            }
            syscall(SYS_setresgid, uid, uid, uid);
            syscall(SYS_setresuid, uid, uid, uid);
            close(ready[1]);
            for (;;)
                pause();
        }
        close(ready[1]);
        char c;
        (void)!read(ready[0], &c, 1);   /* in its cgroup, as UID */
        close(ready[0]);
        if (p == want)
            return p;
        if (p > 0) {
            kill(p, SIGKILL);
            waitpid(p, NULL, 0);
        }
        if (tries == 49)
            printf("# take_pid: wanted %d, got %d\n", (int)want, (int)p);
    }
    return 0;
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (reuse.victim > 0 && strstr(path, "cgroup.procs")) {
        pid_t v = reuse.victim;
        reuse.victim = 0;
        kill(v, SIGKILL);
        waitpid(v, NULL, 0);
        /* The step's user, like the victim: a process the mover would
         * move, if it looked at the number alone. */
        reuse.successor = take_pid(v, reuse.uid, NULL);
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* While set, the plugin's socketpair() fails (its mover cannot start). */
int fail_socketpair;

int socketpair(int domain, int type, int protocol, int sv[2])
{
    if (fail_socketpair) {
        errno = EMFILE;
        return -1;
    }
    return (int)syscall(SYS_socketpair, domain, type, protocol, sv);
}

/* While set, the kernel has no pidfds (before Linux 5.3): pidfd_open is
 * ENOSYS, for the plugin as for everyone. */
int no_pidfd;

long syscall(long n, ...)
{
    static long (*real)(long, ...);
    if (!real)
        real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (no_pidfd && (n == SYS_pidfd_open || n == SYS_pidfd_send_signal)) {
        errno = ENOSYS;
        return -1;
    }
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int next_task_id;

/* The euid ask_mover's task runs with (-1: the user's, as every uid). */
int task_euid = -1;

/* While set, slurmstepd (this process, every thread) runs with the
 * user's euid while a played shim's request is served, as it may. */
int stepd_euid_dropped;


int join_cgroup(const char *dir, pid_t pid)
{
    char path[PATH_MAX + 32], buf[32];  /* dir is at most PATH_MAX + 8 */
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    return write_file(path, buf);
}

int read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, len - 1, f) : 0;
    buf[got] = '\0';
    if (f)
        fclose(f);
    return f ? 0 : -1;
}

/* In a task's child after task_init: the channel a shim reaches the mover
 * by.  The fd task_init left (PSPAWN_SHIM_MOVER_FD); for a plugin whose
 * mover has a name instead (PSPAWN_SHIM_MOVER, before), a connection to
 * it, tried for up to 3 s while its queue is full, as its shim would. */
int mover_channel(void)
{
    const char *fd = env_get("PSPAWN_SHIM_MOVER_FD");
    if (fd)
        return atoi(fd);
    const char *name = env_get("PSPAWN_SHIM_MOVER");
    struct sockaddr_un a;
    int alen = name ? pspawn_abstract_addr(&a, name) : -1;
    for (int waited = 0; alen > 0 && waited < 3000; waited += 5) {
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        if (connect(s, (struct sockaddr *)&a, (socklen_t)alen) == 0) {
            fcntl(s, F_SETFL, 0);
            return s;
        }
        int e = errno;
        close(s);
        if (e != EAGAIN)
            return -1;
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Ask on channel FD for PID to be moved with TOKEN; *R gets the answer
 * (err -1: none). */
void ask(int fd, pid_t pid, const char *token, struct mover_result *r)
{
    struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, (int32_t)pid, { 0 } };
    snprintf(q.token, sizeof q.token, "%s", token);
    struct pspawn_mover_reply rep;
    struct pollfd p = { fd, POLLIN, 0 };
    r->err = r->moved = -1;
    /* A refusal may come before our send, which then fails: read it. */
    if (fd >= 0 &&
        (send(fd, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q || errno == EPIPE ||
         errno == ECONNRESET) &&
        poll(&p, 1, 5000) == 1 && recv(fd, &rep, sizeof rep, 0) == (ssize_t)sizeof rep) {
        r->err = rep.err;
        r->moved = rep.moved;
    }
}

/* Play a shim: the next task's child, made as slurmstepd makes it,
 * running as UID, asks the mover to move TASK (0: its own child, running
 * as UID too) with TOKEN.  With SHIM_CG and TASK_CG, the shim and its
 * task start in those cgroups. */
struct mover_result ask_mover(struct spank_handle *sp, uid_t uid, const char *token,
                                     pid_t task, const char *shim_cg, const char *task_cg)
{
    struct mover_result res = { -1, -1, "" };
    int rp[2];
    if (pipe(rp) < 0)
        return res;
    int trc = -1;
    pid_t shim = fork_task(sp, next_task_id++, &trc);
    if (shim == 0) {
        close(rp[0]);
        if (geteuid() != 0 && seteuid(0) < 0)
            _exit(1);
        if (shim_cg)
            join_cgroup(shim_cg, getpid());
        int hold[2], ready[2];
        if (trc != 0 || pipe(hold) < 0 || pipe(ready) < 0)
            _exit(1);
        pid_t t = fork();
        if (t == 0) {
            close(hold[1]);
            close(ready[0]);
            if (task_cg)
                join_cgroup(task_cg, getpid());
            uid_t e = task_euid >= 0 ? (uid_t)task_euid : uid;
            if (setresgid(uid, uid, uid) < 0 || setresuid(uid, e, e) < 0)
                _exit(1);
            close(ready[1]);
            char c;
            (void)!read(hold[0], &c, 1);     /* until the shim is done */
            _exit(0);
        }
        close(hold[0]);
        close(ready[1]);
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        char c;
        (void)!read(ready[0], &c, 1);   /* the task has joined its cgroup and changed its uid */
        struct mover_result r = { -1, -1, "" };
        ask(mover_channel(), task ? task : t, token, &r);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)t);
        read_text(path, r.cgroup, sizeof r.cgroup);
        (void)!write(rp[1], &r, sizeof r);
        close(hold[1]);
        waitpid(t, NULL, 0);
        fflush(stdout);
        _exit(0);
    }
    close(rp[1]);
    int dropped = stepd_euid_dropped && seteuid(uid) == 0;
    if (shim < 0 || read(rp[0], &res, sizeof res) != (ssize_t)sizeof res)
        res.err = -1;
    if (dropped && seteuid(0) < 0)
        printf("# seteuid(0): %s\n", strerror(errno));
    close(rp[0]);
    if (shim > 0)
        waitpid(shim, NULL, 0);
    return res;
}

/* Where to make test cgroups: v1's cpuset hierarchy, or v2's. */
const char *cgroup_base(char *cpus, char *mems)
{
    struct statfs st;
    cpus[0] = mems[0] = '\0';
    if (statfs("/sys/fs/cgroup/cpuset", &st) == 0 && st.f_type == CGROUP_SUPER_MAGIC) {
        if (read_text("/sys/fs/cgroup/cpuset/cpuset.cpus", cpus, 256) == 0 &&
            read_text("/sys/fs/cgroup/cpuset/cpuset.mems", mems, 256) == 0)
            return "/sys/fs/cgroup/cpuset";
        return NULL;
    }
    if (statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
        return "/sys/fs/cgroup";
    return NULL;
}

/* A process of the user's forked by this fake slurmstepd (so one the
 * mover may move), in cgroup CG, until killed. */
/* A process of the user's forked by this fake slurmstepd (so one the
 * mover may move), in cgroup CG, until killed. */
pid_t step_process(uid_t user, const char *cg)
{
    return paused_child(user, cg);
}

void end_process(pid_t p)
{
    paused_end(p);
}

int cgroup_has(pid_t pid, const char *dir_suffix)
{
    char path[64], cg[1024], want[PATH_MAX + 8];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    snprintf(want, sizeof want, "%s\n", dir_suffix);
    return read_text(path, cg, sizeof cg) == 0 && strstr(cg, want) != NULL;
}

/* The abstract names listening now whose name holds KEY, space-separated. */
void names_with(const char *key, char *out, size_t len)
{
    char *text = malloc(1 << 20);
    out[0] = '\0';
    if (!text || read_text("/proc/net/unix", text, 1 << 20) < 0) {
        free(text);
        return;
    }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *at = strchr(line, '@');
        if (at && strstr(at, key) && strlen(out) + strlen(at) + 2 < len)
            snprintf(out + strlen(out), len - strlen(out), "%s ", at + 1);
    }
    free(text);
}

/* One flooder: as another user, connects to each of NAMES (space
 * separated) as fast as it can, keeping up to 100 connections open,
 * until STOP is closed; says 'f' on READY once it has flooded a while.
 * Its connects block while a queue is full, so that the kernel gives it
 * each place that frees, before a caller that polls. */
void __attribute__((noreturn)) flooder(const char *names, int stop, int ready)
{
    if (setresgid(65533, 65533, 65533) < 0 || setresuid(65533, 65533, 65533) < 0)
        _exit(1);
    char list[4400], *name[64];
    int nn = 0;
    snprintf(list, sizeof list, "%s", names);
    for (char *save = NULL, *w = strtok_r(list, " ", &save); w && nn < 64;
         w = strtok_r(NULL, " ", &save))
        name[nn++] = w;
    static int held[100];
    int n = 0, told = 0;
    fcntl(stop, F_SETFL, O_NONBLOCK);
    for (long rounds = 0;; rounds++) {
        char c;
        if (read(stop, &c, 1) == 0)
            break;
        for (int i = 0; i < nn; i++) {
            struct sockaddr_un addr;
            int alen = pspawn_abstract_addr(&addr, name[i]);
            int s = alen > 0 ? socket(AF_UNIX, SOCK_SEQPACKET, 0) : -1;
            struct timeval tv = { 0, 100 * 1000 };
            setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            if (s >= 0 && connect(s, (struct sockaddr *)&addr, (socklen_t)alen) == 0) {
                held[n++] = s;
            } else if (s >= 0) {
                close(s);
            }
            if (n == 100) {
                while (n > 0)
                    close(held[--n]);
            }
        }
        if (!told && rounds > 200) {
            (void)!write(ready, "f", 1);
            told = 1;
        }
    }
    _exit(0);
}
