/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A new task, from its clone to the return into the real main(): the setup
 * exec would have made (child.h), the report of its pid, the go handshake,
 * and its own argv and environ in place.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "go.h"
#include "zygote.h"

extern char **environ;

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* ---- text prefault ------------------------------------------------------
 *
 * The kernel does not copy the page tables of file mappings at fork: they
 * refill on demand.  So a task takes a page fault in the text of each
 * library it runs, where an exec'd task took one when its loader ran the
 * library's initialisers.  A small text mapping is mapped whole by that
 * first fault anyway (the kernel maps up to 64 KB of cached pages around a
 * faulting address), so each task maps each such mapping itself with one
 * madvise(MADV_POPULATE_READ): the same pages, without a trap per library,
 * which with hundreds of libraries makes a task measurably cheaper
 * (bench/README.md).  Only private file-backed r-x mappings of at most
 * TEXT_PREFAULT_MAX bytes: a big library's text is left to fault in what
 * the task runs, as after an exec.  PSPAWN_PREFAULT=0 in the zygote's
 * environment turns it off; kernels before 5.14 (no MADV_POPULATE_READ)
 * just skip it. */
#define TEXT_PREFAULT_MAX (64 * 1024)

void zygote_record_text(void)
{
    const char *v = getenv("PSPAWN_PREFAULT");
    if (v && strcmp(v, "0") == 0)
        return;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    char line[PATH_MAX + 128];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perm[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perm, &path_at) < 3 ||
            strcmp(perm, "r-xp") != 0 || !path_at || line[path_at] != '/' ||
            end - start > TEXT_PREFAULT_MAX)
            continue;
        if (parked.ntext == cap) {
            int ncap = cap ? 2 * cap : 256;
            struct text_range *t = realloc(parked.text, (size_t)ncap * sizeof *t);
            if (!t)
                break;
            parked.text = t;
            cap = ncap;
        }
        parked.text[parked.ntext++] = (struct text_range){ start, end - start };
    }
    fclose(f);
}

/* Map the small text mappings the zygote recorded (zygote_record_text)
 * with one call each instead of a trap per library. */
static void prefault_text(void)
{
    int saved = errno;
    for (int i = 0; i < parked.ntext; i++)
        if (madvise((void *)parked.text[i].start, parked.text[i].len, MADV_POPULATE_READ) < 0 &&
            errno == EINVAL)
            break;      /* no MADV_POPULATE_READ here */
    errno = saved;
}



/* Exec does not run atfork handlers either.  Argument order of x86_64 and
 * aarch64: flags, stack, parent_tid, child_tid, tls. */
/* clone3's arguments (linux/sched.h, a stable layout), for
 * CLONE_INTO_CGROUP. */
struct clone3_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
        set_tid, set_tid_size, cgroup;
};
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define CLONE_INTO_CGROUP_FLAG 0x200000000ULL

pid_t zygote_clone(unsigned long extra, int *parent_tid)
{
    unsigned long flags = extra | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
    if (parent_tid)
        flags |= CLONE_PARENT_SETTID;
    pid_t pid;
    /* A task of a stand-in zygote whose library was replaced would run the
     * old one (one read of the inotify fd, or stats of its libraries'
     * directories): it refuses, its stand-in execs, and it goes on reaping
     * the tasks it made for theirs.  A direct zygote looks once per
     * request, in zygote_wait, and exits. */
    if ((parked.listen_name || parked.forwarded) && zygote_libraries_stale(1)) {
        errno = ESTALE;
        return -1;
    }
    zygote_settle_pages();
    if (parked.mode)
        parked.mode->before_fork();
    if (parked.task_cgroup >= 0 && (extra & CLONE_PARENT)) {
        /* subzygote=cgroup: our tasks belong in the launcher's cgroup, not
         * in our group's; a task made there never runs anywhere else.
         * With CLONE_PARENT the exit signal is the parent's own. */
        struct clone3_args a = {
            .flags = flags | CLONE_INTO_CGROUP_FLAG,
            .child_tid = (uint64_t)(uintptr_t)parked.tid_addr,
            .parent_tid = (uint64_t)(uintptr_t)parent_tid,
            .cgroup = (uint64_t)parked.task_cgroup,
        };
        pid = (pid_t)syscall(SYS_clone3, &a, sizeof a);
    } else {
        pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, parent_tid, parked.tid_addr, 0);
    }
    if (pid == 0 && parked.robust_head)
        syscall(SYS_set_robust_list, parked.robust_head, parked.robust_len);
    if (pid != 0 && parked.mode)
        parked.mode->after_fork_parent();
    return pid;
}

void zygote_report(int fd, uint32_t req, uint32_t index, int32_t pid, int32_t err)
{
    struct task_report r = { req, index, pid, err };
    while (write(fd, &r, sizeof r) < 0 && errno == EINTR)
        ;
}

/* Copy this task's argv and environ out of the request, laid out as the
 * kernel lays them out (strings contiguous, argv then environ), so that
 * /proc/PID/cmdline and environ can point at them. */
static int build_args(const char *base, const struct wire_task *t, struct task_start *ts,
                      unsigned long *arg_start)
{
    size_t ptrs = (t->argc + 1 + t->envc + 1) * sizeof(char *);
    size_t total = ptrs + t->strings_len + t->env_len;
    char **v = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return ENOMEM;
    char *s = (char *)v + ptrs;
    memcpy(s, base + t->strings, t->strings_len + t->env_len);
    char *p = s;
    for (uint32_t i = 0; i < t->argc; i++) {
        v[i] = p;
        p += strlen(p) + 1;
    }
    v[t->argc] = NULL;
    char **e = v + t->argc + 1;
    for (uint32_t i = 0; i < t->envc; i++) {
        e[i] = p;
        p += strlen(p) + 1;
    }
    e[t->envc] = NULL;
    ts->argc = (int)t->argc;
    ts->argv = v;
    ts->envp = e;
    *arg_start = (unsigned long)s;
    return 0;
}

static int strings_valid(const char *base, size_t size, const struct wire_task *t)
{
    size_t len = (size_t)t->strings_len + t->env_len;
    if (t->strings > size || len > size - t->strings)
        return 0;
    const char *s = base + t->strings;
    uint32_t nul = 0;
    for (size_t i = 0; i < len; i++)
        nul += s[i] == 0;
    if (nul != t->argc + t->envc || (len && s[len - 1] != 0))
        return 0;
    /* argv strings end exactly at strings_len */
    uint32_t nul_args = 0;
    for (size_t i = 0; i < t->strings_len; i++)
        nul_args += s[i] == 0;
    return nul_args == t->argc && (!t->strings_len || s[t->strings_len - 1] == 0);
}

/* Who would release us is gone.  A task of a direct launcher is its
 * child: its parent is no longer the launcher.  A stand-in's task is the
 * zygote's child: the stand-in is gone. */
static int launcher_gone(const void *arg)
{
    const struct wire_request *w = arg;
    return getppid() != (pid_t)w->launcher_pid;
}

/* A held task's stand-in is gone: by the pin its zygote took at the
 * stand-in's connect (inherited), so that a pid reused since cannot keep
 * the task waiting.  A PiP task shares the zygote's memory, where the pin
 * is the next stand-in's: it goes by the number its request gives. */
static int standin_gone(const void *arg)
{
    const struct wire_request *w = arg;
    if (!parked.pip && parked.standin_peer.pid > 0)
        return !pspawn_pin_alive(&parked.standin_peer);
    return kill((pid_t)w->launcher_pid, 0) < 0 && errno == ESRCH;
}

/* Wait for go[INDEX]; a task cancelled, or whose launcher died before
 * releasing it, never ran: it ends here.  W: the request's header (a
 * PiP task's own copy: the request is the root's). */
void zygote_task_wait_go(const struct wire_request *w, struct wire_go *go, uint32_t index,
                         int standin)
{
    if (pspawn_go_wait(&go->go[index], standin ? standin_gone : launcher_gone, w) != GO_RUN)
        _exit(127);
}

void zygote_task_begin(char *base, size_t size, struct wire_go *go, uint32_t id, uint32_t index,
                       struct child_setup *s, int *fds, const struct child_setup *tmpl, int nfds,
                       int standin, struct task_start *ts, unsigned long *arg_start)
{
    struct wire_request *w = (struct wire_request *)base;
    const struct wire_task *t = (const struct wire_task *)(base + w->tasks) + index;
    *s = *tmpl;
    memcpy(fds, tmpl->fds, (nfds + 2) * sizeof(int));
    s->fds = fds;
    /* The task has no use for the control socket. */
    if (fds[nfds + 1] >= 0)
        close(fds[nfds + 1]);
    fds[nfds + 1] = -1;
    if (t->has_cpuset)
        s->cpuset = t->cpuset;

    *ts = (struct task_start){ 0, NULL, NULL };
    *arg_start = 0;
    int err = strings_valid(base, size, t) ? 0 : EINVAL;
    if (!err)
        err = build_args(base, t, ts, arg_start);
    if (!err)
        err = pspawn_child_setup(s);
    if (!err && !parked.pip && parked.mode)
        parked.mode->task_signals(w->sigign);
    int report_fd = fds[nfds];
    if (standin) {
        /* Our stand-in has our pid (from the zygote, or from the go
         * block): only a failure needs telling (the pipe closes on
         * success). */
        if (err) {
            while (write(report_fd, &err, sizeof err) < 0 && errno == EINTR)
                ;
            _exit(127);
        }
        close(report_fd);
    } else {
        /* The launcher has our pid (the go block): it hears of us once
         * per request, unless we failed.  A failure's own record is
         * written before we count ourselves out, so that it comes before
         * the request's. */
        if (err)
            zygote_report(report_fd, id, index, (int32_t)getpid(), err);
        if (pspawn_go_arrive(go, index, err ? SETUP_FAILED : SETUP_READY))
            zygote_report(report_fd, id, PSPAWN_REPORT_DONE, 0, 0);
        if (err)
            _exit(127);
    }
}

/* A held task of a stand-in: moving a task into another cpuset cgroup
 * resets its CPU affinity to that cgroup's: bind it again. */
void zygote_task_rebind(const struct wire_request *w, const unsigned char *task_cpuset)
{
    const unsigned char *aff = task_cpuset ? task_cpuset
                               : (w->flags & REQ_CPUSET) ? w->cpuset : NULL;
    if (aff)
        sched_setaffinity(0, PSPAWN_CPUSET_BYTES, (const cpu_set_t *)aff);
}

struct task_start zygote_task_main(char *base, size_t size, struct wire_go *go, uint32_t id,
                                   uint32_t index, struct child_setup *tmpl, int nfds,
                                   int standin)
{
    struct wire_request *w = (struct wire_request *)base;
    const struct wire_task *t = (const struct wire_task *)(base + w->tasks) + index;
    struct child_setup s;
    int fds[PSPAWN_FD_MAX + 2];
    struct task_start ts;
    unsigned long arg_start;
    parked.in_task = 1;
    zygote_task_begin(base, size, go, id, index, &s, fds, tmpl, nfds, standin, &ts, &arg_start);
    if (!standin || (w->flags & REQ_HOLD)) {
        zygote_task_wait_go(w, go, index, standin);
        if (standin)
            zygote_task_rebind(w, t->has_cpuset ? t->cpuset : NULL);
    }

    prefault_text();
    int keep[PSPAWN_FD_MAX + 3 + MAX_CTOR_FDS];
    int nkeep = pspawn_child_keep_list(&s, parked.ctor_fds, parked.nctor_fds, keep);
    pspawn_child_close_others(keep, nkeep);
    uint64_t sigmask = w->sigmask;
    size_t strings_len = t->strings_len, env_len = t->env_len;
    munmap((void *)base, size);
    munmap(go, sizeof *go);

    environ = ts.envp;
    program_invocation_name = ts.argc > 0 ? ts.argv[0] : (char *)"";
    char *slash = strrchr(program_invocation_name, '/');
    program_invocation_short_name = slash ? slash + 1 : program_invocation_name;
    if (parked.have_mm) {
        struct prctl_mm_map mm = parked.mm;
        mm.brk = (uint64_t)(uintptr_t)sbrk(0);
        mm.arg_start = arg_start;
        mm.arg_end = arg_start + strings_len;
        mm.env_start = mm.arg_end;
        mm.env_end = mm.env_start + env_len;
        prctl(PR_SET_MM, PR_SET_MM_MAP, &mm, sizeof mm, 0);
    }
    pspawn_child_sigmask(sigmask);
    zygote_rearm_itimers();
    return ts;
}
