/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "unixsock.h"

int pspawn_abstract_addr(struct sockaddr_un *a, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t len = strlen(name);
    if (len + 1 >= sizeof a->sun_path)
        return -1;
    memcpy(a->sun_path + 1, name, len);
    return (int)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static int socket_for(const char *name, struct sockaddr_un *a, int *alen, int extra)
{
    *alen = pspawn_abstract_addr(a, name);
    if (*alen < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | extra, 0);
}

int pspawn_listen_abstract(const char *name, int backlog)
{
    struct sockaddr_un a;
    int alen;
    int fd = socket_for(name, &a, &alen, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, (socklen_t)alen) < 0 || listen(fd, backlog) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int pspawn_connect_abstract(const char *name, uid_t uid)
{
    struct sockaddr_un a;
    int alen;
    int fd = socket_for(name, &a, &alen, SOCK_NONBLOCK);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, (socklen_t)alen) < 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!pspawn_peer_uid_is(fd, uid)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int pspawn_peer_cred(int fd, struct ucred *peer)
{
    socklen_t len = sizeof *peer;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, peer, &len);
}

int pspawn_peer_uid_is(int fd, uid_t uid)
{
    struct ucred peer;
    return pspawn_peer_cred(fd, &peer) == 0 && peer.uid == uid;
}

int pspawn_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds)
{
    union {
        char buf[CMSG_SPACE(253 * sizeof(int))];
        struct cmsghdr align;
    } cm;
    if (nfds < 0 || nfds > 253)
        return EINVAL;
    struct iovec iov = { (void *)msg, len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds > 0) {
        mh.msg_control = cm.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
        ch->cmsg_level = SOL_SOCKET;
        ch->cmsg_type = SCM_RIGHTS;
        ch->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(ch), fds, (size_t)nfds * sizeof(int));
    }
    ssize_t n;
    while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n < 0 ? errno : 0;
}

int pspawn_abstract_owner(const char *name, uid_t *uid)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct timeval tv = { 1, 0 };
    setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct {
        struct nlmsghdr nh;
        struct unix_diag_req r;
    } q = {
        .nh = { .nlmsg_len = sizeof q, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
        .r = { .sdiag_family = AF_UNIX, .udiag_states = 1u << 10 /* TCP_LISTEN */,
               .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_UID },
    };
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    size_t nlen = strlen(name);
    int found = -1, done = sendto(nl, &q, sizeof q, 0, (struct sockaddr *)&kernel,
                                  sizeof kernel) < 0;
    static long buf[8192];
    while (!done) {
        ssize_t n = recv(nl, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; !done && NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg))) {
                done = 1;
                break;
            }
            const struct unix_diag_msg *m = NLMSG_DATA(h);
            int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m)), named = 0, owned = 0;
            uint32_t owner = 0;
            for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len);
                 a = RTA_NEXT(a, len)) {
                const char *v = RTA_DATA(a);
                if (a->rta_type == UNIX_DIAG_NAME && RTA_PAYLOAD(a) == nlen + 1 && v[0] == 0 &&
                    memcmp(v + 1, name, nlen) == 0)
                    named = 1;
                else if (a->rta_type == UNIX_DIAG_UID && RTA_PAYLOAD(a) >= sizeof owner) {
                    memcpy(&owner, v, sizeof owner);
                    owned = 1;
                }
            }
            if (named && owned) {
                *uid = (uid_t)owner;
                found = 0;
            }
        }
    }
    close(nl);
    return found;
}
