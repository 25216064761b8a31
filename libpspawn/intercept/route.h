/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which launches the interception library routes through a zygote, and
 * the memory that every process of one interception scope shares.
 *
 * A scope is one launcher run under `pspawn --intercept` (or under a bare
 * LD_PRELOAD of libpspawn-intercept.so: the first process that loads it
 * makes the scope).  Its processes count, together, how often each
 * program was started, in a small table: a sealed memfd that `pspawn
 * --intercept` holds (PSPAWN_INTERCEPT_TABLE names it as /proc/PID/fd/N,
 * so that it goes when pspawn and the last process that mapped it do,
 * whatever kills them), or under a bare LD_PRELOAD a file in /dev/shm
 * named after the user and the scope's random name
 * (PSPAWN_INTERCEPT_SCOPE).  A program is routed from its Nth start on.  The table also lists the pids of the
 * scope's stand-ins (so that a launcher's kill() of one can be told from
 * a kill() of its process group), what the stand-ins learnt cannot
 * have a zygote, and, with spawn-site priorities, the children whose run
 * time is being measured (children.h).
 *
 * Everything here may run in a vfork child, between vfork and exec: it
 * calls only system calls and atomics, on the stack.
 */
#ifndef PSPAWN_ROUTE_H
#define PSPAWN_ROUTE_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ROUTE_ENV_SCOPE   "PSPAWN_INTERCEPT_SCOPE"   /* the scope's name (16 hex digits) */
#define ROUTE_ENV_AFTER   "PSPAWN_INTERCEPT_AFTER"   /* route from the Nth start (default 2) */
#define ROUTE_ENV_IDLE    "PSPAWN_INTERCEPT_IDLE"    /* a zygote's idle limit, s (default 10) */
#define ROUTE_ENV_SKIP    "PSPAWN_INTERCEPT_SKIP"    /* paths or names never routed */
#define ROUTE_ENV_STANDIN "PSPAWN_INTERCEPT_STANDIN" /* pspawn-standin (default: installed) */
#define ROUTE_ENV_OFF     "PSPAWN_INTERCEPT"         /* "off", "0" or "no": pass everything */
#define ROUTE_ENV_TABLE   "PSPAWN_INTERCEPT_TABLE"   /* /proc/PID/fd/N: pspawn's memfd table */
/* Given by a routed exec to the stand-in it becomes: the program it
 * stands in for.  The stand-in takes it out of its environment. */
#define ROUTE_ENV_EXEC    "PSPAWN_STANDIN_EXEC"
#define ROUTE_SCOPE_LEN   16

#define ROUTE_PROGRAMS 1024
#define ROUTE_STANDINS 4096

enum route_verdict {
    ROUTE_UNKNOWN = 0,
    ROUTE_YES = 1,          /* a dynamic ELF executable a zygote may serve */
    ROUTE_NO = 2,           /* not one (a stand-in's inspection said why) */
    ROUTE_REFUSED = 3,      /* a stand-in found its zygote cannot start */
    ROUTE_NO_FILE = 4,      /* not a regular file */
    ROUTE_NO_SETID = 5,     /* set-user-ID or set-group-ID: exec raises its ids */
    ROUTE_NO_CAPS = 6,      /* file capabilities: exec raises them */
    ROUTE_NO_SCRIPT = 7,    /* a #! script: its interpreter routes what it starts */
    ROUTE_NO_FOREIGN = 8,   /* not an ELF program of this machine */
    ROUTE_NO_STATIC = 9,    /* static: there is no loading to save */
};
/* Why VERDICT (not ROUTE_YES) keeps a program from a zygote, in words. */
const char *route_verdict_why(uint32_t verdict);

struct route_program {
    uint64_t key;           /* 0: free */
    uint32_t starts;
    uint32_t verdict;       /* enum route_verdict */
    /* What its starts cost (gain.h), µs; 0: not measured. */
    uint32_t exec_us;       /* exec'd: the cheapest */
    uint32_t execs;         /* exec'd starts measured */
    uint32_t routed_us;     /* routed: the cheapest */
    uint32_t ends;          /* its runs that ended by exit() */
    uint32_t launches;      /* 1: one of its runs exec'd or spawned a program */
    uint32_t routed;        /* routed starts measured */
};

/* A child whose run time is measured for spawn-site priorities
 * (children.h): registered by its launcher's spawn or by its own exec,
 * taken off when its launcher reaps it.  Every field but the pid goes
 * from 0 to its value once (compare-and-swap), in any order. */
#define ROUTE_CHILDREN 4096
struct route_child {
    int32_t pid;            /* 0: free */
    uint32_t verdict;       /* enum priority_verdict, the first one taken */
    uint64_t site[2];       /* the launcher's spawn site; an exec of the process's own */
    uint64_t start_ns;      /* CLOCK_BOOTTIME */
};

#define ROUTE_MAGIC 0x70737274u /* "psrt" */
struct route_shared {
    uint32_t magic, size;
    char scope[ROUTE_SCOPE_LEN];    /* the scope it was made for (no NUL) */
    int32_t creator;        /* the process that made the scope: its end ends it */
    int32_t base_nice;      /* its nice: a long child's is this + N, never more */
    uint32_t routed_floor_us;   /* the cheapest routed start of any program (gain.h) */
    uint32_t exec_floor_us;     /* the cheapest start of any process of the scope */
    struct route_program program[ROUTE_PROGRAMS];
    int32_t standin[ROUTE_STANDINS];    /* pids; 0: free */
    int32_t standin_task[ROUTE_STANDINS];   /* each one's task, once it has one */
    struct route_child child[ROUTE_CHILDREN];
};

/* The scope's shared table: mapped by route_attach, NULL if there is none
 * (pspawn is gone, no /dev/shm, a file someone else owns or of another
 * scope: nothing is routed). */
extern struct route_shared *route_table;

/* Map the table of SCOPE: the one PSPAWN_INTERCEPT_TABLE names, else the
 * file in /dev/shm (made, if CREATE): 0, or -1. */
int route_attach(const char *scope, int create);
/* Make and map SCOPE's table as a sealed memfd, for pspawn --intercept to
 * hold: its fd (close-on-exec), or -1. */
int route_create_held(const char *scope);
/* The /dev/shm path of SCOPE's table (a bare LD_PRELOAD's), into BUF. */
void route_table_path(const char *scope, char *buf, size_t len);

/* A program's key in the table: the file ST says it is, and the loader's
 * variables of ENVP (in any order). */
uint64_t route_program_key(const struct stat *st, char *const envp[]);
/* The entry of KEY, added if need be; NULL when the table is full. */
struct route_program *route_program_entry(uint64_t key);
/* The entry of KEY if it has one, else NULL. */
struct route_program *route_program_find(uint64_t key);
/* ROUTE_YES if the file open as FD (ST) is a dynamic ELF executable of
 * our machine, neither set-id nor with file capabilities; else the
 * verdict that says why not. */
uint32_t route_program_verdict(int fd, const struct stat *st);

/* The scope's stand-ins: their pids. */
void route_standin_add(pid_t pid);
void route_standin_remove(pid_t pid);
int route_standin_is(pid_t pid);
/* Stand-in PID's task (set before the task runs, cleared before the
 * stand-in leaves the set), or 0. */
void route_standin_set_task(pid_t pid, pid_t task);
pid_t route_standin_task(pid_t pid);

#endif
