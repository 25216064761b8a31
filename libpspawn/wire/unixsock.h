/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AF_UNIX sockets every front door and the zygote share: abstract
 * SOCK_SEQPACKET names (no file to leave behind, gone with the listener)
 * and the peer check each connection makes.  Used by the library, the
 * proxy, the stand-in shim and the Slurm mover alike.
 */
#ifndef PSPAWN_UNIXSOCK_H
#define PSPAWN_UNIXSOCK_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* Fills A for abstract NAME; returns the address length, or -1 if NAME
 * does not fit. */
int pspawn_abstract_addr(struct sockaddr_un *a, const char *name);

/* A close-on-exec SOCK_SEQPACKET socket listening on abstract NAME.
 * Returns the fd, or -1 with errno (EADDRINUSE: someone has the name;
 * ENAMETOOLONG). */
int pspawn_listen_abstract(const char *name, int backlog);

/* Connect to abstract NAME without blocking on its listener (a full listen
 * queue of a listener that never accepts would hold a blocking connect for
 * ever: that is EAGAIN here), then check that the peer runs as UID (anyone
 * can squat an abstract name).  The socket is blocking and close-on-exec.
 * Returns the fd, or -1 with errno (EPERM: another user's). */
int pspawn_connect_abstract(const char *name, uid_t uid);

/* The credentials of FD's peer (SO_PEERCRED: its creator's at connect or
 * socketpair time).  0, or -1 with errno. */
int pspawn_peer_cred(int fd, struct ucred *peer);

/* 1 if FD's peer runs as UID, else 0. */
int pspawn_peer_uid_is(int fd, uid_t uid);

/* Send the LEN bytes at MSG on SOCK with FDS[0..NFDS) (at most 253) by
 * SCM_RIGHTS, as one message.  0, or an errno (EPIPE: the peer is gone). */
int pspawn_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds);

/* The uid that owns the listening abstract socket NAME (from the kernel's
 * sock_diag, Linux 5.3 and later, within 1 s): 0 with *UID set, or -1 if
 * none is found or it cannot be told. */
int pspawn_abstract_owner(const char *name, uid_t *uid);

#endif
