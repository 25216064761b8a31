/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "execargs.h"

#define MAX_ARG_STRLEN (32 * 4096)

/* The limits execve(2) enforces (fs/exec.c, bprm_stack_limits and
 * copy_strings): each string at most MAX_ARG_STRLEN, and all strings plus
 * the pointers to them within a quarter of the stack limit (at most 3/4 of
 * _STK_LIM, at least ARG_MAX). */
int pspawn_args_too_big_plus(const char *filename, char *const argv[], char *const envp[],
                             uint64_t stack_limit, unsigned long extra_bytes,
                             unsigned long extra_ptrs)
{
    /* The kernel allows a quarter of the stack limit the new program has
     * (the task's, which its attributes may set), capped at 6 MiB. */
    unsigned long limit = 6UL << 20;
    if (stack_limit != RLIM_INFINITY && stack_limit / 4 < limit)
        limit = (unsigned long)(stack_limit / 4);
    if (limit < 128UL * 1024)
        limit = 128UL * 1024;
    unsigned long argc = 0, envc = extra_ptrs, bytes = strlen(filename) + 1 + extra_bytes;
    for (; argv && argv[argc]; argc++) {
        size_t l = strlen(argv[argc]) + 1;
        if (l > MAX_ARG_STRLEN)
            return E2BIG;
        bytes += l;
    }
    for (; envp && *envp; envp++, envc++) {
        size_t l = strlen(*envp) + 1;
        if (l > MAX_ARG_STRLEN)
            return E2BIG;
        bytes += l;
    }
    unsigned long ptrs = ((argc ? argc : 1) + envc) * sizeof(void *);
    if (limit <= ptrs || bytes > limit - ptrs)
        return E2BIG;
    return 0;
}
