/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse=job: the zygotes that serve every step of a job on a node
 * (slurmstepd's side, as root; the clean-up at the job's end).
 *
 * Where they live: in the job's extern step (PrologFlags=Contain), which
 * root set up and which lasts as long as the job.  A zygote started in a
 * step's cgroups would be killed at the step's end, and its memory stay
 * charged to the step; in the extern step it and its memory are charged
 * to the job, and proctrack kills it with the extern step when the job
 * ends (the extern step's slurm_spank_exit removes what is left).  Each task, forked there
 * and held, is moved by its step's mover into its own task cgroups before
 * its first instruction, as for a step's zygote.
 *
 * When it starts: in the step's user_init, as soon as the program is
 * known, so that its exec overlaps the rest of Slurm's step setup (the
 * tasks' fork, TaskProlog, the shims' exec).  The stand-ins never start
 * a job's zygote: where it is not there (it failed, ended, or was
 * evicted), they exec their tasks.
 *
 * Which steps share one: those of the same user and job on the node whose
 * program (path, device, inode, mtime), loader variables, libpspawn options
 * (and for a Python interpreter, its script and start-up variables) are
 * the same.  The names embed the job's secret nonce, kept with the job's
 * token in /run/pspawn/job_ID (root's, 0700): no other user or job can
 * guess them.  At most K zygotes per job and node: a new program's evicts
 * the one used least recently, which finishes its running tasks first.
 *
 * slurmstepd runs user_init with the user's effective ids and several
 * threads, so the work is done in a forked child that takes root back
 * for itself and answers through a pipe; the zygote's starter is forked
 * from that child, dropped to the user's credentials, and exec's
 * `pspawn-shim --job-zygote`.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "hash.h"
#include "identity.h"
#include "pin.h"
#include "procfs.h"
#include "pspawn_jobzygote.h"
#include "worth.h"
#include "unixsock.h"

#define STATE_DIR "/run/pspawn"
#define ANSWER_MS 10000     /* the manager's answer to user_init */

/* A manager's answer: "ok KEY TOKEN" or "no WHY". */
struct answer {
    char text[512];
};

static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...)
{
    struct answer a;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a.text, sizeof a.text, fmt, ap);
    va_end(ap);
    if (write(fd, a.text, strlen(a.text)) < 0) {
        /* user_init gave up on us: nothing to tell */
    }
}

static void hex(char *out, const unsigned char *raw, size_t n)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* The identity of the step's program and what a zygote of it keeps from
 * its exec, as a hash: steps with the same one share a zygote. */
static int identity(const struct pspawn_job_step *s, const char *path, uint64_t *h, char *why,
                    size_t wlen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(why, wlen, "%.200s: %s", path, strerror(errno));
        return -1;
    }
    *h = pspawn_program_identity(s->uid, path, &st, s->argc > 1 ? s->argv : NULL, s->env,
                                 s->options);
    /* A Python zygote warms the script its identity names (argv[1]):
     * named relative, it is another file from another directory, and the
     * zygote starts in the step's (pspawn_jobstart.c): steps run from
     * another directory get another zygote. */
    const char *pwd = pspawn_step_pwd(s->env);
    if (pwd && s->argc > 1 && s->argv[1][0] != '/' && pspawn_python_program(path))
        pspawn_hash(h, pwd, strlen(pwd) + 1);
    return 0;
}

/* The job's directory, root's and 0700, made if need be; its fd, locked
 * (within 5 s), or -1. */
static int lock_job_dir(uint32_t jobid, char *dir, size_t len)
{
    struct stat st;
    if (mkdir(STATE_DIR, 0711) < 0 && errno != EEXIST)
        return -1;
    if (lstat(STATE_DIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
        return -1;
    snprintf(dir, len, STATE_DIR "/job_%u", jobid);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    for (int waited = 0; fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 10) {
        if (errno != EWOULDBLOCK || waited >= 5000) {
            close(fd);
            return -1;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return fd;
}

/* The job's nonce and token (made by its first step here). */
static int job_secret(int dirfd, char *nonce, char *token)
{
    char buf[128];
    int fd = openat(dirfd, "secret", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        return pspawn_job_secret_parse(buf, nonce, token);
    }
    unsigned char raw[24];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    hex(nonce, raw, 8);
    hex(token, raw + 8, 16);
    fd = openat(dirfd, "secret", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int len = snprintf(buf, sizeof buf, "%s %s\n", nonce, token);
    int ok = write(fd, buf, (size_t)len) == len;
    close(fd);
    return ok ? 0 : -1;
}

/* Whether the zygote named pspawn-KEY (or its start, KEY's lock) is there,
 * as UID's. */
static int zygote_alive(const char *key, uid_t uid)
{
    char name[160];
    uid_t owner;
    snprintf(name, sizeof name, "pspawn-%s", key);
    if (pspawn_abstract_owner(name, &owner) == 0 && owner == uid)
        return 1;
    snprintf(name, sizeof name, "pspawn-%s.lock", key);
    return pspawn_abstract_owner(name, &owner) == 0 && owner == uid;
}

char *pspawn_job_extern(void)
{
    char *self = pspawn_read_file("/proc/self/cgroup");
    size_t len = self ? strlen(self) + 16 * PSPAWN_CG_MAX + 1 : 0;
    char *out = self ? malloc(len) : NULL;
    int n = out ? pspawn_cg_job_extern(self, out, len) : -1;
    free(self);
    if (n <= 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Whether every uid of P's process (real, effective, saved, file system)
 * is UID. */
static int runs_as(const struct pspawn_pin *p, uid_t uid)
{
    char *status = pspawn_pin_read(p, "status");
    const char *u = status ? strstr(status, "\nUid:") : NULL;
    unsigned long r, e, sv, f;
    int yes = u && sscanf(u, "\nUid: %lu %lu %lu %lu", &r, &e, &sv, &f) == 4 && r == uid &&
              e == uid && sv == uid && f == uid;
    free(status);
    return yes;
}

/* UID's zygote listening as pspawn-KEY, pinned into *Z: the very process
 * that listens (SO_PEERPIDFD), not whatever took its pid since, and
 * checked while pinned: UID's, in the job's extern step JOB_EXTERN.  0,
 * or -1 (nothing of the job's to act on). */
static int zygote_pin(const char *key, uid_t uid, const char *job_extern, struct pspawn_pin *z)
{
    char name[160];
    struct ucred cred;
    snprintf(name, sizeof name, "pspawn-%s", key);
    *z = PSPAWN_PIN_NONE;
    int fd = job_extern ? pspawn_connect_abstract(name, uid) : -1;
    int ok = fd >= 0 && pspawn_pin_peer(z, fd, &cred) == 0 && cred.uid == uid;
    if (fd >= 0)
        close(fd);
    char *cg = ok ? pspawn_pin_read(z, "cgroup") : NULL;
    ok = ok && cg && pspawn_cg_within(cg, job_extern) && runs_as(z, uid);
    free(cg);
    if (!ok)
        pspawn_pin_close(z);
    return ok ? 0 : -1;
}

/* Signal UID's zygote KEY of the job (pinned and checked first). */
static void signal_zygote(const char *key, uid_t uid, const char *job_extern, int sig)
{
    struct pspawn_pin z;
    if (zygote_pin(key, uid, job_extern, &z) == 0) {
        pspawn_pin_signal(&z, sig);
        pspawn_pin_close(&z);
    }
}

/* Read the key an entry holds, and the user it names. */
static int entry_key(int dirfd, const char *entry, char *key, size_t len, uid_t *uid)
{
    char text[256];
    int fd = openat(dirfd, entry, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = 0;
    return pspawn_job_entry_parse(text, key, len, uid);
}

/* Drop the entries of zygotes that are gone; while K or more are left,
 * tell the one used least recently to finish its tasks and end. */
static void make_room(int dirfd, uid_t uid, int max, const char *job_extern)
{
    for (;;) {
        DIR *d = fdopendir(dup(dirfd));
        if (!d)
            return;
        rewinddir(d);
        struct dirent *e;
        char oldest[sizeof e->d_name] = "";
        struct timespec t_old = { 0, 0 };
        int alive = 0;
        while ((e = readdir(d))) {
            char key[160];
            struct stat st;
            uid_t owner;
            if (strncmp(e->d_name, "z.", 2) != 0 ||
                entry_key(dirfd, e->d_name, key, sizeof key, &owner) < 0 || owner != uid ||
                fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            if (!zygote_alive(key, uid)) {
                unlinkat(dirfd, e->d_name, 0);
                continue;
            }
            alive++;
            if (!oldest[0] || st.st_mtim.tv_sec < t_old.tv_sec ||
                (st.st_mtim.tv_sec == t_old.tv_sec && st.st_mtim.tv_nsec < t_old.tv_nsec)) {
                snprintf(oldest, sizeof oldest, "%s", e->d_name);
                t_old = st.st_mtim;
            }
        }
        closedir(d);
        if (alive < max || !oldest[0])
            return;
        char key[160];
        uid_t owner;
        if (entry_key(dirfd, oldest, key, sizeof key, &owner) == 0 && owner == uid)
            signal_zygote(key, uid, job_extern, SIGTERM);  /* it drains, then ends */
        unlinkat(dirfd, oldest, 0);
    }
}


/* The job's extern step, kept in the job's state for its end: the extern
 * step's slurmstepd may have left its own cgroups by then. */
static void keep_extern(int dirfd, const char *job_extern)
{
    int fd = job_extern ? openat(dirfd, "extern", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
                                                      O_NOFOLLOW, 0600) : -1;
    if (fd >= 0) {
        if (write(fd, job_extern, strlen(job_extern)) < 0) {
            /* the job's end then relies on its own cgroups */
        }
        close(fd);
    }
}

/* The manager, in a child of slurmstepd: find or start the step's job
 * zygote; answer on FD. */
static void __attribute__((noreturn)) manage(const struct pspawn_job_step *s, int fd)
{
    /* Root again, for this process alone (its real and saved ids are). */
    if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0 ||
        setgroups(0, NULL) < 0) {
        reply(fd, "no cannot take root back: %s", strerror(errno));
        _exit(1);
    }
    char path[PATH_MAX], why[300], dir[64], nonce[17], token[33], key[160], entry[24];
    uint64_t h;
    if (pspawn_step_program(s->argv[0], s->env, 0, path, sizeof path, why, sizeof why) < 0 ||
        identity(s, path, &h, why, sizeof why) < 0) {
        reply(fd, "no %s", why);
        _exit(1);
    }
    int dirfd = lock_job_dir(s->jobid, dir, sizeof dir);
    if (dirfd < 0 || job_secret(dirfd, nonce, token) < 0) {
        reply(fd, "no %s: %s", dir, dirfd < 0 ? "cannot make or lock it" : "no secret");
        _exit(1);
    }
    snprintf(key, sizeof key, "job.%u.%u.%s.%016llx", (unsigned)s->uid, s->jobid, nonce,
             (unsigned long long)h);
    snprintf(entry, sizeof entry, "z.%016llx", (unsigned long long)h);
    if (zygote_alive(key, s->uid)) {
        utimensat(dirfd, entry, NULL, AT_SYMLINK_NOFOLLOW);    /* used now */
        reply(fd, "ok %s %s reused", key, token);
        _exit(0);
    }
    unlinkat(dirfd, entry, 0);
    keep_extern(dirfd, s->job_extern);
    make_room(dirfd, s->uid, s->max_zygotes, s->job_extern);
    char made[PATH_MAX];
    if (pspawn_job_start(s, key, token, made, sizeof made, why, sizeof why) < 0) {
        reply(fd, "no %s", why);
        _exit(1);
    }
    int mfd = made[0] ? openat(dirfd, "made", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
                                                  O_NOFOLLOW, 0600) : -1;
    if (mfd >= 0) {
        dprintf(mfd, "%s", made);   /* the first; a later one is the same */
        close(mfd);
    }
    int efd = openat(dirfd, entry, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (efd >= 0) {
        dprintf(efd, "%s\n", key);
        close(efd);
    }
    reply(fd, "ok %s %s started", key, token);
    _exit(0);
}

static void job_end(uint32_t jobid);

int pspawn_job_zygote(const struct pspawn_job_step *s, char *key, size_t keylen, char *token,
                      size_t toklen, char *what, size_t wlen)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(what, wlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(what, wlen, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        manage(s, p[1]);
    }
    close(p[1]);
    struct answer a = { "" };
    struct pollfd pf = { p[0], POLLIN, 0 };
    ssize_t n = -1;
    if (poll(&pf, 1, ANSWER_MS) == 1)
        n = read(p[0], a.text, sizeof a.text - 1);
    close(p[0]);
    if (n <= 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    a.text[n > 0 ? n : 0] = 0;
    const char *why;
    if (n > 0 && pspawn_job_answer_parse(a.text, key, keylen, token, toklen, what, wlen, &why) == 0)
        return 0;
    snprintf(what, wlen, "%s", n <= 0 ? "no answer from the job's zygote manager" : why);
    return -1;
}

/* In a child that is root again (slurmstepd may run this with the user's
 * effective ids), within 5 s. */
void pspawn_job_end(uint32_t jobid)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (syscall(SYS_setresuid, -1, 0, -1) == 0 && syscall(SYS_setresgid, -1, 0, -1) == 0)
            job_end(jobid);
        _exit(0);
    }
    for (int waited = 0; pid > 0 && waitpid(pid, NULL, WNOHANG) == 0; waited += 10) {
        if (waited >= 5000) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* The cgroup folder MADE that a starter made in the extern step (Slurm
 * 26.05 on cgroup v2: user/task_special, pspawn_jobstart.c).  Slurm does
 * not remove a folder it did not make, nor then the job's: what is in it
 * (the job's zygotes and their keepers, no task) is killed, and once it
 * is empty (2 s at most) it goes. */
static void remove_made(const char *made)
{
    char f[PATH_MAX + 32];
    snprintf(f, sizeof f, "%s/cgroup.kill", made);
    int fd = open(f, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1", 1) != 1) {
        /* before Linux 5.14: each process, pinned */
        snprintf(f, sizeof f, "%s%s/cgroup.procs", made,
                 strcmp(strrchr(made, '/'), "/user") == 0 ? "/task_special" : "");
        char *procs = pspawn_read_file(f), *at = procs;
        while (at && *at) {
            struct pspawn_pin p;
            if (pspawn_pin_pid(&p, (pid_t)strtol(at, &at, 10)) == 0) {
                pspawn_pin_signal(&p, SIGKILL);
                pspawn_pin_close(&p);
            }
            at += strspn(at, "\n");
        }
        free(procs);
    }
    if (fd >= 0)
        close(fd);
    snprintf(f, sizeof f, "%s/cgroup.events", made);
    for (int waited = 0; waited < 2000; waited += 10) {
        char *events = pspawn_read_file(f);
        int empty = !events || strstr(events, "populated 0");
        free(events);
        if (empty)
            break;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    snprintf(f, sizeof f, "%s/task_special", made);
    rmdir(f);
    rmdir(made);
}

static void job_end(uint32_t jobid)
{
    char dir[64];
    snprintf(dir, sizeof dir, STATE_DIR "/job_%u", jobid);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dirfd < 0)
        return;
    /* The extern step: from our own cgroups (we are its slurmstepd), or as
     * the job's first manager kept it, root's file in root's directory. */
    char *job_extern = pspawn_job_extern(), kept[4096];
    int efd = job_extern ? -1 : openat(dirfd, "extern", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = efd >= 0 ? read(efd, kept, sizeof kept - 1) : -1;
    if (efd >= 0)
        close(efd);
    if (!job_extern && n > 0) {
        kept[n] = '\0';
        job_extern = strdup(kept);
    }
    DIR *d = fdopendir(dirfd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char key[160];
        uid_t uid;
        if (e->d_name[0] == '.')
            continue;
        if (strncmp(e->d_name, "z.", 2) == 0 &&
            entry_key(dirfd, e->d_name, key, sizeof key, &uid) == 0)
            signal_zygote(key, uid, job_extern, SIGKILL);  /* nothing to finish */
        if (strcmp(e->d_name, "made") == 0)
            continue;   /* last, below */
        unlinkat(dirfd, e->d_name, 0);
    }
    /* Root's file in root's directory, naming a folder in the job's
     * extern step. */
    char made[PATH_MAX];
    int mfd = d ? openat(dirfd, "made", O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    ssize_t ml = mfd >= 0 ? read(mfd, made, sizeof made - 1) : -1;
    if (mfd >= 0)
        close(mfd);
    if (ml > 0)
        made[ml] = '\0';
    if (ml > 0 && made[0] == '/' && !strstr(made, "/..")) {
        remove_made(made);
        unlinkat(dirfd, "made", 0);
    }
    if (d)
        closedir(d);
    free(job_extern);
    rmdir(dir);
}
