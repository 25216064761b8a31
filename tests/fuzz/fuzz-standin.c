/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in zygote's side of one stand-in (zygote/standin.c, included
 * to reach its static functions): the stand-in's request arrives on its
 * connection (any message, any fds: fuzz-msg.h); the root reads it, picks
 * the group of its CPUs, forwards it to that group's sub-zygote or serves
 * it; a sub-zygote serves what the root forwarded.  Forking is stubbed
 * (task.c's part, all of it): a task "started" has a made-up pid and
 * never runs.
 *
 * Input: u8 bits (0-1: groups of the fan-out, none below 2; 2: the clone
 * fails; 3: group 1's sub-zygote is gone), a CPU byte per group, then the
 * message.
 *
 * Invariants: no crash, no undefined behaviour; the stand-in gets one
 * reply, well formed (STARTED with the task's pid, or FAILED with an
 * errno), or the end of its connection (it then execs its task), never
 * silence on an open connection; once the stand-in is done with, every fd
 * its message brought is closed.
 */
#include <sys/resource.h>

#include "fuzz-msg.h"
#include "fuzz-zygote.h"

#define TASK_PID 424242
#define TOKEN "fuzz-token-0123456789abcdef"    /* make-seeds.c writes it */

static int clone_fails;

pid_t zygote_clone(unsigned long extra, int *parent_tid)
{
    (void)extra;
    (void)parent_tid;
    if (clone_fails) {
        errno = EAGAIN;
        return -1;
    }
    return TASK_PID;
}

struct task_start zygote_task_main(char *base, size_t size, struct wire_go *go, uint32_t id, uint32_t index,
                                   struct child_setup *tmpl, int nfds, int standin)
{
    (void)base, (void)size, (void)go, (void)id, (void)index, (void)tmpl, (void)nfds, (void)standin;
    abort();    /* only in a task, which the stub never makes */
}

pid_t zygote_pip_clone(unsigned long extra, int *parent_tid, char *base, size_t size, int go_fd,
                       uint32_t id, uint32_t index, struct child_setup *tmpl, int nfds,
                       int standin, void (*first)(int), int first_arg)
{
    (void)extra, (void)parent_tid, (void)base, (void)size, (void)go_fd, (void)id, (void)index;
    (void)tmpl, (void)nfds, (void)standin, (void)first, (void)first_arg;
    abort();    /* mode=pip only: parked.pip stays 0 here */
}

void zygote_report(int fd, uint32_t req, uint32_t index, int32_t pid, int32_t err)
{
    (void)fd, (void)req, (void)index, (void)pid, (void)err;
    abort();    /* direct mode only */
}

#include "../../libpspawn/zygote/standin.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_limit_fds();
    return 0;
}

static void zygote_state(struct fuzz_input *in, int fwd[4][2])
{
    memset(&parked, 0, sizeof parked);
    strcpy(parked.cwd, "/");
    parked.task_cgroup = -1;
    parked.root_pidfd = -1;
    parked.sock = -1;
    snprintf(parked.token, sizeof parked.token, "%s", TOKEN);
    unsigned bits = fz_u8(in);
    int ngroups = bits & 3;
    clone_fails = (bits >> 2) & 1;
    memset(&standin, 0, sizeof standin);
    standin.lfd = standin.sfd = standin.starter_pidfd = -1;
    for (int g = 0; g < 4; g++)
        fwd[g][0] = fwd[g][1] = -1;
    if (ngroups < 2)
        return;
    parked.groups = calloc((size_t)ngroups, sizeof *parked.groups);
    parked.ngroups = ngroups;
    for (int g = 0; g < ngroups; g++) {
        parked.groups[g].cpus[0] = fz_u8(in);
        parked.groups[g].fwd = -1;
        if (g == 0 || (g == 1 && (bits & 8)))
            continue;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fwd[g]) == 0) {
            parked.groups[g].fwd = fwd[g][0];
            parked.groups[g].pid = 1000 + g;
        }
    }
}

/* The sub-zygote that got stand-in C's request serves it. */
static int sub_zygote_serves(int fwd[4][2])
{
    for (int g = 1; g < parked.ngroups; g++) {
        struct pollfd p = { fwd[g][1], POLLIN, 0 };
        if (fwd[g][1] < 0 || poll(&p, 1, 0) != 1)
            continue;
        parked.sock = fwd[g][1];
        parked.forwarded = 1;
        struct task_start ts;
        int rr = forwarded_request(&ts);
        FUZZ_CHECK(rr == 0 || rr == -1, "sub-zygote: forwarded_request returned %d", rr);
        parked.sock = -1;
        return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    struct fuzz_fds before;
    fuzz_fds_snapshot(&before);
    int fwd[4][2];
    zygote_state(&in, fwd);
    struct fuzz_msg m;
    int cs[2] = { -1, -1 };
    if (fuzz_msg_make(&in, &m) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cs) < 0) {
        if (m.nfds > 0)
            for (int i = 0; i < m.nfds; i++)
                close(m.fds[i]);
        goto out;
    }
    fuzz_msg_send(cs[0], &m);
    shutdown(cs[0], SHUT_WR);   /* the stand-in sends one request, then waits */

    /* As admit() makes it, the stand-in pinned (it is us). */
    memset(&standin.c[0], 0, sizeof standin.c[0]);
    standin.c[0].fd = cs[1];
    struct ucred cred;
    FUZZ_CHECK(pspawn_pin_peer(&standin.c[0].peer, cs[1], &cred) == 0, "no pin of ourselves");
    standin.n = 1;
    struct task_start ts;
    int rr = standin_request(&standin.c[0], &ts);
    FUZZ_CHECK(rr == 0 || rr == -1 || rr == 2, "standin_request returned %d", rr);
    int forwarded = rr == 2 && sub_zygote_serves(fwd);
    FUZZ_CHECK(rr != 2 || forwarded, "forwarded, but no sub-zygote got it");
    if (rr == -1)
        drop_conn(&standin.c[0]);     /* the serve loop drops a stand-in done with */
    fuzz_msg_shrink(&m);

    /* What the stand-in hears: a reply, or the end of its connection
     * (it then execs its task); never nothing, or it waits for ever. */
    struct standin_reply r[2];
    ssize_t got = recv(cs[0], &r[0], sizeof r, MSG_DONTWAIT);
    FUZZ_CHECK(got >= 0, "no reply, and the connection is open (rr %d): the stand-in waits for ever", rr);
    ssize_t more = recv(cs[0], &r[1], sizeof r[1], MSG_DONTWAIT);
    FUZZ_CHECK(got == 0 || more <= 0, "a second reply");
    if (got > 0) {
        FUZZ_CHECK(got == sizeof r[0] && r[0].magic == PSPAWN_MAGIC, "a reply of %zd bytes, magic %#x", got,
                   r[0].magic);
        FUZZ_CHECK((r[0].kind == STANDIN_STARTED && r[0].pid == TASK_PID && r[0].status == 0) ||
                       (r[0].kind == STANDIN_FAILED && r[0].pid == -1 && r[0].status > 0),
                   "reply kind %d, pid %d, status %d", r[0].kind, r[0].pid, r[0].status);
        FUZZ_CHECK(r[0].kind != STANDIN_STARTED || !clone_fails, "started although the clone failed");
    }

out:
    for (int i = 0; i < standin.n; i++)
        drop_conn(&standin.c[i]);
    standin.n = 0;
    if (cs[0] >= 0)
        close(cs[0]);
    for (int g = 0; g < 4; g++) {
        if (parked.groups && g < parked.ngroups && parked.groups[g].fwd >= 0)
            close(parked.groups[g].fwd);
        if (fwd[g][1] >= 0)
            close(fwd[g][1]);
    }
    free(parked.groups);
    parked.groups = NULL;
    parked.ngroups = 0;
    fuzz_msg_done(&m);
    fuzz_fds_same(&before, "after the stand-in was done with");
    return 0;
}
