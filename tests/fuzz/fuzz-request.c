/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote's request decoder: zygote_parse_request (zygote/parse.c),
 * then, for every task of a request it accepts, the decoding of the
 * task's argv and environ that the task does first thing (task.c's
 * strings_valid and build_args, reached by including task.c).
 *
 * Input: a control block (the zygote's parked state the parse compares
 * with, how many fds came with the message), then the request memfd's
 * bytes, copied into a buffer of exactly that size (ASan sees any read
 * past it, as a SIGBUS or a neighbour's bytes would be in the zygote).
 *
 * Invariants: no crash or undefined behaviour; an accepted request's setup
 * points only inside the request, at terminated strings, at passed fds
 * that exist, and a task's argv and environ are exactly its strings.
 */
#include <assert.h>

#include "fuzz.h"
#include "fuzz-zygote.h"

#include "../../libpspawn/zygote/task.c"

/* The parked state: CTL's bits pick what differs from the defaults. */
static void park(struct fuzz_input *ctl)
{
    memset(&parked, 0, sizeof parked);
    unsigned bits = fz_u8(ctl);
    parked.have_base = bits & 1;
    parked.have_mempolicy = (bits >> 1) & 1;
    parked.no_new_privs = (bits >> 2) & 1;
    parked.seccomp = (bits >> 3) & 3;
    parked.base.seccomp = parked.seccomp;
    parked.umask = 022;
    parked.base.umask = (bits & 0x20) ? 077 : 022;
    parked.nice = (bits & 0x40) ? 5 : 0;
    parked.proc = (struct wire_procstate){ 0, 0, -1, (bits & 0x80) ? -1 : 0, 50000 };
    strcpy(parked.cwd, "/");
    parked.task_cgroup = -1;
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        parked.rl[r] = (struct rlimit){ 1024, 4096 };
        parked.base.rl[r] = parked.rl[r];
    }
    parked.nctor_fds = fz_u8(ctl) % 4;
    for (int i = 0; i < parked.nctor_fds; i++)
        parked.ctor_fds[i] = fz_u8(ctl) % 80;
}

static int inside(const void *p, const char *base, size_t size)
{
    return (const char *)p >= base && (const char *)p < base + size;
}

static void check_setup(const struct child_setup *s, const char *base, size_t size, int nfds,
                        const int chan[2])
{
    /* The request's cwd, or (it asks none) the one the zygote was started
     * in, by name: a parked zygote is in "/". */
    FUZZ_CHECK(s->cwd == parked.cwd ||
                   (inside(s->cwd, base, size) && memchr(s->cwd, 0, (size_t)(base + size - s->cwd))),
               "cwd outside the request and not the zygote's, or not terminated");
    FUZZ_CHECK(s->nactions >= 0 && s->nactions <= PSPAWN_FD_MAX + 3, "%d actions", s->nactions);
    for (int i = 0; i < s->nactions; i++) {
        const struct child_action *a = &s->actions[i];
        FUZZ_CHECK(a->fd >= 0, "action %d: target fd %d", i, a->fd);
        FUZZ_CHECK(a->kind != FA_DUP2 || (a->src >= 0 && a->src < nfds),
                   "action %d: dup2 of passed fd %d, %d passed", i, a->src, nfds);
        FUZZ_CHECK(a->kind != FA_OPEN ||
                       (inside(a->path, base, size) && memchr(a->path, 0, (size_t)(base + size - a->path))),
                   "action %d: open path outside the request, or not terminated", i);
    }
    FUZZ_CHECK(s->nrlimits >= 0 && s->nrlimits <= RLIM_NLIMITS, "%d rlimits", s->nrlimits);
    for (int i = 0; i < s->nrlimits; i++)
        FUZZ_CHECK(s->rlimits[i].resource >= 0 && s->rlimits[i].resource < RLIM_NLIMITS,
                   "rlimit %d: resource %d", i, s->rlimits[i].resource);
    FUZZ_CHECK(s->nfds == nfds + 2 && s->fds[nfds] == chan[0] && s->fds[nfds + 1] == chan[1],
               "the caller's channels are not after the %d passed fds", nfds);
    FUZZ_CHECK(!s->cpuset || inside(s->cpuset, base, size), "cpuset outside the request");
}

/* Task INDEX's argv and environ, as the task decodes them. */
static void check_task(const char *base, size_t size, uint32_t index)
{
    const struct wire_request *w = (const struct wire_request *)base;
    const struct wire_task *t = (const struct wire_task *)(base + w->tasks) + index;
    if (!strings_valid(base, size, t))
        return;
    struct task_start ts;
    unsigned long arg_start;
    if (build_args(base, t, &ts, &arg_start) != 0)
        return;
    FUZZ_CHECK(ts.argc == (int)t->argc && ts.argv[t->argc] == NULL && ts.envp[t->envc] == NULL,
               "task %u: argv or environ not terminated", index);
    const char *end = (const char *)arg_start + t->strings_len + t->env_len;
    for (uint32_t i = 0; i < t->argc; i++)
        FUZZ_CHECK(ts.argv[i] >= (char *)arg_start && ts.argv[i] < (char *)arg_start + t->strings_len,
                   "task %u: argv[%u] outside the argv strings", index, i);
    for (uint32_t i = 0; i < t->envc; i++)
        FUZZ_CHECK(ts.envp[i] >= (char *)arg_start + t->strings_len && ts.envp[i] < end,
                   "task %u: environ[%u] outside the environment strings", index, i);
    size_t ptrs = ((size_t)t->argc + 1 + t->envc + 1) * sizeof(char *);
    munmap(ts.argv, ptrs + t->strings_len + t->env_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    park(&in);
    int nfds = (int)(fz_u8(&in) % ZYGOTE_MSG_FDS);  /* as many as a message can bring */
    const uint8_t *req;
    size_t len = fz_bytes(&in, in.n, &req);
    char *base = malloc(len ? len : 1);
    assert(base);
    memcpy(base, req, len);

    int fds[ZYGOTE_MSG_FDS];
    for (int i = 0; i < nfds; i++)
        fds[i] = 100 + i;
    const int chan[2] = { 7, 8 };
    struct child_setup tmpl;
    int detail = 0;
    int r = zygote_parse_request(base, len, fds, nfds, chan, &tmpl, &detail);
    FUZZ_CHECK(r == REFUSE_NONE || r == REFUSE_FD_CONFLICT || r == REFUSE_MALFORMED ||
                   r == REFUSE_SECCOMP || r == REFUSE_CTOR_STATE,
               "refusal %d", r);
    if (r == REFUSE_NONE) {
        check_setup(&tmpl, base, len, nfds, chan);
        const struct wire_request *w = (const struct wire_request *)base;
        FUZZ_CHECK(w->ntasks <= PSPAWN_REQ_MAX, "%u tasks accepted", w->ntasks);
        for (uint32_t i = 0; i < w->ntasks; i++)
            check_task(base, len, i);
    }
    free(base);
    return 0;
}
