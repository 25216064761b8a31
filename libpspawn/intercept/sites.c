/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-user table of spawn sites (sites.h): opened in the constructor,
 * read by predictions (possibly in a vfork child), written when a child
 * is reaped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "sites.h"

_Static_assert(offsetof(struct sites_file, slots) == 3 * sizeof(uint32_t),
               "create() writes the header as four words");

static struct sites_file *table;
static char path[PATH_MAX];

#define MEAN_BITS 40
#define COUNT_MAX 255u

static uint64_t tag_of(uint64_t key)
{
    return (key >> 48) | 1;     /* never 0: a free slot's statistics are 0 */
}

static uint64_t pack(uint64_t key, unsigned count, uint64_t mean_us)
{
    uint64_t mean_max = (UINT64_C(1) << MEAN_BITS) - 1;
    return tag_of(key) << 48 | (uint64_t)(count > COUNT_MAX ? COUNT_MAX : count) << MEAN_BITS |
           (mean_us > mean_max ? mean_max : mean_us);
}

static int mine(uint64_t key, uint64_t stats)
{
    return stats == 0 || stats >> 48 == tag_of(key);
}

/* A new table, whole, linked into place: a reader never sees it half
 * made.  0, or -1 (another process made it first: EEXIST). */
static int create(void)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    /* The header's first four words (the rest of the file is zeros). */
    const uint32_t head[4] = { SITES_MAGIC, SITES_VERSION, sizeof(struct sites_file),
                               SITES_SLOTS };
    int ok = fchmod(fd, 0600) == 0 && ftruncate(fd, sizeof(struct sites_file)) == 0 &&
             pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head;
    close(fd);
    ok = ok && link(tmp, path) == 0;
    unlink(tmp);
    return ok ? 0 : -1;
}

int sites_open(const char **why)
{
    char dir[PATH_MAX];
    if (pspawn_cache_dir(dir, sizeof dir) < 0 ||
        snprintf(path, sizeof path, "%s/sites", dir) >= (int)sizeof path) {
        *why = "no cache directory (HOME, XDG_CACHE_HOME or PSPAWN_CACHE_DIR)";
        return -1;
    }
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        if (pspawn_preload_mkdirs(path) < 0 || (create() < 0 && errno != EEXIST)) {
            *why = "cannot create it";
            return -1;
        }
        fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
        *why = errno == ELOOP ? "a symbolic link" : "cannot open it";
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) || st.st_size != (off_t)sizeof(struct sites_file)) {
        close(fd);
        *why = "not a file of ours, mode 0600, of the table's size: ignored";
        return -1;
    }
    void *m = mmap(NULL, sizeof(struct sites_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        *why = "cannot map it";
        return -1;
    }
    struct sites_file *t = m;
    if (t->magic != SITES_MAGIC || t->version != SITES_VERSION ||
        t->size != sizeof(struct sites_file) || t->slots != SITES_SLOTS) {
        munmap(m, sizeof(struct sites_file));
        *why = "not a table of this version: ignored (remove it to start anew)";
        return -1;
    }
    table = t;
    return 0;
}

const char *sites_path(void)
{
    return path;
}

static struct site_slot *slot_at(uint64_t key, unsigned i)
{
    return &table->slot[(key + i) % SITES_SLOTS];
}

int sites_lookup(uint64_t key, unsigned *count, uint64_t *mean_us)
{
    for (unsigned i = 0; table && i < SITES_PROBE; i++) {
        struct site_slot *s = slot_at(key, i);
        if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) != key)
            continue;
        uint64_t stats = __atomic_load_n(&s->stats, __ATOMIC_ACQUIRE);
        *count = (unsigned)(stats >> MEAN_BITS & COUNT_MAX);
        *mean_us = stats & ((UINT64_C(1) << MEAN_BITS) - 1);
        return stats && mine(key, stats) && *count ? 0 : -1;
    }
    return -1;
}

/* KEY's slot, claimed if need be: a free one, else the least recently
 * recorded one of its window, its history dropped.  NULL if another
 * process took that one meanwhile. */
static struct site_slot *claim(uint64_t key)
{
    struct site_slot *oldest = NULL;
    uint64_t oldest_key = 0, oldest_used = UINT64_MAX;
    for (unsigned i = 0; i < SITES_PROBE; i++) {
        struct site_slot *s = slot_at(key, i);
        uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (k == key)
            return s;
        if (k == 0) {
            if (__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) || k == key)
                return s;
            continue;
        }
        uint64_t used = __atomic_load_n(&s->used, __ATOMIC_ACQUIRE);
        if (used < oldest_used) {
            oldest = s;
            oldest_key = k;
            oldest_used = used;
        }
    }
    if (!oldest || !__atomic_compare_exchange_n(&oldest->key, &oldest_key, key, 0,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return NULL;
    __atomic_store_n(&oldest->stats, pack(key, 0, 0), __ATOMIC_RELEASE);
    return oldest;
}

int sites_record(uint64_t key, uint64_t run_us, uint64_t *mean_us, unsigned *count)
{
    struct site_slot *s = table ? claim(key) : NULL;
    if (!s)
        return -1;
    uint64_t old = __atomic_load_n(&s->stats, __ATOMIC_ACQUIRE), next;
    do {
        if (!mine(key, old))
            return -1;
        unsigned n = (unsigned)(old >> MEAN_BITS & COUNT_MAX);
        uint64_t mean = old & ((UINT64_C(1) << MEAN_BITS) - 1);
        /* The first child sets the mean; then each weighs a quarter. */
        *mean_us = n == 0 ? run_us : mean - mean / 4 + run_us / 4;
        *count = n < COUNT_MAX ? n + 1 : COUNT_MAX;
        next = pack(key, *count, *mean_us);
    } while (!__atomic_compare_exchange_n(&s->stats, &old, next, 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    __atomic_store_n(&s->used, (uint64_t)time(NULL), __ATOMIC_RELEASE);
    return 0;
}
