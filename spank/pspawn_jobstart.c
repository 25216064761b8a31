/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse=job: start a job's zygote (see pspawn_jobzygote.c).  Runs in the
 * job zygote manager, a single-threaded child of slurmstepd that is root
 * again.  The starter it forks joins the cgroups of the job's extern step,
 * leaves slurmstepd's session, drops to the user's groups and ids, binds
 * the zygote's lock name as the user (the stand-ins of the step wait on
 * it from their first instant), marks every fd of slurmstepd's but the
 * lock close-on-exec, takes the step's resource limits, and execs
 * `pspawn-shim --job-zygote`, which starts the zygote and exits once it
 * parked.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "pin.h"
#include "procfs.h"
#include "pspawn_jobzygote.h"
#include "unixsock.h"
#include "worth.h"

#define START_MS 5000       /* the starter's word that it holds the lock */

/* The cgroups of a process of the job's extern step (JOB_EXTERN) other
 * than its slurmstepd (the extern step's own task, or a zygote of the
 * job): the leaf cgroups the starter joins, as /proc/PID/cgroup text read
 * while that process was pinned (malloc'd).  NULL if there is none (no
 * PrologFlags=Contain). */
static char *extern_cgroups(const char *job_extern)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char *found = NULL;
    while (d && !found && (e = readdir(d))) {
        struct pspawn_pin p;
        if (!isdigit((unsigned char)e->d_name[0]) || pspawn_pin_pid(&p, atoi(e->d_name)) < 0)
            continue;
        char *cg = pspawn_pin_read(&p, "cgroup");
        char *comm = cg && pspawn_cg_within(cg, job_extern) ? pspawn_pin_read(&p, "comm") : NULL;
        if (comm && strncmp(comm, "slurmstepd", 10) != 0) {
            found = cg;
            cg = NULL;
        }
        free(comm);
        free(cg);
        pspawn_pin_close(&p);
    }
    if (d)
        closedir(d);
    return found;
}

/* Slurm 26.05's extern step runs no process of its own (earlier ones ran
 * `sleep` there): the starter then joins the leaves that Slurm gives a
 * process it adopts into the step (pam_slurm_adopt): the extern step's
 * folder itself in each cgroup v1 hierarchy, and its user/task_special
 * under cgroup v2, whose step folder holds no process of its own.  As
 * /proc/PID/cgroup text (malloc'd), from JOB_EXTERN's lines. */
static char *adopted_leaves(const char *job_extern)
{
    size_t len = strlen(job_extern) + 64, used = 0;
    char *out = malloc(len);
    const char *at = job_extern;
    while (out && *at) {
        const char *end = strchrnul(at, '\n');
        int v2 = strncmp(at, "0::/", 4) == 0;
        used += (size_t)snprintf(out + used, len - used, "%.*s%s\n", (int)(end - at), at,
                                 v2 ? "/user/task_special" : "");
        at = *end ? end + 1 : end;
    }
    return out;
}

/* Make the cgroup v2 leaf of PATHS (the cgroup.procs files the starter
 * writes) where Slurm has not made it yet: user/task_special, the name
 * Slurm gives it for the first process it adopts.  Slurm does not remove
 * what it did not make: the topmost folder made here goes into MADE
 * (MLEN bytes; "" if none), for the job's end (pspawn_jobzygote.c).  0,
 * or -1 with errno. */
static int make_adopted_leaf(char paths[][PATH_MAX], int n, char *made, size_t mlen)
{
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX];
        size_t l = strlen(paths[i]) - strlen("/cgroup.procs");
        if (l < sizeof "/task_special" ||
            strcmp(paths[i] + l - strlen("/task_special"), "/task_special/cgroup.procs") != 0)
            continue;
        snprintf(dir, sizeof dir, "%.*s", (int)l, paths[i]);
        char *user = strrchr(dir, '/');
        *user = '\0';      /* step_extern/user first, where Slurm has not made it */
        for (int leaf = 0; leaf < 2; leaf++) {
            if (leaf)
                *user = '/';
            if (mkdir(dir, 0755) < 0) {
                if (errno != EEXIST)
                    return -1;
            } else if (!*made) {
                snprintf(made, mlen, "%s", dir);
            }
        }
    }
    return 0;
}

#define OWN_VARS 5

/* The starter's environment: the step's, without any PSPAWN_SHIM_*, and
 * ours, whose strings go into MINE (the caller frees them and the array).
 * LOCK_VAR is filled in by the starter once it has the lock's fd. */
static char **starter_env(const struct pspawn_job_step *s, const char *key, const char *token,
                          char *lock_var, char *mine[OWN_VARS])
{
    size_t n = 0;
    while (s->env[n])
        n++;
    char **env = calloc(n + OWN_VARS + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(s->env[i], "PSPAWN_SHIM_", 12) != 0)
            env[k++] = s->env[i];
    if (asprintf(&mine[0], "PSPAWN_SHIM_KEY=%s", key) < 0 ||
        asprintf(&mine[1], "PSPAWN_SHIM_TOKEN=%s", token) < 0 ||
        asprintf(&mine[2], "PSPAWN_SHIM_OPTIONS=%s", s->options) < 0 ||
        asprintf(&mine[3], "PSPAWN_SHIM_IDLE_MS=%ld", (long)s->idle_s * 1000) < 0 ||
        asprintf(&mine[4], "PSPAWN_SHIM_DEBUG=%d", s->debug) < 0) {
        free(env);
        return NULL;
    }
    for (int i = 0; i < OWN_VARS; i++)
        env[k++] = mine[i];
    env[k++] = lock_var;
    env[k] = NULL;
    return env;
}

/* The step's resource limits, as slurmstepd gives them to each task: srun
 * propagates the user's soft limits in SLURM_RLIMIT_NAME=VALUE ("U" in
 * front: not to be propagated, PropagateResourceLimitsExcept).  The
 * zygote's constructors run under them as a task's would; each task then
 * gets its own from its request. */
static void step_rlimits(char *const env[])
{
    static const struct {
        const char *name;
        int resource;
    } limits[] = {
        { "CPU", RLIMIT_CPU }, { "FSIZE", RLIMIT_FSIZE }, { "DATA", RLIMIT_DATA },
        { "STACK", RLIMIT_STACK }, { "CORE", RLIMIT_CORE }, { "RSS", RLIMIT_RSS },
        { "NPROC", RLIMIT_NPROC }, { "NOFILE", RLIMIT_NOFILE },
        { "MEMLOCK", RLIMIT_MEMLOCK }, { "AS", RLIMIT_AS },
    };
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], "SLURM_RLIMIT_", 13) != 0)
            continue;
        const char *name = env[i] + 13, *eq = strchr(name, '=');
        if (!eq || eq[1] == 'U')
            continue;
        char *end;
        unsigned long long v = strtoull(eq + 1, &end, 10);
        for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
            struct rlimit rl;
            if (strlen(limits[k].name) != (size_t)(eq - name) ||
                strncmp(name, limits[k].name, (size_t)(eq - name)) != 0 || *end ||
                getrlimit(limits[k].resource, &rl) < 0)
                continue;
            rl.rlim_cur = v < rl.rlim_max ? (rlim_t)v : rl.rlim_max;
            setrlimit(limits[k].resource, &rl);
        }
    }
}

/* What the starter tells the manager: 0 (it holds the lock and execs), or
 * the step that failed and its errno. */
struct start_word {
    int step;
    int err;
};
enum { STARTED, NO_CGROUP, NO_CREDS, NO_LOCK, NO_SCRUB };

static void __attribute__((noreturn)) fail(int fd, int step)
{
    struct start_word w = { step, errno };
    if (write(fd, &w, sizeof w) < 0) {
        /* the manager gave up */
    }
    _exit(1);
}

#ifndef SYS_close_range
#define SYS_close_range 436     /* Linux 5.9, the same on every architecture */
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)   /* Linux 5.11 */
#endif

/* In the starter: every fd but 0-2 and KEEP closed at the exec, whatever
 * slurmstepd left open without close-on-exec.  Before 5.11, by the list
 * in /proc/self/fd (the step's RLIMIT_NOFILE is not applied yet, so that
 * opening it cannot fail for lack of an fd).  0, or -1: nothing was sure
 * to be marked, and the starter must not exec. */
static int cloexec_all_but(int keep)
{
    if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        if (!d)
            return -1;
        while ((e = readdir(d))) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d) &&
                fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
    }
    return fcntl(keep, F_SETFD, 0);
}

static void __attribute__((noreturn)) starter(const struct pspawn_job_step *s, char paths[][PATH_MAX],
                                              int npaths, const char *lock, char **argv,
                                              char **env, char *lock_var, int word)
{
    setsid();   /* out of slurmstepd's session: a step's end must not reach it */
    char pid[24];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    for (int i = 0; i < npaths; i++) {
        int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, pid, (size_t)len) != len)
            fail(word, NO_CGROUP);
        close(fd);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; null >= 0 && fd < 3; fd++)
        dup2(null, fd);
    if (setgroups((size_t)s->ngids, s->gids) < 0 || setresgid(s->gid, s->gid, s->gid) < 0 ||
        setresuid(s->uid, s->uid, s->uid) < 0 || getuid() != s->uid || geteuid() != s->uid)
        fail(word, NO_CREDS);
    /* Where the step's tasks run (each request has its own cwd; this is
     * the zygote's start's): a warm Python zygote finds a script named
     * relative to it there, with its directory (sys.path[0]) and its
     * cache; started in "/" it found neither, and every task was exec'd.
     * The zygote holds no directory once parked. */
    const char *pwd = pspawn_step_pwd(s->env);
    if ((!pwd || chdir(pwd) < 0) && chdir("/") < 0) {
        /* nowhere to be: the zygote starts where slurmstepd is */
    }
    int lfd = pspawn_listen_abstract(lock, SOMAXCONN);
    if (lfd < 0)
        fail(word, NO_LOCK);
    if (cloexec_all_but(lfd) < 0)
        fail(word, NO_SCRUB);
    /* The step's limits last: a low RLIMIT_NOFILE must not stop the scrub
     * above (nor the lock's socket). */
    step_rlimits(s->env);
    snprintf(lock_var, 40, "PSPAWN_SHIM_LOCK_FD=%d", lfd);
    struct start_word ok = { STARTED, 0 };
    if (write(word, &ok, sizeof ok) < 0) {
        /* the manager gave up: the lock goes at our exit */
        _exit(1);
    }
    execve(s->shim, argv, env);
    _exit(127);     /* the lock goes with us: the stand-ins exec their tasks */
}

int pspawn_job_start(const struct pspawn_job_step *s, const char *key, const char *token,
                     char *made, size_t mlen, char *why, size_t wlen)
{
    made[0] = '\0';
    if (!s->job_extern) {
        snprintf(why, wlen, "no extern step (PrologFlags=Contain?)");
        return -1;
    }
    char *to = extern_cgroups(s->job_extern);
    int adopted = !to;
    if (adopted)
        to = adopted_leaves(s->job_extern);
    char *from = pspawn_read_file("/proc/self/cgroup");
    char *mounts = pspawn_read_file("/proc/self/mountinfo");
    static char paths[PSPAWN_CG_MAX][PATH_MAX];
    int n = to && from && mounts ? pspawn_cg_moves(to, from, mounts, paths) : -1;
    free(to);
    free(from);
    free(mounts);
    if (n <= 0) {
        snprintf(why, wlen, "the job's extern step: %s", n < 0 ? "its cgroups cannot be read"
                                                               : "no cgroup of its own");
        return -1;
    }
    if (adopted && make_adopted_leaf(paths, n, made, mlen) < 0) {
        snprintf(why, wlen, "the job's extern step: its task_special: %s", strerror(errno));
        return -1;
    }
    static char lock_var[40] = "PSPAWN_SHIM_LOCK_FD=";
    char lock[180], *mine[OWN_VARS] = { NULL };
    snprintf(lock, sizeof lock, "pspawn-%s.lock", key);
    char **env = starter_env(s, key, token, lock_var, mine);
    char **argv = calloc((size_t)s->argc + 3, sizeof *argv);
    int p[2] = { -1, -1 };
    pid_t pid = -1;
    if (env && argv && pipe2(p, O_CLOEXEC) == 0) {
        argv[0] = (char *)s->shim;
        argv[1] = "--job-zygote";
        for (int i = 0; i < s->argc; i++)
            argv[i + 2] = s->argv[i];
        pid = fork();
        if (pid == 0) {
            close(p[0]);
            starter(s, paths, n, lock, argv, env, lock_var, p[1]);
        }
    }
    for (int i = 0; i < OWN_VARS; i++)
        free(mine[i]);
    free(env);
    free(argv);
    if (p[0] < 0) {
        snprintf(why, wlen, "%s", !env || !argv ? "no memory" : strerror(errno));
        return -1;
    }
    close(p[1]);
    struct start_word w = { -1, 0 };
    struct pollfd pf = { p[0], POLLIN, 0 };
    ssize_t got = pid > 0 && poll(&pf, 1, START_MS) == 1 ? read(p[0], &w, sizeof w) : -1;
    close(p[0]);
    if (pid > 0 && got != (ssize_t)sizeof w)
        kill(pid, SIGKILL);
    if (got == (ssize_t)sizeof w && w.step == STARTED)
        return 0;
    static const char *const steps[] = { "", "joining the extern step's cgroups",
                                         "dropping to the user's credentials",
                                         "binding the zygote's lock name",
                                         "marking slurmstepd's fds close-on-exec" };
    if (pid < 0)
        snprintf(why, wlen, "fork: %s", strerror(errno));
    else if (got != (ssize_t)sizeof w || w.step < 1 || w.step > NO_SCRUB)
        snprintf(why, wlen, "the starter said nothing within %d ms", START_MS);
    else
        snprintf(why, wlen, "the starter failed %s: %s", steps[w.step], strerror(w.err));
    return -1;
}
