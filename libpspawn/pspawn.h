/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pspawn.h - launch many instances of one program by forking a parked,
 * already-loaded copy of it (the "zygote") instead of exec'ing each one.
 *
 * The program is exec'd once with libpspawn-proxy.so preloaded.  The proxy
 * lets every constructor run, binds lazy symbols, and parks just before
 * main().  Every task is then a clone of the zygote that becomes the
 * caller's direct child (clone(CLONE_PARENT)), gets its own argv, environ,
 * fds, cwd, umask, rlimits, signal state, process group and CPU binding,
 * and enters the real main().  Whenever that cannot be faithful to an exec
 * (static or set-id binary, a binary changed on disk, a zygote that died,
 * stopped answering or has threads...), the task is created by a plain
 * exec instead and the reason is kept (pspawn_context_reason()) and printed
 * when PSPAWN_DEBUG=1.
 *
 * Conventions, as for posix_spawn(3): functions returning int return 0 on
 * success or an error number (never -1 with errno), except pspawn() which
 * mirrors fork() and returns a pid or -1 with errno set.  Errors of the
 * program itself are the ones execve(2) would give: ENOENT, EACCES,
 * ENOEXEC, E2BIG, ...
 *
 * Thread safety: a context may be used by one thread at a time.  Distinct
 * contexts are independent.
 *
 * ABI: libpspawn.so.0 exports the calls declared here and nothing else,
 * each at symbol version PSPAWN_0.1 (libpspawn/libpspawn.map).  Contexts,
 * attributes and sessions are opaque: the caller holds a handle of one
 * pointer, and what lies behind it may grow freely.  The structs the
 * caller fills or allocates (pspawn_task_t, pspawn_task_status_t,
 * pspawn_zygote_info_t, pspawn_session_counts_t) are fixed at version
 * PSPAWN_0.1: a later release that grows one adds a new version of each
 * call that takes it (PSPAWN_0.2) and keeps the old one, so a program
 * built against this header keeps working with libpspawn.so.0.  A call
 * removed or changed incompatibly would change the soname.
 */
#ifndef PSPAWN_H
#define PSPAWN_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PSPAWN_VERSION_MAJOR 0
#define PSPAWN_VERSION_MINOR 1

/* A context: one zygote of one program, owned by the process that created
 * it.  Allocate it anywhere (stack, heap, static); only the library touches
 * its field. */
typedef struct pspawn_context {
    struct pspawn_zygote *impl;
} pspawn_context_t;

/* Per-task attributes: what a launcher sets for each task.  Initialise with
 * pspawn_attr_init(), release with pspawn_attr_destroy().  An attribute
 * object may be reused for many spawns and contexts. */
typedef struct pspawn_attr {
    struct pspawn_attr_impl *impl;
} pspawn_attr_t;

/* ---- contexts ---------------------------------------------------------- */

/* Create a context for the program at PATH (absolute or relative to the
 * cwd; no PATH search: see pspawn_resolve()) and start its zygote, pinned
 * to CPU CORE while it loads and parks (CORE < 0: not pinned; tasks get
 * the binding they ask for, or the caller's).
 *
 * Returns 0, or the error exec would give for the program itself: ENOENT
 * (no such file, or a missing #! interpreter), EACCES (not a regular file
 * or not executable), ENOEXEC (not a loadable format), ENOMEM.  A program
 * the zygote cannot serve faithfully (static, set-id, file capabilities,
 * a zygote that refuses to park) still gives 0: the context then falls
 * back to exec for every spawn, and pspawn_context_reason() says why.
 * The zygote is started with the caller's environ; it is the caller's
 * child and exits when the context is destroyed or the caller dies. */
int pspawn_context_create(pspawn_context_t *ctx, const char *path, int core);

/* The same, with the zygote started with ENVP instead of the caller's
 * environ (NULL: the caller's).  Give the environment the tasks will
 * have: a task whose loader variables (LD_*, GLIBC_TUNABLES, MALLOC_*,
 * which act before main) differ from the zygote's is created by exec. */
int pspawn_context_create_ex(pspawn_context_t *ctx, const char *path, int core,
                             char *const envp[]);

/* The same, with OPTIONS: a comma-separated list of KEY=VALUE (NULL or
 * "": the defaults), the syntax every front door shares (pspawn --options,
 * srun --pspawn, the ODLS component's odls_pspawn_KEY parameters):
 *
 *   fanout=auto|none|numa|l3|package|core|N
 *       one zygote serving every task, or the root zygote plus a
 *       sub-zygote per NUMA node, L3 cache, package, core, or N cores,
 *       each pinned to its CPUs and taking its memory from its node; a
 *       task goes to the one whose CPUs its binding falls in, unbound
 *       tasks are spread over all.  The CPUs are the caller's (its affinity
 *       and cgroup; HWLOC_XMLFILE and HWLOC_SYNTHETIC give a fake
 *       topology, whose CPUs are then never bound).  auto (the default):
 *       groups of a few cores within each NUMA node and L3 cache, none on
 *       a machine of three cores or fewer.
 *   subzygote=exec|fork|replicate|cgroup
 *       sub-zygotes exec'd of their own (the default), forked from the
 *       root, exec'd on copies of the libraries made on their own node
 *       (PSPAWN_REPLICA_DIR, default /dev/shm, removed with them), or that
 *       in a cpuset cgroup of their group (needs cgroup=DIR: a cgroup v2
 *       directory with the cpuset controller for its children, that the
 *       caller may write; tasks are made in the caller's own cgroup).
 *   start=eager|lazy
 *       sub-zygotes made now (and waited for), or at their first task.
 *   python=auto|off
 *       auto (the default): if the program is a Python interpreter
 *       (CPython 3.8 or later), the zygote starts it with the interpreter
 *       options of the command line given to pspawn_context_create_argv,
 *       imports the preload modules and parks inside it; each task is then
 *       that warm interpreter made the task's (sys.argv, os.environ,
 *       sys.path[0], standard streams, random seeds, thread pools) running
 *       its script, -c or -m.  A task whose interpreter options or start-up
 *       variables (PYTHON*, LANG, LC_*, HOME) differ from the zygote's is
 *       exec'd.  off: the interpreter parks before main like any program.
 *   modules=MOD:MOD...
 *       what a warm interpreter imports before it parks; otherwise
 *       PSPAWN_PRELOAD_MODULES (comma-separated), otherwise what earlier
 *       tasks of the same script imported (a cache in
 *       $XDG_CACHE_HOME/pspawn, or PSPAWN_CACHE_DIR).  A module that
 *       starts a thread, keeps an fd open or maps a device when imported,
 *       or that initialises MPI or a GPU (mpi4py.MPI, torch, cupy, ...), is
 *       left out (PSPAWN_DEBUG says which and why).
 *   preload=off|auto|FILE
 *       what the zygote dlopens before it parks: nothing (the default);
 *       what earlier tasks of the program loaded after main, with their
 *       flags (auto: each task records what it loads, as it loads it, in
 *       $XDG_CACHE_HOME/pspawn or PSPAWN_CACHE_DIR); or the libraries FILE
 *       lists ("PATH [global] [lazy] [deepbind] [nodelete]" per line).
 *       PSPAWN_PRELOAD_LIBS adds paths, PSPAWN_PRELOAD_SKIP keeps some out.
 *       A changed file is dropped; one that starts a thread, keeps an fd or
 *       maps a device when loaded is left out.
 *   on, off, auto: accepted and ignored (front doors' words).
 *
 * EINVAL for options that do not parse (pspawn_options_check says why);
 * otherwise as pspawn_context_create_ex, with no pinning of the root. */
int pspawn_context_create_opts(pspawn_context_t *ctx, const char *path,
                               char *const envp[], const char *options);

/* The same, with ARGV a command line of the tasks to come (NULL: none).
 * Only a Python interpreter reads it: its zygote starts with ARGV's
 * interpreter options and imports what ARGV's script imported before. */
int pspawn_context_create_argv(pspawn_context_t *ctx, const char *path,
                               char *const argv[], char *const envp[],
                               const char *options);

/* Whether OPTIONS parse: 0, or EINVAL with a sentence naming what is wrong
 * in MSG (SIZE bytes, always terminated). */
int pspawn_options_check(const char *options, char *msg, size_t size);

/* Stop every zygote of the context (they have no tasks: every task is the
 * caller's child and keeps running) and free the context.  Safe on a
 * context whose creation failed or that was already destroyed. */
void pspawn_context_destroy(pspawn_context_t *ctx);

/* Why the last spawn on CTX (or the context itself) used a plain exec, as
 * a human-readable sentence, or NULL if it never fell back.  The string
 * belongs to the context and stays valid until the next spawn. */
const char *pspawn_context_reason(const pspawn_context_t *ctx);

/* Nonzero while the context spawns through its zygote; 0 once it has
 * fallen back to exec for good (see pspawn_context_reason()). */
int pspawn_context_uses_zygote(const pspawn_context_t *ctx);

/* Pid of the root zygote, or -1 when there is none. */
pid_t pspawn_context_zygote_pid(const pspawn_context_t *ctx);

/* How many objects the root zygote had loaded when it parked: the
 * program, each shared library, the loader and the vDSO (what an exec of
 * the program maps and relocates again for each task, and a fork of the
 * zygote does not); 0 while there is no zygote, or none said it.  A
 * launcher that is free to choose may exec a program of few objects
 * instead: its exec costs less than a task from a zygote (pspawn(3),
 * "WHICH PROGRAMS GAIN").  Since PSPAWN_0.2. */
int pspawn_context_objects(const pspawn_context_t *ctx);

/* The zygotes of a context: the root and, with fan-out, its sub-zygotes.
 * Each is the caller's child (created with CLONE_PARENT), as every task
 * is: a caller that reaps with waitpid(-1) sees them only when they exit
 * (at destroy, or when one dies), and can tell them from its tasks with
 * pspawn_context_owns(). */
typedef struct pspawn_zygote_info {
    pid_t pid;              /* -1 when it is not running */
    int group;              /* 0 for the root; its group otherwise */
    cpu_set_t cpus;         /* the CPUs it serves (and is bound to) */
    int node;               /* the NUMA node its memory comes from, or -1 */
    unsigned long tasks;    /* tasks it created */
    const char *state;      /* "serving", "starting", "not started", or why
                             * it stopped serving; valid until the next call */
} pspawn_zygote_info_t;

/* Fill INFO[0..N) with the first N zygotes of CTX, the root first;
 * returns how many the context has (which may be more than N). */
size_t pspawn_context_zygotes(const pspawn_context_t *ctx, pspawn_zygote_info_t *info,
                              size_t n);

/* Whether PID is one of the context's zygotes (1) or not (0). */
int pspawn_context_owns(const pspawn_context_t *ctx, pid_t pid);

/* ---- Process-in-Process (options "mode=pip") ----------------------------
 *
 * With "mode=pip" (pspawn_context_create_opts) the context's zygote is a
 * PiP root: each task is a process of its own (own pid, fd table, cwd,
 * signal handlers, exit status for waitpid) inside the root's address
 * space, with its own copy of the program and its libraries (a link-map
 * namespace: own globals, errno, heap arenas) and shared page tables.
 * The program must be a PIE that exports main (-fPIE -pie -rdynamic) and
 * has no thread-local variables of its own; at most PSPAWN_PIP_MAX_TASKS
 * (15) tasks per root, later ones are exec'd.  pspawn(1), "PROCESS-IN-
 * PROCESS", says what is shared and what is refused. */
#define PSPAWN_MODE_FORK 0
#define PSPAWN_MODE_PIP  1
/* How the context's root makes tasks: PSPAWN_MODE_PIP, or FORK; when
 * mode=pip was asked and refused (or the zygote has not started), *WHY
 * (if not NULL) says why, a sentence owned by the context; else NULL. */
int pspawn_context_mode(const pspawn_context_t *ctx, const char **why);

/* In a PiP task: its rank (the order in which its root made it, from 0),
 * or -1 in any other process. */
int pspawn_pip_rank(void);
/* In a PiP task: the address of the global SYMBOL in the program (or a
 * library it loaded) of the task of rank RANK, which any task of the
 * root may read and write.  NULL with errno: ENOTSUP (not a PiP task),
 * EINVAL (no such rank), EAGAIN (that task has not loaded its program
 * yet: try again), ESRCH (that task was exec'd, not loaded: it has
 * another address space), ENOENT (no such symbol).  The address stays
 * valid while the root lives, after that task has exited too. */
void *pspawn_pip_get_addr(int rank, const char *symbol);

/* How the context split the CPUs among its zygotes, as a sentence. */
const char *pspawn_context_topology(const pspawn_context_t *ctx);

/* How long to wait for the zygote to make progress before it is declared
 * hung, killed, and the requests in flight retried by exec.  Default 10000
 * ms, or PSPAWN_TIMEOUT (seconds, may be fractional, more than 0 and at
 * most 86400) from the environment: a context is not created (EINVAL)
 * while PSPAWN_TIMEOUT is set to anything else. */
void pspawn_context_set_timeout(pspawn_context_t *ctx, int timeout_ms);

/* ---- the paper's calls ------------------------------------------------- */

/* Launch one task with ARGV (argv[0] as the task sees it) and the caller's
 * environ, cwd, fds 0-2, signal mask, rlimits, umask and affinity, as
 * posix_spawn(3) would.  Returns the pid (the task is the caller's child),
 * or -1 with errno set. */
pid_t pspawn(pspawn_context_t *ctx, char *const argv[]);

/* Launch N tasks, all with ARGV, as pspawn().  PIDS receives N pids (-1 for
 * a task that could not be created).  Returns 0 if all N were created, else
 * the error of the first that was not; the others were still created. */
int pspawn_n(pid_t *pids, pspawn_context_t *ctx, int n, char *const argv[]);

/* ---- extended calls ---------------------------------------------------- */

/* As posix_spawn(3): one task with ARGV and ENVP (NULL: the caller's
 * environ) and the attributes in ATTR (NULL: defaults). */
int pspawn_ex(pid_t *pid, pspawn_context_t *ctx, const pspawn_attr_t *attr,
              char *const argv[], char *const envp[]);

/* N tasks sharing ARGV, ENVP and ATTR. */
int pspawn_n_ex(pid_t *pids, pspawn_context_t *ctx, int n,
                const pspawn_attr_t *attr, char *const argv[],
                char *const envp[]);

/* One instance of a vector spawn: its own argv, envp and CPU set; results
 * are written back into it. */
typedef struct pspawn_task {
    char *const *argv;      /* in: required */
    char *const *envp;      /* in: NULL = the call's ENVP */
    const cpu_set_t *cpuset;/* in: NULL = the attr's CPU set, if any */
    size_t cpusetsize;      /* in: size of *cpuset in bytes */
    pid_t pid;              /* out: pid, or -1 */
    int pidfd;              /* out: pidfd if PSPAWN_PIDFD (Linux 5.3), else -1 */
    int error;              /* out: 0, or the error for this task */
} pspawn_task_t;

/* Vector spawn: create N tasks, each with its own argv, envp and CPU set,
 * sharing ATTR (NULL: defaults) and ENVP (NULL: the caller's environ) where
 * a task gives none.  Tasks are created in order and pipelined through the
 * zygote.  Returns 0 if every task was created, else the error of the first
 * task that was not; every task's own error and pid are in TASKS[i]. */
int pspawn_vector(pspawn_context_t *ctx, pspawn_task_t *tasks, size_t n,
                  const pspawn_attr_t *attr, char *const envp[]);

/* ---- launch sessions --------------------------------------------------- */

/* A launch session: the asynchronous vector spawn (the paper's ipspawn,
 * "with a launch session" to learn what became of each task).
 * pspawn_session_submit() hands tasks over and returns before they are
 * created; the session's fd becomes readable whenever
 * pspawn_session_progress() has something to do, which does it without
 * waiting for the zygotes; pspawn_session_next() then says what changed.
 * No thread is started: all the work is done inside these calls, in the
 * caller's thread.  With fan-out every zygote works at once.
 *
 * Each task is PENDING until it is created (SPAWNED: the caller's child,
 * its pid known before it ran a single instruction of its program) or
 * cannot be (FAILED, with the errno pspawn_vector() would give and a
 * reason); with PSPAWN_SESSION_REAP a SPAWNED task becomes EXITED once
 * the session has reaped it.  Every state but PENDING is true and final
 * (EXITED follows SPAWNED only): a zygote that dies or hangs loses no task
 * and runs none twice, as for pspawn_vector(); a cancelled task either
 * runs once or never.
 *
 * While a session has tasks PENDING (or requests still in flight after
 * them) it alone talks to its context's zygotes: another session's submit
 * and the synchronous calls on that context return EBUSY until
 * pspawn_session_wait(PSPAWN_WAIT_LAUNCHED) would return 0.  A session is
 * used by one thread at a time, and its context must outlive it. */
typedef struct pspawn_session pspawn_session_t;

/* The session reaps its tasks (waitid(2) on a pidfd of each, watched by
 * its fd) and reports each one's wait status.  The caller must then not
 * reap them itself (nor wait for any child: waitpid(-1) would take them).
 * Without it, a created task stays SPAWNED and is the caller's to reap,
 * as after pspawn_vector(). */
#define PSPAWN_SESSION_REAP 0x1u

enum pspawn_task_state {
    PSPAWN_TASK_PENDING = 0,    /* not created yet */
    PSPAWN_TASK_SPAWNED = 1,    /* created: pid (and pidfd) set */
    PSPAWN_TASK_FAILED = 2,     /* never created: error and reason set */
    PSPAWN_TASK_EXITED = 3,     /* created, then reaped by the session */
};

typedef struct pspawn_task_status {
    size_t index;           /* the task's number in the session (submit order, from 0) */
    int state;              /* enum pspawn_task_state */
    pid_t pid;              /* SPAWNED, EXITED: its pid; else -1 */
    int pidfd;              /* SPAWNED, EXITED, with PSPAWN_PIDFD: a pidfd that
                             * the caller owns (and closes); else -1 */
    int error;              /* FAILED: ECANCELED (cancelled), EINVAL (no argv),
                             * E2BIG, or what exec would give; else 0 */
    const char *reason;     /* FAILED: why, a constant string; else NULL */
    int wait_status;        /* EXITED: as waitpid(2) gives it (WIFEXITED...), or -1
                             * if someone else reaped it; else 0 */
} pspawn_task_status_t;

/* Create a session on CTX into *SESSION.  FLAGS: 0 or PSPAWN_SESSION_REAP.
 * Returns 0, EINVAL (no session pointer or context, unknown flags),
 * ENOMEM, or what epoll_create1(2) and timerfd_create(2) give (EMFILE,
 * ENFILE). */
int pspawn_session_create(pspawn_session_t **session, pspawn_context_t *ctx,
                          unsigned flags);

/* Hand N TASKS over (their argv, envp and cpuset; the out fields are not
 * read), as pspawn_vector() with ATTR (NULL: defaults) and ENVP (NULL: the
 * caller's environ, copied now) where a task gives none; they are numbered
 * from *FIRST (may be NULL) on.  The caller's state that tasks start from
 * is taken now: cwd, umask, signal mask, rlimits, affinity, the fds ATTR's
 * file actions name (the session keeps its own copy of each until every
 * task of the call is created or failed), ATTR itself (copied: it may be
 * destroyed at once).  The TASKS array is copied; the strings and sets
 * its entries point to are not, and must stay valid and unchanged until
 * each task is no longer PENDING.  A task that cannot be created at all
 * (no argv, E2BIG) is FAILED when this returns; the first requests are
 * sent to the zygotes before it returns, nothing is waited for (except a
 * new zygote after a library the last one loaded was replaced on disk,
 * which pspawn_vector() waits for too).  Returns 0, EINVAL (no session,
 * TASKS NULL with N > 0), EBUSY (another session has tasks PENDING on the
 * context), ENOMEM, or EMFILE (no fd left for the copies). */
int pspawn_session_submit(pspawn_session_t *session, const pspawn_task_t *tasks, size_t n,
                          const pspawn_attr_t *attr, char *const envp[], size_t *first);

/* The fd to poll (or add to an epoll set) for input: readable whenever
 * pspawn_session_progress() has something to do, a deadline of the
 * pipeline included (a zygote that stops answering is then declared hung
 * by the context's timeout, as in pspawn_vector()).  It belongs to the
 * session; -1 for a NULL session. */
int pspawn_session_fd(const pspawn_session_t *session);

/* Do what can be done now, without waiting for a zygote or a task: read
 * the zygotes' reports, send the next requests, deal with a zygote that
 * died or stopped answering, reap what exited (PSPAWN_SESSION_REAP).  Two
 * things it does in full when they are due: the plain exec of tasks no
 * zygote serves (a few ms of them per call, then the fd stays readable
 * for the rest), and starting a new zygote after a replaced library.  Pid
 * hooks (pspawn_attr_setpidhook) run here, with the session's task
 * numbers as INDEX.  Returns 0, or EINVAL for a NULL session. */
int pspawn_session_progress(pspawn_session_t *session);

/* The next change, oldest first, into *STATUS: a task that became
 * SPAWNED, FAILED or EXITED (a task reaped quickly gives SPAWNED then
 * EXITED).  STATUS->state is the state it changed to; the other fields as
 * pspawn_session_status() gives them.  Returns 1 if there was one, 0 if
 * not (or for a NULL argument). */
int pspawn_session_next(pspawn_session_t *session, pspawn_task_status_t *status);

/* Task INDEX's state now into *STATUS.  Returns 0, or EINVAL (NULL
 * argument, no such task). */
int pspawn_session_status(const pspawn_session_t *session, size_t index,
                          pspawn_task_status_t *status);

typedef struct pspawn_session_counts {
    size_t tasks;           /* submitted */
    size_t pending, spawned, failed, exited;    /* tasks in each state now */
} pspawn_session_counts_t;

/* How many tasks are in each state (all zero for a NULL session). */
void pspawn_session_counts(const pspawn_session_t *session, pspawn_session_counts_t *counts);

#define PSPAWN_WAIT_EVENT    0  /* a change is there for pspawn_session_next() */
#define PSPAWN_WAIT_LAUNCHED 1  /* no task is PENDING, the context is free */
#define PSPAWN_WAIT_EXITED   2  /* that, and every task FAILED or EXITED (needs REAP) */
/* Progress, blocking, until UNTIL holds or TIMEOUT_MS (< 0: no limit)
 * passed.  Returns 0 when it holds, ETIMEDOUT, or EINVAL (NULL session,
 * unknown UNTIL, PSPAWN_WAIT_EXITED without PSPAWN_SESSION_REAP).
 * PSPAWN_WAIT_LAUNCHED always comes: each wait of the pipeline is bounded
 * by the context's timeout. */
int pspawn_session_wait(pspawn_session_t *session, int until, int timeout_ms);

/* Cancel every task not created yet: it becomes FAILED with ECANCELED (a
 * task a zygote already cloned is caught before main and reaped in the
 * background).  A task already SPAWNED, or released by its zygote, stays
 * so.  Tasks submitted later are not affected.  Returns how many were
 * cancelled (0 for a NULL session). */
size_t pspawn_session_cancel(pspawn_session_t *session);

/* Cancel what is PENDING, wait (each wait bounded by the context's
 * timeout) until no request is in flight and the cancelled tasks are
 * reaped, close the session's fds and free it.  Created tasks go on
 * running: they are the caller's children; with PSPAWN_SESSION_REAP those
 * still running are the caller's to reap from now on.  NULL is a no-op. */
void pspawn_session_destroy(pspawn_session_t *session);

/* ---- attributes -------------------------------------------------------- */

int pspawn_attr_init(pspawn_attr_t *attr);
void pspawn_attr_destroy(pspawn_attr_t *attr);

/* File actions, applied in the order they were added, on top of the
 * default set: fds 0, 1 and 2 of the caller at the same numbers.  Every
 * other fd is closed in the task (the fds of the protocol included), so a
 * task has exactly: 0-2 unless closed, plus what was added here.
 *   addopen:    open(PATH, OFLAG, MODE) at FD
 *   adddup2:    the caller's FD (at the time of the spawn) as NEWFD
 *   addclose:   no FD in the task (only meaningful for 0-2 or an fd
 *               added by an earlier action)
 *   addinherit: the caller's FD at the same number
 * Return 0, EBADF (negative fd) or ENOMEM. */
int pspawn_attr_addopen(pspawn_attr_t *attr, int fd, const char *path,
                        int oflag, mode_t mode);
int pspawn_attr_adddup2(pspawn_attr_t *attr, int fd, int newfd);
int pspawn_attr_addclose(pspawn_attr_t *attr, int fd);
int pspawn_attr_addinherit(pspawn_attr_t *attr, int fd);

/* Working directory of the task (default: the caller's at spawn time). */
int pspawn_attr_setcwd(pspawn_attr_t *attr, const char *path);

/* CPU set of every task (default: the caller's affinity). */
int pspawn_attr_setcpuset(pspawn_attr_t *attr, size_t setsize,
                          const cpu_set_t *set);

/* Signal mask of the task (default: the caller's mask at spawn time). */
int pspawn_attr_setsigmask(pspawn_attr_t *attr, const sigset_t *mask);

/* Signals set to SIG_DFL in the task even if the caller ignores them
 * (default: as exec, handled signals reset, ignored signals stay ignored). */
int pspawn_attr_setsigdefault(pspawn_attr_t *attr, const sigset_t *set);

/* Process group: PGID 0 puts each task in a new group of its own; a pid
 * joins that group.  Default: the caller's group. */
int pspawn_attr_setpgroup(pspawn_attr_t *attr, pid_t pgid);

/* Each task starts a new session (setsid). */
int pspawn_attr_setsid(pspawn_attr_t *attr);

/* umask of the task (default: the caller's at spawn time). */
int pspawn_attr_setumask(pspawn_attr_t *attr, mode_t mask);

/* Resource limit RESOURCE of the task (default: the caller's).  EINVAL for
 * an unknown resource. */
int pspawn_attr_setrlimit(pspawn_attr_t *attr, int resource,
                          const struct rlimit *rlim);

/* NUMA memory policy of the task, as set_mempolicy(2) with MODE (an
 * MPOL_* mode, with its mode flags) and bits 0..MAXNODE-1 of NODEMASK (all
 * below 1024).  Default: the caller's at spawn time, as exec keeps it.
 * EINVAL for a negative mode or a node above 1023; a policy the kernel
 * refuses fails the spawn with set_mempolicy's error. */
int pspawn_attr_setmempolicy(pspawn_attr_t *attr, int mode,
                             const unsigned long *nodemask, unsigned long maxnode);

#define PSPAWN_PIDFD      0x1u  /* return a pidfd per task (vector call) */
#define PSPAWN_FORCE_EXEC 0x2u  /* always plain exec (the reference path) */
/* Each task calls ptrace(PTRACE_TRACEME) just before its exec, so that it
 * stops with SIGTRAP at the new program's first instruction, traced by the
 * caller: what a debugger's launcher needs (PRRTE's --stop-on-exec).  A
 * fork of the zygote has no exec to stop at, so this implies the exec path
 * (the reason says so).  A failing ptrace is the spawn's error. */
#define PSPAWN_TRACEME    0x4u
int pspawn_attr_setflags(pspawn_attr_t *attr, unsigned flags);

/* Called once for each task a call creates, in the calling thread, as
 * soon as the task's pid is known and before the task runs a single
 * instruction of its program, so before it can exit.  INDEX is the task's
 * place in the call (TASKS[INDEX] of pspawn_vector(), 0 for pspawn_ex()).
 * A launcher that reaps its children with waitpid(-1) elsewhere (another
 * thread, a SIGCHLD handler) stores the pid here, so that it never reaps
 * an exit whose pid it does not know yet.  A task whose setup failed is
 * never given to it.  On the exec path (a fallback, or PSPAWN_FORCE_EXEC)
 * the hook runs before execve() itself: if that execve() then fails, the
 * call still reports the task's error, and the pid given to the hook is a
 * child that exits with status 127 (as with a fork+exec whose exec fails).
 * With a hook the exec path forks the caller rather than sharing its
 * memory (vfork), since the caller must run while the child waits.  The
 * hook must not spawn through the same context.  HOOK NULL removes it.
 * Returns 0 or EINVAL. */
typedef void (*pspawn_pid_hook_t)(void *arg, size_t index, pid_t pid);
int pspawn_attr_setpidhook(pspawn_attr_t *attr, pspawn_pid_hook_t hook, void *arg);

/* ---- helpers ----------------------------------------------------------- */

/* Resolve FILE as execvp(3) would, using PATH from ENVP (NULL: the
 * caller's environ; default search path if unset), into OUT (OUTLEN
 * bytes).  Returns 0, ENOENT, EACCES (found, but not executable) or
 * ENAMETOOLONG. */
int pspawn_resolve(const char *file, char *const envp[], char *out,
                   size_t outlen);

/* Plain exec of PATH with the same attributes as the zygote path: the
 * reference that the fast path must match, and the fallback it uses. */
int pspawn_exec(pid_t *pid, const char *path, const pspawn_attr_t *attr,
                char *const argv[], char *const envp[]);

#ifdef __cplusplus
}
#endif
#endif
