/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode=pip: Process-in-Process tasks (RIKEN's PiP; ../shared/papers/003).
 *
 * Each task is a process of its own (own pid, fd table, cwd, signal
 * handlers: clone without CLONE_THREAD, CLONE_FILES, CLONE_FS or
 * CLONE_SIGHAND) in the zygote's address space (CLONE_VM), and loads the
 * program again, with its libraries, into a link-map namespace of its own
 * (dlmopen(LM_ID_NEWLM)): every task has its own globals, heap arenas
 * (a libc outside the base namespace allocates with mmap) and errno,
 * while the page tables are shared.
 *
 * Where its TLS comes from.  glibc keeps a thread's TLS and descriptor
 * behind the thread pointer, and every copy of libc expects a descriptor
 * made by pthread_create.  So each task starts as a thread of the zygote
 * (on a stack we map: never cached, freed by us), and that thread clones
 * the task with CLONE_VM | CLONE_VFORK and no CLONE_SETTLS: the task runs
 * on the thread's descriptor and TLS while the thread sleeps in the kernel
 * until the task exits or execs.  The thread then ends by a bare exit
 * system call: glibc's thread exit would run the base libc's TSD
 * destructors over values the task's libc stored in the same descriptor.
 * The zygote joins it later (pthread_tryjoin_np) and unmaps its stack.
 *
 * Why a copy of the program.  glibc 2.30 and later refuse to dlopen an
 * object flagged DF_1_PIE.  The zygote copies its own image into a sealed
 * memfd with that flag cleared and each task loads the copy.  A program
 * must export main (-rdynamic), have no TLS of its own (a PIE's local-exec
 * TLS offsets hold only for the main program), no $ORIGIN in its search
 * paths (it would name the copy's directory) and no MPI library that is
 * not PiP-aware; otherwise the zygote forks its tasks, and says why.
 *
 * What runs in the root's memory.  Everything a task does before its
 * program is loaded runs in the base namespace, whose globals are the
 * zygote's: it changes none of them (environ only under the load lock,
 * for the constructors).  A task that cannot load (no namespace left,
 * static TLS exhausted) execs the program instead: the same task, with
 * the same pid, fds and setup.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "go.h"
#include "pipreg.h"
#include "sayline.h"
#include "zygote.h"

extern char **environ;

/* How long the zygote waits for a new task to let go of its request:
 * its setup is system calls, but an open() of a FIFO can block. */
#define PIP_SETUP_TIMEOUT_MS 10000
/* Below a task's first frame: the thread's own frames. */
#define PIP_THREAD_MARGIN (32 * 1024)

enum { PIP_PENDING = 0, PIP_LEFT = 1, PIP_ENDED = 2 };

/* At the bottom of each task's stack mapping, above its guard page: what
 * the zygote tells the thread and the task, and how they answer.  It
 * lives as long as the mapping, so the thread may still write to it after
 * the zygote has moved on. */
struct pip_start {
    _Atomic int state;          /* PIP_*, or -1: no task (ERROR says why) */
    int error;
    unsigned long flags;        /* for clone */
    int *parent_tid;
    char *base;
    size_t size;
    int go_fd;
    uint32_t id, index;
    struct child_setup *tmpl;
    int nfds, standin, rank;
    void (*first)(int);         /* the task's first step (stand-in mode), or NULL */
    int first_arg;
    void *robust;               /* the lending thread's robust list */
    size_t robust_len;
    int dead_word;              /* what the kernel clears if the thread dies first */
    struct {                    /* the thread's robust list meanwhile: empty */
        void *next;
        long futex_offset;
        void *pending;
    } no_robust;
};

struct pip_thread {
    pthread_t thread;
    void *map;
    size_t len;
};

static struct {
    struct pip_image image;
    struct pip_registry *reg;
    struct pip_thread threads[PSPAWN_PIP_SLOTS];
    int nthreads;
    int debug;
} pip;    /* zero, in .bss: a zygote that is no PiP root never touches it */

/* PSPAWN_DEBUG's lines, from the root or from a task before its load. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (!pip.debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    pspawn_vsay_line("libpspawn PiP", fmt, ap);
    va_end(ap);
}

static long futex(_Atomic int *addr, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, (int *)addr, op, val, ts, NULL, 0);
}

void zygote_pip_prepare(void)
{
    pip.debug = pspawn_debug_wanted();
    parked.pip = 0;
    int why = zygote_pip_image(&pip.image);
    if (!why) {
        pip.reg = mmap(NULL, sizeof *pip.reg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (pip.reg == MAP_FAILED) {
            pip.reg = NULL;
            why = PIP_NO_COPY;
        } else {
            pip.reg->magic = PSPAWN_PIP_MAGIC;
        }
    }
    parked.pip_refusal = why;
    if (why) {
        say("tasks are forked, not PiP tasks: %s", pspawn_pip_refusal_text((unsigned)why));
        return;
    }
    /* Each task's setup and load run on a thread of ours: one malloc
     * arena (64 MiB of address space, its page tables) per task, unless
     * they share the main one. */
    mallopt(M_ARENA_MAX, 1);
    parked.pip = 1;
    say("tasks load %s (a copy of %s) into namespaces of their own", pip.image.load_path, pip.image.exe);
}

/* ---- in the task: load the program, run its main ------------------------ */

/* One task's loader at a time: environ (the base namespace's, which the
 * new libc's constructors read) is the loading task's meanwhile.  A task
 * killed while it holds the lock is noticed by the next. */
static void load_lock(void)
{
    _Atomic int32_t *owner = &pip.reg->load_owner;
    int32_t me = (int32_t)getpid();
    for (;;) {
        int32_t was = 0;
        if (atomic_compare_exchange_strong(owner, &was, me))
            return;
        if (kill(was, 0) < 0 && errno == ESRCH) {
            atomic_compare_exchange_strong(owner, &was, 0);
            continue;
        }
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        futex((_Atomic int *)owner, FUTEX_WAIT, was, &ts);
    }
}

static void load_unlock(void)
{
    atomic_store(&pip.reg->load_owner, 0);
    futex((_Atomic int *)&pip.reg->load_owner, FUTEX_WAKE, INT32_MAX, NULL);
}

static struct pip_slot *slot_of(int rank)
{
    return rank >= 0 && rank < PSPAWN_PIP_SLOTS ? &pip.reg->slot[rank] : NULL;
}

/* A task that cannot load its program execs it: the same process, set
 * up as it is. */
static void exec_instead(int rank, char **argv, char **envp, uint64_t sigmask, const char *why)
    __attribute__((noreturn));
static void exec_instead(int rank, char **argv, char **envp, uint64_t sigmask, const char *why)
{
    say("task %d (pid %d): %s: exec'd instead", rank, (int)getpid(), why);
    struct pip_slot *slot = slot_of(rank);
    if (slot)
        atomic_store(&slot->state, PIP_SLOT_EXECD);
    pspawn_child_sigmask(sigmask);
    execve(pip.image.exe, argv, envp);
    _exit(127);
}

/* The namespace's destructors (DT_FINI_ARRAY, DT_FINI), at its exit():
 * the loader runs them only for the base namespace.  Last loaded first;
 * the loader itself is shared, not the namespace's to finish. */
static void run_fini(void *handle)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return;
    while (lm->l_next)
        lm = lm->l_next;
    for (; lm; lm = lm->l_prev) {
        if (lm->l_addr == pip.image.rtld_addr)
            continue;
        ElfW(Addr) array = 0, fini = 0;
        size_t arraysz = 0;
        for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_FINI_ARRAY)
                array = d->d_un.d_ptr;
            else if (d->d_tag == DT_FINI_ARRAYSZ)
                arraysz = d->d_un.d_val;
            else if (d->d_tag == DT_FINI)
                fini = d->d_un.d_ptr;
        }
        if (array) {
            void (**f)(void) = (void (**)(void))(lm->l_addr + array);
            for (size_t i = arraysz / sizeof *f; i-- > 0;)
                f[i]();
        }
        if (fini)
            ((void (*)(void))(lm->l_addr + fini))();
    }
}

/* ENVP with PSPAWN_ENV_PIP_TASK=RANK:REGISTRY added (or NULL). */
static char **with_task_var(char **envp, int rank)
{
    size_t n = 0;
    while (envp[n])
        n++;
    size_t len = (n + 2) * sizeof(char *) + 96;
    char **v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return NULL;
    char *var = (char *)(v + n + 2);
    snprintf(var, 96, PSPAWN_ENV_PIP_TASK "=%d:%p", rank, (void *)pip.reg);
    memcpy(v, envp, n * sizeof *v);
    v[n] = var;
    v[n + 1] = NULL;
    return v;
}

static void enter_program(struct task_start *ts, uint64_t sigmask, int rank) __attribute__((noreturn));
static void enter_program(struct task_start *ts, uint64_t sigmask, int rank)
{
    char **envp = with_task_var(ts->envp, rank);
    if (!envp)
        exec_instead(rank, ts->argv, ts->envp, sigmask, "no memory for its environment");
    load_lock();
    char **saved = environ;
    environ = envp;
    void *h = dlmopen(LM_ID_NEWLM, pip.image.load_path, RTLD_LAZY | RTLD_LOCAL);
    environ = saved;
    if (h)
        zygote_pip_complete_copies(h);
    const char *err = h ? NULL : dlerror();
    load_unlock();
    close(pip.image.memfd);
    if (!h)
        exec_instead(rank, ts->argv, ts->envp, sigmask, err ? err : "dlmopen failed");
    typedef int (*main_t)(int, char **, char **);
    main_t real_main = (main_t)dlsym(h, "main");
    void (*ns_exit)(int) = (void (*)(int))dlsym(h, "exit");
    int (*ns_atexit)(void (*)(void *), void *, void *) =
        (int (*)(void (*)(void *), void *, void *))dlsym(h, "__cxa_atexit");
    char ***ns_environ = dlsym(h, "environ");
    char **ns_name = dlsym(h, "program_invocation_name");
    char **ns_short = dlsym(h, "program_invocation_short_name");
    if (!real_main || !ns_exit || !ns_atexit || !ns_environ)
        exec_instead(rank, ts->argv, ts->envp, sigmask, "main, exit or environ not found in its namespace");
    *ns_environ = envp;
    char *name = ts->argc > 0 ? ts->argv[0] : (char *)"";
    if (ns_name)
        *ns_name = name;
    if (ns_short) {
        char *slash = strrchr(name, '/');
        *ns_short = slash ? slash + 1 : name;
    }
    ns_atexit(run_fini, h, NULL);
    struct pip_slot *slot = slot_of(rank);
    if (slot) {
        atomic_store(&slot->pid, (int32_t)getpid());
        atomic_store(&slot->handle, h);
        atomic_store(&slot->state, PIP_SLOT_RUNNING);
    }
    pspawn_child_sigmask(sigmask);
    ns_exit(real_main(ts->argc, ts->argv, envp));
    _exit(127);     /* exit() does not return */
}

/* The task: set up as exec would have, let go of the request, wait to be
 * released, then load and run.  ARG: its pip_start. */
static int task_main(void *arg)
{
    struct pip_start *st = arg;
    struct pip_start my = *st;
    if (my.first)
        my.first(my.first_arg);
    struct wire_go *go = mmap(NULL, sizeof *go, PROT_READ | PROT_WRITE, MAP_SHARED, my.go_fd, 0);
    if (go == MAP_FAILED) {
        st->error = errno;
        atomic_store(&st->state, -1);
        futex(&st->state, FUTEX_WAKE, 1, NULL);
        _exit(127);
    }
    close(my.go_fd);
    if (my.robust)
        syscall(SYS_set_robust_list, my.robust, my.robust_len);
    struct child_setup s;
    int fds[PSPAWN_FD_MAX + 2];
    struct task_start ts;
    unsigned long arg_start;
    zygote_task_begin(my.base, my.size, go, my.id, my.index, &s, fds, my.tmpl, my.nfds,
                      my.standin, &ts, &arg_start);
    /* What it needs of the request once the zygote has dropped it. */
    const struct wire_request head = *(const struct wire_request *)my.base;
    const struct wire_task *t = (const struct wire_task *)(my.base + head.tasks) + my.index;
    unsigned char cpus[PSPAWN_CPUSET_BYTES];
    int has_cpus = t->has_cpuset;
    memcpy(cpus, t->cpuset, sizeof cpus);
    const int extra[] = { pip.image.memfd };
    int keep[PSPAWN_FD_MAX + 4];
    int nkeep = pspawn_child_keep_list(&s, extra, 1, keep);
    atomic_store(&st->state, PIP_LEFT);
    futex(&st->state, FUTEX_WAKE, 1, NULL);

    if (!my.standin || (head.flags & REQ_HOLD)) {
        zygote_task_wait_go(&head, go, my.index, my.standin);
        if (my.standin)
            zygote_task_rebind(&head, has_cpus ? cpus : NULL);
    }
    munmap(go, sizeof *go);
    pspawn_child_close_others(keep, nkeep);
    enter_program(&ts, head.sigmask, my.rank);
}

/* ---- in the zygote: the thread that lends each task its TLS -------------- */

static void *lend_tls(void *arg)
{
    struct pip_start *st = arg;
    /* The task must not die of a signal while its loader holds the
     * loader's locks: everything blocked until its program runs. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    /* The task's robust mutexes live in this descriptor: the kernel
     * cleans them up at its death too. */
    syscall(SYS_get_robust_list, 0, &st->robust, &st->robust_len);
    st->no_robust.next = &st->no_robust;
    syscall(SYS_set_robust_list, &st->no_robust, sizeof st->no_robust);
    /* The descriptor's tid is the task's now too (glibc's recursive locks
     * compare it): should this thread die first (the zygote exits), the
     * kernel must not clear it under the task.  Given back before our own
     * exit, for pthread_tryjoin_np. */
    int *clear_at = NULL;
    if (prctl(PR_GET_TID_ADDRESS, &clear_at, 0, 0, 0) < 0)
        clear_at = NULL;
    syscall(SYS_set_tid_address, &st->dead_word);
    char here;
    uintptr_t top = ((uintptr_t)&here - PIP_THREAD_MARGIN) & ~(uintptr_t)63;
    pid_t pid = clone(task_main, (void *)top, (int)st->flags, st, st->parent_tid);
    int was = PIP_PENDING;
    if (pid < 0) {
        st->error = errno;
        atomic_compare_exchange_strong(&st->state, &was, -1);
    } else {
        atomic_compare_exchange_strong(&st->state, &was, PIP_ENDED);
    }
    futex(&st->state, FUTEX_WAKE, 1, NULL);
    /* (Without PR_GET_TID_ADDRESS the thread is never joined: its stack
     * stays mapped, one per task.) */
    if (clear_at)
        syscall(SYS_set_tid_address, clear_at);
    syscall(SYS_exit, 0);
    return NULL;
}

/* Join the threads whose tasks have ended; unmap their stacks. */
static void collect_threads(void)
{
    for (int i = 0; i < pip.nthreads;) {
        if (pthread_tryjoin_np(pip.threads[i].thread, NULL) == 0) {
            munmap(pip.threads[i].map, pip.threads[i].len);
            pip.threads[i] = pip.threads[--pip.nthreads];
        } else {
            i++;
        }
    }
}

static size_t task_stack_size(void)
{
    struct rlimit rl;
    size_t sz = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur >= (1u << 20) && rl.rlim_cur <= (256u << 20))
        sz = (size_t)rl.rlim_cur;
    return sz;
}

pid_t zygote_pip_clone(unsigned long extra, int *parent_tid, char *base, size_t size,
                       int go_fd, uint32_t id, uint32_t index, struct child_setup *tmpl,
                       int nfds, int standin, void (*first)(int), int first_arg)
{
    collect_threads();
    if (pip.nthreads == PSPAWN_PIP_SLOTS) {
        errno = EAGAIN;
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    size_t len = task_stack_size() + 2 * (size_t)page + (1u << 20);
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    mprotect(map, (size_t)page, PROT_NONE);
    struct pip_start *st = (struct pip_start *)(map + page);
    *st = (struct pip_start){
        .flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | extra | SIGCHLD,
        .parent_tid = parent_tid, .base = base, .size = size, .go_fd = go_fd, .id = id,
        .index = index, .tmpl = tmpl, .nfds = nfds, .standin = standin,
        .first = first, .first_arg = first_arg,
        .rank = (int)atomic_fetch_add(&pip.reg->next, 1),
    };
    struct pip_slot *slot = slot_of(st->rank);
    if (slot)
        atomic_store(&slot->state, PIP_SLOT_LOADING);
    pthread_attr_t attr;
    pthread_t th;
    int err = pthread_attr_init(&attr);
    if (!err)
        err = pthread_attr_setstack(&attr, map + 2 * page, len - 2 * (size_t)page);
    if (!err)
        err = pthread_create(&th, &attr, lend_tls, st);
    pthread_attr_destroy(&attr);
    if (err) {
        munmap(map, len);
        errno = err;
        return -1;
    }
    pip.threads[pip.nthreads++] = (struct pip_thread){ th, map, len };
    /* Until the task has let go of the request (or is gone). */
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += PIP_SETUP_TIMEOUT_MS / 1000;
    int state;
    while ((state = atomic_load(&st->state)) == PIP_PENDING) {
        struct timespec now, left;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left.tv_sec = deadline.tv_sec - now.tv_sec;
        left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
        if (left.tv_nsec < 0) {
            left.tv_sec--;
            left.tv_nsec += 1000000000L;
        }
        if (left.tv_sec < 0)
            break;
        futex(&st->state, FUTEX_WAIT, PIP_PENDING, &left);
    }
    pid_t pid = (pid_t)*(volatile int *)parent_tid;
    if (state < 0) {
        errno = st->error ? st->error : EAGAIN;
        return -1;
    }
    if (state == PIP_PENDING && pid > 0) {
        /* Stuck in its setup: it never ran, and it must not read the
         * request we are about to drop. */
        say("task %d (pid %d): no word from its setup in %d ms: killed", st->rank, (int)pid,
            PIP_SETUP_TIMEOUT_MS);
        kill(pid, SIGKILL);
        while (atomic_load(&st->state) == PIP_PENDING)
            futex(&st->state, FUTEX_WAIT, PIP_PENDING, NULL);
    }
    if (slot)
        atomic_store(&slot->pid, pid);
    return pid;
}
