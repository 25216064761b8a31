/* SPDX-License-Identifier: BSD-3-Clause */
/* Launcher-side internals of libpspawn. */
#ifndef PSPAWN_INTERNAL_H
#define PSPAWN_INTERNAL_H

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "child.h"
#include "execargs.h"
#include "loaderenv.h"
#include "options.h"
#include "protocol.h"
#include "strv.h"
#include "pspawn.h"

#define ATTR_CWD     0x1u
#define ATTR_CPUSET  0x2u
#define ATTR_SIGMASK 0x4u
#define ATTR_SIGDEF  0x8u
#define ATTR_PGROUP  0x10u
#define ATTR_SETSID  0x20u
#define ATTR_UMASK   0x40u
#define ATTR_MEMPOLICY 0x80u

enum attr_action_kind { AA_OPEN, AA_DUP2, AA_CLOSE, AA_INHERIT };

struct attr_action {
    enum attr_action_kind kind;
    int fd;                 /* target */
    int srcfd;              /* AA_DUP2: the caller's fd */
    int oflag;
    mode_t mode;
    char *path;
};

struct pspawn_attr_impl {
    unsigned flags;         /* PSPAWN_PIDFD, PSPAWN_FORCE_EXEC */
    unsigned set;           /* ATTR_* */
    char *cwd;
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    sigset_t sigmask, sigdef;
    pid_t pgroup;
    mode_t umask;
    int mempolicy;
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];
    int nrlimits;
    struct wire_rlimit rlimits[RLIM_NLIMITS];
    int nactions, cap;
    struct attr_action *actions;
    pspawn_pid_hook_t pid_hook;     /* pspawn_attr_setpidhook */
    void *pid_hook_arg;
};

/* What a program is, as exec would see it. */
#define PSPAWN_MAX_INTERP 4
struct program {
    char *path;             /* as given */
    char *exe;              /* the ELF the kernel loads (path, or the #! interpreter) */
    int ninterp;            /* argv words the kernel inserts before path (#!) */
    char *interp_argv[2 * PSPAWN_MAX_INTERP];
    struct stat st_path, st_exe;
    const char *fallback;   /* static, set-id...: a reason to never use a zygote */
};

/* What the caller may do.  A fork of the zygote has what the caller had
 * when the zygote started; an exec, what it has now. */
struct pspawn_creds {
    uid_t uid[3];           /* real, effective, saved */
    gid_t gid[3];
    uint64_t groups;        /* hash of the supplementary groups */
    uint32_t ngroups;
    uint32_t cap[6];        /* capget(2): effective, permitted, inheritable */
    int securebits;
    /* Read only where they can change without capget's sets changing (a
     * caller that cannot change them pays nothing): the bounding set while
     * CAP_SETPCAP is permitted, the ambient set while permitted and
     * inheritable share a capability. */
    uint64_t bounding, ambient;
};

/* A group of CPUs that one fork-serving process serves (topology.c). */
struct pspawn_group {
    unsigned char cpus[PSPAWN_CPUSET_BYTES];
    unsigned char nodes[PSPAWN_NODEMASK_BYTES];     /* the NUMA nodes of its CPUs */
    int ncpus;
    int node;               /* its one NUMA node, or -1 */
    int parent;             /* the group whose zygote makes this one's; -1 for 0 */
};

struct pspawn_topology {
    int ngroups;
    struct pspawn_group *groups;
    int thissystem;         /* 0: HWLOC_XMLFILE or HWLOC_SYNTHETIC: bind nothing */
    char describe[320];
};

/* One fork-serving process: the root zygote (server 0, group 0) or the
 * sub-zygote of a group. */
enum server_state {
    SERVER_NONE,            /* start=lazy: not asked for yet */
    SERVER_STARTING,        /* asked for; requests may queue on its socket */
    SERVER_READY,
    SERVER_LOST,
};

struct zygote_server {
    enum server_state state;
    pid_t pid;
    int pidfd;
    int sock;
    unsigned long tasks;    /* tasks it created */
    double progress_ms;     /* last sign of life while it has requests */
    const int32_t *pid_slot;    /* its pid, as its maker wrote it in the fan-out table */
    char why[200];          /* SERVER_LOST: why */
};

struct pspawn_zygote {
    struct program prog;
    struct pspawn_creds creds;      /* the caller's when the zygote started */
    int fallback;           /* for good: no zygote */
    char reason[512];
    int have_reason;
    int debug;
    int report_r;           /* every server's tasks report here */
    int timeout_ms;
    uint32_t next_req;
    char **loader_env;      /* the zygote's LD_*, GLIBC_TUNABLES, MALLOC_* */
    pid_t pgid, sid;        /* the zygote's process group and session */
    struct pspawn_options opts;
    struct pspawn_topology topo;    /* group g is served by servers[g] */
    struct zygote_server *servers;  /* topo.ngroups of them; [0] is the root */
    unsigned turn;          /* spreads unbound tasks over the groups */
    char replica_dir[128];  /* subzygote=replicate: its groups' copies, DIR-gN */
    struct fanout_map {     /* the fan-out tables sent, kept for their pids */
        void *map;
        size_t size;
    } *tables;
    int ntables;
    unsigned long cgroup_seq;   /* names this context's copies and cgroups */
    int python;             /* the root parked inside a Python interpreter */
    int pip;                /* the root makes PiP tasks (mode=pip, not refused) */
    int pip_refusal;        /* mode=pip refused: enum pip_refusal */
    int objects;            /* the root's link map when it parked (zygote_ready) */
    struct python_start {   /* how it was started (pspawn_python_start) */
        char **argv;        /* argv[0] and the interpreter options */
        char *first_var;    /* PSPAWN_ENV_PYTHON=what the first task runs */
        char *modules_var;  /* PSPAWN_ENV_MODULES=..., or NULL */
    } py_start;
    char **py_env;          /* its start-up environment (PYTHON*, LANG, LC_*, HOME) */
    /* What pspawn_zygote_restart starts a new root with: the creation's
     * core and environment (copied: the loader variables and a warm
     * interpreter's start-up ones must stay those the checks compare
     * with); the interpreter options are in py_start. */
    int start_core;
    char **start_env;
    int stale;              /* a zygote exited: a library it loaded was replaced on disk */
    /* The launch (batch.h) whose requests are in flight: the one reader
     * of the report pipe until it has none (a session's tasks go on
     * without it). */
    const void *in_use;
};

/* The launcher's state at the time of a call, merged with an attribute
 * object: what every task of the call starts from. */
struct call {
    const struct pspawn_attr_impl *attr;
    unsigned flags;                 /* REQ_* */
    unsigned user_flags;            /* PSPAWN_* */
    char cwd[PATH_MAX];
    int cwd_inherited;              /* cwd is the caller's own (no ATTR_CWD) */
    mode_t umask;
    pid_t pgroup;
    int ctty_fd;                    /* REQ_CTTY */
    int nice;
    int sched_policy, sched_priority;
    int mempolicy;                  /* REQ_MEMPOLICY */
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];
    int seccomp;                    /* pspawn_seccomp_filters() */
    struct wire_procstate proc;     /* pspawn_procstate_get() */
    uint64_t sigmask;
    uint64_t handled;               /* signals with a handler in the caller */
    uint64_t ignored;               /* ignored in the caller and not in sigdef */
    uint64_t sigdef;
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    int have_cpuset;
    struct wire_rlimit rlimits[RLIM_NLIMITS];
    int nrlimits;
    /* Canonical file actions: FA_DUP2 sources index fds[]. */
    struct child_action actions[PSPAWN_FD_MAX + 3];
    int nactions;
    int fds[PSPAWN_FD_MAX];         /* the caller's fds the tasks take */
    int nfds;
    char *const *envp;
};

/* attr.c */
int pspawn_call_init(struct call *c, const pspawn_attr_t *attr,
                     char *const envp[]);
/* A deep copy of SRC (NULL: defaults) into DST, for a launch that
 * outlives the caller's object.  0 or ENOMEM. */
int pspawn_attr_copy(pspawn_attr_t *dst, const pspawn_attr_t *src);

/* inspect.c */
int pspawn_program_inspect(struct program *p, const char *path);
/* As pspawn_program_inspect, each file opened once and checked on that
 * fd; the ELF the kernel would load stays open in *EXE_FD (an O_PATH fd,
 * which exec takes) if EXE_FD is not NULL. */
int pspawn_program_open(struct program *p, const char *path, int *exe_fd);
/* Whether A and B are the same program (files, interpreter words). */
int pspawn_program_same(const struct program *a, const struct program *b);
void pspawn_program_free(struct program *p);
int pspawn_program_changed(const struct program *p);
/* E2BIG if execve would refuse ARGV and ENVP for a program whose
 * RLIMIT_STACK is STACK_LIMIT (its soft limit), else 0. */
static inline int pspawn_args_too_big(const char *filename, char *const argv[],
                                      char *const envp[], uint64_t stack_limit)
{
    return pspawn_args_too_big_plus(filename, argv, envp, stack_limit, 0, 0);
}
/* The soft RLIMIT_STACK a task of call C starts with. */
uint64_t pspawn_call_stack_limit(const struct call *c);

/* exec.c: a plain exec of task INDEX of a call with the call's
 * attributes (and its pid hook, if any). */
int pspawn_exec_task(pid_t *pid, const char *path, const struct call *c, size_t index,
                     const unsigned char *cpuset, char *const argv[],
                     char *const envp[]);
/* The same for the zygote itself, with its extra fds at fixed numbers. */
int pspawn_exec_setup(pid_t *pid, const char *path, struct child_setup *s,
                      uint64_t sigmask, char *const argv[], char *const envp[]);

/* encode.c: the one encoder of requests, for every front door. */
/* A request on the wire: its memfd, mapped shared with the zygote (the
 * kernel writes pid[], go[] is swapped there). */
struct encoded_request {
    struct wire_go *go;     /* the go block, shared with the zygote and tasks */
    size_t size;            /* of the request memfd */
    int memfd, gofd;
};
/* One task of a request. */
struct encode_task {
    char *const *argv;
    char *const *envp;
    const unsigned char *cpuset;    /* PSPAWN_CPUSET_BYTES, or NULL */
};
/* Encode CALL's state with the K tasks T into a new memfd; PGROUP > 0
 * makes them join that process group, TOKEN (or NULL) is a stand-in's.
 * 0, or an errno (E2BIG: over 4 GB). */
int pspawn_encode_request(struct encoded_request *r, const struct call *c,
                          const struct encode_task *t, int k, pid_t pgroup, const char *token);
/* Send R as request ID on SOCK with the call's fds.  0 or an errno. */
int pspawn_send_request(int sock, uint32_t id, const struct encoded_request *r,
                        const struct call *c);
void pspawn_encoded_release(struct encoded_request *r);

/* A stand-in's hold on its task: the request's shared mapping, whose
 * go[0] releases a held task (REQ_HOLD). */
struct pspawn_hold {
    struct encoded_request req;
    int held;
};
/* Send one stand-in request (a task of CALL's state with TASK's argv and
 * envp) on SOCK, with the step's TOKEN.  *HOLD (if not NULL) keeps the
 * request so that pspawn_standin_go can release the task, which with
 * REQ_HOLD in CALL's flags waits until then (or until the caller is
 * gone). */
int pspawn_send_standin(int sock, const struct call *c, pspawn_task_t *task,
                        const char *token, struct pspawn_hold *hold);
/* Let the held task run (RUN) or exit 127 without running (!RUN). */
void pspawn_standin_go(struct pspawn_hold *hold, int run);

/* topology.c */
/* Split the CPUs the caller may use into groups as O's fanout asks.  0, or
 * an errno with T->describe saying why. */
int pspawn_topology_groups(const struct pspawn_options *o, int whole, struct pspawn_topology *t);
void pspawn_topology_free(struct pspawn_topology *t);
/* T as text (pspawn-topology prints it), and back. */
void pspawn_topology_write(const struct pspawn_topology *t, FILE *f);
int pspawn_topology_read(const char *text, struct pspawn_topology *t);
/* The group a task bound to CPUS goes to: the one its CPUs fall in, or in
 * turn (*TURN) one of those they span. */
int pspawn_topology_group_of(const struct pspawn_topology *t, const unsigned char *cpus,
                             unsigned *turn);

/* standin.c: the stand-in client (pspawn-shim). */
struct pspawn_standin_client {
    const char *path;           /* the program */
    const char *key;            /* the step's zygote listens on pspawn-KEY */
    const char *token;          /* the step's secret */
    const char *local_tasks;    /* tasks of the step on this node */
    const char *options;        /* the step's options (fanout=...), or NULL */
    char *const *argv;          /* the task's command line (a warm Python's options) */
    const struct program *prog; /* the program, inspected */
    void (*log)(const char *msg);   /* what happens, for debugging; or NULL */
    pid_t zpid;                 /* out: the zygote, if this call started it */
    pid_t keeper;               /* out: its keeper, our child (keeper.c), to be waited for */
    pid_t starter;              /* in the keeper: the process that had the zygote started */
    int fail_fd;                /* out: listening while the start failed */
    /* A job's zygote (srun --pspawn=reuse=job): root started it for the
     * step (pspawn_standin_start_job); a stand-in never starts one. */
    int job;
    /* A launcher's zygote (the interception library's stand-ins): the
     * stand-in that starts it leaves it to nobody (no waiting on it), and
     * it checks the zygote shares its namespaces and cgroups. */
    int detach;
    int start_failed;           /* out: this call's start of the zygote failed */
    /* out: the zygote was not there at once (this call started it, or
     * waited for another's start): the call's time is not a task's. */
    int not_at_once;
    /* out: what the zygote's hello said of it: the objects in its link
     * map (HELLO_OBJECTS; 0: not said), and whether it is a warm Python. */
    int zygote_objects, zygote_python;
    long idle_ms;               /* a job's or launcher's zygote: its idle time limit */
};
/* A connection to the step's zygote, which this call starts if no other
 * stand-in has (then C->zpid is our child and must be waited for).
 * Returns the socket, or -1 when the zygote cannot be reached. */
int pspawn_standin_connect(struct pspawn_standin_client *c);
/* The starter of a job's zygote (pspawn-shim --job-zygote), which holds
 * the zygote's lock name on LOCK_FD: start the zygote (C->idle_ms, no
 * task count), wait until it parks, make its fan-out, and let the lock go.
 * 0, or -1 (C's log says why; the step's stand-ins then exec). */
int pspawn_standin_start_job(struct pspawn_standin_client *c, int lock_fd);
/* Start the zygote NAME with C's program and options, as our child, and
 * wait until it parked (and took its fan-out): its pid, or -1 (C's log
 * says why).  Called in its keeper (pspawn_keeper_start). */
pid_t pspawn_standin_start_zygote(const struct pspawn_standin_client *c, const char *name);
/* A line of C's log (standin-start.c), if C has one. */
void pspawn_standin_say(const struct pspawn_standin_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* keeper.c: the process that starts a stand-in zygote and stays its
 * parent, a child subreaper that keeps its tasks' exit status should it
 * die while they run. */
/* Fork the keeper, which starts the zygote NAME, closes its copy of
 * LOCK_FD and says whether the zygote parked: the keeper's pid with
 * C->zpid the zygote's, or -1 (the keeper has exited, and been waited
 * for).  Our own LOCK_FD is the caller's to close. */
pid_t pspawn_keeper_start(struct pspawn_standin_client *c, const char *name, int lock_fd);

/* The hello of the zygote behind FD (C->detach: pspawn_standin_connect
 * did not read it): 0 if its loader's variables (and a warm
 * interpreter's start-up ones) are ours, else -1 with WHY. */
int pspawn_standin_hello(struct pspawn_standin_client *c, int fd, char *why, size_t len);
/* How long a stand-in waits for its zygote: 3 x PSPAWN_TIMEOUT (30 s by
 * default), in ms. */
int pspawn_standin_wait_ms(void);
/* Send the one-task request of a stand-in: ARGV with everything exec would
 * have given the task from this process (environ, cwd, umask, rlimits,
 * affinity, signal state, and every inherited fd but SOCK and SKIP[] at
 * its own number).  HOLD: as pspawn_send_standin's.  FLAGS: REQ_HOLD (the
 * task waits for pspawn_standin_go), REQ_SETSID (it leads a session of
 * its own), REQ_SETPGROUP (it joins process group PGROUP, 0: one of its own),
 * REQ_STANDIN_BOUND (the zygote kills the task should this stand-in
 * vanish before it), REQ_CTTY with REQ_SETSID (the task takes the terminal
 * at its fd CTTY_FD, 0-2, as its controlling terminal), or 0. */
int pspawn_standin_send(int sock, char **argv, const char *token, const int *skip, int nskip,
                        struct pspawn_hold *hold, unsigned flags, pid_t pgroup, int ctty_fd);

/* standin-wait.c: a stand-in's life once its request is sent. */
/* recv() of one message within MS ms: -1 with ETIMEDOUT after that. */
ssize_t pspawn_recv_within(int fd, void *buf, size_t len, int ms);
/* Whether TASK descends from the zygote at the other end of SOCK (its
 * child, or a sub-zygote's): a pid that does not cannot be ours to
 * signal, move or wait for. */
int pspawn_zygote_made(int sock, pid_t task);
/* The zygote's answer to a stand-in's request, within WAIT_MS: the task's
 * pid, or -1 with *WHY (a sentence) when there is no task.  *SETUP: the
 * task's setup pipe (for pspawn_standin_setup_done), or -1. */
pid_t pspawn_standin_started(int sock, int wait_ms, int *setup, const char **why);
/* Wait (PSPAWN_SETUP_WAIT_MS at most) until TASK, whose setup pipe SETUP
 * this closes, is set up: 0, or -1 with *WHY when its setup failed (it
 * exits 127 without running its program) or got stuck (it is killed).  A
 * released task's program runs only once its setup has succeeded. */
int pspawn_standin_setup_done(int setup, pid_t task, const char **why);
/* Where a stand-in takes the signals it must pass on while it waits: TAKE
 * is called when FD is readable. */
struct pspawn_standin_signals {
    int fd;
    void (*take)(void *arg);
    void *arg;
};
/* Wait for the zygote's word on SOCK of TASK's end: its wait status, or -1
 * when none came within GRACE_MS of the task's end (TASK_PIDFD; the
 * zygote is gone or stopped).  SIG (or NULL) is served meanwhile. */
int pspawn_standin_task_status(int sock, pid_t task, int task_pidfd, int grace_ms,
                               const struct pspawn_standin_signals *sig);
/* The zygote is gone while TASK runs (someone else's child now): wait
 * until it has ended and give its wait status where the kernel kept it
 * (a zombie, or PIDFD_GET_INFO of Linux 6.15), else -1. */
int pspawn_standin_orphan_status(pid_t task, int pidfd, const struct pspawn_standin_signals *sig);
/* The zygote pspawn-KEY is gone while TASK (started at START, /proc stat field
 * 22) runs: wait until it has ended and give its wait status, from the
 * zygote's keeper (any kernel), else from PIDFD (a zombie, or Linux
 * 6.15's PIDFD_GET_INFO); -1 when neither can tell.  *FROM: which. */
int pspawn_standin_lost_status(const char *key, pid_t task, unsigned long long start, int pidfd,
                               const struct pspawn_standin_signals *sig, const char **from);
/* Exit as the task did: the same code, or the same signal with no core. */
void pspawn_standin_exit_like(int status) __attribute__((noreturn));

/* environ.c */
/* The proxy library to preload ($PSPAWN_PROXY, else the installed one). */
const char *pspawn_proxy_path(void);
/* A zygote's environment: BASE (NULL: the caller's environ), with the
 * proxy appended to its LD_PRELOAD, the user's value kept for the proxy
 * to restore, and EXTRA (NULL-terminated "K=V"
 * strings); RECORD: libpspawn-record.so after the proxy (preload=auto). */
char **pspawn_zygote_environ(const char *const extra[], char *const base[], int record, int pip);
/* The loader variables of ENV, copied, NULL-terminated (NULL: no memory). */
char **pspawn_loader_env_of(char *const env[]);
/* NULL if ENVP has the zygote's loader variables, else the name (up to
 * '=') of the first that differs. */
const char *pspawn_loader_env_differs(const struct pspawn_zygote *z,
                                      char *const envp[], size_t *namelen);
/* The entries of ENV that PICK picks, copied, NULL-terminated (NULL: no
 * memory). */
char **pspawn_env_subset(char *const env[], int (*pick)(const char *));
/* NULL if ENVP's picked entries are exactly SUBSET, else the first that
 * differs or is missing (its name is *NAMELEN bytes). */
const char *pspawn_env_subset_differs(char *const subset[], char *const envp[],
                                      int (*pick)(const char *), size_t *namelen);

/* python.c: the warm Python zygote, launcher side. */
/* How a zygote that may turn out to be a Python interpreter is started
 * under options O: ARGV's (or PROG's #! line's) interpreter options, and
 * the variables naming what the first task runs and the modules to import.
 * All NULL when python=off.  0 or ENOMEM. */
int pspawn_python_start(const struct pspawn_options *o, const struct program *prog,
                        char *const argv[], struct python_start *ps);
void pspawn_python_start_free(struct python_start *ps);
/* The argv to exec the zygote of PROG with: PS->argv, or for a #! script,
 * whose options the kernel adds, its argv[0] alone (in FIRST_ONLY). */
char *const *pspawn_python_exec_argv(const struct program *prog, const struct python_start *ps,
                                     char *first_only[2]);
/* Keep what a zygote needs to start as a warm interpreter, should it be
 * one: ARGV's interpreter options (a #! script's from its first line), what
 * the first task runs, the modules to import, the start-up environment of
 * ENVP.  Nothing when python=off.  0 or ENOMEM. */
int pspawn_python_prepare(struct pspawn_zygote *z, char *const argv[], char *const envp[]);
void pspawn_python_free(struct pspawn_zygote *z);
/* NULL if the warm interpreter of Z can run a task of ARGV (as exec'd)
 * as an exec'd interpreter would, else why not. */
const char *pspawn_python_argv_refusal(const struct pspawn_zygote *z, char *const argv[]);
/* NULL if ENVP has the warm interpreter's start-up variables, else the
 * first that differs (its name is *NAMELEN bytes). */
const char *pspawn_python_env_differs(const struct pspawn_zygote *z, char *const envp[],
                                      size_t *namelen);

/* creds.c */
/* Read the caller's credentials; returns 0 or an errno. */
int pspawn_creds_get(struct pspawn_creds *c);
/* What differs between A and B ("user IDs", ...), or NULL. */
const char *pspawn_creds_differ(const struct pspawn_creds *a, const struct pspawn_creds *b);

/* zygote.c: starting, signalling, reaping and losing zygotes (what
 * context.c's lifecycle and the handle below are made of). */
/* How a zygote is exec'd, by a context (direct mode) or by the stand-in
 * shim (stand-in mode): PATH with the proxy preloaded, BASE_ENV (NULL: the
 * caller's environ) plus EXTRA_ENV, the caller's stdio or /dev/null, the
 * caller's FDS[i] at number AT[i], every signal at its default and none
 * blocked, and CPUSET as its affinity (NULL: the caller's). */
#define ZYGOTE_EXEC_FDS 4
struct zygote_exec {
    const char *path;
    char *const *argv;      /* NULL: { PATH } */
    char *const *base_env;
    const char *const *extra_env;
    int null_stdio;
    int fds[ZYGOTE_EXEC_FDS], at[ZYGOTE_EXEC_FDS], nfds;
    const unsigned char *cpuset;
    int record;             /* preload=auto: the recorder preloaded too */
    int pip;                /* a PiP root (mode=pip) */
};
int pspawn_zygote_exec(const struct zygote_exec *x, pid_t *pid);
/* Wait up to TIMEOUT_MS for the ready message of the zygote PID on SOCK.
 * Returns 0 (*R filled), ETIMEDOUT, EPIPE (closed: it died), or EPROTO
 * (the message came from another pid, in R->pid). */
int pspawn_zygote_await(int sock, pid_t pid, int timeout_ms, struct zygote_ready *r);
/* Start Z's root zygote (pinned to CORE while it loads, if >= 0) and, as
 * Z->opts ask, its sub-zygotes; a zygote that cannot serve leaves Z in
 * fallback with the reason.  0 or ENOMEM. */
int pspawn_zygote_start(struct pspawn_zygote *z, int core, char *const envp[]);
/* Kill and reap every zygote of Z, close their channels. */
void pspawn_zygote_stop(struct pspawn_zygote *z);
/* How long a zygote may take to load and park before it counts as hung. */
int pspawn_start_timeout_ms(const struct pspawn_zygote *z);
/* Ask the root for the sub-zygote of group S (start=lazy): requests may be
 * sent to it at once.  0, or an errno (S then lost). */
int pspawn_server_start(struct pspawn_zygote *z, int s);
/* Take server S's ready message off its socket (SERVER_STARTING): 1 when
 * it is ready, 0 when nothing came, -1 when it failed (then lost). */
int pspawn_server_ready(struct pspawn_zygote *z, int s);
/* Server S is gone or useless: hang up, kill it if HOW says SERVER_KILL
 * (and wait for it to die, within the timeout), reap it, and never send
 * to it again.  SERVER_STOP: we stop it (destroy, exec from now on), no
 * loss worth a word.  The root takes its sub-zygotes with it; with no
 * server left, Z falls back to exec for good. */
enum { SERVER_KILL = 1, SERVER_STOP = 2 };
void pspawn_server_lost(struct pspawn_zygote *z, int s, unsigned how, const char *why);
/* The server to send a task bound to CPUS to, or -1 if none serves. */
int pspawn_server_for(struct pspawn_zygote *z, const unsigned char *cpus);

/* handle.c: the zygote handle.  The launch engine (batch.h: vector.c,
 * pipeline.c, servers.c, request.c, settle.c) reads a context's zygote state
 * (servers[], report_r, timeout_ms, stale, fallback) but changes it only
 * through these calls, the per-server ones below them (pspawn_server_ready,
 * pspawn_server_lost), and pspawn_fallback (why tasks are exec'd).  The
 * context (context.c) owns the rest of the lifecycle: create, restart,
 * destroy. */
/* The server to send a task bound to CPUS to (a start=lazy sub-zygote is
 * asked for now), or -1 if none serves (Z falls back to exec). */
int pspawn_zygote_route(struct pspawn_zygote *z, const unsigned char *cpus);
/* A request id, unique in Z. */
uint32_t pspawn_zygote_next_id(struct pspawn_zygote *z);
/* Server S showed life now (a request sent to it while idle, a report
 * from one of its tasks); CREATED: that task is created. */
void pspawn_zygote_heard(struct pspawn_zygote *z, int s, int created);
/* Whether Z's zygotes still stand for the program and the caller: 0, with
 * every zygote lost (exec from now on) and the reason, if the binary or
 * the caller's credentials changed since they started; else 1. */
int pspawn_zygote_current(struct pspawn_zygote *z);
/* A zygote of Z exited because a library it loaded was replaced on disk
 * (Z->stale): stop every zygote of Z and start a new root (and its
 * sub-zygotes) as Z was created, so that its tasks get the new library.
 * Leaves Z in fallback with the reason where the new one cannot serve.
 * 0 or ENOMEM (then Z is in fallback for good). */
int pspawn_zygote_restart(struct pspawn_zygote *z);
/* LAUNCH (a synchronous call's engine, or a session's) holds Z: the one
 * reader of its report pipe while its tasks are in flight.  0, or EBUSY
 * while another launch holds it. */
int pspawn_zygote_claim(struct pspawn_zygote *z, const void *launch);
/* LAUNCH lets Z go, if it holds it. */
void pspawn_zygote_release(struct pspawn_zygote *z, const void *launch);

/* fanout.c (launcher side): the groups and their sub-zygotes. */
/* Z's groups from its options and the topology, and a server for each
 * (none started).  0 or ENOMEM; the topology failing means one group. */
int pspawn_fanout_plan(struct pspawn_zygote *z);
/* With the root parked: ask it for its sub-zygotes (start=eager: all, and
 * wait for them; lazy: none yet).  0 or ENOMEM. */
int pspawn_fanout_start(struct pspawn_zygote *z);
/* The fan-out message a stand-in sends the root it started, on SOCK. */
int pspawn_fanout_send_standin(int sock, const struct pspawn_topology *t,
                               const struct pspawn_options *o);
/* Remove what the fan-out made outside the processes: replica copies,
 * cgroups; free the servers. */
void pspawn_fanout_cleanup(struct pspawn_zygote *z);
/* Why a zygote that reported STATUS (enum zygote_status, not PARKED) with
 * DETAIL cannot serve, as a sentence for the fallback reason. */
void pspawn_zygote_refusal(char *buf, size_t size, int status, int detail);
void pspawn_fallback(struct pspawn_zygote *z, int for_good, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Every server of Z lost (see pspawn_server_lost): exec from now on. */
void pspawn_zygote_lost(struct pspawn_zygote *z, int kill_it);
/* Returns 0 or the errno of the signal (EPERM once the caller dropped
 * the privileges the zygote still has). */
int pspawn_signal_server(const struct zygote_server *sv, int sig);
/* Reap server SV (through its pidfd where there is one), its wait status
 * in *STATUS: 1, or 0 when someone else reaped it. */
int pspawn_reap_server(struct zygote_server *sv, int *status);
void pspawn_debug(const struct pspawn_zygote *z, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* util.c */
uint64_t pspawn_sigset_to_u64(const sigset_t *s);
int pspawn_env_true(const char *name);
double pspawn_now_ms(void);
/* Reap the child PIDFD refers to if it has exited (WNOHANG): 1, with its
 * wait status (as waitpid's) in *STATUS; 0 while it runs; -1 if it is no
 * child of ours to reap (someone else reaped it). */
int pspawn_pidfd_try_reap(int pidfd, int *status);

/* A pidfd of our child PID to reap it by (pspawn_pidfd_try_reap), or -1:
 * with errno ENOSYS where waitid(2) takes no P_PIDFD (Linux 5.3 has
 * pidfd_open, waitid's P_PIDFD came in 5.4), where the caller reaps by pid
 * as on kernels without pidfds. */
int pspawn_pidfd_open_reapable(pid_t pid);

#endif
