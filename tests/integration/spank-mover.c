/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The root mover's tests, in tests/integration/spank-plugin's fake slurmstepd
 * (spank-plugin.h): a step's mover, started by the plugin's user_init, is
 * asked by played shims (task children made as slurmstepd makes them:
 * fork_task) to move their tasks, rightly and wrongly, with the pids
 * involved reused by other processes at the worst moments, and under a
 * flood of connections from another user.  Run as root only (the mover
 * takes back slurmstepd's saved uid 0).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pspawn_cgroup.h"
#include "worth.h"
#include "spank-mover.h"
#include "unixsock.h"

/* The task ends, and its pid goes to another process of the user's, just
 * before the mover writes it into the shim's cgroup a: the mover must see
 * that the pid it wrote is no longer its task's. */
static void test_mover_pid_reuse(struct spank_handle *sp, uid_t user, const char *token,
                                 const char *a, const char *b)
{
    pid_t victim = step_process(user, b);
    reuse.successor = 0;
    reuse.uid = user;
    reuse.victim = victim;
    struct mover_result r = ask_mover(sp, user, token, victim, a, NULL);
    reuse.victim = 0;
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
        end_process(reuse.successor);
    }
    waitpid(victim, NULL, WNOHANG);
}

/*
 * The shim's own pid reused: task TASK_ID's shim gets its channel to the
 * mover, hands it to a child and exits; a process outside the step (root,
 * in cgroup OUTSIDE) takes the shim's pid; the child then asks for
 * another process of the step's (in cgroup B) to be moved.  The mover
 * must refuse: the shim it serves is gone, and whatever took its number
 * is not it (its cgroups are no task's).
 */
static void case_mover_caller_pid_reused(struct spank_handle *sp, uid_t user,
                                         const char *token, const char *b, const char *outside,
                                         const char *how)
{
    pid_t target = step_process(user, b);
    int rp[2], go[2];
    if (pipe(rp) < 0 || pipe(go) < 0)
        return;
    int trc = -1;
    pid_t shim = fork_task(sp, next_task_id++, &trc);
    if (shim == 0) {
        close(rp[0]);
        close(go[1]);
        if (setresgid(user, user, user) < 0 || setresuid(user, user, user) < 0)
            _exit(1);
        int ch = trc == 0 ? mover_channel() : -1;
        /* Let a named mover take the connection while this shim is its
         * peer (it checks the peer at accept). */
        struct timespec ts = { 0, 200 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if (fork() == 0) {
            char c;
            (void)!read(go[0], &c, 1);  /* the shim's pid is another's now */
            struct mover_result r;
            ask(ch, target, token, &r);
            (void)!write(rp[1], &r, sizeof r);
            _exit(0);
        }
        _exit(0);
    }
    close(rp[1]);
    close(go[0]);
    if (shim > 0)
        waitpid(shim, NULL, 0);
    pid_t outsider = shim > 0 ? take_pid(shim, 0, outside) : 0;
    (void)!write(go[1], "g", 1);
    struct mover_result r = { -1, -1, "" };
    if (read(rp[0], &r, sizeof r) != (ssize_t)sizeof r)
        r.err = -1;
    close(rp[0]);
    close(go[1]);
    int escaped = cgroup_has(target, outside + strlen(outside) - 2);
    if (!outsider)
        shared_tap_skip("no pid reuse through ns_last_pid",
                        "%s: the shim's pid reused by a process outside the step: refused", how);
    else
        shared_tap_ok(r.err > 0 && !escaped,
                      "%s: a shim's channel kept by its child after the shim ended, its pid "
                      "reused by a process in another cgroup: the mover refuses (err %d, moved "
                      "%d) and the task stays in its step (%s)", how, r.err, r.moved,
                      escaped ? "moved out" : "stayed");
    end_process(outsider);
    end_process(target);
}

/* A shim that holds its channel and stalls (suspended, say) holds up
 * nobody: another is answered meanwhile. */
static void case_mover_stalled_shim(struct spank_handle *sp, uid_t user, const char *token)
{
    int hold[2], ready[2];
    if (pipe(hold) < 0 || pipe(ready) < 0)
        return;
    int trc = -1;
    pid_t stalled = fork_task(sp, next_task_id++, &trc);
    if (stalled == 0) {
        close(hold[1]);
        close(ready[0]);
        int ch = trc == 0 && setresgid(user, user, user) == 0 && setresuid(user, user, user) == 0
                     ? mover_channel() : -1;
        (void)!write(ready[1], ch >= 0 ? "c" : "x", 1);
        char c;
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(hold[0]);
    close(ready[1]);
    char c = 0;
    int held = stalled > 0 && read(ready[0], &c, 1) == 1 && c == 'c';
    struct mover_result r = ask_mover(sp, user, token, 0, NULL, NULL);
    close(hold[1]);
    close(ready[0]);
    if (stalled > 0)
        waitpid(stalled, NULL, 0);
    shared_tap_ok(held && r.err == 0,
                  "a shim that holds its channel to the mover and stalls does not hold up "
                  "another: it is answered (err %d)", r.err);
}

/*
 * Other users flood whatever abstract names the step has (and the name
 * a mover of the step would have): connections made as fast as they can
 * and kept, a hundred at a time each, by a dozen processes.  A shim's move must still be done;
 * with no public name there is nothing to flood.
 */
#define FLOODERS 12
static void case_mover_flood(struct spank_handle *sp, uid_t user, const char *token,
                             const char *key, const char *a, const char *b)
{
    char names[4096], all[4300];
    names_with(key, names, sizeof names);
    snprintf(all, sizeof all, "pspawn-%s.mover %s", key, names);
    int stop[2], ready[2];
    pid_t f[FLOODERS];
    if (pipe(stop) < 0 || pipe(ready) < 0)
        return;
    fflush(stdout);
    for (int i = 0; i < FLOODERS; i++)
        if ((f[i] = fork()) == 0) {
            close(stop[1]);
            close(ready[0]);
            flooder(all, stop[0], ready[1]);
        }
    close(stop[0]);
    close(ready[1]);
    char c;
    for (int i = 0; i < FLOODERS; i++)
        (void)!read(ready[0], &c, 1);   /* all flooding for a while */
    struct mover_result r = ask_mover(sp, user, token, 0, a, b);
    close(stop[1]);
    close(ready[0]);
    for (int i = 0; i < FLOODERS; i++)
        waitpid(f[i], NULL, 0);
    shared_tap_ok(r.err == 0 && r.moved == 1,
                  "other users flood the step's names (%s): the shim's task is still moved "
                  "(err %d, moved %d)", names[0] ? names : "none found", r.err, r.moved);
}

/* The step's init and user_init, as root with the mover's user; 0 when set up. */
/* A step of PROGRAM (NULL: "app") with the plugstack.conf argument SITE
 * (NULL: none) besides shim=. */
static int start_step_of(struct spank_handle *sp, uid_t user, uint32_t ntasks, const char *optarg,
                         const char *program, char *site)
{
    char *av[] = { "shim=" SHIM, site };
    host.context = S_CTX_REMOTE;
    host.uid = user;
    host.jobid = 43;
    host.stepid = 0;
    host.local_tasks = ntasks;
    host.fail_setenv = NULL;
    env_clear();
    host.argc = 1;
    host.argv[0] = (char *)(program ? program : "app");
    host.argv[1] = NULL;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
    host.task_argc = 1;
    host.task_argv[0] = host.argv[0];
    host.task_argv[1] = NULL;
#endif
    if (load() < 0 || p_init(sp, site ? 2 : 1, av) != 0 || !host.option ||
        host.option->cb(host.option->val, optarg, 1) != 0 || p_post_opt(sp, 0, NULL) != 0 ||
        p_user_init(sp, 0, NULL) != 0)
        return -1;
    return 0;
}

static int start_mover_step(struct spank_handle *sp, uid_t user, uint32_t ntasks,
                            const char *optarg)
{
    return start_step_of(sp, user, ntasks, optarg, NULL, NULL);
}

static void case_mover_refusals(struct spank_handle *sp, uid_t user, const char *token)
{
    struct mover_result r = ask_mover(sp, user, token, 0, NULL, NULL);
    shared_tap_ok(r.err == 0 && r.moved == 0,
                  "a shim whose task is in its own cgroups already: nothing moved "
                  "(err %d, moved %d)", r.err, r.moved);
    r = ask_mover(sp, user, "0123456789abcdef0123456789abcdef", 0, NULL, NULL);
    shared_tap_ok(r.err == EPERM, "a wrong token is refused with EPERM (err %d)", r.err);
    r = ask_mover(sp, user, token, 1, NULL, NULL);
    shared_tap_ok(r.err == ESRCH,
                  "moving a process that is not the step's (pid 1) is refused with ESRCH "
                  "(err %d)", r.err);
    task_euid = 0;
    r = ask_mover(sp, user, token, 0, NULL, NULL);
    task_euid = -1;
    shared_tap_ok(r.err == ESRCH,
                  "a task whose real uid is the user's but not its effective one (a "
                  "set-uid program's) is not the shim's to move: ESRCH (err %d)", r.err);
}

/* In cgroups a and b made under dir: the shim in a, its task in b. */
static void case_mover_moves(struct spank_handle *sp, uid_t user, const char *token,
                             const char *a, const char *b)
{
    /* slurmstepd may have dropped its effective uid to the user's, in
     * every thread, when the request comes: the mover takes root back. */
    stepd_euid_dropped = 1;
    struct mover_result r = ask_mover(sp, user, token, 0, a, b);
    stepd_euid_dropped = 0;
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, ":/pspawn-test-%d/a\n", (int)getpid());
    shared_tap_ok(r.err == 0 && r.moved == 1 && strstr(r.cgroup, want),
                  "with slurmstepd's euid dropped, the task is moved from b into its shim's "
                  "cgroup a (err %d, moved %d, %.*s)", r.err, r.moved,
                  (int)strcspn(strstr(r.cgroup, "pspawn-test") ? strstr(r.cgroup, "pspawn-test") : "?", "\n"),
                  strstr(r.cgroup, "pspawn-test") ? strstr(r.cgroup, "pspawn-test") : "?");
    no_pidfd = 1;
    r = ask_mover(sp, user, token, 0, a, b);
    no_pidfd = 0;
    shared_tap_ok(r.err == 0 && r.moved == 1 && strstr(r.cgroup, want),
                  "without pidfds (before Linux 5.3: pid and start time), the same move "
                  "(err %d, moved %d)", r.err, r.moved);
}

/* Cgroups a, b and c (the last: no task's) under DIR; 0 if made. */
static int make_cgroups(char *dir, char (*abc)[PATH_MAX + 8])
{
    char cpus[256], mems[256];
    const char *base = cgroup_base(cpus, mems);
    snprintf(dir, PATH_MAX, "%s/pspawn-test-%d", base ? base : "", (int)getpid());
    if (!base || mkdir(dir, 0755) < 0) {
        printf("# no writable cgroup hierarchy here (%s): real moves are not tested\n",
               base ? strerror(errno) : "neither v1 cpuset nor v2");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(abc[i], PATH_MAX + 8, "%s/%c", dir, 'a' + i);
        if (mkdir(abc[i], 0755) < 0)
            return -1;
    }
    char f[PATH_MAX + 32];
    const char *all[] = { dir, abc[0], abc[1], abc[2] };
    for (int i = 0; cpus[0] && i < 4; i++) {
        snprintf(f, sizeof f, "%s/cpuset.cpus", all[i]);
        write_file(f, cpus);
        snprintf(f, sizeof f, "%s/cpuset.mems", all[i]);
        write_file(f, mems);
    }
    return 0;
}

/* Real moves, between cgroups made for the test. */
static void case_mover_real_moves(struct spank_handle *sp, uid_t user, const char *token,
                                  const char *key)
{
    char dir[PATH_MAX], abc[3][PATH_MAX + 8];
    if (make_cgroups(dir, abc) < 0)
        return;
    case_mover_moves(sp, user, token, abc[0], abc[1]);
    test_mover_pid_reuse(sp, user, token, abc[0], abc[1]);
    case_mover_caller_pid_reused(sp, user, token, abc[1], abc[2], "pidfd");
    no_pidfd = 1;
    case_mover_caller_pid_reused(sp, user, token, abc[1], abc[2],
                                 "without pidfds (pid and start time)");
    no_pidfd = 0;
    case_mover_flood(sp, user, token, key, abc[0], abc[1]);
    for (int i = 2; i >= 0; i--)
        rmdir(abc[i]);
    rmdir(dir);
}

/* Task ID's child, made as slurmstepd makes it, plays a shim that reports
 * on its channel: FORKED (by a zygote that started at START_MS) or exec'd
 * for WHY, with the step's token (after one with another token:
 * BOGUS_FIRST; twice: TWICE), and, VERBOSE, reads the answer into LINE
 * (its size LEN). */
static void play_report(struct spank_handle *sp, int id, int bogus_first, int forked,
                        long long start_ms, const char *why, int twice, int verbose, char *line,
                        size_t len)
{
    int rp[2], trc = -1;
    if (pipe(rp) < 0)
        return;
    pid_t t = fork_task(sp, id, &trc);
    if (t == 0) {
        close(rp[0]);
        struct pspawn_mover_report r = { PSPAWN_REPORT_MAGIC, forked, forked ? PSPAWN_ZYGOTE_NEW : 0,
                                         verbose, start_ms, forked ? 7 : 0, 0, { 0 }, { 0 } };
        int fd = mover_channel();
        if (bogus_first) {
            snprintf(r.token, sizeof r.token, "0123456789abcdef0123456789abcdef");
            (void)!send(fd, &r, sizeof r, MSG_NOSIGNAL);
        }
        /* The step's, as task_init gave it to this child. */
        snprintf(r.token, sizeof r.token, "%s", env_get("PSPAWN_SHIM_TOKEN") ?: "");
        snprintf(r.why, sizeof r.why, "%s", why ? why : "");
        struct pspawn_mover_line l = { 0, "" };
        struct pollfd p = { fd, POLLIN, 0 };
        for (int i = 0; i < 1 + twice; i++)
            (void)!send(fd, &r, sizeof r, MSG_NOSIGNAL);
        if (verbose && poll(&p, 1, 5000) == 1)
            (void)!recv(fd, &l, sizeof l, 0);
        l.line[sizeof l.line - 1] = '\0';
        (void)!write(rp[1], l.line, strlen(l.line) + 1);
        _exit(trc == 0 ? 0 : 1);
    }
    close(rp[1]);
    ssize_t n = t > 0 ? read(rp[0], line, len - 1) : -1;
    line[n > 0 ? n : 0] = '\0';
    close(rp[0]);
    if (t > 0)
        waitpid(t, NULL, 0);
}

/* The step's line (tally.h): each task's report counted once (a second
 * one, and one with another token, are not), the last verbose shim gets
 * the node's line, and exit logs it at info level. */
static void case_mover_tally(uid_t user)
{
    struct spank_handle sp = { 0 };
    char line[512], early[512], bogus[512];
    next_task_id = 0;
    if (start_mover_step(&sp, user, 3, "on,verbose") < 0) {
        shared_tap_ok(0, "mover: a 3-task step set up");
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long ms = (long long)now.tv_sec * 1000;
    play_report(&sp, 0, 0, 1, ms, NULL, 1, 1, early, sizeof early);
    play_report(&sp, 1, 1, 1, ms + 1500, NULL, 0, 1, bogus, sizeof bogus);
    play_report(&sp, 2, 0, 0, 0, "static program", 0, 1, line, sizeof line);
    shared_tap_ok(early[0] == '\0' && bogus[0] == '\0' &&
                  strstr(line, "pspawn: node=") == line &&
                  strstr(line, " step=43.0 tasks=3 forked=2 exec=1 unknown=0 zygote=new ") &&
                  strstr(line, " why=\"static program (1)\""),
                  "mover: one report per task counted (not a second one, nor another token's); "
                  "only the last verbose shim gets the line: %s", line);
    size_t log0 = strlen(host.log);
    shared_tap_ok(p_exit(&sp, 0, NULL) == 0 && line[0] && strstr(host.log + log0, line),
                  "exit logs the same line");
    env_clear();
    unload();
}

/* One step of PROGRAM with --pspawn=OPTARG (and the plugstack.conf
 * argument SITE): whether user_init sent its tasks through the shim, its
 * two tasks' shims reporting forked by zygotes that held 7 objects. */
static int auto_step(uid_t user, const char *program, const char *optarg, char *site)
{
    struct spank_handle sp = { 0 };
    char line[512];
    next_task_id = 0;
    host.log[0] = '\0';
    if (start_step_of(&sp, user, 2, optarg, program, site) < 0)
        return -1;
    int through = strstr(host.log, "task(s) through") != NULL;
    if (through) {
        play_report(&sp, 0, 0, 1, 0, NULL, 0, 0, line, sizeof line);
        play_report(&sp, 1, 0, 1, 0, NULL, 0, 0, line, sizeof line);
    }
    p_exit(&sp, 0, NULL);
    env_clear();
    unload();
    return through;
}

/* default=auto learns what a program's zygotes held from its first
 * step's shims, and execs its later steps when that is fewer objects
 * than auto_objects=; an explicit --pspawn is obeyed all the same. */
static void case_auto_learns(uid_t user)
{
    char program[] = "/tmp/spank-auto.XXXXXX";
    int fd = mkstemp(program);
    FILE *f = fopen("/bin/true", "rb");
    char buf[65536];
    size_t n;
    while (fd >= 0 && f && (n = fread(buf, 1, sizeof buf, f)) > 0)
        (void)!write(fd, buf, n);
    if (f)
        fclose(f);
    if (fd >= 0)
        close(fd);
    chmod(program, 0755);
    char debug[] = "debug=1", lower[] = "auto_objects=5";
    shared_tap_ok(auto_step(user, program, "auto", debug) == 1,
                  "auto, first step of a new program: through the shim (nothing known)");
    struct pspawn_worth w;
    char *argv[] = { program, NULL }, *env[] = { NULL };
    pspawn_worth_recall(&w, PSPAWN_WORTH_DIR, user, NULL, 1, argv, env);
    shared_tap_ok(w.known && w.objects == 7,
                  "its end taught root's table the 7 objects its shims reported (%d)", w.objects);
    int again = auto_step(user, program, "auto", debug);
    char want[256];
    snprintf(want, sizeof want, "plain exec (auto: %s loaded 7 objects in its last zygote, "
             "fewer than auto_objects=%d)", strrchr(program, '/') + 1, PSPAWN_WORTH_STEP_ZYGOTE);
    shared_tap_ok(again == 0 && strstr(host.log, want),
                  "auto, its second step: exec'd, and the log says why (%s)", want);
    shared_tap_ok(auto_step(user, program, "on", debug) == 1,
                  "--pspawn (on), the same program: through the shim all the same");
    shared_tap_ok(auto_step(user, program, "auto", lower) == 1,
                  "auto with the site's auto_objects=5: through the shim");
    char entry[PATH_MAX];
    snprintf(entry, sizeof entry, PSPAWN_WORTH_DIR "/%u.%016llx", (unsigned)user,
             (unsigned long long)w.id);
    unlink(entry);
    unlink(program);
}

void test_mover(void)
{
    case_mover_tally(65534);
    case_auto_learns(65534);
    const uid_t user = 65534;
    struct spank_handle sp = { 0 };
    next_task_id = 0;
    if (start_mover_step(&sp, user, STEP_TASKS, NULL) < 0) {
        shared_tap_ok(0, "mover: step set up");
        return;
    }
    /* The first task's child: what task_init gave it (its channel, the
     * step's token and key, which every task gets). */
    struct {
        char channel[16], token[PSPAWN_MOVER_TOKEN], key[128];
    } got = { "no task", "", "" };
    int rp[2], trc = -1;
    if (pipe(rp) == 0) {
        pid_t t = fork_task(&sp, next_task_id++, &trc);
        if (t == 0) {
            const char *fd = env_get("PSPAWN_SHIM_MOVER_FD");
            struct stat st;
            int flags = fd ? fcntl(atoi(fd), F_GETFD) : -1;
            snprintf(got.channel, sizeof got.channel, "%s",
                     !fd ? "none" : fstat(atoi(fd), &st) == 0 && S_ISSOCK(st.st_mode) &&
                                        flags >= 0 && !(flags & FD_CLOEXEC) ? "socket" : "bad");
            snprintf(got.token, sizeof got.token, "%s", env_get("PSPAWN_SHIM_TOKEN") ?: "");
            snprintf(got.key, sizeof got.key, "%s", env_get("PSPAWN_SHIM_KEY") ?: "");
            (void)!write(rp[1], &got, sizeof got);
            fflush(stdout);
            _exit(trc == 0 ? 0 : 1);
        }
        close(rp[1]);
        if (t < 0 || read(rp[0], &got, sizeof got) != (ssize_t)sizeof got)
            snprintf(got.channel, sizeof got.channel, "no task");
        close(rp[0]);
        int st = -1;
        if (t > 0)
            waitpid(t, &st, 0);
        trc = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
    }
    const char *token = got.token[0] ? got.token : NULL;
    char names[4096] = "";
    names_with(got.key[0] ? got.key : "none", names, sizeof names);
    const char *channel = got.channel;
    shared_tap_ok(trc == 0 && strcmp(channel, "socket") == 0 && !names[0],
                  "mover: task_init gives each task's child its own socket to the mover, kept "
                  "open across its exec (%s), and the mover has no name anyone could reach "
                  "(%s)", channel, names[0] ? names : "none");
    if (token) {
        case_mover_refusals(&sp, user, token);
        case_mover_stalled_shim(&sp, user, token);
        case_mover_real_moves(&sp, user, token, got.key);
    }
    shared_tap_ok(p_exit(&sp, 0, NULL) == 0, "exit stops the mover");
    env_clear();
    unload();
}
