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
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "loaderenv.h"
#include "route.h"

struct route_shared *route_table;

/* The header of the object this code is in: its machine is ours. */
extern const ElfW(Ehdr) __ehdr_start;

void route_table_path(const char *scope, char *buf, size_t len)
{
    snprintf(buf, len, "/dev/shm/pspawn-intercept.%u.%s", (unsigned)geteuid(), scope);
}

static int scope_valid(const char *scope)
{
    size_t n = 0;
    for (; scope[n]; n++)
        if (!((scope[n] >= '0' && scope[n] <= '9') || (scope[n] >= 'a' && scope[n] <= 'f')))
            return 0;
    return n == ROUTE_SCOPE_LEN;
}

int route_attach(const char *scope, int create)
{
    char path[128];
    if (!scope || !scope_valid(scope))
        return -1;
    route_table_path(scope, path, sizeof path);
    int fd = -1, made = 0;
    if (create && (fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0)
        made = ftruncate(fd, sizeof(struct route_shared)) == 0;
    if (fd < 0 && (fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -1;
    /* Ours alone, and of its size (its maker may still be sizing it). */
    struct stat st;
    for (int tries = 0; ; tries++) {
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077) || tries == 50) {
            close(fd);
            return -1;
        }
        if (st.st_size == (off_t)sizeof(struct route_shared))
            break;
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    void *m = mmap(NULL, sizeof(struct route_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    route_table = m;
    if (made) {
        route_table->size = sizeof(struct route_shared);
        route_table->base_nice = getpriority(PRIO_PROCESS, 0);
        __atomic_store_n(&route_table->magic, ROUTE_MAGIC, __ATOMIC_RELEASE);
    }
    return 0;
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
        if (pspawn_loader_var(envp[i])) {
            uint64_t v = PSPAWN_HASH_INIT;
            pspawn_hash(&v, envp[i], strlen(envp[i]));
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

int route_elf_dynamic(int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode) || (st->st_mode & (S_ISUID | S_ISGID)))
        return 0;
    /* File capabilities: exec would raise them, a fork of a zygote not. */
    if (fgetxattr(fd, "security.capability", NULL, 0) >= 0 || errno == ERANGE)
        return 0;
    ElfW(Ehdr) eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != __ehdr_start.e_ident[EI_CLASS] ||
        eh.e_machine != __ehdr_start.e_machine || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > 512)
        return 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            return 0;
        if (ph.p_type == PT_INTERP)
            return 1;
    }
    return 0;   /* static */
}

void route_standin_add(pid_t pid)
{
    if (!route_table || pid <= 0)
        return;
    for (unsigned i = 0, at = (unsigned)pid % ROUTE_STANDINS; i < ROUTE_STANDINS;
         i++, at = (at + 1) % ROUTE_STANDINS) {
        int32_t zero = 0;
        if (__atomic_load_n(&route_table->standin[at], __ATOMIC_ACQUIRE) == pid ||
            __atomic_compare_exchange_n(&route_table->standin[at], &zero, (int32_t)pid, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

/* The slot of PID, or -1.  Slots are freed in place (a probe goes on
 * past a free one: the set is small and a probe ends where it started). */
static int standin_slot(pid_t pid)
{
    if (!route_table || pid <= 0)
        return -1;
    for (unsigned i = 0, at = (unsigned)pid % ROUTE_STANDINS; i < ROUTE_STANDINS;
         i++, at = (at + 1) % ROUTE_STANDINS)
        if (__atomic_load_n(&route_table->standin[at], __ATOMIC_ACQUIRE) == pid)
            return (int)at;
    return -1;
}

void route_standin_remove(pid_t pid)
{
    int at = standin_slot(pid);
    if (at >= 0) {
        int32_t expect = (int32_t)pid;
        __atomic_compare_exchange_n(&route_table->standin[at], &expect, 0, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
}

int route_standin_is(pid_t pid)
{
    return standin_slot(pid) >= 0;
}
