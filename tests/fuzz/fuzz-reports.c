/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the launcher reads from its zygotes: the task reports on the
 * report pipe (launcher/request.c: pspawn_batch_read_reports, its
 * take_report, then pspawn_batch_retire; request.c is included to reach
 * its static parts), and the ready
 * message each zygote sends once parked (launcher/zygote.c:
 * pspawn_zygote_await, pspawn_zygote_refusal; launcher/fanout.c:
 * pspawn_server_ready).
 *
 * Input: u8 bits (0: the caller has a pid hook; 1: it asked for pidfds),
 * u8 length and bytes of a ready message, then the report stream.  The
 * batch in flight has three requests: ids 1 (3 tasks), 2 (5 tasks) and 7
 * (64 tasks), all sent to the root.
 *
 * Invariants: no crash, no undefined behaviour, nothing signalled or
 * waited for that the launcher did not start; the caller is given only
 * pids > 0 (a pid of 0 or -1 in its hands is kill(0 or -1, ...)), each
 * task at most once, and errors > 0; a task of a request that is over is
 * done, or left to be done again, never still "sent"; a ready message
 * is taken only with the magic and a pid > 0 (the root's: its own).
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "../../libpspawn/launcher/request.c"

#define NTASKS (3 + 5 + PSPAWN_REQ_MAX)
#define ZYGOTE_PID 424242

static int hooked[NTASKS];

static void pid_hook(void *arg, size_t index, pid_t pid)
{
    (void)arg;
    FUZZ_CHECK(index < NTASKS, "pid hook for task %zu of %d", index, NTASKS);
    FUZZ_CHECK(pid > 0, "the caller is given pid %d for task %zu", (int)pid, index);
    FUZZ_CHECK(!hooked[index]++, "the caller is given task %zu twice", index);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_limit_fds();
    return 0;
}

/* The ready message BYTES, as the root's (await) and as a sub-zygote's. */
static void ready_message(struct pspawn_zygote *z, const uint8_t *bytes, size_t n)
{
    for (int how = 0; how < 2; how++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
            return;
        int sent = send(sv[0], bytes, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n;
        close(sv[0]);
        struct zygote_ready r;
        if (how == 0) {
            int err = pspawn_zygote_await(sv[1], ZYGOTE_PID, 0, &r);
            /* (A longer message is cut to its first sizeof r bytes by
             * recv: taken, as its magic says which protocol it is.) */
            FUZZ_CHECK(err || (sent && n >= sizeof r && r.magic == PSPAWN_MAGIC && r.pid == ZYGOTE_PID),
                       "await took %zu bytes, magic %#x, pid %d", n, r.magic, r.pid);
            if (!err) {
                char why[256], tiny[2];
                memset(why, 'x', sizeof why);
                pspawn_zygote_refusal(why, sizeof why, (int)r.status, r.detail);
                FUZZ_CHECK(why[0] && memchr(why, 0, sizeof why), "refusal %d: no terminated sentence", r.status);
                pspawn_zygote_refusal(tiny, sizeof tiny, (int)r.status, r.detail);
                FUZZ_CHECK(memchr(tiny, 0, sizeof tiny) != NULL, "refusal %d: not terminated in 2 bytes", r.status);
            }
            close(sv[1]);
        } else {
            struct zygote_server *s = &z->servers[1];
            *s = (struct zygote_server){ .state = SERVER_STARTING, .pid = 0, .pidfd = -1, .sock = sv[1] };
            int rr = pspawn_server_ready(z, 1);
            FUZZ_CHECK(rr == 1 || rr == 0 || rr == -1, "pspawn_server_ready returned %d", rr);
            if (rr == 1) {
                memcpy(&r, bytes, sizeof r);
                FUZZ_CHECK(n >= sizeof r && r.magic == PSPAWN_MAGIC && s->state == SERVER_READY,
                           "a sub-zygote ready from %zu bytes, magic %#x", n, r.magic);
                FUZZ_CHECK(s->pid > 0, "a sub-zygote taken as ready with pid %d", s->pid);
            }
            FUZZ_CHECK(rr != -1 || s->state == SERVER_LOST, "refused, but not lost");
            if (s->sock >= 0)
                close(s->sock);
            if (s->pidfd >= 0)
                close(s->pidfd);
            *s = (struct zygote_server){ .state = SERVER_LOST, .pid = -1, .pidfd = -1, .sock = -1 };
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    struct fuzz_fds before;
    fuzz_fds_snapshot(&before);
    unsigned bits = fz_u8(&in);
    const uint8_t *ready;
    size_t nready = fz_bytes(&in, fz_u8(&in) % 33, &ready);

    static struct pspawn_zygote z;
    static struct zygote_server servers[2];
    static struct pspawn_group groups[2];
    memset(&z, 0, sizeof z);
    memset(servers, 0, sizeof servers);
    memset(groups, 0, sizeof groups);
    z.servers = servers;
    z.topo.ngroups = 2;
    z.topo.groups = groups;
    z.timeout_ms = 1000;
    z.report_r = -1;
    servers[0] = (struct zygote_server){ .state = SERVER_READY, .pid = 0, .pidfd = -1, .sock = -1 };
    ready_message(&z, ready, nready);

    /* The report stream, in the pipe every server's tasks write to. */
    const uint8_t *reports;
    size_t nrep = fz_bytes(&in, in.n, &reports);
    int rep[2];
    if (pipe2(rep, O_CLOEXEC | O_NONBLOCK) < 0)
        return 0;
    if (nrep && write(rep[1], reports, nrep) < 0)
        nrep = 0;
    close(rep[1]);
    z.report_r = rep[0];

    static struct pspawn_attr_impl attr;
    static struct batch_call call;
    memset(&attr, 0, sizeof attr);
    memset(&call, 0, sizeof call);
    if (bits & 1)
        attr.pid_hook = pid_hook;
    call.c.attr = &attr;
    call.c.user_flags = (bits & 2) ? PSPAWN_PIDFD : 0;
    call.unsettled = NTASKS;
    static struct batch_task tasks[NTASKS];
    memset(tasks, 0, sizeof tasks);
    memset(hooked, 0, sizeof hooked);
    for (int i = 0; i < NTASKS; i++)
        tasks[i] = (struct batch_task){ .t = { .pid = -1, .pidfd = -1 }, .call = &call,
                                        .server = 0, .state = T_SENT };
    struct batch b;
    pspawn_batch_init(&b, &z);
    b.task = tasks;
    b.n = b.cap = b.unsettled = NTASKS;
    static const struct { uint32_t id; int k; } reqs[] = { { 1, 3 }, { 2, 5 }, { 7, PSPAWN_REQ_MAX } };
    b.nout = b.capout = 3;
    b.out = calloc(3, sizeof *b.out);
    int inflight[2] = { 3, 0 };
    size_t cursor[2] = { NTASKS, NTASKS };
    b.nservers = 2;
    b.inflight = inflight;
    b.cursor = cursor;
    size_t first = 0;
    for (int r = 0; r < 3; r++) {
        struct outstanding *o = &b.out[r];
        o->id = reqs[r].id;
        o->k = reqs[r].k;
        for (int j = 0; j < o->k; j++)
            o->idx[j] = first + (size_t)j;
        first += (size_t)o->k;
        o->req = (struct encoded_request){ .go = NULL, .size = 0, .memfd = -1, .gofd = -1 };
        o->req.go = mmap(NULL, sizeof *o->req.go, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        FUZZ_CHECK(o->req.go != MAP_FAILED, "no memory for a go block");
    }

    pspawn_batch_read_reports(&b);
    for (int r = 0; r < b.nout; r++) {
        int seen = 0;
        for (int j = 0; j < b.out[r].k; j++)
            seen += b.out[r].seen[j];
        FUZZ_CHECK(seen <= b.out[r].k, "request %u: %d reports for %d tasks", b.out[r].id, seen,
                   b.out[r].k);
    }
    pspawn_batch_retire(&b);

    unsigned char open_req[NTASKS];
    memset(open_req, 0, sizeof open_req);
    for (int r = 0; r < b.nout; r++)
        for (int j = 0; j < b.out[r].k; j++)
            open_req[b.out[r].idx[j]] = 1;
    for (int i = 0; i < NTASKS; i++) {
        unsigned st = tasks[i].state;
        pspawn_task_t *t = &tasks[i].t;
        FUZZ_CHECK(st == T_SENT || st == T_DONE || st == T_TODO || st == T_EXEC,
                   "task %d: state %u", i, st);
        FUZZ_CHECK(open_req[i] || st != T_SENT, "task %d: its request is over, and it is still sent", i);
        if (st == T_DONE) {
            FUZZ_CHECK(t->error >= 0, "task %d: error %d", i, t->error);
            FUZZ_CHECK(t->error || t->pid > 0, "task %d: done, with pid %d", i, (int)t->pid);
        }
        if (t->pidfd >= 0)
            close(t->pidfd);
    }
    for (int r = 0; r < b.nout; r++)
        pspawn_encoded_release(&b.out[r].req);
    free(b.out);
    close(rep[0]);
    fuzz_fds_same(&before, "after the reports were read");
    return 0;
}
