/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pip-task - the task program of bench/pipbench (the Process-in-Process
 * benchmark, bench/README.md).  The same program runs as a PiP task
 * (pspawn mode=pip: loaded with dlmopen into a namespace of the PiP root's
 * address space), as an exec'd process, and as a process whose threads do
 * the same work; so it is linked -fPIE -pie -rdynamic, not against
 * libpspawn, and has no thread-local variable of its own.
 *
 *   pip-task exit
 *       return 0 at once (the spawn measurement)
 *   pip-task pt SEG ADDR SIZE
 *       attach the shared segment (file SEG, SIZE bytes) at ADDR, write a
 *       byte to each of its pages, report ready, wait until told to exit
 *   pip-task pt-threads N SEG ADDR SIZE
 *       the same in N threads of this one process
 *   pip-task pp CTL ADDR ITERS BYTES CPU
 *       one of two ping-pong partners (rank by arrival): bound to CPU, they
 *       hand a futex in CTL back and forth ITERS times with a BYTES memcpy
 *       at each turn; rank 0 times that and the memcpys alone
 *   pip-task pp-threads CTL ADDR ITERS BYTES CPU
 *       both partners as two threads of this one process
 *
 * All tasks of a run meet in a control block at the start of the segment
 * (a file in /dev/shm): non-private futexes, so that they work between
 * processes as within one address space.  Every task maps the segment at
 * the one address ADDR with MAP_FIXED_NOREPLACE; EEXIST means another task
 * of the same address space (a PiP sibling, a thread) mapped it already,
 * which /proc/self/maps confirms, and the task uses that mapping: each
 * address space maps the segment once.
 *
 * bench/pipbench.h includes this file with PIPTASK_SHARED_ONLY defined for
 * the control block and the helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PIPCTL_MAGIC 0x50695042u /* "PiPB" */
#define PIP_PAGE 4096u
/* How long a task waits for its driver before it gives up (a driver
 * that died must not leave tasks behind for ever). */
#define PIP_TASK_WAIT_S 120

struct pipctl {
    uint32_t magic;
    _Atomic uint32_t rank;      /* next rank to hand out */
    _Atomic uint32_t ready;     /* futex: tasks ready */
    _Atomic uint32_t go;        /* futex: the driver says go */
    _Atomic uint32_t turn;      /* futex: the ping-pong's */
    _Atomic uint32_t done;      /* futex: tasks finished */
    _Atomic uint32_t failed;    /* tasks that failed (err says why) */
    uint32_t pad;
    uint64_t ns_with;           /* pp: ITERS round trips, memcpys and switches */
    uint64_t ns_without;        /* pp: the 2 x ITERS memcpys alone */
    char err[192];
};

static inline long pip_futex(_Atomic uint32_t *w, int op, uint32_t val,
                             const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static inline void pip_wake(_Atomic uint32_t *w)
{
    pip_futex(w, FUTEX_WAKE, INT32_MAX, NULL);
}

static inline uint64_t pip_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait until *W >= WANT, for at most TIMEOUT_MS.  0, or ETIMEDOUT. */
static inline int pip_wait_ge(_Atomic uint32_t *w, uint32_t want, long timeout_ms)
{
    uint64_t end = pip_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        uint32_t v = atomic_load(w);
        if (v >= want)
            return 0;
        uint64_t now = pip_now_ns();
        if (now >= end)
            return ETIMEDOUT;
        uint64_t left = end - now;
        if (left > 100000000u) /* wake up now and then: the caller may poll */
            left = 100000000u;
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        pip_futex(w, FUTEX_WAIT, v, &ts);
    }
}

/* Whether [ADDR, ADDR+SIZE) is one mapping of the file PATH in this
 * address space: /proc/self/maps read in place, without stdio or malloc
 * (a PiP task's allocations would add to the page tables measured). */
static inline int pip_mapped_here(const char *path, uintptr_t addr, size_t size)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[8192];
    size_t have = 0;
    int found = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = 0;
        char *line = buf, *nl;
        while (!found && (nl = strchr(line, '\n'))) {
            *nl = 0;
            uintptr_t lo, hi;
            int off = 0;
            if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %*s %n", &lo, &hi, &off) >= 2 &&
                off && lo == addr && hi == addr + size)
                found = strncmp(line + off, path, strlen(path)) == 0;
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (found || have == sizeof buf - 1)
            break;
    }
    close(fd);
    return found;
}

/* Map the segment file PATH (SIZE bytes) at ADDR, or find it there if
 * this address space has it already.  The address, or NULL with a
 * sentence in ERR. */
static inline void *pip_attach(const char *path, uintptr_t addr, size_t size, char *err,
                               size_t errlen)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return NULL;
    }
    void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    int e = errno;
    close(fd);
    if (p == (void *)addr)
        return p;
    if (p != MAP_FAILED) { /* a kernel before 4.17 took it as a hint */
        munmap(p, size);
        snprintf(err, errlen, "mmap at %#" PRIxPTR ": got %p (no MAP_FIXED_NOREPLACE?)", addr, p);
        return NULL;
    }
    if (e == EEXIST && pip_mapped_here(path, addr, size))
        return (void *)addr;
    snprintf(err, errlen, "mmap %s at %#" PRIxPTR ": %s", path, addr,
             e == EEXIST ? "something else is mapped there" : strerror(e));
    return NULL;
}

#ifndef PIPTASK_SHARED_ONLY

#include <pthread.h>

/* One task's (or thread's) job. */
struct job {
    const char *path;
    uintptr_t addr;
    size_t size;
    long iters, bytes;
    int cpu;
    int rc;
};

static void fail(struct pipctl *c, const char *what)
{
    if (c) {
        if (atomic_fetch_add(&c->failed, 1) == 0)
            snprintf(c->err, sizeof c->err, "%s", what);
        atomic_fetch_add(&c->ready, 1);
        pip_wake(&c->ready);
    }
    fprintf(stderr, "pip-task[%d]: %s\n", (int)getpid(), what);
}

static struct pipctl *attach_ctl(struct job *j, char *err, size_t errlen)
{
    struct pipctl *c = pip_attach(j->path, j->addr, j->size, err, errlen);
    if (c && c->magic != PIPCTL_MAGIC) {
        snprintf(err, errlen, "%s: no control block", j->path);
        return NULL;
    }
    return c;
}

/* J's control block, or NULL with J failed (said). */
static struct pipctl *job_ctl(struct job *j)
{
    char err[256];
    struct pipctl *c = attach_ctl(j, err, sizeof err);
    if (!c) {
        fail(NULL, err);
        j->rc = 1;
    }
    return c;
}

/* pt: touch every page, ready, wait for go. */
static void *pt_job(void *arg)
{
    struct job *j = arg;
    struct pipctl *c = job_ctl(j);
    if (!c)
        return NULL;
    volatile char *seg = (volatile char *)c;
    for (size_t off = 0; off < j->size; off += PIP_PAGE)
        seg[off + PIP_PAGE / 2] = 1; /* past the control block */
    atomic_fetch_add(&c->ready, 1);
    pip_wake(&c->ready);
    if (pip_wait_ge(&c->go, 1, PIP_TASK_WAIT_S * 1000L)) {
        fail(c, "pt: no go from the driver");
        j->rc = 1;
        return NULL;
    }
    atomic_fetch_add(&c->done, 1);
    pip_wake(&c->done);
    j->rc = 0;
    return NULL;
}

static void wait_turn(struct pipctl *c, uint32_t me)
{
    uint32_t v;
    while ((v = atomic_load(&c->turn)) != me)
        pip_futex(&c->turn, FUTEX_WAIT, v, NULL);
}

/* pp: one partner of the ping-pong. */
static void *pp_job(void *arg)
{
    struct job *j = arg;
    struct pipctl *c = job_ctl(j);
    if (!c)
        return NULL;
    j->rc = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(j->cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        char err[256];
        snprintf(err, sizeof err, "sched_setaffinity(CPU %d): %s", j->cpu, strerror(errno));
        fail(c, err);
        return NULL;
    }
    uint32_t me = atomic_fetch_add(&c->rank, 1);
    if (me > 1) {
        fail(c, "pp: more than two partners");
        return NULL;
    }
    char *src = aligned_alloc(PIP_PAGE, (size_t)j->bytes);
    char *dst = aligned_alloc(PIP_PAGE, (size_t)j->bytes);
    if (!src || !dst) {
        fail(c, "pp: out of memory");
        return NULL;
    }
    memset(src, (int)me + 1, (size_t)j->bytes);
    memset(dst, 0, (size_t)j->bytes);
    if (me == 0) { /* the memcpys alone, before the driver starts counting */
        uint64_t t0 = pip_now_ns();
        for (long i = 0; i < 2 * j->iters; i++) {
            memcpy(dst, src, (size_t)j->bytes);
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        c->ns_without = pip_now_ns() - t0;
    }
    atomic_fetch_add(&c->ready, 1);
    pip_wake(&c->ready);
    if (pip_wait_ge(&c->go, 1, PIP_TASK_WAIT_S * 1000L)) {
        fail(c, "pp: no go from the driver");
        return NULL;
    }
    uint32_t other = 1 - me;
    uint64_t t0 = pip_now_ns();
    for (long i = 0; i < j->iters; i++) {
        wait_turn(c, me);
        memcpy(dst, src, (size_t)j->bytes);
        __asm__ volatile("" : : "r"(dst) : "memory");
        atomic_store(&c->turn, other);
        pip_futex(&c->turn, FUTEX_WAKE, 1, NULL);
    }
    if (me == 0) {
        wait_turn(c, me); /* the partner's last turn */
        c->ns_with = pip_now_ns() - t0;
    }
    free(src);
    free(dst);
    atomic_fetch_add(&c->done, 1);
    pip_wake(&c->done);
    j->rc = 0;
    return NULL;
}

static int threads(int n, void *(*fn)(void *), struct job *proto)
{
    pthread_t tid[64];
    struct job jobs[64];
    if (n < 1 || n > 64) {
        fprintf(stderr, "pip-task: 1 to 64 threads\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        jobs[i] = *proto;
        int e = pthread_create(&tid[i], NULL, fn, &jobs[i]);
        if (e) {
            fprintf(stderr, "pip-task: pthread_create: %s\n", strerror(e));
            n = i;
            break;
        }
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        rc |= jobs[i].rc;
    }
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: pip-task exit | pt SEG ADDR SIZE | pt-threads N SEG ADDR SIZE |\n"
                    "       pp CTL ADDR ITERS BYTES CPU | pp-threads CTL ADDR ITERS BYTES CPU\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *mode = argv[1];
    if (strcmp(mode, "exit") == 0)
        return 0;
    int nthreads = 0;
    char **a = argv + 2;
    int na = argc - 2;
    if (strcmp(mode, "pt-threads") == 0) {
        if (na < 1)
            return usage();
        nthreads = atoi(a[0]);
        a++, na--;
    }
    struct job j = {0};
    int pt = strncmp(mode, "pt", 2) == 0;
    if (!pt && strcmp(mode, "pp") && strcmp(mode, "pp-threads"))
        return usage();
    if (na != (pt ? 3 : 5))
        return usage();
    j.path = a[0];
    j.addr = (uintptr_t)strtoull(a[1], NULL, 0);
    j.size = pt ? (size_t)strtoull(a[2], NULL, 0) : PIP_PAGE;
    if (!pt) {
        j.iters = atol(a[2]);
        j.bytes = atol(a[3]);
        j.cpu = atoi(a[4]);
        if (j.iters < 1 || j.bytes < 1)
            return usage();
    }
    if (pt)
        return nthreads ? threads(nthreads, pt_job, &j) : (pt_job(&j), j.rc);
    return strcmp(mode, "pp-threads") == 0 ? threads(2, pp_job, &j) : (pp_job(&j), j.rc);
}

#endif
