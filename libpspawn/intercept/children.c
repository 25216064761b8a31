/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scope's measured children (children.h).
 */
#include "config.h"

#include <errno.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "children.h"
#include "priority.h"
#include "procfs.h"
#include "route.h"

static uint64_t ns_per_tick = 10000000;     /* USER_HZ 100 */

void children_init(void)
{
    unsigned long hz = getauxval(AT_CLKTCK);
    if (hz)
        ns_per_tick = 1000000000 / hz;
}

uint64_t children_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static struct route_child *slot_at(pid_t pid, unsigned i)
{
    return &route_table->child[((unsigned)pid + i) % ROUTE_CHILDREN];
}

/* Whether registration C, for PID, was made in the life of process PID
 * (not in a dead one's whose pid it got).  Its start rounds down to a
 * tick: a dead process's registration is older by far. */
static int same_process(const struct route_child *c, pid_t pid)
{
    uint64_t start = __atomic_load_n(&c->start_ns, __ATOMIC_ACQUIRE);
    unsigned long long ticks;
    if (start == 0 || pspawn_proc_stat(pid == getpid() ? 0 : pid, 22, 22, &ticks) < 0)
        return 1;
    return start >= ticks * ns_per_tick;
}

static void clear(struct route_child *c)
{
    __atomic_store_n(&c->site[0], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->site[1], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->verdict, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->start_ns, 0, __ATOMIC_RELEASE);
}

/* Whether the process of registration C is gone, reaped unseen (a
 * zombie is still there: its launcher will reap it). */
static int gone(struct route_child *c)
{
    int saved = errno;  /* a vfork child shares its parent's */
    int32_t pid = __atomic_load_n(&c->pid, __ATOMIC_ACQUIRE);
    int dead = pid > 0 && syscall(SYS_kill, pid, 0) < 0 && errno == ESRCH;
    errno = saved;
    return dead;
}

/* PID's slot: its registration, else a free one claimed, else one whose
 * process is gone.  -1 if none. */
static int slot_of(pid_t pid)
{
    for (unsigned i = 0; i < CHILDREN_PROBE; i++)
        if (__atomic_load_n(&slot_at(pid, i)->pid, __ATOMIC_ACQUIRE) == pid) {
            struct route_child *c = slot_at(pid, i);
            if (!same_process(c, pid))
                clear(c);
            return (int)(((unsigned)pid + i) % ROUTE_CHILDREN);
        }
    for (unsigned i = 0; i < CHILDREN_PROBE; i++) {
        int32_t seen = 0;
        /* Lost to a registration of the same process: that one is ours. */
        if (__atomic_compare_exchange_n(&slot_at(pid, i)->pid, &seen, (int32_t)pid, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) || seen == pid)
            return (int)(((unsigned)pid + i) % ROUTE_CHILDREN);
    }
    for (unsigned i = 0; i < CHILDREN_PROBE; i++) {
        struct route_child *c = slot_at(pid, i);
        int32_t seen = __atomic_load_n(&c->pid, __ATOMIC_ACQUIRE);
        if (seen > 0 && gone(c) &&
            __atomic_compare_exchange_n(&c->pid, &seen, (int32_t)pid, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            clear(c);
            return (int)(((unsigned)pid + i) % ROUTE_CHILDREN);
        }
    }
    return -1;
}

static int set_once(uint64_t *field, uint64_t value)
{
    uint64_t zero = 0;
    return __atomic_compare_exchange_n(field, &zero, value, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

int children_register(pid_t pid, uint64_t site, uint32_t verdict, struct child_mark *mark)
{
    *mark = (struct child_mark){ -1, -1 };
    if (!route_table)
        return -1;
    if (pid == 0)
        pid = getpid();
    uint64_t now = children_now();
    int at = slot_of(pid);
    if (at < 0)
        return -1;
    struct route_child *c = &route_table->child[at];
    mark->slot = at;
    set_once(&c->start_ns, now);
    for (int i = 0; i < 2 && mark->site < 0; i++)
        if (set_once(&c->site[i], site))
            mark->site = i;
    uint32_t had = 0;
    if (verdict != VERDICT_NONE)
        __atomic_compare_exchange_n(&c->verdict, &had, verdict, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    else
        had = __atomic_load_n(&c->verdict, __ATOMIC_ACQUIRE);
    return (int)had;
}

void children_undo(const struct child_mark *mark)
{
    if (!route_table || mark->slot < 0)
        return;
    struct route_child *c = &route_table->child[mark->slot];
    if (mark->site >= 0)
        __atomic_store_n(&c->site[mark->site], 0, __ATOMIC_RELEASE);
    /* Nothing else registered it: the slot is free again. */
    if (!__atomic_load_n(&c->site[0], __ATOMIC_ACQUIRE) &&
        !__atomic_load_n(&c->site[1], __ATOMIC_ACQUIRE)) {
        clear(c);
        __atomic_store_n(&c->pid, 0, __ATOMIC_RELEASE);
    }
}

int children_take(pid_t pid, uint64_t site[2], uint64_t *start_ns)
{
    int found = -1;
    site[0] = site[1] = 0;
    *start_ns = 0;
    for (unsigned i = 0; route_table && pid > 0 && i < CHILDREN_PROBE; i++) {
        struct route_child *c = slot_at(pid, i);
        if (__atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) != pid)
            continue;
        /* Two registrations that raced into two slots: one child. */
        for (int k = 0; k < 2; k++) {
            uint64_t s = __atomic_load_n(&c->site[k], __ATOMIC_ACQUIRE);
            if (s && !site[0])
                site[0] = s;
            else if (s && s != site[0] && !site[1])
                site[1] = s;
        }
        uint64_t start = __atomic_load_n(&c->start_ns, __ATOMIC_ACQUIRE);
        if (start && (!*start_ns || start < *start_ns))
            *start_ns = start;
        clear(c);
        __atomic_store_n(&c->pid, 0, __ATOMIC_RELEASE);
        found = 0;
    }
    return found == 0 && site[0] && *start_ns ? 0 : -1;
}
