/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The root mover's tests, in tests/integration/spank-plugin's fake slurmstepd
 * (test-plugin.h): a step's mover, started by the plugin's user_init, is
 * asked by played shims to move their tasks, rightly and wrongly.  Run
 * as root only (the mover takes back slurmstepd's saved uid 0).
 */
#include "config.h"

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
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pspawn_cgroup.h"
#include "spank-plugin.h"
#include "unixsock.h"

/* The plugin's open() is this one (exported with -export-dynamic), so
 * that a test can end the process whose pid the mover is about to write
 * into a cgroup.procs and give that pid to another process (through
 * ns_last_pid): the race of a pid reused between the mover's checks and
 * its write, made certain. */
static struct {
    pid_t victim;       /* armed: at the next cgroup.procs, end it */
    pid_t successor;    /* the process that got its pid, or 0 */
    uid_t uid;          /* the successor's */
} reuse;

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
        char last[32];
        snprintf(last, sizeof last, "%d", (int)v - 1);
        for (int tries = 0; tries < 50 && !reuse.successor; tries++) {
            int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/ns_last_pid", O_WRONLY);
            if (fd < 0 || write(fd, last, strlen(last)) < 0) {
                if (fd >= 0)
                    close(fd);
                break;
            }
            close(fd);
            pid_t p = fork();
            if (p == 0) {
                /* The step's user, like the victim: a process the mover
                 * would move, if it looked at the number alone. */
                syscall(SYS_setresgid, reuse.uid, reuse.uid, reuse.uid);
                syscall(SYS_setresuid, reuse.uid, reuse.uid, reuse.uid);
                for (;;)
                    pause();
            }
            if (p == v) {
                reuse.successor = p;
            } else if (p > 0) {
                kill(p, SIGKILL);
                waitpid(p, NULL, 0);
            }
        }
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

const char *fail_bind_suffix;

/* The plugin's bind() is this one too: a mover whose name is taken. */
int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)addr;
    size_t off = offsetof(struct sockaddr_un, sun_path);
    if (fail_bind_suffix && addr->sa_family == AF_UNIX && len > off + 1 && !un->sun_path[0]) {
        size_t n = len - off - 1, k = strlen(fail_bind_suffix);
        if (n >= k && memcmp(un->sun_path + 1 + n - k, fail_bind_suffix, k) == 0) {
            errno = EADDRINUSE;
            return -1;
        }
    }
    return (int)syscall(SYS_bind, fd, addr, len);
}

/* The euid ask_mover's task runs with (-1: the user's, as every uid). */
static int task_euid = -1;

struct mover_result {
    int err, moved;
    char cgroup[512];           /* the task's /proc/PID/cgroup afterwards */
};

static int join_cgroup(const char *dir, pid_t pid)
{
    char path[PATH_MAX + 32], buf[32];  /* dir is at most PATH_MAX + 8 */
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    return write_file(path, buf);
}

/* Play a shim: a child of ours running as UID asks the mover NAME to move
 * TASK (0: its own child, running as UID too) with TOKEN.  With SHIM_CG
 * and TASK_CG, the shim and its task start in those cgroups. */
static struct mover_result ask_mover(const char *name, uid_t uid, const char *token, pid_t task,
                                     const char *shim_cg, const char *task_cg)
{
    struct mover_result res = { -1, -1, "" };
    int rp[2];
    if (pipe(rp) < 0)
        return res;
    pid_t shim = fork();
    if (shim == 0) {
        close(rp[0]);
        if (geteuid() != 0 && seteuid(0) < 0)
            _exit(1);
        if (shim_cg)
            join_cgroup(shim_cg, getpid());
        int hold[2], ready[2];
        if (pipe(hold) < 0 || pipe(ready) < 0)
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
        struct sockaddr_un a;
        int alen = pspawn_abstract_addr(&a, name);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        struct pspawn_mover_req q = { PSPAWN_MOVER_MAGIC, task ? task : t, { 0 } };
        snprintf(q.token, sizeof q.token, "%s", token);
        struct pspawn_mover_reply rep;
        /* A refusal may come before our send, which then fails: read it. */
        if (alen > 0 && connect(fd, (struct sockaddr *)&a, (socklen_t)alen) == 0 &&
            (send(fd, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q || errno == EPIPE ||
             errno == ECONNRESET) &&
            recv(fd, &rep, sizeof rep, 0) == (ssize_t)sizeof rep) {
            r.err = rep.err;
            r.moved = rep.moved;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)t);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(r.cgroup, 1, sizeof r.cgroup - 1, f) : 0;
        r.cgroup[got] = '\0';
        if (f)
            fclose(f);
        (void)!write(rp[1], &r, sizeof r);
        close(hold[1]);
        waitpid(t, NULL, 0);
        _exit(0);
    }
    close(rp[1]);
    if (read(rp[0], &res, sizeof res) != (ssize_t)sizeof res)
        res.err = -1;
    close(rp[0]);
    waitpid(shim, NULL, 0);
    return res;
}

/* Play a stalled shim: a child of ours (PID) running as UID connects to
 * the mover NAME, says 'c' on HEAR once connected, and sends nothing until
 * told (a byte on TELL); it then says on HEAR whether any reply had come
 * meanwhile (1: none had) and exits. */
struct staller {
    pid_t pid;
    int tell, hear;
};

static struct staller stall_mover(const char *name, uid_t uid)
{
    struct staller st = { -1, -1, -1 };
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        return st;
    st.pid = fork();
    if (st.pid == 0) {
        close(to[1]);
        close(from[0]);
        char verdict = 0, c;
        struct sockaddr_un a;
        int alen = pspawn_abstract_addr(&a, name);
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        verdict = alen > 0 && connect(fd, (struct sockaddr *)&a, (socklen_t)alen) == 0 ? 'c' : 'x';
        (void)!write(from[1], &verdict, 1);        /* connected */
        (void)!read(to[0], &c, 1);
        struct pollfd p = { fd, POLLIN, 0 };
        verdict = poll(&p, 1, 0) == 0 ? 1 : 0;
        (void)!write(from[1], &verdict, 1);
        _exit(0);
    }
    close(to[0]);
    close(from[1]);
    st.tell = to[1];
    st.hear = from[0];
    return st;
}

/* Where to make test cgroups: v1's cpuset hierarchy, or v2's. */
static const char *cgroup_base(char *cpus, char *mems)
{
    struct statfs st;
    cpus[0] = mems[0] = '\0';
    if (statfs("/sys/fs/cgroup/cpuset", &st) == 0 && st.f_type == CGROUP_SUPER_MAGIC) {
        FILE *f = fopen("/sys/fs/cgroup/cpuset/cpuset.cpus", "r");
        if (f && fgets(cpus, 256, f)) {
            fclose(f);
            f = fopen("/sys/fs/cgroup/cpuset/cpuset.mems", "r");
            if (f && fgets(mems, 256, f)) {
                fclose(f);
                return "/sys/fs/cgroup/cpuset";
            }
        }
        if (f)
            fclose(f);
        return NULL;
    }
    if (statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
        return "/sys/fs/cgroup";
    return NULL;
}

/* The task ends, and its pid goes to another process of the user's, just
 * before the mover writes it into the shim's cgroup a: the mover must see
 * that the pid it wrote is no longer its task's. */
static void test_mover_pid_reuse(const char *name, uid_t user, const char *token, const char *a,
                                 const char *b)
{
    int hold[2], ready[2];
    if (pipe(hold) < 0 || pipe(ready) < 0)
        return;
    fflush(stdout);
    pid_t victim = fork();
    if (victim == 0) {
        close(hold[1]);
        close(ready[0]);
        join_cgroup(b, getpid());
        if (setresgid(user, user, user) < 0 || setresuid(user, user, user) < 0)
            _exit(1);
        close(ready[1]);
        char c;
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(hold[0]);
    close(ready[1]);
    char c;
    (void)!read(ready[0], &c, 1);   /* in b, as the user */
    close(ready[0]);
    reuse.successor = 0;
    reuse.uid = user;
    reuse.victim = victim;
    struct mover_result r = ask_mover(name, user, token, victim, a, NULL);
    reuse.victim = 0;
    close(hold[1]);
    if (!reuse.successor) {
        printf("# the pid of an ended task could not be given to another process here "
               "(ns_last_pid): the race is not played\n");
        shared_tap_skip("no pid reuse through ns_last_pid",
                        "a task's pid reused just before the mover's write: ESRCH");
    } else {
        shared_tap_ok(r.err == ESRCH,
                      "a task's pid reused by another process just before the mover writes it: "
                      "the mover sees its task gone and answers ESRCH, not a move (err %d, "
                      "moved %d)", r.err, r.moved);
        kill(reuse.successor, SIGKILL);
        waitpid(reuse.successor, NULL, 0);
    }
    waitpid(victim, NULL, WNOHANG);
}

/* The step's init and user_init, as root with the mover's user; 0 when set up. */
static int start_mover_step(struct spank_handle *sp, uid_t user)
{
    char *av[] = { "shim=" SHIM };
    host.context = S_CTX_REMOTE;
    host.uid = user;
    host.jobid = 43;
    host.stepid = 0;
    host.local_tasks = 2;
    host.fail_setenv = NULL;
    env_clear();
    host.argc = 1;
    host.argv[0] = "app";
    host.argv[1] = NULL;
    if (load() < 0 || p_init(sp, 1, av) != 0 || !host.option ||
        host.option->cb(host.option->val, NULL, 1) != 0 || p_user_init(sp, 0, NULL) != 0)
        return -1;
    return 0;
}

/* One task's task_init sets the shim's variables. */
static int run_one_task_init(struct spank_handle *sp)
{
    char *app = host.argv[0];
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    host.task_argc = 1;
    host.task_argv[0] = strdup(app);
    host.task_argv[1] = NULL;
#endif
    sp->in_task = 1;
    int trc = p_task_init(sp, 0, NULL);
    sp->in_task = 0;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    for (int i = 0; host.task_argv[i]; i++)
        free(host.task_argv[i]);
#else
    if (host.argv[0] != app)
        free(host.argv[0]);
#endif
    return trc;
}

static void case_mover_refusals(const char *name, uid_t user, const char *token)
{
    struct mover_result r = ask_mover(name, user, token, 0, NULL, NULL);
    shared_tap_ok(r.err == 0 && r.moved == 0,
                  "a shim whose task is in its own cgroups already: nothing moved "
                  "(err %d, moved %d)", r.err, r.moved);
    r = ask_mover(name, user, "0123456789abcdef0123456789abcdef", 0, NULL, NULL);
    shared_tap_ok(r.err == EPERM, "a wrong token is refused with EPERM (err %d)", r.err);
    r = ask_mover(name, user, token, 1, NULL, NULL);
    shared_tap_ok(r.err == ESRCH,
                  "moving a process that is not the step's (pid 1) is refused with ESRCH "
                  "(err %d)", r.err);
    r = ask_mover(name, 0, token, 0, NULL, NULL);
    shared_tap_ok(r.err == EPERM, "a shim of another uid (root) is refused (err %d)", r.err);
    task_euid = 0;
    r = ask_mover(name, user, token, 0, NULL, NULL);
    task_euid = -1;
    shared_tap_ok(r.err == ESRCH,
                  "a task whose real uid is the user's but not its effective one (a "
                  "set-uid program's) is not the shim's to move: ESRCH (err %d)", r.err);
}

/* A shim that connects and stalls (suspended, say) holds up nobody:
 * the next one is answered while it still waits for its reply. */
static void case_mover_stalled_shim(const char *name, uid_t user, const char *token)
{
    struct staller st = stall_mover(name, user);
    char c = 0, none = 0;
    int connected = st.pid > 0 && read(st.hear, &c, 1) == 1 && c == 'c';
    struct mover_result r = ask_mover(name, user, token, 0, NULL, NULL);
    if (st.pid > 0) {
        (void)!write(st.tell, "", 1);
        if (read(st.hear, &none, 1) != 1)
            none = 0;
        waitpid(st.pid, NULL, 0);
        close(st.tell);
        close(st.hear);
    }
    shared_tap_ok(connected && r.err == 0 && none == 1,
                  "a shim that connected and stalls does not hold up the next: it is answered "
                  "(err %d) while the first still has no reply (%s)", r.err,
                  !connected ? "no stalled connection" : none ? "none" : "it had one");
}

/* In cgroups a and b made under dir: the shim in a, its task in b. */
static void case_mover_moves(const char *name, uid_t user, const char *token, const char *a,
                             const char *b)
{
    /* slurmstepd may have dropped its effective uid to the user's, in
     * every thread, when the request comes: the mover takes root back. */
    int dropped = seteuid(user) == 0;
    struct mover_result r = ask_mover(name, user, token, 0, a, b);
    if (dropped && seteuid(0) < 0)
        printf("# seteuid(0): %s\n", strerror(errno));
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, ":/pspawn-test-%d/a\n", (int)getpid());
    shared_tap_ok(r.err == 0 && r.moved == 1 && strstr(r.cgroup, want),
                  "with slurmstepd's euid dropped, the task is moved from b into its shim's "
                  "cgroup a (err %d, moved %d, %s)", r.err, r.moved,
                  strstr(r.cgroup, "pspawn-test") ? strstr(r.cgroup, "pspawn-test") : "?");
    test_mover_pid_reuse(name, user, token, a, b);
}

/* A real move: the shim in cgroup a, its task in b. */
static void case_mover_real_move(const char *name, uid_t user, const char *token)
{
    char cpus[256], mems[256], dir[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8];
    const char *base = cgroup_base(cpus, mems);
    snprintf(dir, sizeof dir, "%s/pspawn-test-%d", base ? base : "", (int)getpid());
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    if (!base || mkdir(dir, 0755) < 0 || mkdir(a, 0755) < 0 || mkdir(b, 0755) < 0) {
        printf("# no writable cgroup hierarchy here (%s): the real move is not tested\n",
               base ? strerror(errno) : "neither v1 cpuset nor v2");
        return;
    }
    char f[PATH_MAX + 32];
    const char *subdirs[] = { dir, a, b };
    for (int i = 0; cpus[0] && i < 3; i++) {
        snprintf(f, sizeof f, "%s/cpuset.cpus", subdirs[i]);
        write_file(f, cpus);
        snprintf(f, sizeof f, "%s/cpuset.mems", subdirs[i]);
        write_file(f, mems);
    }
    case_mover_moves(name, user, token, a, b);
    rmdir(a);
    rmdir(b);
    rmdir(dir);
}

void test_mover(void)
{
    const uid_t user = 65534;
    struct spank_handle sp = { 0 };
    if (start_mover_step(&sp, user) < 0) {
        shared_tap_ok(0, "mover: step set up");
        return;
    }
    int trc = run_one_task_init(&sp);
    shared_tap_ok(trc == 0, "mover: task_init");
    const char *name = env_get("PSPAWN_SHIM_MOVER");
    const char *token = env_get("PSPAWN_SHIM_TOKEN");
    shared_tap_ok(name && token && strncmp(name, "pspawn-65534.43.0.", 18) == 0 &&
                      strlen(name) == 18 + 16 + 6 && strcmp(name + 18 + 16, ".mover") == 0,
                  "mover: named for the step (%s)", name ? name : "none");
    if (name && token) {
        case_mover_refusals(name, user, token);
        case_mover_stalled_shim(name, user, token);
        case_mover_real_move(name, user, token);
    }
    shared_tap_ok(p_exit(&sp, 0, NULL) == 0, "exit stops the mover");
    struct mover_result gone = ask_mover(name ? name : "x", user, token ? token : "", 0, NULL, NULL);
    shared_tap_ok(gone.err == -1, "after exit nobody listens on the mover's name");
    env_clear();
    unload();
}
