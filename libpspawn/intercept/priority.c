/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Starting a child with the priority its spawn site predicts (priority.h).
 * priority_apply runs between vfork and exec: system calls only.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hash.h"
#include "priority.h"

/* The kernel's struct sched_attr (SCHED_ATTR_SIZE_VER1); glibc 2.36 has
 * neither it nor sched_setattr. */
struct kernel_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

int priority_mode_parse(const char *mode)
{
    static const char *const names[] = { "off", "nice", "batch", "slice" };
    for (int i = 0; mode && i < 4; i++)
        if (!strcmp(mode, names[i]))
            return i;
    return -1;
}

void priority_config_from_env(struct priority_config *c, int base_nice)
{
    c->base_nice = base_nice;
    const char *mode = getenv(PRIORITY_ENV_MODE), *nice = getenv(PRIORITY_ENV_NICE),
               *lng = getenv(PRIORITY_ENV_LONG);
    int m = priority_mode_parse(mode);
    c->mode = m < 0 ? PRIORITY_OFF : (enum priority_mode)m;
    char *end;
    long n = nice ? strtol(nice, &end, 10) : 10;
    c->nice = nice && (*end || n < 1 || n > 19) ? 10 : (int)n;
    double s = lng ? strtod(lng, &end) : 1.0;
    if (lng && (*end || !(s > 0) || s > 86400))
        s = 1.0;
    c->long_ns = (uint64_t)(s * 1e9);
}

static int get_attr(pid_t pid, struct kernel_sched_attr *a)
{
    memset(a, 0, sizeof *a);
    return (int)syscall(SYS_sched_getattr, pid, a, sizeof *a, 0);
}

void priority_apply(pid_t pid, const struct priority_config *c, enum priority_verdict verdict)
{
    if (c->mode == PRIORITY_OFF || verdict == VERDICT_NONE)
        return;
    int saved = errno;
    struct kernel_sched_attr a;
    /* The fair classes only: a real-time child was made so on purpose. */
    if (get_attr(pid, &a) == 0 && (a.policy == SCHED_OTHER || a.policy == SCHED_BATCH)) {
        if (c->mode == PRIORITY_NICE && verdict == VERDICT_LONG) {
            int nice = c->base_nice + c->nice > 19 ? 19 : c->base_nice + c->nice;
            if (a.nice < nice)
                setpriority(PRIO_PROCESS, (id_t)pid, nice);
        } else if (c->mode == PRIORITY_BATCH && verdict == VERDICT_LONG) {
            struct sched_param sp = { 0 };
            sched_setscheduler(pid, SCHED_BATCH, &sp);
        } else if (c->mode == PRIORITY_SLICE) {
            a.size = sizeof a;
            a.flags = 0;
            a.runtime = verdict == VERDICT_LONG ? PRIORITY_SLICE_LONG_NS
                                                : PRIORITY_SLICE_SHORT_NS;
            syscall(SYS_sched_setattr, pid, &a, 0);
        }
    }
    errno = saved;
}

void priority_hash_scheduling(uint64_t *h)
{
    struct kernel_sched_attr a;
    if (get_attr(0, &a) != 0)
        return;
    pspawn_hash(h, &a.policy, sizeof a.policy);
    pspawn_hash(h, &a.nice, sizeof a.nice);
    pspawn_hash(h, &a.runtime, sizeof a.runtime);
}
