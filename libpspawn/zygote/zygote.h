/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote side: libpspawn-proxy.so, preloaded into the program the
 * launcher execs once.  It runs in the user's own process, so it loads no
 * library of its own (every task would inherit it): topology and memory
 * placement come from the launcher as plain masks and are applied with
 * system calls.
 *
 *   start.c    the one entry: the constructor, the __libc_start_main
 *              wrapper, and park_main, which parks or hands over to a
 *              mode that parks inside the runtime it starts
 *   park.c     the park: the state the program reached, recorded, and
 *              the serving started
 *   parked.c   the state (parked), and what every file uses to speak and
 *              to end (debug lines, ready message, hello, exit)
 *   group.c    a zygote becoming its group's: CPUs, NUMA node, pages
 *   selfcheck.c
 *              what a zygote checks of itself at the park: no other
 *              thread, no POSIX timer, not too many constructor fds
 *   task.c     a new task: clone, setup as exec would have made it, the go
 *              handshake, and the return into the real main
 *   parse.c    reading a request off the wire into the setup every task
 *              of it starts from
 *   serve.c    the zygote's life (who started it, its libraries on disk,
 *              waiting), and direct mode: clone the launcher's tasks as
 *              its children
 *   python.c, python-embed.c
 *              the warm Python mode: the interpreter started from C, its
 *              hooks plugged into the park (struct zygote_mode)
 *   fanout.c   sub-zygotes: one fork-serving process per group of CPUs
 *
 * Their calls go one way (tests/unit/call-cycles.sh): start -> the mode
 * -> park -> serving (serve, standin) -> task, parse, fanout -> group,
 * watch -> parked; the park calls a mode only through its hooks.
 *   standin.c  stand-in mode: fork tasks for stand-ins that connect
 *   preload.c  learned preloads: what tasks dlopen'ed, loaded before the park
 *   bind.c     which of them the zygote may bind now, as a task binds lazily
 *   preload-deny.c
 *              objects never preloaded (device or hook setup in constructors)
 *   pip.c      mode=pip: tasks made with clone(CLONE_VM) on a thread's
 *              TLS, each loading the program into a namespace of its own
 *
 * Nothing here is exported but __libc_start_main.
 */
#ifndef PSPAWN_ZYGOTE_H
#define PSPAWN_ZYGOTE_H

#include <limits.h>
#include <linux/prctl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>

#include "child.h"
#include "pin.h"
#include "protocol.h"

typedef int (*main_fn)(int, char **, char **);

/* The most fds the program's constructors may leave open for a zygote to
 * serve it (each task keeps them all). */
#define MAX_CTOR_FDS 1024
/* The most fds one message brings: a request's memfd and passed fds, a
 * forwarded stand-in's connection, or a fan-out's sockets and cgroups. */
#define ZYGOTE_MSG_FDS (PSPAWN_FANOUT_MAX + 4)

struct text_range {
    uintptr_t start;
    size_t len;
};

/* What the zygote looked like when it parked: tasks change only what
 * differs from it.  A sub-zygote updates what it changes in itself (CPU
 * set, memory policy) before it serves. */
/* A fan-out's group, as this zygote knows it (the root, to forward a
 * stand-in to the sub-zygote of its group). */
struct zygote_group {
    unsigned char cpus[PSPAWN_CPUSET_BYTES];
    int fwd;                    /* stand-in root: its sub-zygote's socket, or -1 */
    pid_t pid;
};

struct parked {
    int active;
    int sock, report;
    int sock_at, report_at;     /* their numbers at exec (an exec'd sub's too) */
    pid_t launcher;             /* who exec'd the root: the launcher, or the stand-in */
    int launcher_pidfd;         /* opened by the constructor; -1 where pidfds are missing,
                                 * and in a parked stand-in zygote (it outlives its starter) */
    char *exec_path;            /* the path we were exec'd by, or NULL (PSPAWN_ENV_EXEC) */
    int exec_fd;                /* the fd we were exec'd from, or -1 */
    pid_t root;                 /* a sub-zygote's root, else 0 */
    int root_pidfd;
    int group;                  /* the group this zygote serves (0: the root's) */
    int forwarded;              /* stand-in sub-zygote: its stand-ins come from the root */
    char **exec_env;            /* the environment the root was exec'd with */
    struct wire_group exec_group;   /* an exec'd sub-zygote's group, from its environment */
    int have_exec_group;
    char *replica;              /* subzygote=replicate: our copies, removed at exit */
    int task_cgroup;            /* subzygote=cgroup: the launcher's cgroup, or -1 */
    struct zygote_group *groups;    /* the stand-in root's fan-out */
    int ngroups;
    unsigned turn;
    unsigned char launch_cpuset[PSPAWN_CPUSET_BYTES];   /* the affinity we were exec'd with */
    int launch_mempolicy;
    unsigned char launch_nodemask[PSPAWN_NODEMASK_BYTES];
    const char *listen_name;    /* stand-in mode */
    struct pspawn_pin standin_peer; /* in a held task: its stand-in, pinned at its connect */
    char token[PSPAWN_TOKEN_LEN];
    long expect_tasks;
    long idle_ms;           /* PSPAWN_ENV_IDLE: a job's zygote; 0: a step's */
    long starter;           /* PSPAWN_ENV_STARTER: our keeper's starter; 0: our parent */
    main_fn real_main;
    char cwd[PATH_MAX];
    int cwd_released;           /* parked in "/": every task chdirs (to CWD if it asks none) */
    mode_t umask;
    int nice, sched_policy, sched_priority;
    int mempolicy, have_mempolicy;
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];
    int no_new_privs;
    int seccomp;                /* filters the zygote runs under */
    struct pspawn_base base;    /* the state the zygote was exec'd with */
    int have_base;
    struct wire_procstate proc;
    struct rlimit rl[RLIM_NLIMITS];
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    uint64_t ctor_sigs;         /* dispositions a constructor set */
    int ctor_fds[MAX_CTOR_FDS];
    int nctor_fds;
    int *tid_addr;
    void *robust_head;
    size_t robust_len;
    struct prctl_mm_map mm;
    int have_mm;
    struct text_range *text;    /* small text mappings, mapped in each task */
    int ntext;
    struct itimerval itimer[3]; /* a constructor's alarm or interval timers */
    int itimers;                /* bit per armed one */
    char *python;               /* PSPAWN_ENV_PYTHON: may park inside Python */
    char *preload;              /* PSPAWN_ENV_PRELOAD: auto, or a list's path */
    int learning;               /* preload=auto: tasks record what they load */
    int in_task;                /* this process is a task */
    int python_warm;            /* parked inside a Python interpreter */
    struct link_map *exec_last; /* the last object the loader loaded at exec */
    int pip_wanted;             /* PSPAWN_ENV_PIP: mode=pip asked */
    int pip;                    /* mode=pip: tasks are PiP tasks (pip.c) */
    int pip_refusal;            /* mode=pip asked, refused: enum pip_refusal */
    /* Parked inside a runtime (a warm interpreter): its hooks; else NULL. */
    const struct zygote_mode *mode;
};
extern struct parked parked;

/* What a mode that parks inside a runtime it started (a Python
 * interpreter: python-embed.c) plugs into the park.  The park and its
 * serving call these, never the mode's files by name: the mode calls the
 * park (zygote_park), not the other way round. */
struct zygote_mode {
    /* Around each clone: what the runtime's own fork does. */
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    /* In a task, before its release (async-signal-safe): SIGIGN, the
     * signals its caller ignores (the request's). */
    void (*task_signals)(uint64_t sigign);
    /* A zygote that serves more than one step, idle between them: what
     * its tasks learned since, loaded, and what the park recorded of the
     * process recorded again.  How many; -1 when it can no longer fork
     * (a thread was left). */
    int (*between_steps)(void);
};

/* What a released task returns into main() with. */
struct task_start {
    int argc;
    char **argv;
    char **envp;
};

/* park.c: check that the zygote may park here, record the state it
 * parked in, and serve: returns only in a new task, with its main()'s
 * arguments. */
struct task_start zygote_park(void);

/* parked.c: the state, and what every part uses to speak and to end. */
/* 0, or -1 when it could not be sent (whoever started us is gone). */
int zygote_send_ready(int sock, int status, int detail);
/* In a task: the alarm and interval timers recorded at the park. */
void zygote_rearm_itimers(void);
/* Add to parked.ctor_sigs the signals that have a handler now. */
void zygote_record_handlers(void);
/* FD moved up, out of the way of the fds a program's constructors get
 * (just below the fd limit, CLOEXEC); FD itself if it cannot be. */
int zygote_move_high(int fd);
/* Remove our replicas, if any; then _exit(CODE). */
void zygote_exit(int code) __attribute__((noreturn));
/* A line on stderr under PSPAWN_DEBUG. */
void zygote_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit with ZYGOTE_EXIT_STALE, saying why under PSPAWN_DEBUG. */
void zygote_exit_stale(const char *library) __attribute__((noreturn));
/* A stand-in zygote's hello (a standin_reply, then its exec-time
 * environment, "K=V\0" each, PSPAWN_ZYGOTE_* left out: the token among
 * them), malloc'd, its size in *LEN; NULL without memory. */
char *zygote_hello(size_t *len);
/* The objects in our link map (the program, its libraries, the loader,
 * the vDSO, what a preload loaded), the proxy left out: what a launcher
 * learns the program's start to cost (protocol.h, HELLO_OBJECTS; in the
 * hello and in zygote_ready). */
int zygote_objects(void);

/* selfcheck.c */
/* Exit, after a ready message that says why (if parked.sock is open),
 * unless a fork of this process can serve as an exec of the program: no
 * thread but ours, no POSIX timer, at most MAX_CTOR_FDS fds left by the
 * program's constructors (recorded in parked.ctor_fds). */
void zygote_check_forkable(void);
/* Our threads: the count, or -errno (-EINVAL: more than one). */
int zygote_thread_count(void);

/* serve.c: the zygote's life. */
/* Who a process that found PSPAWN_ENV_PARENT=STARTER is: the zygote
 * STARTER exec'd (then watched through parked.launcher_pidfd), a program a
 * zygote's constructor started (INHERITED), or a zygote whose starter died
 * while it loaded (ORPHANED: it must exit).  SOCK: PSPAWN_ENV_SOCK's fd,
 * the last word without /proc; EXEC: PSPAWN_ENV_EXEC's value, or NULL. */
enum origin { STARTED, INHERITED, ORPHANED };
enum origin zygote_watch_starter(pid_t starter, int sock, const char *exec);
/* Whether the process that started us is gone. */
int zygote_starter_gone(void);
/* FD, named by a variable we inherited, is still the channel it names: a
 * seqpacket socket made by PARENT (SOCK), or a pipe's write end. */
int zygote_is_channel(int fd, int sock, pid_t parent);
/* Once parked: stop watching a stand-in starter (a stand-in zygote
 * outlives it), watch our root (a sub-zygote). */
void zygote_watch(void);
/* Wait until SOCK is readable; exits when the launcher or the root is
 * gone.  EXTRA (or -1) is another fd to wait for: returns 1 when it is
 * readable, 0 when SOCK is.  TIMEOUT_MS < 0: no timeout; -1 on timeout. */
int zygote_wait(int sock, int extra, int timeout_ms);
/* At the park (the root): record and watch the objects we have mapped,
 * and the code files named before it (watch.c); called again, what was
 * mapped or named since. */
void zygote_libraries_watch(void);
/* Before the park: watch PATH (absolute) too, a file the program read
 * code from (a warm interpreter's module). */
void zygote_watch_code_file(const char *path);
/* The fd that is readable when one may have changed (-1: none). */
int zygote_libraries_fd(void);
/* The name of one that was replaced on disk, or NULL.  THOROUGH: without
 * inotify, stat their directories (once per request, not per task). */
const char *zygote_libraries_stale(int thorough);
/* The zygote's exit status once a library it loaded was replaced: its
 * launcher execs from then on.  To join protocol.h. */
#ifndef ZYGOTE_EXIT_STALE
#define ZYGOTE_EXIT_STALE 75
#endif

/* task.c */
/* Record the small text mappings each task maps at once (the text
 * prefault), unless PSPAWN_PREFAULT=0. */
void zygote_record_text(void);
/* fork(2) without glibc's atfork handlers, with the child's thread id
 * where glibc keeps it, and with the child's pid written to *PARENT_TID
 * (if not NULL) by the kernel before the child can run. */
pid_t zygote_clone(unsigned long extra, int *parent_tid);
void zygote_report(int fd, uint32_t req, uint32_t index, int32_t pid, int32_t err);
/* In a new task: become what exec would have made, then return the
 * arguments of main().  STANDIN: the task is our own child (stand-in
 * mode), not the launcher's. */
struct task_start zygote_task_main(char *base, size_t size, struct wire_go *go, uint32_t id,
                                   uint32_t index, struct child_setup *tmpl, int nfds,
                                   int standin);
/* The part of zygote_task_main a PiP task shares: S and FDS (room for
 * PSPAWN_FD_MAX + 2) become this task's setup, applied; its argv and
 * environ laid out in *TS; the result in its slot of GO and the task
 * counted out of its request (direct), or a failure told (stand-in).
 * Exits 127 on failure. */
void zygote_task_begin(char *base, size_t size, struct wire_go *go, uint32_t id, uint32_t index,
                       struct child_setup *s, int *fds, const struct child_setup *tmpl, int nfds,
                       int standin, struct task_start *ts, unsigned long *arg_start);
/* Wait for go[INDEX] of the request W heads; exits 127 if cancelled or
 * if whoever would release it is gone. */
void zygote_task_wait_go(const struct wire_request *w, struct wire_go *go, uint32_t index,
                         int standin);
/* A held stand-in task, moved into its cgroup: its CPU binding again. */
void zygote_task_rebind(const struct wire_request *w, const unsigned char *task_cpuset);

/* pip-image.c: what a PiP task loads. */
struct pip_image {
    int memfd;                  /* the program's sealed copy, DF_1_PIE cleared */
    char load_path[64];         /* /proc/self/fd/N */
    char exe[PATH_MAX];         /* what a task that cannot load execs */
    uintptr_t rtld_addr;        /* the loader's load address: not a task's to finish */
};
/* Check the program mapped here (PIE, main exported, no TLS of its own,
 * no $ORIGIN, no MPI library) and copy its image into IMG: PIP_OK, or
 * the enum pip_refusal that says why its tasks cannot be PiP tasks. */
int zygote_pip_image(struct pip_image *img);
/* In a task, once its program is loaded (HANDLE): fill the copies its
 * copy relocations left empty (the loader's lookup found the program). */
void zygote_pip_complete_copies(void *handle);

/* pip.c: mode=pip. */
/* At the park, with PSPAWN_ENV_PIP set: check that the program can be
 * loaded again in a namespace of its own and prepare its copy; sets
 * parked.pip, or parked.pip_refusal (then tasks are forked). */
void zygote_pip_prepare(void);
/* Make task INDEX of the request at BASE as a PiP task of ours (EXTRA:
 * CLONE_PARENT in direct mode), its pid written to *PARENT_TID by the
 * kernel; returns once the task no longer needs the request (BASE,
 * TMPL, the parse's tables), with its pid, or -1 and errno.  GO_FD: the
 * go block's memfd, which the task maps for itself.  FIRST (or NULL):
 * what the task does first, with FIRST_ARG, before the zygote goes on. */
pid_t zygote_pip_clone(unsigned long extra, int *parent_tid, char *base, size_t size,
                       int go_fd, uint32_t id, uint32_t index, struct child_setup *tmpl,
                       int nfds, int standin, void (*first)(int), int first_arg);

/* parse.c */
/* The fds of a request message before those its tasks take: its memfd
 * and its go block's (a fan-out message has only its memfd). */
#define ZYGOTE_REQ_HEAD 2
/* Receive one request or fan-out message (up to ZYGOTE_MSG_FDS fds).
 *   request: *BASE is our private copy of its memfd (what was checked is
 *            what is used), *GO its go block, mapped shared; FDS: the
 *            memfd, the go block's fd, then the fds the tasks take.
 *   fan-out: *BASE is its memfd mapped shared (the maker of each group
 *            writes its pid there), *GO is NULL; FDS: the memfd, then
 *            the fds it passes.
 * Both memfds must be sealed against resizing and as big as the message
 * says.  Returns 1, 0 on end of file, -1 on a malformed message (its fds
 * closed). */
int zygote_recv_request(int sock, struct request_msg *msg, void **base, struct wire_go **go,
                        int *fds, int *nfds);
/* The same for a message whose first fd is another socket (a stand-in's
 * connection forwarded by the root): *CONN gets it. */
int zygote_recv_forwarded(int sock, struct request_msg *msg, int *conn, void **base,
                          struct wire_go **go, int *fds, int *nfds);
/* Check a request and turn it into the setup every task of it starts
 * from.  CHAN are the caller's two channels, which tasks must not lose
 * during their fd shuffle.  Returns 0, or a request_refusal (detail in
 * *DETAIL). */
int zygote_parse_request(const char *base, size_t size, int *fds, int nfds, const int chan[2],
                         struct child_setup *tmpl, int *detail);
/* Let go of a request's copy, its go block (if GO) and its fds. */
void zygote_drop_request(void *base, size_t size, struct wire_go *go, int *fds, int nfds);

/* serve.c: direct mode, until the launcher hangs up (then exits). */
struct task_start zygote_serve(void);

/* group.c */
/* Serve the group in WG ourselves: bind to its CPUs, take memory from its
 * node, move the private pages we own there, as the parked state says. */
void zygote_become_group(const struct wire_group *wg);
/* Whether CPUS (PSPAWN_CPUSET_BYTES) names any CPU. */
int zygote_any_cpu(const unsigned char *cpus);
/* A forked sub-zygote moves the pages its maker left it (those the maker
 * wrote after the fork) to its node, once, before its first task. */
void zygote_settle_pages(void);
/* A forked sub-zygote of NODE: settle its pages before its first task. */
void zygote_settle_pages_later(int node);
/* ON: the clones that follow are sub-zygotes, not tasks (no settling). */
void zygote_making_subs(int on);

/* fanout.c */
/* Make the sub-zygotes a fan-out message lists for us (FDS: the sockets
 * and cgroups it passed, which are closed here).  Returns 1 in a forked
 * sub-zygote, which then serves on parked.sock, 0 here.  STANDIN: our
 * sub-zygotes are our own children and get our stand-ins forwarded. */
int zygote_fanout(char *base, size_t size, int *fds, int nfds, int standin);
/* The group a task bound to CPUS goes to among the stand-in root's. */
int zygote_group_of(const unsigned char *cpus);


/* preload.c: dlopen, before parking, what the program's tasks loaded
 * after main (preload=auto: learned; preload=FILE; PSPAWN_PRELOAD_LIBS). */
void zygote_preload(void);

/* preload-deny.c: objects never loaded in a zygote, whatever the trial
 * sees.  The deny rule's name of the first object loaded after LAST (a
 * link map, from zygote_bind_last) that it names, or NULL. */
struct link_map;
const char *zygote_preload_denied(struct link_map *last, const char **why);
/* Why NAME (a rule's name) is denied, or "" for one no rule names. */
const char *zygote_preload_deny_reason(const char *name);

/* bind.c: which preloads the zygote may bind now (see there). */
/* The last object of the base namespace now. */
struct link_map *zygote_bind_last(void);
/* The first lazily bound symbol of an object loaded after LAST that the
 * global scope does not define now (binding it now could differ from a
 * task's lazy binding), or NULL. */
const char *zygote_bind_unsafe(struct link_map *last);
/* At the park: bind the lazily bound functions of the objects loaded at
 * exec (up to LAST) that the global scope defines, as their first call
 * would.  The number of slots bound. */
long zygote_bind_loaded(struct link_map *last);

/* python.c: the warm Python interpreter. */
/* Whether this program is a CPython interpreter (3.8 or later). */
int zygote_python_detect(void);
/* python-embed.c: in place of park_main, start the interpreter with its
 * options, run the bootstrap (it imports the preload modules), park, and
 * in each task run its code and end as the interpreter's main would. */
int zygote_python_main(int argc, char **argv, char **envp) __attribute__((noreturn));
/* python.c: the interpreter's fork hooks, found; the park inside it
 * (OWN_SIGS: the signals whose Python handler is still the one the
 * interpreter set up at its start; MODE: the hooks the park calls), which
 * returns in each task once the interpreter's fork hooks have run there. */
void zygote_python_find_fork_hooks(void);
void zygote_python_park(uint64_t own_sigs, const struct zygote_mode *mode);
/* Around each clone of a warm interpreter: what os.fork does (the child's
 * part runs once the task is released, in zygote_python_park). */
void zygote_python_before_fork(void);
void zygote_python_after_fork_parent(void);
/* In a warm interpreter's task, before its release: it ignores what its
 * caller ignores (SIGIGN: the request's), as an exec'd interpreter does. */
void zygote_python_task_signals(uint64_t sigign);
/* Between steps, once the bootstrap imported more (python-embed.c): what
 * the park recorded of the process, recorded again (OWN_SIGS as the
 * bootstrap gives them). */
void zygote_python_record_again(uint64_t own_sigs);

/* standin.c: stand-in mode (exits when the node's tasks are served). */
struct task_start zygote_serve_standin(void);


#endif
