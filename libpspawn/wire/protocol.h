/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire format between a launcher (libpspawn) and its zygote (the proxy).
 *
 * Control channel: an AF_UNIX SOCK_SEQPACKET socket pair.  The zygote sends
 * one zygote_ready message after parking; the launcher sends one request
 * message per batch of at most PSPAWN_REQ_MAX tasks, each carrying, by
 * SCM_RIGHTS, the memfd that holds the request (first) and the fds the
 * tasks' file actions take from the launcher.
 *
 * Reports: one pipe per context, shared by all its zygotes, and one
 * record (task_report, index PSPAWN_REPORT_DONE) per request, so that the
 * launcher wakes once per request, not once per task.  Each task says in
 * its slot of the go block how its setup ended (setup[i]) and counts
 * itself out of the request (left); the zygote counts itself out once it
 * has cloned what it could and let go of the request.  Whoever brings the
 * count to zero, a task or the zygote, writes the request's record.  A
 * task whose setup failed, or one the zygote could not clone, also gets a
 * record of its own (its errno), written before it is counted out, so
 * that the launcher reads it before the request's.  Records are smaller
 * than PIPE_BUF, so writes from many processes never interleave.
 *
 * The request memfd is sealed against shrinking and growing
 * (F_SEAL_SHRINK|F_SEAL_GROW): its sender cannot fault the zygote by
 * truncating it.  The zygote checks the seals and the size, then reads the
 * request into a private copy, and parses and uses only that, so what it
 * checked is what it uses.
 *
 * Release ("go"): a second memfd per request, the go block (struct
 * wire_go, sealed the same way and of exactly that size), is mapped shared
 * by the launcher and the zygote, and so by every task cloned from it.
 * The kernel writes each task's pid into pid[i] (CLONE_PARENT_SETTID)
 * before the task can run, so the launcher has it before the task's first
 * instruction.  The zygote then releases the task itself: go[i] from
 * GO_HOLD (or GO_WAITING, the task asleep on it) to GO_RUN, by
 * compare-and-swap; with REQ_LAUNCHER_GO the launcher does, once it has
 * given its caller the pid.  A launcher that gives up on a zygote (dead,
 * hung) swaps every go word still held to GO_CANCEL: a task it catches
 * exits 127 without running and is retried by exec, a task already
 * released runs and is the launcher's.  Never lost, never twice.
 *
 * Fan-out: one fanout message (PSPAWN_FANOUT_MAGIC) to the root zygote
 * lists the groups of CPUs and the sockets of the sub-zygotes to make
 * (wire_fanout).  Each sub-zygote sends its own zygote_ready on its socket
 * and serves requests there as the root does on its own.
 */
#ifndef PSPAWN_PROTOCOL_H
#define PSPAWN_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PSPAWN_MAGIC        0x7073707au /* "psp" + version 'z' */
#define PSPAWN_FANOUT_MAGIC 0x70737046u /* "pspF" */
#define PSPAWN_REQ_MAX      64
#define PSPAWN_FD_MAX       64          /* fds passed per request */
#define PSPAWN_REPORT_DONE  0xffffffffu

/* Fds of the zygote at exec, numbers chosen high so that constructors get
 * the same fd numbers they would in a task started by exec. */
#define PSPAWN_ENV_SOCK     "PSPAWN_ZYGOTE_SOCK"
#define PSPAWN_ENV_REPORT   "PSPAWN_ZYGOTE_REPORT"
#define PSPAWN_ENV_PRELOAD  "PSPAWN_ZYGOTE_LD_PRELOAD"   /* the user's, to restore */
/* The pid of the process that exec'd the zygote: a process that finds
 * these variables but has another parent inherited them from a zygote's
 * constructor (system(), popen()) and must not park. */
#define PSPAWN_ENV_PARENT   "PSPAWN_ZYGOTE_PARENT"
/* The state the zygote was exec'd with (see pspawn_base_format), so that it
 * can tell what its constructors changed from what its caller changes. */
#define PSPAWN_ENV_BASE     "PSPAWN_ZYGOTE_BASE"
/* Stand-in mode: the zygote listens on an abstract socket, serves only
 * its user and callers that know the token, and forks tasks as its own
 * children, reporting each one's exit status to its stand-in. */
#define PSPAWN_ENV_LISTEN   "PSPAWN_ZYGOTE_LISTEN"
#define PSPAWN_ENV_TOKEN    "PSPAWN_ZYGOTE_TOKEN"
#define PSPAWN_ENV_TASKS    "PSPAWN_ZYGOTE_TASKS"
/* A job's stand-in zygote (srun --pspawn=reuse=job): it outlives its
 * starter and every step, serves until this many ms pass without a
 * stand-in, and finishes its running tasks and ends on SIGTERM. */
#define PSPAWN_ENV_IDLE     "PSPAWN_ZYGOTE_IDLE"
/* A stand-in zygote whose parent is its keeper (launcher/keeper.c): the
 * pid of the process that had it started (a step's first stand-in, whose
 * own task's end lets the zygote go sooner when idle). */
#define PSPAWN_ENV_STARTER  "PSPAWN_ZYGOTE_STARTER"
#define PSPAWN_TOKEN_LEN    64
/* A sub-zygote exec'd by its root: "INDEX:NODE:CPUS" (CPUS in hex, as
 * PSPAWN_CPUSET_BYTES bytes; empty: do not bind), the group it serves. */
#define PSPAWN_ENV_GROUP    "PSPAWN_ZYGOTE_GROUP"
/* Stand-in mode: a sub-zygote gets its stand-ins' connections from the
 * root on this fd, not by listening. */
#define PSPAWN_ENV_FORWARD  "PSPAWN_ZYGOTE_FORWARD"
/* subzygote=replicate: the sub-zygote's copies of the libraries, removed
 * when it exits. */
#define PSPAWN_ENV_REPLICA  "PSPAWN_ZYGOTE_REPLICA"
/* How the zygote was exec'd: "FD:PATH", the fd of the program as the
 * launcher inspected it (exec'd through /proc/self/fd/FD, so that what
 * runs is what was inspected) and the path that stands for. */
#define PSPAWN_ENV_EXEC     "PSPAWN_ZYGOTE_EXEC"
/* subzygote=cgroup: the launcher's cgroup (an fd), where tasks are made. */
/* Learned library preloads (zygote/preload.c): "auto" or a list's path. */
#define PSPAWN_ENV_PRELOAD_LIBS "PSPAWN_ZYGOTE_PRELOAD_LIBS"
#define PSPAWN_ENV_TASK_CGROUP "PSPAWN_ZYGOTE_TASK_CGROUP"
/* mode=pip: the zygote makes its tasks Process-in-Process (zygote/pip.c). */
#define PSPAWN_ENV_PIP      "PSPAWN_ZYGOTE_PIP"
/* What each PiP task finds in its environment: "RANK:REGISTRY", its rank
 * and the address of its root's registry (pspawn_pip_get_addr). */
#define PSPAWN_ENV_PIP_TASK "PSPAWN_PIP_TASK"
/* The most sub-zygotes one fan-out makes: one fd each in one message. */
#define PSPAWN_FANOUT_MAX   240

enum zygote_status {
    ZYGOTE_PARKED = 0,      /* ready to serve */
    ZYGOTE_THREADED = 1,    /* detail: thread count */
    ZYGOTE_NO_LIBC_START = 2,
    ZYGOTE_LISTEN_FAILED = 3,   /* stand-in mode: detail errno */
    ZYGOTE_POSIX_TIMERS = 4,    /* detail: how many */
    ZYGOTE_PYTHON_REFUSED = 5,  /* detail: enum python_refusal */
    ZYGOTE_TOO_MANY_FDS = 16,   /* constructors left more fds than a zygote keeps
                                 * (detail: how many) */
};

/* The exit status of a zygote that saw a library it loaded replaced on
 * disk: its tasks would run the old one. */
#define ZYGOTE_EXIT_STALE 75

/* Why a Python interpreter could not be made a warm zygote. */
enum python_refusal {
    PYTHON_TOO_OLD = 1,         /* before 3.8: no sys.orig_argv, no PyOS_AfterFork_Child */
    PYTHON_BOOTSTRAP = 2,       /* the bootstrap failed (its error is on the zygote's stderr) */
    PYTHON_IMPORTS_SHOWN = 3,   /* -X importtime or -X tracemalloc: a task shows what it
                                 * imports, which preloading would change */
};

#define READY_PYTHON 0x1        /* zygote_ready.flags: parked inside a Python interpreter */
#define READY_PIP 0x2           /* zygote_ready.flags: its tasks are Process-in-Process */
/* zygote_ready.flags bits 8-15: why mode=pip was refused (a forking
 * zygote serves instead), enum pip_refusal. */
#define READY_PIP_REFUSAL(flags) (((flags) >> 8) & 0xffu)
#define READY_PIP_REFUSED(why) ((uint32_t)(why) << 8)

/* Why a program's tasks cannot be PiP tasks (zygote/pip.c); the text is
 * pspawn_pip_refusal_text(). */
enum pip_refusal {
    PIP_OK = 0,
    PIP_NOT_PIE = 1,            /* a fixed-address executable: it cannot be loaded twice */
    PIP_NO_MAIN = 2,            /* main is not in the dynamic symbol table */
    PIP_OWN_TLS = 3,            /* the program has thread-local variables (PT_TLS) */
    PIP_ORIGIN = 4,             /* its RPATH/RUNPATH uses $ORIGIN */
    PIP_MPI = 5,                /* it links an MPI library that is not PiP-aware */
    PIP_NO_COPY = 6,            /* its image could not be copied (memfd) */
    PIP_NO_DLMOPEN = 7,         /* this libc has no dlmopen */
    PIP_REFUSAL_MAX
};
static inline const char *pspawn_pip_refusal_text(unsigned why)
{
    static const char *const text[PIP_REFUSAL_MAX] = {
        [PIP_OK] = "",
        [PIP_NOT_PIE] = "it is not a position-independent executable (link with -pie)",
        [PIP_NO_MAIN] = "its main is not exported (link with -rdynamic or "
                        "-Wl,--export-dynamic-symbol=main)",
        [PIP_OWN_TLS] = "it has thread-local variables of its own (PT_TLS), which only an "
                        "exec'd program can have at fixed offsets",
        [PIP_ORIGIN] = "its RPATH or RUNPATH uses $ORIGIN, which would name the loader's copy",
        [PIP_MPI] = "it links an MPI library that is not PiP-aware (Open MPI, MPICH)",
        [PIP_NO_COPY] = "its image could not be copied for the loader",
        [PIP_NO_DLMOPEN] = "this C library has no dlmopen",
    };
    return why < PIP_REFUSAL_MAX ? text[why] : "an unknown reason";
}

struct zygote_ready {
    uint32_t magic;
    int32_t status;
    int32_t detail;
    int32_t pid;
    uint32_t flags;             /* READY_* */
    int32_t objects;            /* its link map's objects, its proxy left out */
};

/* Why a request was refused as a whole; its tasks are then exec'd. */
enum request_refusal {
    REFUSE_NONE = 0,
    REFUSE_FD_CONFLICT = 1, /* detail: the fd number */
    REFUSE_MALFORMED = 2,
    /* The caller runs under more seccomp filters than the zygote: a fork
     * of the zygote would escape them.  detail: the caller's count. */
    REFUSE_SECCOMP = 3,
    /* A constructor changed what the caller changed too since the zygote
     * started (exec would apply the constructor's change on top of the
     * caller's): detail says what, CTOR_STATE_*. */
    REFUSE_CTOR_STATE = 4,
};
enum { CTOR_STATE_UMASK = 1000, CTOR_STATE_NICE = 1001 };   /* or a resource */

struct task_report {
    uint32_t req;           /* request id */
    uint32_t index;         /* task index in the request, or PSPAWN_REPORT_DONE */
    int32_t pid;            /* the failed task's pid (-1: not cloned); for
                             * DONE, a refusal's detail */
    int32_t err;            /* the errno of the task's setup (it exits) or
                             * clone; for DONE 0 or a request_refusal */
};

/* Request message.  Its fds: the request's memfd, its go block's memfd
 * (requests only, not fan-out), then the NFDS fds its tasks take. */
struct request_msg {
    uint32_t magic;
    uint32_t id;
    uint32_t size;          /* bytes of the request memfd (its exact size) */
    uint32_t nfds;          /* fds passed after the memfd(s) */
};

/* File action kinds, as in the memfd. */
enum fa_kind { FA_OPEN = 1, FA_DUP2 = 2, FA_CLOSE = 3 };

struct wire_action {
    int32_t kind;
    int32_t fd;             /* target */
    int32_t src;            /* FA_DUP2: index into the passed fds */
    int32_t oflag;
    uint32_t mode;
    uint32_t path;          /* FA_OPEN: offset of the path string */
};

struct wire_rlimit {
    int32_t resource;
    int32_t pad;
    uint64_t cur, max;
};

#define PSPAWN_CPUSET_BYTES 128 /* sizeof(cpu_set_t) */
#define PSPAWN_NODEMASK_BYTES 128   /* NUMA nodes 0..1023 */

#define REQ_SETSID      0x1u
#define REQ_SETPGROUP   0x2u
#define REQ_CWD         0x4u
#define REQ_UMASK       0x8u
#define REQ_CPUSET      0x10u
#define REQ_NICE        0x20u
#define REQ_SCHED       0x40u
/* Stand-in mode: after its setup the task waits for go[0], which its
 * stand-in sets once it has done what must precede the task's first
 * instruction (placing it in its own task cgroup). */
#define REQ_HOLD        0x80u
/* The task's NUMA memory policy (set_mempolicy(2)): exec keeps the
 * caller's, which may differ from the zygote's. */
#define REQ_MEMPOLICY   0x100u
/* The caller has no_new_privs: so must the task. */
#define REQ_NO_NEW_PRIVS 0x200u
/* The task's personality, transparent huge pages switch, I/O priority,
 * timer slack, memory-deny-write-execute (wire_procstate): fork copies
 * them and exec keeps them, so the task must have the caller's. */
#define REQ_PERSONALITY 0x400u
#define REQ_THP_DISABLE 0x800u
#define REQ_IOPRIO      0x1000u
#define REQ_TIMERSLACK  0x2000u
#define REQ_MDWE        0x4000u
/* Direct mode: the launcher releases each task itself, once it has
 * given the task's pid to its caller (a launcher that reaps with
 * waitpid(-1) must know the pid before the task can exit); the zygote
 * leaves go[i] held. */
#define REQ_LAUNCHER_GO 0x8000u
/* Stand-in mode: the task is the stand-in's, as an exec'd program would
 * have been the same process: should the stand-in's connection close
 * before the task has ended (the stand-in was killed), the zygote kills
 * the task (SIGKILL).  The interception library's stand-ins ask this. */
#define REQ_STANDIN_BOUND 0x10000u
/* With REQ_SETSID: the task makes the terminal open at its fd ctty_fd
 * (0, 1 or 2) its controlling terminal once it leads its session, as a
 * session leader that execs keeps its own.  A stand-in that led a session
 * with that terminal gave it up for its task (a terminal is one
 * session's). */
#define REQ_CTTY        0x20000u

/* Process attributes read with pspawn_procstate_get(): -1 where the
 * kernel has none (PR_GET_MDWE before Linux 6.3). */
struct wire_procstate {
    int32_t personality;
    int32_t thp_disable;
    int32_t ioprio;
    int32_t mdwe;
    int64_t timerslack;
};

enum { GO_HOLD = 0, GO_RUN = 1, GO_CANCEL = 2, GO_WAITING = 3 };
/* How a task's setup ended, in its slot of the go block. */
enum { SETUP_PENDING = 0, SETUP_READY = 1, SETUP_FAILED = 2 };

/* The go block: the only memory a request's sender and its zygote and
 * tasks share. */
struct wire_go {
    uint32_t go[PSPAWN_REQ_MAX];    /* futex words, one per task */
    int32_t pid[PSPAWN_REQ_MAX];    /* each task's pid, written by clone */
    uint32_t setup[PSPAWN_REQ_MAX]; /* SETUP_*, written before it counts out */
    /* Not yet counted out: the request's tasks plus its zygote; the
     * sender sets it (ntasks + 1). */
    uint32_t left;
    uint32_t pad;
};

/* Layout of the request memfd. Offsets are from its start. */
struct wire_request {
    uint32_t ntasks;
    uint32_t flags;         /* REQ_* */
    uint32_t umask;
    int32_t pgroup;
    int32_t nice;
    int32_t sched_policy;
    int32_t sched_priority;
    uint32_t launcher_pid;  /* tasks that outlive it unreleased exit */
    uint64_t sigmask;       /* signals 1..64, bit n-1 */
    uint64_t sigign;        /* the launcher's ignored signals, minus sigdefault */
    int32_t mempolicy;      /* mode | mode flags, if REQ_MEMPOLICY */
    int32_t seccomp;        /* the caller's seccomp filters (strict mode: -1) */
    struct wire_procstate proc;     /* the caller's */
    uint32_t cwd;           /* offset of the cwd string, if REQ_CWD */
    uint32_t nrlimits;
    uint32_t rlimits;       /* offset of wire_rlimit[nrlimits] */
    uint32_t nactions;
    uint32_t actions;       /* offset of wire_action[nactions] */
    uint32_t tasks;         /* offset of wire_task[ntasks] */
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];  /* if REQ_MEMPOLICY */
    char token[PSPAWN_TOKEN_LEN];   /* stand-in mode */
    int32_t ctty_fd;        /* REQ_CTTY */
    uint32_t pad;
};

/* STANDIN_HELLO: the stand-in zygote's first message on each connection,
 * before the request: status holds HELLO_* flags, and the message goes on
 * with the environment the zygote was exec'd with, NUL-separated, its own
 * PSPAWN_ZYGOTE_* left out (at most HELLO_MAX bytes), so that the stand-in
 * can compare what the loader read: a task with other LD_* values is
 * exec'd instead. */
enum standin_reply_kind {
    STANDIN_STARTED = 1, STANDIN_EXITED = 2, STANDIN_FAILED = 3, STANDIN_HELLO = 4,
};
#define HELLO_PYTHON 1u     /* a warm Python interpreter */
#define HELLO_NO_ENV 2u     /* the environment was too big to send: not compared */
#define HELLO_PIP 4u        /* its tasks are Process-in-Process */
/* The objects in its link map when it parked, its own proxy left out:
 * the program, each shared library, the loader and the vDSO (up to
 * 32767; zygote_objects()), in the status's upper half: what
 * `default=auto` learns a program's start to cost (wire/worth.h). */
#define HELLO_OBJECTS(n) ((uint32_t)((n) > 0x7fff ? 0x7fff : (n)) << 16)
#define HELLO_OBJECTS_OF(status) ((int)(((uint32_t)(status) >> 16) & 0x7fffu))
#define HELLO_MAX (128 * 1024)

struct standin_reply {
    uint32_t magic;
    int32_t kind;
    int32_t pid;
    int32_t status;         /* EXITED: wait status; FAILED: errno */
};
/* A stand-in's STARTED comes with the read end of its task's setup pipe
 * (SCM_RIGHTS): the zygote does not wait for the task's setup, the
 * stand-in does.  The pipe closes once the task is set up (a held task
 * then waits for its go, REQ_HOLD; another goes on to its main); a task
 * whose setup failed writes its errno there (an int) and exits.  The
 * kernel writes the task's pid into the go block's pid[0] before the task
 * runs, so that a stand-in whose zygote dies before it says STARTED knows
 * whether a task exists.  A setup that takes longer than this is given up
 * (the task, which ran nothing of its program, is killed). */
#define PSPAWN_SETUP_WAIT_MS 10000

/* The keeper of a stand-in zygote (launcher/keeper.c) listens on the
 * zygote's name with this suffix.  A stand-in whose zygote died while its
 * task ran sends one KEEPER_QUERY (its task's pid and its start time,
 * /proc stat field 22: the pid alone could be a later process's) and gets
 * one KEEPER_ANSWER once the keeper, the task's reaper since, has reaped
 * it: its wait status (KNOWN 1), or KNOWN 0 when the keeper did not reap
 * it (someone else did, or it was never the zygote's). */
#define PSPAWN_KEEPER_SUFFIX ".keeper"
#define PSPAWN_KEEPER_MAGIC 0x7073706bu     /* "pspk" */
struct keeper_query {
    uint32_t magic;
    int32_t pid;
    uint64_t start;
};
struct keeper_answer {
    uint32_t magic;
    int32_t pid;
    int32_t known;
    int32_t status;         /* the task's wait status, if KNOWN */
};

/* The fan-out message's memfd: what the receiver (the root zygote, or a
 * forked sub-zygote that forks more) makes.  Groups are listed in the
 * launcher's numbering; the receiver's own is the one with index OWN. */
struct wire_group {
    int32_t index;          /* the group's number, as the launcher counts */
    int32_t parent;         /* the group whose zygote makes this one's */
    int32_t sock;           /* index of its socket in the passed fds */
    int32_t node;           /* the NUMA node its memory comes from, or -1 */
    int32_t pid;            /* written by its maker: the launcher reaps one
                             * that dies before it says it is ready */
    int32_t pad;
    unsigned char cpus[PSPAWN_CPUSET_BYTES];    /* all zero: bind nothing */
};

struct wire_fanout {
    uint32_t ngroups;
    uint32_t subzygote;     /* enum pspawn_subzygote (options.h) */
    int32_t own;            /* the receiver's own group */
    int32_t task_cgroup;    /* subzygote=cgroup: index of the launcher's cgroup fd, or -1 */
    int32_t cgroup_dir;     /* subzygote=cgroup: index of the fd of the cgroups' parent */
    int32_t pad;
    char cgroup_prefix[64]; /* group N's cgroup: PREFIX followed by N, in that parent */
    char replica_dir[128];  /* subzygote=replicate: DIR-gN per group */
    struct wire_group groups[];
};

struct wire_task {
    uint32_t argc, envc;
    uint32_t strings;       /* offset: argv strings then envp strings, NUL-separated */
    uint32_t strings_len;   /* bytes of the argv strings (then env strings) */
    uint32_t env_len;
    uint32_t has_cpuset;
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
};

/* Whether the LEN-byte tokens A and B are equal, in a time that does not
 * depend on where they differ. */
static inline int pspawn_tokens_equal(const char *a, const char *b, size_t len)
{
    unsigned char d = 0;
    for (size_t i = 0; i < len; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

#endif
