/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a new task does to itself between its creation and main() (zygote
 * path) or execve() (exec path).  Everything here is async-signal-safe and
 * allocation-free: it runs in a clone of the zygote and on the vfork stack
 * of the exec path.  Failures are returned as an errno, never reported
 * here: each caller has its one channel for that.
 */
#ifndef PSPAWN_CHILD_H
#define PSPAWN_CHILD_H

#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "protocol.h"

#ifndef PR_SET_MDWE             /* Linux 6.3; not in every <sys/prctl.h> */
#define PR_SET_MDWE 65
#define PR_GET_MDWE 66
#endif
#ifndef PR_MDWE_NO_INHERIT
#define PR_MDWE_NO_INHERIT 2
#endif

struct child_action {
    int kind;               /* enum fa_kind */
    int fd;                 /* target */
    int src;                /* FA_DUP2: index into child_setup.fds */
    int oflag;
    mode_t mode;
    const char *path;
};

struct child_setup {
    unsigned flags;         /* REQ_* */
    mode_t umask;
    pid_t pgroup;
    int ctty_fd;            /* REQ_CTTY: after the fds are in place */
    int nice;
    int sched_policy, sched_priority;
    int mempolicy;                      /* REQ_MEMPOLICY: mode | flags */
    const unsigned char *nodemask;      /* PSPAWN_NODEMASK_BYTES */
    struct wire_procstate proc;         /* REQ_PERSONALITY ... REQ_MDWE */
    const char *cwd;
    const unsigned char *cpuset;        /* PSPAWN_CPUSET_BYTES, or NULL */
    const struct wire_rlimit *rlimits;
    int nrlimits;
    const struct child_action *actions;
    int nactions;
    /* Fds that must survive the file actions: the sources of FA_DUP2 and
     * the caller's own channels.  Moved above every target and updated in
     * place (close-on-exec set). */
    int *fds;
    int nfds;
    uint64_t sig_default;   /* set to SIG_DFL (bit n-1 = signal n) */
    uint64_t sig_ignore;    /* set to SIG_IGN */
    /* An fd opened with O_CLOEXEC is closed again, as exec would. */
    int emulate_cloexec;
    /* The CPU set and memory policy are tried, not required: a sub-zygote
     * placed before its exec (a fake topology's CPUs and nodes need not
     * exist here; it places itself again once parked). */
    int placement_optional;
    /* Exec path only: ptrace(PTRACE_TRACEME) right before execve. */
    int traceme;
};

/* Apply S to the calling process: signals, session or process group, cwd,
 * umask (so that files the actions create get it), fds, rlimits,
 * scheduling, CPU set, memory policy, no_new_privs, then the process
 * attributes of S->proc, in that order.  Returns 0 or an errno. */
int pspawn_child_setup(struct child_setup *s);

/* The exec path's child, run on a vfork stack by clone(CLONE_VM):
 * ARG is a struct child_exec.  Never returns.
 * Held (a fork, for a caller with a pid hook): the last two of setup->fds
 * are a pipe's read end, on which the child waits for its go once set up,
 * and another's write end, on which it reports its setup (an int: 0, or
 * the errno) and then a failed exec (the errno; end of file: exec'd). */
struct child_exec {
    const char *path;
    char *const *argv;
    char *const *envp;
    struct child_setup *setup;
    uint64_t sigmask;
    volatile int err;       /* set if the exec failed (not held) */
    int held;
};
int pspawn_child_exec(void *arg);

/* Collect the fds a task keeps after setup: every target left open by the
 * actions of S, plus EXTRA[0..NEXTRA).  KEEP must hold nactions + nextra
 * entries; returns how many were stored, sorted ascending. */
int pspawn_child_keep_list(const struct child_setup *s, const int *extra,
                           int nextra, int *keep);

/* Close every fd except KEEP[0..NKEEP) (sorted ascending). */
void pspawn_child_close_others(const int *keep, int nkeep);

/* Set signal SIG's disposition to SIG_DFL or SIG_IGN with the raw system
 * call (glibc refuses its own reserved signals). */
int pspawn_child_sigdisp(int sig, int ignore);

/* Set the signal mask from a 64-bit set (bit n-1 = signal n). */
void pspawn_child_sigmask(uint64_t mask);

/* State that exec keeps and a zygote may not share, read the same way by
 * the launcher and by the zygote. */
/* The calling thread's NUMA memory policy: mode (with its mode flags) and
 * nodes 0..PSPAWN_NODEMASK_BYTES*8-1.  Returns 0 or an errno (ENOSYS on a
 * kernel without NUMA, EPERM where a seccomp profile forbids it). */
int pspawn_mempolicy_get(int *mode, unsigned char *nodemask);
/* The calling process's personality, THP switch, I/O priority, timer
 * slack and MDWE flags (each -1 where it cannot be read). */
void pspawn_procstate_get(struct wire_procstate *ps);
/* How many seccomp filters the calling process runs under: 0 for none,
 * -1 in strict mode, 1 where the kernel does not count them (before 5.9). */
int pspawn_seccomp_filters(void);
/* The calling process's umask, read without changing it (from
 * /proc/self/status; umask(2) twice would race with threads creating
 * files). */
mode_t pspawn_umask_get(void);

/* The state a zygote is exec'd with, passed to it in PSPAWN_ZYGOTE_BASE,
 * so that it tells what its constructors changed (which exec would apply on
 * top of every caller's state) from what its caller changed since. */
struct pspawn_base {
    unsigned umask;
    int nice;
    int seccomp;
    struct rlimit rl[RLIM_NLIMITS];
};
/* The calling process's. */
void pspawn_base_get(struct pspawn_base *b);
/* As text, "umask,nice,seccomp" then ";cur:max" per resource; 0 or ENOSPC. */
int pspawn_base_format(const struct pspawn_base *b, char *buf, size_t size);
/* 1 when S is a whole base, else 0. */
int pspawn_base_parse(const char *s, struct pspawn_base *b);

#endif
