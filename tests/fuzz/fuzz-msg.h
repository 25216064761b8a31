/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A message on a socket, as a fuzz input describes it (fuzz-recv,
 * fuzz-standin and the seed maker share it):
 *
 *   u8   flags      FLAG_* below
 *   u8   len        bytes of the message itself (a request_msg is 16)
 *   ...  len bytes  the message
 *   u8   nfds       fds that come with it (any number: the kernel takes at
 *                   most 253 per message, the zygote room for fewer)
 *   ...  nfds bytes what each fd is: FD_* below
 *   u16  memfd size bytes of the request memfd, whose contents are
 *   ...  the rest   the rest of the input
 *
 * The message goes through a real SOCK_SEQPACKET socketpair with its fds
 * by SCM_RIGHTS, as a launcher or a stand-in sends it.
 */
#ifndef TESTS_FUZZ_MSG_H
#define TESTS_FUZZ_MSG_H

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "fuzz.h"

#define FLAG_SEALED     0x1     /* memfds sealed against resizing, as the launcher makes them */
#define FLAG_SHRINK     0x2     /* the sender shrinks the request memfd once it is received */
#define FLAG_FORWARDED  0x4     /* fuzz-recv: the first fd is a forwarded connection */

enum {
    FD_REQUEST = 0,     /* the request memfd (the same one each time) */
    FD_GO = 1,          /* a memfd of 512 bytes (a go block's size) */
    FD_NULL = 2,        /* /dev/null */
    FD_PIPE = 3,        /* a pipe's read end */
    FD_SOCKET = 4,      /* a socket (as a forwarded connection) */
    FD_EMPTY = 5,       /* an empty memfd */
    FD_KINDS
};

#define MSG_MAX_FDS 253     /* SCM_MAX_FD */

struct fuzz_msg {
    unsigned flags;
    uint8_t body[64];
    size_t len;
    int fds[MSG_MAX_FDS];
    int nfds;
    int request;        /* our own fd of the request memfd, or -1 */
};

static int fuzz_memfd(size_t size, int sealed, const uint8_t *data, size_t n)
{
    int fd = (int)syscall(SYS_memfd_create, "fuzz", sealed ? 0x3u : 0x1u);  /* CLOEXEC, ALLOW_SEALING */
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) < 0 || (n && pwrite(fd, data, n < size ? n : size, 0) < 0) ||
        (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void fuzz_msg_done(struct fuzz_msg *m)
{
    if (m->request >= 0)
        close(m->request);
    m->request = -1;
}

/* Read a message and make its fds.  0, or -1 if the machine is out of
 * something (the input is then skipped). */
static int fuzz_msg_make(struct fuzz_input *in, struct fuzz_msg *m)
{
    m->flags = fz_u8(in);
    m->len = fz_u8(in) % (sizeof m->body + 1);
    memset(m->body, 0, sizeof m->body);
    const uint8_t *p;
    size_t got = fz_bytes(in, m->len, &p);
    memcpy(m->body, p, got);
    m->nfds = 0;
    m->request = -1;
    unsigned nfds = fz_u8(in);
    const uint8_t *kinds;
    size_t nk = fz_bytes(in, nfds, &kinds);
    size_t size = fz_u8(in);
    size |= (size_t)fz_u8(in) << 8;
    const uint8_t *data;
    size_t n = fz_bytes(in, in->n, &data);
    int sealed = m->flags & FLAG_SEALED;
    for (unsigned i = 0; i < nfds && i < MSG_MAX_FDS; i++) {
        int kind = i < nk ? kinds[i] % FD_KINDS : FD_NULL, fd = -1, pp[2];
        switch (kind) {
        case FD_REQUEST:
            if (m->request < 0)
                m->request = fuzz_memfd(size, sealed, data, n);
            fd = m->request < 0 ? -1 : fcntl(m->request, F_DUPFD_CLOEXEC, 0);
            break;
        case FD_GO:
            fd = fuzz_memfd(512, sealed, NULL, 0);
            break;
        case FD_NULL:
            fd = open("/dev/null", O_RDWR | O_CLOEXEC);
            break;
        case FD_PIPE:
            if (pipe2(pp, O_CLOEXEC) == 0) {
                close(pp[1]);
                fd = pp[0];
            }
            break;
        case FD_SOCKET:
            if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pp) == 0) {
                close(pp[1]);
                fd = pp[0];
            }
            break;
        default:
            fd = fuzz_memfd(0, sealed, NULL, 0);
        }
        if (fd < 0) {
            for (int j = 0; j < m->nfds; j++)
                close(m->fds[j]);
            m->nfds = 0;
            fuzz_msg_done(m);
            return -1;
        }
        m->fds[m->nfds++] = fd;
    }
    return 0;
}

/* Send M on SOCK, then close our copies of its fds (the kernel holds
 * them now), all but the request memfd's own.  0, or an errno. */
static int fuzz_msg_send(int sock, struct fuzz_msg *m)
{
    union {
        char buf[CMSG_SPACE(MSG_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec iov = { m->body, m->len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (m->nfds) {
        mh.msg_control = cm.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)m->nfds * sizeof(int));
        struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
        ch->cmsg_level = SOL_SOCKET;
        ch->cmsg_type = SCM_RIGHTS;
        ch->cmsg_len = CMSG_LEN((size_t)m->nfds * sizeof(int));
        memcpy(CMSG_DATA(ch), m->fds, (size_t)m->nfds * sizeof(int));
    }
    int err = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? errno : 0;
    for (int i = 0; i < m->nfds; i++)
        close(m->fds[i]);
    m->nfds = 0;
    return err;
}

/* The sender, hostile: shrink the request memfd under the receiver. */
static void fuzz_msg_shrink(struct fuzz_msg *m)
{
    if ((m->flags & FLAG_SHRINK) && m->request >= 0 && ftruncate(m->request, 0) < 0)
        FUZZ_CHECK(m->flags & FLAG_SEALED, "an unsealed memfd could not be shrunk");
}

#endif
