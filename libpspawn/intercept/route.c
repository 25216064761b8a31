/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scope's shared table and the routing tests that may run between
 * vfork and exec: system calls and atomics only, nothing on the heap.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "loaderenv.h"
#include "nolibc.h"
#include "route.h"

struct route_shared *route_table;

/* The header of the object this code is in: its machine is ours. */
extern const ElfW(Ehdr) __ehdr_start;

/* PSPAWN_CTOR_VARS as route_attach found it: read there, not by getenv
 * between fork and exec (nolibc.h). */
static const char *ctor_vars;

/* Every process of a scope runs this as it starts: no snprintf, whose
 * pages of libc's text would be faulted in by each (nolibc.h). */
void route_table_path(const char *scope, char *buf, size_t len)
{
    static const char head[] = "/dev/shm/pspawn-intercept.";
    char uid[12];
    size_t u = sizeof uid;
    unsigned v = (unsigned)geteuid();
    do
        uid[--u] = (char)('0' + v % 10);
    while ((v /= 10) && u);
    size_t need = sizeof head - 1 + (sizeof uid - u) + 1 + nl_len(scope) + 1;
    if (len < need) {
        if (len)
            buf[0] = '\0';
        return;
    }
    nl_copy(buf, head, sizeof head - 1);
    size_t at = sizeof head - 1;
    nl_copy(buf + at, uid + u, sizeof uid - u);
    at += sizeof uid - u;
    buf[at++] = '.';
    nl_copy(buf + at, scope, nl_len(scope) + 1);
}

/* open(2) itself: this library's own open() is a wrapper (textbusy.c)
 * that would look up libc's on first use, in every process. */
static int open_raw(const char *path, int flags, mode_t mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

static int scope_valid(const char *scope)
{
    size_t n = 0;
    for (; scope[n]; n++)
        if (!((scope[n] >= '0' && scope[n] <= '9') || (scope[n] >= 'a' && scope[n] <= 'f')))
            return 0;
    return n == ROUTE_SCOPE_LEN;
}

/* Whether FD is a table file as only its scope's maker leaves it: a
 * regular file of ours, mode 0600, of the table's size (its maker may
 * still be sizing it: a little wait), and for a memfd, sealed at that
 * size. */
static int table_file_ok(int fd, int sealed)
{
    struct stat st;
    for (int tries = 0; ; tries++) {
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077) || tries == 50)
            return 0;
        if (st.st_size == (off_t)sizeof(struct route_shared))
            break;
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    const int seals = F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
    int has = sealed ? fcntl(fd, F_GET_SEALS) : 0;
    return !sealed || (has >= 0 && (has & seals) == seals);
}

/* Map the table open as FD (closed here); MADE: we made it, for SCOPE. */
static int map_table(int fd, const char *scope, int made)
{
    void *m = mmap(NULL, sizeof(struct route_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    struct route_shared *t = m;
    if (made) {
        t->size = sizeof(struct route_shared);
        t->base_nice = getpriority(PRIO_PROCESS, 0);
        memcpy(t->scope, scope, ROUTE_SCOPE_LEN);
        __atomic_store_n(&t->magic, ROUTE_MAGIC, __ATOMIC_RELEASE);
    } else if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != ROUTE_MAGIC ||
               memcmp(t->scope, scope, ROUTE_SCOPE_LEN) != 0) {
        /* another scope's (the fd of a reused pid), or one its maker never
         * finished: its maker finishes before it starts anything */
        munmap(m, sizeof(struct route_shared));
        return -1;
    }
    route_table = t;
    return 0;
}

int route_attach(const char *scope, int create)
{
    ctor_vars = getenv(PSPAWN_ENV_CTOR_VARS);
    if (!scope || !scope_valid(scope))
        return -1;
    /* pspawn --intercept's: the memfd it holds, reached through its fd
     * (a magic link of /proc, so not O_NOFOLLOW); gone with pspawn.  A
     * new scope (its variable lost on the way) makes its own file. */
    const char *held = create ? NULL : getenv(ROUTE_ENV_TABLE);
    if (held && *held) {
        if (strncmp(held, "/proc/", 6) != 0)
            return -1;
        int fd = open_raw(held, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0 || !table_file_ok(fd, 1)) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
        return map_table(fd, scope, 0);
    }
    char path[128];
    route_table_path(scope, path, sizeof path);
    int fd = -1, made = 0;
    if (create &&
        (fd = open_raw(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0)
        made = ftruncate(fd, sizeof(struct route_shared)) == 0;
    if (fd < 0 && (fd = open_raw(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0)) < 0)
        return -1;
    if (!table_file_ok(fd, 0)) {
        close(fd);
        return -1;
    }
    return map_table(fd, scope, made);
}

int route_create_held(const char *scope)
{
    if (!scope || !scope_valid(scope))
        return -1;
    char name[64];
    snprintf(name, sizeof name, "pspawn-intercept.%s", scope);
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    /* 0600 (a memfd starts at 0777), of its size for good */
    if (fchmod(fd, 0600) < 0 || ftruncate(fd, sizeof(struct route_shared)) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
        close(fd);
        return -1;
    }
    int keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (keep < 0 || map_table(fd, scope, 1) < 0) {
        if (keep >= 0)
            close(keep);
        return -1;
    }
    return keep;
}

uint64_t route_program_key(const struct stat *st, char *const envp[])
{
    uint64_t h = PSPAWN_HASH_INIT;
    pspawn_hash(&h, &st->st_dev, sizeof st->st_dev);
    pspawn_hash(&h, &st->st_ino, sizeof st->st_ino);
    pspawn_hash(&h, &st->st_mtim, sizeof st->st_mtim);
    pspawn_hash(&h, &st->st_size, sizeof st->st_size);
    uint64_t vars = 0;
    for (size_t i = 0; envp && envp[i]; i++)
        if (pspawn_loader_var_listed(envp[i], ctor_vars)) {
            uint64_t v = PSPAWN_HASH_INIT;
            pspawn_hash(&v, envp[i], nl_len(envp[i]));
            vars += v;
        }
    pspawn_hash(&h, &vars, sizeof vars);
    return h ? h : 1;
}

struct route_program *route_program_entry(uint64_t key)
{
    if (!route_table)
        return NULL;
    for (unsigned i = 0, at = (unsigned)(key % ROUTE_PROGRAMS); i < ROUTE_PROGRAMS;
         i++, at = (at + 1) % ROUTE_PROGRAMS) {
        struct route_program *p = &route_table->program[at];
        uint64_t seen = __atomic_load_n(&p->key, __ATOMIC_ACQUIRE);
        if (seen == key)
            return p;
        if (seen == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&p->key, &zero, key, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) || zero == key)
                return p;
        }
    }
    return NULL;
}

struct route_program *route_program_find(uint64_t key)
{
    if (!route_table)
        return NULL;
    for (unsigned i = 0, at = (unsigned)(key % ROUTE_PROGRAMS); i < ROUTE_PROGRAMS;
         i++, at = (at + 1) % ROUTE_PROGRAMS) {
        uint64_t seen = __atomic_load_n(&route_table->program[at].key, __ATOMIC_ACQUIRE);
        if (seen == key)
            return &route_table->program[at];
        if (seen == 0)
            return NULL;
    }
    return NULL;
}

const char *route_verdict_why(uint32_t verdict)
{
    switch (verdict) {
    case ROUTE_NO_FILE: return "not a regular file";
    case ROUTE_NO_SETID: return "set-user-ID or set-group-ID: exec changes its ids";
    case ROUTE_NO_CAPS: return "file capabilities: exec raises them";
    case ROUTE_NO_SCRIPT: return "a #! script: exec'd as is, its interpreter routes what it starts";
    case ROUTE_NO_FOREIGN: return "not an ELF program of this machine";
    case ROUTE_NO_STATIC: return "static: no libraries to keep loaded";
    case ROUTE_REFUSED: return "its zygote could not start (see the stand-in's reason)";
    case ROUTE_NO: return "no zygote can serve it (see the stand-in's reason)";
    default: return "not yet inspected";
    }
}

uint32_t route_program_verdict(int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return ROUTE_NO_FILE;
    if (st->st_mode & (S_ISUID | S_ISGID))
        return ROUTE_NO_SETID;
    /* File capabilities: exec would raise them, a fork of a zygote not. */
    if (fgetxattr(fd, "security.capability", NULL, 0) >= 0 || errno == ERANGE)
        return ROUTE_NO_CAPS;
    ElfW(Ehdr) eh;
    ssize_t got = pread(fd, &eh, sizeof eh, 0);
    if (got >= 2 && ((const char *)&eh)[0] == '#' && ((const char *)&eh)[1] == '!')
        return ROUTE_NO_SCRIPT;
    if (got != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != __ehdr_start.e_ident[EI_CLASS] ||
        eh.e_machine != __ehdr_start.e_machine || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > 512)
        return ROUTE_NO_FOREIGN;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            return ROUTE_NO_FOREIGN;
        if (ph.p_type == PT_INTERP)
            return ROUTE_YES;
    }
    return ROUTE_NO_STATIC;
}

/* A stand-in's slot once it left: probes go on past it, adds reuse it.
 * A probe ends at a slot never used (0), so that a launcher's wait(),
 * which asks of every pid it reaps, looks at a few slots, not all. */
#define STANDIN_LEFT (-1)

void route_standin_add(pid_t pid)
{
    if (!route_table || pid <= 0)
        return;
    for (unsigned i = 0, at = (unsigned)pid % ROUTE_STANDINS; i < ROUTE_STANDINS;
         i++, at = (at + 1) % ROUTE_STANDINS) {
        int32_t seen = __atomic_load_n(&route_table->standin[at], __ATOMIC_ACQUIRE);
        if (seen == pid)
            return;
        if ((seen == 0 || seen == STANDIN_LEFT) &&
            __atomic_compare_exchange_n(&route_table->standin[at], &seen, (int32_t)pid, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

/* The slot of PID, or -1. */
static int standin_slot(pid_t pid)
{
    if (!route_table || pid <= 0)
        return -1;
    for (unsigned i = 0, at = (unsigned)pid % ROUTE_STANDINS; i < ROUTE_STANDINS;
         i++, at = (at + 1) % ROUTE_STANDINS) {
        int32_t seen = __atomic_load_n(&route_table->standin[at], __ATOMIC_ACQUIRE);
        if (seen == pid)
            return (int)at;
        if (seen == 0)
            return -1;
    }
    return -1;
}

void route_standin_remove(pid_t pid)
{
    int at = standin_slot(pid);
    if (at >= 0) {
        __atomic_store_n(&route_table->standin_task[at], 0, __ATOMIC_RELEASE);
        int32_t expect = (int32_t)pid;
        __atomic_compare_exchange_n(&route_table->standin[at], &expect, STANDIN_LEFT, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
}

int route_standin_is(pid_t pid)
{
    return standin_slot(pid) >= 0;
}

void route_standin_set_task(pid_t pid, pid_t task)
{
    int at = standin_slot(pid);
    if (at >= 0)
        __atomic_store_n(&route_table->standin_task[at], (int32_t)task, __ATOMIC_RELEASE);
}

pid_t route_standin_task(pid_t pid)
{
    int at = standin_slot(pid);
    return at >= 0 ? __atomic_load_n(&route_table->standin_task[at], __ATOMIC_ACQUIRE) : 0;
}
