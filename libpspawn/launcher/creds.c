/* SPDX-License-Identifier: BSD-3-Clause */
/* The caller's credentials: a fork of the zygote has what the caller had
 * when the zygote started, an exec what it has now. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

int pspawn_creds_get(struct pspawn_creds *c)
{
    memset(c, 0, sizeof *c);
    if (getresuid(&c->uid[0], &c->uid[1], &c->uid[2]) < 0 ||
        getresgid(&c->gid[0], &c->gid[1], &c->gid[2]) < 0)
        return errno;
    gid_t small[64], *g = small;
    int n = getgroups(0, NULL);
    if (n > (int)(sizeof small / sizeof small[0]) && !(g = malloc((size_t)n * sizeof *g)))
        return ENOMEM;
    n = n < 0 ? -1 : getgroups(n, g);
    int err = n < 0 ? errno : 0;
    uint64_t h = UINT64_C(14695981039346656037);    /* FNV-1a */
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)g[i];
        h *= UINT64_C(1099511628211);
    }
    if (g != small)
        free(g);
    if (err)
        return err;
    c->groups = h;
    c->ngroups = (uint32_t)n;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &hdr, d) == 0)
        for (int i = 0; i < 2; i++) {
            c->cap[3 * i] = d[i].effective;
            c->cap[3 * i + 1] = d[i].permitted;
            c->cap[3 * i + 2] = d[i].inheritable;
        }
    c->securebits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    /* Exec keeps both sets, and builds the task's capabilities from them
     * (root's tasks get the bounding set).  Each is one prctl per
     * capability, so read only where capget's sets say it could differ:
     * dropping a bounding capability needs CAP_SETPCAP in the permitted
     * set, and the ambient set is always within permitted and inheritable,
     * so outside those the sets cannot change without capget's changing. */
    uint64_t perm = (uint64_t)c->cap[1] | (uint64_t)c->cap[4] << 32;
    uint64_t inh = (uint64_t)c->cap[2] | (uint64_t)c->cap[5] << 32;
    if (perm & (UINT64_C(1) << CAP_SETPCAP))
        for (int cap = 0; cap < 64; cap++) {
            int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
            if (r < 0)
                break;      /* EINVAL: past the kernel's last capability */
            if (r)
                c->bounding |= UINT64_C(1) << cap;
        }
    for (int cap = 0; cap < 64 && (perm & inh) >> cap; cap++)
        if ((perm & inh) >> cap & 1 &&
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
            c->ambient |= UINT64_C(1) << cap;
    return 0;
}

const char *pspawn_creds_differ(const struct pspawn_creds *a, const struct pspawn_creds *b)
{
    if (memcmp(a->uid, b->uid, sizeof a->uid))
        return "user IDs";
    if (memcmp(a->gid, b->gid, sizeof a->gid))
        return "group IDs";
    if (a->groups != b->groups || a->ngroups != b->ngroups)
        return "supplementary groups";
    if (memcmp(a->cap, b->cap, sizeof a->cap))
        return "capabilities";
    if (a->securebits != b->securebits)
        return "securebits";
    if (a->bounding != b->bounding)
        return "bounding capability set";
    if (a->ambient != b->ambient)
        return "ambient capabilities";
    return NULL;
}

