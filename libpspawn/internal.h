/* Launcher-side internals of libpspawn. */
#ifndef PSPAWN_INTERNAL_H
#define PSPAWN_INTERNAL_H

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "child.h"
#include "protocol.h"
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

struct pspawn_zygote {
    struct program prog;
    struct pspawn_creds creds;      /* the caller's when the zygote started */
    int fallback;           /* for good: no zygote */
    char reason[512];
    int have_reason;
    int debug;
    pid_t zpid;
    int pidfd;
    int sock;
    int report_r;
    int timeout_ms;
    uint32_t next_req;
    char **loader_env;      /* the zygote's LD_*, GLIBC_TUNABLES, MALLOC_* */
    pid_t pgid, sid;        /* the zygote's process group and session */
};

/* The launcher's state at the time of a call, merged with an attribute
 * object: what every task of the call starts from. */
struct call {
    const struct pspawn_attr_impl *attr;
    unsigned flags;                 /* REQ_* */
    unsigned user_flags;            /* PSPAWN_* */
    char cwd[PATH_MAX];
    mode_t umask;
    pid_t pgroup;
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

/* inspect.c */
int pspawn_program_inspect(struct program *p, const char *path);
void pspawn_program_free(struct program *p);
int pspawn_program_changed(const struct program *p);
int pspawn_args_too_big(const char *filename, char *const argv[],
                        char *const envp[]);

/* exec.c: a plain exec of a task with the call's attributes. */
int pspawn_exec_task(pid_t *pid, const char *path, const struct call *c,
                     const unsigned char *cpuset, char *const argv[],
                     char *const envp[]);
/* The same for the zygote itself, with its extra fds at fixed numbers. */
int pspawn_exec_setup(pid_t *pid, const char *path, struct child_setup *s,
                      uint64_t sigmask, char *const argv[], char *const envp[]);

/* request.c */
int pspawn_run_vector(struct pspawn_zygote *z, pspawn_task_t *tasks, size_t n,
                      const struct call *c);

/* A stand-in's hold on its task (REQ_HOLD): the request's shared mapping,
 * whose go[0] releases the task. */
struct pspawn_hold {
    struct wire_request *map;
    size_t size;
    int memfd;
};

/* Send one stand-in request (a task of CALL's state with TASK's argv and
 * envp) on SOCK, with the step's TOKEN.  If CALL's flags have REQ_HOLD,
 * *HOLD keeps the request so that pspawn_standin_go can release the task
 * (which waits until then, or until the caller is gone). */
int pspawn_send_standin(int sock, const struct call *c, pspawn_task_t *task,
                        const char *token, struct pspawn_hold *hold);
/* Let the held task run (RUN) or exit 127 without running (!RUN). */
void pspawn_standin_go(struct pspawn_hold *hold, int run);

/* context.c */
/* The proxy library to preload ($PSPAWN_PROXY, else the installed one). */
const char *pspawn_proxy_path(void);
/* A zygote's environment: BASE (NULL: the caller's environ), with the
 * proxy appended to its LD_PRELOAD, LD_BIND_NOW=1, the user's values of
 * both kept for the proxy to restore, and EXTRA (NULL-terminated "K=V"
 * strings). */
char **pspawn_zygote_environ(const char *const extra[], char *const base[]);
/* Whether "K=V" is read by the dynamic loader or libc before main: such a
 * variable must be the same in a task as in its zygote. */
int pspawn_loader_var(const char *kv);
/* NULL if ENVP has the zygote's loader variables, else the name (up to
 * '=') of the first that differs. */
const char *pspawn_loader_env_differs(const struct pspawn_zygote *z,
                                      char *const envp[], size_t *namelen);
void pspawn_free_environ(char **env);
/* Why a zygote that reported STATUS (enum zygote_status, not PARKED) with
 * DETAIL cannot serve, as a sentence for the fallback reason. */
void pspawn_zygote_refusal(char *buf, size_t size, int status, int detail);
void pspawn_fallback(struct pspawn_zygote *z, int for_good, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pspawn_zygote_lost(struct pspawn_zygote *z, int kill_it);
/* Read the caller's credentials; returns 0 or an errno. */
int pspawn_creds_get(struct pspawn_creds *c);
/* What differs between A and B ("user IDs", ...), or NULL. */
const char *pspawn_creds_differ(const struct pspawn_creds *a, const struct pspawn_creds *b);
/* Returns 0 or the errno of the signal (EPERM once the caller dropped
 * the privileges the zygote still has). */
int pspawn_signal_zygote(const struct pspawn_zygote *z, int sig);
void pspawn_debug(const struct pspawn_zygote *z, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* util.c */
uint64_t pspawn_sigset_to_u64(const sigset_t *s);
int pspawn_env_true(const char *name);
double pspawn_now_ms(void);

#endif
