/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "go.h"
#include "protocol.h"

int pspawn_go_swap(uint32_t *go, uint32_t v)
{
    uint32_t old = GO_HOLD;
    if (__atomic_compare_exchange_n(go, &old, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 1;   /* not asleep on it: it will see V */
    if (old != GO_WAITING ||
        !__atomic_compare_exchange_n(go, &old, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 0;
    syscall(SYS_futex, go, FUTEX_WAKE, 1, NULL, NULL, 0);
    return 1;
}

uint32_t pspawn_go_wait(uint32_t *go, int (*gone)(const void *arg), const void *arg)
{
    for (;;) {
        uint32_t v = __atomic_load_n(go, __ATOMIC_ACQUIRE);
        if (v == GO_RUN || v == GO_CANCEL)
            return v;
        /* Say that we sleep, so that the releaser wakes us. */
        if (v == GO_HOLD &&
            !__atomic_compare_exchange_n(go, &v, GO_WAITING, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue;   /* released or cancelled meanwhile */
        struct timespec ts = { 1, 0 };
        syscall(SYS_futex, go, FUTEX_WAIT, GO_WAITING, &ts, NULL, 0);
        v = __atomic_load_n(go, __ATOMIC_ACQUIRE);
        if ((v == GO_HOLD || v == GO_WAITING) && gone(arg))
            return GO_HOLD;
    }
}

int pspawn_go_arrive(struct wire_go *go, uint32_t index, uint32_t setup)
{
    if (index >= PSPAWN_REQ_MAX)
        return 0;
    __atomic_store_n(&go->setup[index], setup, __ATOMIC_RELEASE);
    return pspawn_go_count_out(go);
}

int pspawn_go_count_out(struct wire_go *go)
{
    /* Release: what this process wrote (its slot) is seen by the one that
     * finds the count at zero, and so by the launcher it tells. */
    return __atomic_sub_fetch(&go->left, 1, __ATOMIC_ACQ_REL) == 0;
}
