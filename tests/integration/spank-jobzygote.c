/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP: the root side of reuse=job (spank/pspawn_jobzygote.c, the job's
 * zygote manager and its clean-up; spank/pspawn_jobstart.c, the starter),
 * called as slurmstepd calls them, as root, against the moves a hostile
 * local user can make:
 *  - the pid of a zygote's listener reused by another user's process, when
 *    the job ends and when a zygote is evicted: that process must live;
 *  - a decoy "job_N/step_extern" cgroup made elsewhere (a delegated
 *    subtree), holding a process started first: the starter must join
 *    Slurm's extern step, found from slurmstepd's own cgroup, whatever the
 *    job's folder is named (job_N, or Slurm 26.05's SLUID);
 *  - slurmstepd's fds, open without close-on-exec, and the step's
 *    RLIMIT_NOFILE just above the lowest free fd: the user's starter gets
 *    only 0-2 and its lock.
 * The cgroups are made in a cgroup v2 hierarchy with no controllers (the
 * host's, or one mounted for the test), as Slurm's cgroup/v2 lays them
 * out.  This program is also the fake pspawn-shim the starter execs
 * (argv[1] "--job-zygote"): it writes what it got to $REPORT.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "pspawn_jobzygote.h"
#include "unixsock.h"
#include "../fixtures/paused.h"
#include "../fixtures/tap.h"

#define USER_A 65534    /* the job's user */
#define USER_B 65533    /* another user */

static char base[PATH_MAX];     /* our folder in the v2 hierarchy (mounted) */
static char rel[PATH_MAX];      /* the same, as /proc/PID/cgroup names it */
static char home_cg[PATH_MAX];  /* where this process was, to go back to */
static char self_exe[PATH_MAX];
static char report[PATH_MAX + 16];

/* As the fake shim: what the starter left us, into $REPORT (the fds are
 * listed before anything of ours is opened but the listing's own). */
static int fake_shim(void)
{
    char fds[1024] = "fds";
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            snprintf(fds + strlen(fds), sizeof fds - strlen(fds), " %s", e->d_name);
    if (d)
        closedir(d);
    FILE *f = fopen(getenv("REPORT") ? getenv("REPORT") : "/dev/null", "w");
    if (!f)
        return 1;
    fprintf(f, "%s\nlock %s\nuid %d\n", fds,
            getenv("PSPAWN_SHIM_LOCK_FD") ? getenv("PSPAWN_SHIM_LOCK_FD") : "-", (int)getuid());
    FILE *cg = fopen("/proc/self/cgroup", "r");
    char line[PATH_MAX + 64];
    while (cg && fgets(line, sizeof line, cg))
        if (strncmp(line, "0::", 3) == 0)
            fprintf(f, "cg %s", line + 3);
    if (cg)
        fclose(cg);
    fclose(f);
    return 0;
}

static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

/* Move PID into the folder REL_PATH under our base. */
static int join(const char *rel_path, pid_t pid)
{
    char path[PATH_MAX * 3], buf[32];
    snprintf(path, sizeof path, "%s%s/cgroup.procs", base, rel_path);
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    return write_text(path, buf);
}

static void mkdirs(const char *rel_path)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s%s", base, rel_path);
    for (char *p = path + strlen(base) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    mkdir(path, 0755);
}

/* A cgroup v2 hierarchy: the host's where mounted, else one mounted here
 * in a mount namespace of our own.  0 with BASE and REL set. */
static int set_up_v2(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[4096], point[PATH_MAX] = "";
    while (f && fgets(line, sizeof line, f)) {
        char mp[PATH_MAX];
        const char *dash = strstr(line, " - cgroup2 ");
        if (dash && sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1) {
            snprintf(point, sizeof point, "%s", mp);
            break;
        }
    }
    if (f)
        fclose(f);
    if (!point[0]) {
        snprintf(point, sizeof point, "/tmp/pspawn-cg2-%d", (int)getpid());
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mkdir(point, 0755) < 0 || mount("none", point, "cgroup2", 0, NULL) < 0)
            return -1;
    }
    f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(home_cg, sizeof home_cg, "%s", line + 3);
        }
    if (f)
        fclose(f);
    snprintf(rel, sizeof rel, "/pspawn-jobtest-%d", (int)getpid());
    snprintf(base, sizeof base, "%s%s", point, rel);
    /* the mount's root is the hierarchy's ("/" in its mountinfo line) */
    return mkdir(base, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char sub[PATH_MAX * 2];
        struct stat st;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (e->d_name[0] != '.' && lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(sub);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

/* A process of UID in folder CG (under base; NULL: ours), pausing until
 * killed. */
static pid_t sleeper(uid_t uid, const char *cg)
{
    char dir[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s%s", base, cg ? cg : "");
    return paused_child(uid, cg ? dir : NULL);
}

#define end paused_end

static int alive(pid_t p)
{
    return p > 0 && waitpid(p, NULL, WNOHANG) == 0;
}

/* UID binds the abstract NAME in folder CG, hands the socket to a child
 * that keeps it (its pid in *HOLDER), and exits; its pid, reaped. */
static pid_t listener_gone(uid_t uid, const char *name, const char *cg, pid_t *holder)
{
    int out[2];
    if (pipe(out) < 0)
        return -1;
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        close(out[0]);
        join(cg, getpid());
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        int l = pspawn_listen_abstract(name, 8);
        pid_t h = l >= 0 ? fork() : -1;
        if (h == 0) {
            for (;;)
                pause();
        }
        (void)!write(out[1], &h, sizeof h);
        _exit(0);
    }
    close(out[1]);
    *holder = -1;
    if (read(out[0], holder, sizeof *holder) != (ssize_t)sizeof *holder)
        *holder = -1;
    close(out[0]);
    waitpid(p, NULL, 0);
    return p;
}

/* Another process (of UID) takes pid WANT, now free: through ns_last_pid. */
static pid_t take_pid(pid_t want, uid_t uid)
{
    char last[32];
    snprintf(last, sizeof last, "%d", (int)want - 1);
    for (int tries = 0; tries < 50; tries++) {
        if (write_text("/proc/sys/kernel/ns_last_pid", last) < 0)
            return 0;
        pid_t p = sleeper(uid, NULL);
        if (p == want)
            return p;
        end(p);
    }
    return 0;
}


/* ---- the cases ---- */

static uint32_t jobid;
static char shimdir[PATH_MAX];  /* where the fake shim (the user) may write */

/* A job's folders as Slurm's cgroup/v2 makes them, under base:
 * slurmstepd.scope/JOB/{step_0,step_extern}/{slurm,user/task_*}. */
static void make_job(const char *job)
{
    const char *leaves[] = { "step_0/slurm", "step_0/user/task_0", "step_extern/slurm",
                             "step_extern/user/task_special" };
    char p[PATH_MAX];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "/slurmstepd.scope/%s/%s", job, leaves[i]);
        mkdirs(p);
    }
}

/* This process as the slurmstepd of STEP of JOB: what the plugin reads
 * of its own cgroup. */
static void be_stepd(const char *job, const char *step)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/slurmstepd.scope/%s/%s/slurm", job, step);
    join(p, getpid());
}

static void extern_leaf(const char *job, char *p, size_t len)
{
    snprintf(p, len, "/slurmstepd.scope/%s/step_extern/user/task_special", job);
}

/* The job's state as the manager keeps it: the entry z.HASH names KEY. */
static void state_entry(const char *hash, const char *key)
{
    char p[PATH_MAX];
    mkdir("/run/pspawn", 0711);
    snprintf(p, sizeof p, "/run/pspawn/job_%u", jobid);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "/run/pspawn/job_%u/z.%s", jobid, hash);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%s\n", key);
        fclose(f);
    }
}

static void key_for(char *key, size_t len, const char *hash)
{
    snprintf(key, len, "job.%u.%u.0123456789abcdef.%s", (unsigned)USER_A, jobid, hash);
}

/* Root as slurmstepd of JOB's STEP, with a state entry for NONCE whose
 * listener (user A's, in the extern step LEAF) is gone, its socket held
 * by *HOLDER and its pid taken by a process of user B's: that process,
 * or 0 where no pid could be placed. */
static pid_t listener_pid_reused(const char *job, const char *step, const char *nonce,
                                 char *leaf, size_t leaflen, pid_t *holder)
{
    char key[160], name[170];
    extern_leaf(job, leaf, leaflen);
    be_stepd(job, step);
    key_for(key, sizeof key, nonce);
    snprintf(name, sizeof name, "pspawn-%s", key);
    state_entry(nonce, key);
    return take_pid(listener_gone(USER_A, name, leaf, holder), USER_B);
}

/* Defect: root signalled the pid its connect's SO_PEERCRED gave, the
 * listener's at listen(), which may be gone and reused. */
static void case_job_end_pid_reused(const char *job)
{
    char leaf[PATH_MAX];
    pid_t holder;
    pid_t other = listener_pid_reused(job, "step_extern", "00000000000000ab", leaf, sizeof leaf,
                                      &holder);
    /* and a zygote of the job, alive in its extern step */
    char key2[160], name2[170];
    key_for(key2, sizeof key2, "00000000000000cd");
    snprintf(name2, sizeof name2, "pspawn-%s", key2);
    state_entry("00000000000000cd", key2);
    int ready[2];
    pid_t zygote = -1;
    if (pipe(ready) == 0 && (zygote = fork()) == 0) {
        join(leaf, getpid());
        if (setresgid(USER_A, USER_A, USER_A) < 0 || setresuid(USER_A, USER_A, USER_A) < 0 ||
            pspawn_listen_abstract(name2, 8) < 0)
            _exit(1);
        (void)!write(ready[1], "l", 1);
        for (;;)
            pause();
    }
    char c;
    int listening = zygote > 0 && read(ready[0], &c, 1) == 1;
    pspawn_job_end(jobid);
    if (!other)
        tap_skip("no pid reuse through ns_last_pid", "job end: a listener's pid reused by another user");
    else
        tap_ok(alive(other), "job end: user B's process that took the pid of user A's gone "
                             "zygote listener lives (its name still held by A's child)");
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    for (int i = 0; i < 40 && alive(zygote); i++)
        nanosleep(&ts, NULL);
    tap_ok(listening && !alive(zygote), "job end: the job's zygote in its extern step is killed");
    struct stat st;
    char dir[64];
    snprintf(dir, sizeof dir, "/run/pspawn/job_%u", jobid);
    tap_ok(lstat(dir, &st) < 0, "job end: the job's state is removed");
    end(other);
    end(zygote);
    end(holder);
}

/* The same at eviction (zygotes=1): a step of a new program makes room. */
static void case_evict_pid_reused(const char *job)
{
    char leaf[PATH_MAX];
    pid_t holder;
    pid_t other = listener_pid_reused(job, "step_0", "00000000000000ef", leaf, sizeof leaf,
                                      &holder);
    char *argv[] = { "/bin/true", NULL }, *env[] = { "PATH=/usr/bin:/bin", NULL };
    struct pspawn_job_step s = { .uid = USER_A, .gid = USER_A, .jobid = jobid, .argc = 1,
                                 .argv = argv, .env = env, .options = "", .max_zygotes = 1,
                                 .idle_s = 60, .shim = "/nonexistent",
                                 .job_extern = pspawn_job_extern() };
    char k[160], t[64], what[320];
    pspawn_job_zygote(&s, k, sizeof k, t, sizeof t, what, sizeof what);
    free((char *)s.job_extern);
    if (!other)
        tap_skip("no pid reuse through ns_last_pid", "eviction: a listener's pid reused by another user");
    else
        tap_ok(alive(other), "eviction (zygotes=1): user B's process that took the pid of user "
                             "A's gone zygote listener lives (%s)", what);
    end(other);
    end(holder);
    pspawn_job_end(jobid);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;   /* the starter of the new program's zygote */
}

/* What the fake shim reported, within 5 s: 0 with REP filled. */
static int read_report(char *rep, size_t len)
{
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    for (int i = 0; i < 250; i++) {
        FILE *f = fopen(report, "r");
        size_t n = f ? fread(rep, 1, len - 1, f) : 0;
        if (f)
            fclose(f);
        rep[n] = '\0';
        if (strstr(rep, "\nuid ")) {
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;   /* the starter, which was the shim */
            return 0;
        }
        nanosleep(&ts, NULL);
    }
    return -1;
}

static char made[PATH_MAX];     /* the folder the last start made */

/* Start a zygote of the job as the manager does (the fake shim reports);
 * 0 with the report in REP. */
static int start(const char *job, const char *rlimit_nofile, char *rep, size_t len, char *why)
{
    char *argv[] = { "/bin/true", NULL };
    char nofile[64], rvar[PATH_MAX + 32];
    snprintf(nofile, sizeof nofile, "SLURM_RLIMIT_NOFILE=%s", rlimit_nofile ? rlimit_nofile : "");
    snprintf(rvar, sizeof rvar, "REPORT=%s", report);
    char *env[] = { "PATH=/usr/bin:/bin", rvar, rlimit_nofile ? nofile : NULL, NULL };
    struct pspawn_job_step s = { .uid = USER_A, .gid = USER_A, .jobid = jobid, .argc = 1,
                                 .argv = argv, .env = env, .options = "", .max_zygotes = 4,
                                 .idle_s = 60, .shim = self_exe };
    char key[160];
    key_for(key, sizeof key, "0000000000000012");
    be_stepd(job, "step_0");
    /* as the plugin finds it, from slurmstepd's own cgroups */
    char *job_extern = pspawn_job_extern();
    s.job_extern = job_extern;
    unlink(report);
    int rc = pspawn_job_start(&s, key, "0123456789abcdef0123456789abcdef", made, sizeof made,
                              why, 320);
    free(job_extern);
    return rc < 0 ? -1 : read_report(rep, len);
}

/* Defect: the extern step was any cgroup whose path held
 * "/job_N/step_extern"; a user with a delegated subtree could make one. */
static void case_decoy_extern(const char *job)
{
    char decoy[PATH_MAX], leaf[PATH_MAX], rep[4096], why[320] = "";
    snprintf(decoy, sizeof decoy, "/user/%s/step_extern", job);
    mkdirs(decoy);
    extern_leaf(job, leaf, sizeof leaf);
    pid_t d = sleeper(USER_B, decoy);       /* first: the lower pid */
    pid_t e = sleeper(USER_A, leaf);        /* the extern step's own */
    int rc = start(job, NULL, rep, sizeof rep, why);
    char want[PATH_MAX * 3];
    snprintf(want, sizeof want, "\ncg %s%s\n", rel, leaf);
    tap_ok(rc == 0 && strstr(rep, want) && strstr(rep, "\nuid 65534\n"),
           "the job's zygote starts in Slurm's extern step (%s), not in the decoy %s that a "
           "process of another user holds, started first (%s)", job, decoy,
           rc ? why : strstr(rep, "\ncg ") ? strstr(rep, "\ncg ") + 1 : rep);
    end(d);
    end(e);
}

/* Defect: the step's RLIMIT_NOFILE was applied before the starter marked
 * slurmstepd's fds close-on-exec, and a scrub that could not open
 * /proc/self/fd left them all open for the user's shim. */
static void case_fd_scrub(const char *job)
{
    char leaf[PATH_MAX], rep[4096], why[320];
    extern_leaf(job, leaf, sizeof leaf);
    pid_t e = sleeper(USER_A, leaf);
    int leak = open("/dev/null", O_RDONLY);     /* slurmstepd's, without O_CLOEXEC */
    int low = dup(0);
    close(low);
    int started = 0, clean = 0;
    char seen[512] = "";
    for (int extra = 1; extra <= 6; extra++) {
        char limit[16];
        snprintf(limit, sizeof limit, "%d", low + extra);
        if (start(job, limit, rep, sizeof rep, why) < 0)
            continue;       /* too low to bind the lock: nothing ran */
        started++;
        const char *fds = strstr(rep, "fds"), *lock = strstr(rep, "\nlock ");
        char want[64];
        snprintf(want, sizeof want, "fds 0 1 2 %d\n", lock ? atoi(lock + 6) : -1);
        if (fds && strncmp(fds, want, strlen(want)) == 0)
            clean++;
        else
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "[limit %s: %.*s] ", limit,
                     (int)strcspn(fds ? fds : "?", "\n"), fds ? fds : "?");
    }
    tap_ok(started > 0 && clean == started,
           "with an fd of slurmstepd's open without close-on-exec (%d) and RLIMIT_NOFILE just "
           "above the lowest free fd, the user's shim gets only 0-2 and its lock (%d of %d "
           "starts clean) %s", leak, clean, started, seen);
    close(leak);
    end(e);
}

/* Slurm 26.05 runs no process in the extern step (earlier ones ran
 * `sleep` there), and makes no user/task_special in it: the zygote starts
 * in a task_special of its own making, and the job's end kills what is
 * in it and removes it, so that Slurm can remove the job's folder. */
static void case_no_extern_process(const char *job)
{
    const char *leaves[] = { "step_0/slurm", "step_0/user/task_0", "step_extern/slurm" };
    char p[PATH_MAX], leaf[PATH_MAX], rep[4096], why[320] = "";
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "/slurmstepd.scope/%s/%s", job, leaves[i]);
        mkdirs(p);
    }
    extern_leaf(job, leaf, sizeof leaf);
    int rc = start(job, NULL, rep, sizeof rep, why);
    char want[PATH_MAX * 3], user[PATH_MAX * 2];
    snprintf(want, sizeof want, "\ncg %s%s\n", rel, leaf);
    snprintf(user, sizeof user, "%s/slurmstepd.scope/%s/step_extern/user", base, job);
    tap_ok(rc == 0 && strstr(rep, want) && strcmp(made, user) == 0,
           "no process in the extern step (Slurm 26.05): the job's zygote starts in "
           "step_extern/user/task_special, made for it (%s; made %s)",
           rc ? why : strstr(rep, "\ncg ") ? strstr(rep, "\ncg ") + 1 : rep, made);
    /* The job's end, as the manager keeps MADE in the job's state. */
    pid_t z = sleeper(USER_A, leaf);
    state_entry("00000000000000ef", "job.0.0.0.0");
    snprintf(p, sizeof p, "/run/pspawn/job_%u/made", jobid);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(made, f);
        fclose(f);
    }
    pspawn_job_end(jobid);
    struct stat st;
    int gone = lstat(user, &st) < 0;
    tap_ok(!alive(z) && gone,
           "the job's end kills what is in the folder it made (%s) and removes it (%s)",
           alive(z) ? "alive" : "killed", gone ? "removed" : "still there");
    end(z);
}

/* The job's end kills its zygotes and returns; their names go when they
 * have exited, which under ASan (a large address space to tear down) has
 * been seen to come after the next case's start tried to bind them: wait
 * (5 s at most) until no abstract name of the job is left. */
static void wait_job_names_gone(void)
{
    char mark[64];
    snprintf(mark, sizeof mark, ".%u.%u.", (unsigned)USER_A, jobid);
    for (int waited = 0; waited < 5000; waited += 10) {
        char *unix_socks = pspawn_read_file("/proc/net/unix");
        int held = unix_socks && strstr(unix_socks, mark);
        free(unix_socks);
        if (!held)
            return;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    tap_diag("names of job %u still bound 5 s after its end", jobid);
}

/* FROM copied to TO, mode 0755: 0, or -1 with errno. */
static int copy_program(const char *from, const char *to)
{
    char buf[65536];
    ssize_t n = 0;
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    int err = in < 0 || out < 0 || n < 0 ? errno : 0;
    if (in >= 0)
        close(in);
    if (out >= 0 && (close(out) < 0 || fchmodat(AT_FDCWD, to, 0755, 0) < 0) && !err)
        err = errno;
    errno = err;
    return err ? -1 : 0;
}

static void run_cases(void)
{
    jobid = 900000 + (uint32_t)getpid() % 90000;
    char job[32], sluid[] = "sEKNKTV3WPV500";
    snprintf(job, sizeof job, "job_%u", jobid);
    make_job(job);
    make_job(sluid);
    snprintf(shimdir, sizeof shimdir, "/tmp/pspawn-jobtest-%d", (int)getpid());
    mkdir(shimdir, 0777);
    chmod(shimdir, 0777);
    snprintf(report, sizeof report, "%s/report", shimdir);
    /* The fake shim runs as the job's user: a copy it can read, whatever
     * the build tree's permissions (a 0700 home, mktemp -d). */
    char copy[sizeof self_exe];
    snprintf(copy, sizeof copy, "%.*s/fake-shim", (int)sizeof copy - 16, shimdir);
    if (copy_program(self_exe, copy) == 0)
        memcpy(self_exe, copy, sizeof copy);
    else
        tap_diag("cannot copy %s to %s: %s (the job's user may not reach it)", self_exe, copy,
                 strerror(errno));
    case_job_end_pid_reused(job);
    case_evict_pid_reused(job);
    case_decoy_extern(job);
    case_decoy_extern(sluid);
    case_fd_scrub(job);
    pspawn_job_end(jobid);
    wait_job_names_gone();
    case_no_extern_process("sNOEXTERNPROC0");
    be_stepd(job, "step_0");
    unlink(report);
    unlink(copy);
    rmdir(shimdir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--job-zygote") == 0)
        return fake_shim();
    if (geteuid() != 0) {
        tap_skip("not root", "the job zygote manager runs as root in slurmstepd");
        tap_done();
        return 0;
    }
    /* Orphans (a listener's holder, a starter) come back to us, to be
     * reaped here: none is left a zombie whose cgroup could be taken for
     * a process of the job's. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    self_exe[n > 0 ? n : 0] = '\0';
    if (set_up_v2() < 0) {
        tap_skip(strerror(errno), "no cgroup v2 hierarchy could be had here");
        tap_done();
        return 0;
    }
    run_cases();
    /* Back where we were, and our folders gone. */
    char path[PATH_MAX * 3], buf[32];
    snprintf(path, sizeof path, "%s/../%s/cgroup.procs", base, home_cg[0] == '/' ? home_cg + 1 : home_cg);
    snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    write_text(path, buf);
    remove_tree(base);
    tap_done();
    return tap_failed ? 1 : 0;
}
