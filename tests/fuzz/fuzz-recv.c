/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zygote's receive (zygote/parse.c: recv_message, through
 * zygote_recv_request and zygote_recv_forwarded) and the fd passing under
 * it: any message, with any number of fds of any kind (fuzz-msg.h), sent
 * by SCM_RIGHTS over a real SOCK_SEQPACKET socketpair, then served as
 * serve.c serves it: parsed, and let go of.  The sender may shrink the
 * request memfd once it is received, as a hostile one would.
 *
 * Invariants: no crash, no undefined behaviour, no SIGBUS; a message that
 * is taken maps exactly what it says; and once the zygote has let go of a
 * message, taken or refused, every fd it brought is closed (a zygote that
 * keeps one per bad message runs out of fds).
 */
#include <sys/resource.h>

#include "fuzz-msg.h"
#include "fuzz-zygote.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_limit_fds();
    strcpy(parked.cwd, "/");
    parked.task_cgroup = -1;
    return 0;
}

/* Serve a received message as serve.c does. */
static void serve(const struct request_msg *msg, void *base, struct wire_go *go, int *fds, int nfds,
                  struct fuzz_msg *m)
{
    FUZZ_CHECK(msg->magic == PSPAWN_MAGIC || msg->magic == PSPAWN_FANOUT_MAGIC, "magic %#x taken", msg->magic);
    int request = msg->magic == PSPAWN_MAGIC;
    int head = request ? ZYGOTE_REQ_HEAD : 1;
    FUZZ_CHECK(nfds >= head && (uint32_t)nfds == head + msg->nfds, "%d fds taken, the message says %u + %d",
               nfds, msg->nfds, head);
    fuzz_msg_shrink(m);
    /* Every byte the message says is there, is. */
    unsigned sum = 0;
    for (uint32_t i = 0; i < msg->size; i++)
        sum += ((const volatile unsigned char *)base)[i];
    (void)sum;
    if (!request) {
        FUZZ_CHECK(go == NULL, "a fan-out with a go block");
        munmap(base, msg->size);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return;
    }
    FUZZ_CHECK(go != NULL && go != MAP_FAILED, "a request without its go block");
    go->go[PSPAWN_REQ_MAX - 1] = GO_RUN;    /* the zygote writes there */
    struct child_setup tmpl;
    int detail;
    const int chan[2] = { 7, 8 };
    zygote_parse_request(base, msg->size, fds + head, nfds - head, chan, &tmpl, &detail);
    zygote_drop_request(base, msg->size, go, fds, nfds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    struct fuzz_fds before;
    fuzz_fds_snapshot(&before);
    struct fuzz_msg m;
    if (fuzz_msg_make(&in, &m) < 0)
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        for (int i = 0; i < m.nfds; i++)
            close(m.fds[i]);
        fuzz_msg_done(&m);
        return 0;
    }
    fuzz_msg_send(sv[0], &m);
    close(sv[0]);   /* after the message, the end of the file */

    struct request_msg msg;
    void *base = NULL;
    struct wire_go *go = NULL;
    int fds[ZYGOTE_MSG_FDS], nfds = -1, conn = -1;
    memset(&msg, 0, sizeof msg);
    int r = (m.flags & FLAG_FORWARDED)
                ? zygote_recv_forwarded(sv[1], &msg, &conn, &base, &go, fds, &nfds)
                : zygote_recv_request(sv[1], &msg, &base, &go, fds, &nfds);
    FUZZ_CHECK(r == 1 || r == 0 || r == -1, "returned %d", r);
    if (r == 1) {
        FUZZ_CHECK(nfds >= 0 && nfds <= ZYGOTE_MSG_FDS, "%d fds", nfds);
        if (m.flags & FLAG_FORWARDED) {
            FUZZ_CHECK(fcntl(conn, F_GETFD) >= 0, "the forwarded connection %d is not open", conn);
            close(conn);
        }
        serve(&msg, base, go, fds, nfds, &m);
        /* One message was sent: what follows is the end of the file. */
        r = zygote_recv_request(sv[1], &msg, &base, &go, fds, &nfds);
        FUZZ_CHECK(r == 0, "a second message (%d) after the only one", r);
    }
    close(sv[1]);
    fuzz_msg_done(&m);
    fuzz_fds_same(&before, "after the message was let go of");
    return 0;
}
