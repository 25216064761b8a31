/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reading a request: the message and the fds it brings, then the checks
 * and the comparison with the parked state that turn it into the setup
 * every task of the request starts from.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memfd.h"
#include "zygote.h"

static int in_list(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Which of the caller's process attributes PS the task must set: those
 * that differ from the parked state and can be read on both sides.  MDWE
 * can only be added, and one set with PR_MDWE_NO_INHERIT is not passed on
 * to an exec'd task either. */
static unsigned procstate_flags(const struct wire_procstate *ps)
{
    unsigned flags = 0;
    if (ps->personality >= 0 && parked.proc.personality >= 0 && ps->personality != parked.proc.personality)
        flags |= REQ_PERSONALITY;
    if (ps->thp_disable >= 0 && parked.proc.thp_disable >= 0 && ps->thp_disable != parked.proc.thp_disable)
        flags |= REQ_THP_DISABLE;
    if (ps->ioprio >= 0 && parked.proc.ioprio >= 0 && ps->ioprio != parked.proc.ioprio)
        flags |= REQ_IOPRIO;
    if (ps->timerslack > 0 && parked.proc.timerslack > 0 && ps->timerslack != parked.proc.timerslack)
        flags |= REQ_TIMERSLACK;
    if (ps->mdwe > 0 && !(ps->mdwe & PR_MDWE_NO_INHERIT) && parked.proc.mdwe == 0)
        flags |= REQ_MDWE;
    return flags;
}

/* Whether a task must set one piece of state: exec gives it the caller's
 * with the constructors' changes on top.  CALLER: the caller's differs
 * from the zygote's start; CTOR: a constructor changed the zygote's;
 * DIFFERS: the caller's differs from the zygote's now.  1: set the
 * caller's; 0: keep the zygote's; -1: neither is what exec would give.
 * Without the start state (an older launcher) the caller's wins. */
static int ctor_state(int caller, int ctor, int differs)
{
    if (!parked.have_base)
        return differs;
    if (!caller)
        return 0;
    return ctor ? -1 : 1;
}

static int rl_differs(uint64_t cur, uint64_t max, const struct rlimit *rl)
{
    return cur != rl->rlim_cur || max != rl->rlim_max;
}

/* What the template of a request points to: one request at a time. */
static struct child_action req_actions[PSPAWN_FD_MAX + 3];
static struct wire_rlimit req_rlimits[RLIM_NLIMITS];
static int req_fds[PSPAWN_FD_MAX + 2];

/* Whether W's counts and offsets fit in its SIZE bytes (and its NFDS). */
static int request_fits(const struct wire_request *w, const char *base, size_t size, int nfds)
{
    /* BASE is page-aligned: an offset that is a multiple of its struct's
     * alignment gives an aligned struct (the encoder rounds them up). */
    if (size < sizeof *w || nfds < 0 || nfds > PSPAWN_FD_MAX ||
        w->actions % _Alignof(struct wire_action) || w->rlimits % _Alignof(struct wire_rlimit) ||
        w->tasks % _Alignof(struct wire_task))
        return 0;
    if (w->ntasks > PSPAWN_REQ_MAX || w->nactions > PSPAWN_FD_MAX + 3 ||
        w->nrlimits > RLIM_NLIMITS || w->tasks > size ||
        w->ntasks * sizeof(struct wire_task) > size - w->tasks ||
        w->actions > size || w->nactions * sizeof(struct wire_action) > size - w->actions ||
        w->rlimits > size || w->nrlimits * sizeof(struct wire_rlimit) > size - w->rlimits ||
        w->cwd >= size || !memchr(base + w->cwd, 0, size - w->cwd) ||
        ((w->flags & REQ_CTTY) && (!(w->flags & REQ_SETSID) || w->ctty_fd < 0 || w->ctty_fd > 2)))
        return 0;
    return 1;
}

/* W's file actions into req_actions: 0, or REFUSE_MALFORMED, or
 * REFUSE_FD_CONFLICT (*DETAIL: the fd). */
static int parse_actions(const struct wire_request *w, const char *base, size_t size, int nfds,
                         int *detail)
{
    const struct wire_action *wa = (const struct wire_action *)(base + w->actions);
    for (uint32_t i = 0; i < w->nactions; i++) {
        if ((wa[i].kind == FA_DUP2 && (wa[i].src < 0 || wa[i].src >= nfds)) || wa[i].fd < 0 ||
            (wa[i].kind == FA_OPEN && (wa[i].path >= size || !memchr(base + wa[i].path, 0, size - wa[i].path))))
            return REFUSE_MALFORMED;
        /* A constructor's fd would be clobbered: exec would have given
         * the constructor another number, we cannot. */
        if (wa[i].kind != FA_CLOSE && in_list(parked.ctor_fds, parked.nctor_fds, wa[i].fd)) {
            *detail = wa[i].fd;
            return REFUSE_FD_CONFLICT;
        }
        req_actions[i] = (struct child_action){ wa[i].kind, wa[i].fd, wa[i].src, wa[i].oflag,
                                                (mode_t)wa[i].mode,
                                                wa[i].kind == FA_OPEN ? base + wa[i].path : NULL };
    }
    return 0;
}

/* The limits of W that differ from the parked state, into req_rlimits
 * (*NRL of them): 0, or REFUSE_CTOR_STATE (*DETAIL: the resource). */
static int parse_rlimits(const struct wire_request *w, const char *base, int *nrl, int *detail)
{
    /* Only what differs from the parked state costs a system call. */
    const struct wire_rlimit *wr = (const struct wire_rlimit *)(base + w->rlimits);
    *nrl = 0;
    for (uint32_t i = 0; i < w->nrlimits; i++) {
        int r = wr[i].resource;
        if (r < 0 || r >= RLIM_NLIMITS)
            continue;
        int what = ctor_state(rl_differs(wr[i].cur, wr[i].max, &parked.base.rl[r]),
                              rl_differs(parked.rl[r].rlim_cur, parked.rl[r].rlim_max, &parked.base.rl[r]),
                              rl_differs(wr[i].cur, wr[i].max, &parked.rl[r]));
        if (what < 0) {
            *detail = r;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            req_rlimits[(*nrl)++] = wr[i];
    }
    return 0;
}

/* The REQ_* flags of what the task must change from the parked state
 * (*FLAGS): 0, or REFUSE_CTOR_STATE (*DETAIL: which). */
static int state_flags(const struct wire_request *w, const char *base, unsigned *flags,
                       int *detail)
{
    *flags = w->flags & (REQ_SETSID | REQ_SETPGROUP | REQ_CTTY);
    if (parked.cwd_released || ((w->flags & REQ_CWD) && strcmp(base + w->cwd, parked.cwd) != 0))
        *flags |= REQ_CWD;
    if (w->flags & REQ_UMASK) {
        int what = ctor_state(w->umask != parked.base.umask, parked.umask != parked.base.umask,
                              (mode_t)w->umask != parked.umask);
        if (what < 0) {
            *detail = CTOR_STATE_UMASK;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            *flags |= REQ_UMASK;
    }
    if (w->flags & REQ_NICE) {
        int what = ctor_state(w->nice != parked.base.nice, parked.nice != parked.base.nice, w->nice != parked.nice);
        if (what < 0) {
            *detail = CTOR_STATE_NICE;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            *flags |= REQ_NICE;
    }
    if ((w->flags & REQ_SCHED) &&
        (w->sched_policy != parked.sched_policy || w->sched_priority != parked.sched_priority))
        *flags |= REQ_SCHED;
    if ((w->flags & REQ_MEMPOLICY) &&
        (!parked.have_mempolicy || w->mempolicy != parked.mempolicy ||
         memcmp(w->nodemask, parked.nodemask, sizeof parked.nodemask) != 0))
        *flags |= REQ_MEMPOLICY;
    if ((w->flags & REQ_NO_NEW_PRIVS) && !parked.no_new_privs)
        *flags |= REQ_NO_NEW_PRIVS;
    return 0;
}

int zygote_parse_request(const char *base, size_t size, int *fds, int nfds, const int chan[2],
                         struct child_setup *tmpl, int *detail)
{
    const struct wire_request *w = (const struct wire_request *)base;
    if (!request_fits(w, base, size, nfds))
        return REFUSE_MALFORMED;
    int err = parse_actions(w, base, size, nfds, detail);
    if (err)
        return err;
    /* A fork of the zygote would run outside filters its caller is under
     * (fewer than the zygote's: a constructor installed them, as it would
     * after an exec). */
    if (w->seccomp < 0 || (parked.have_base ? w->seccomp != parked.base.seccomp : w->seccomp > parked.seccomp)) {
        *detail = w->seccomp;
        return REFUSE_SECCOMP;
    }
    int nrl;
    unsigned flags;
    if ((err = parse_rlimits(w, base, &nrl, detail)) || (err = state_flags(w, base, &flags, detail)))
        return err;
    struct wire_procstate ps = w->proc;
    flags |= procstate_flags(&ps);
    memcpy(req_fds, fds, nfds * sizeof(int));
    req_fds[nfds] = chan[0];
    req_fds[nfds + 1] = chan[1];
    *tmpl = (struct child_setup){
        .flags = flags,
        .umask = (mode_t)w->umask,
        .pgroup = w->pgroup,
        .ctty_fd = w->ctty_fd,
        .nice = w->nice,
        .sched_policy = w->sched_policy,
        .sched_priority = w->sched_priority,
        .mempolicy = w->mempolicy,
        .nodemask = w->nodemask,
        .proc = ps,
        .cwd = (w->flags & REQ_CWD) ? base + w->cwd : parked.cwd,
        .cpuset = (w->flags & REQ_CPUSET) && memcmp(w->cpuset, parked.cpuset, sizeof parked.cpuset)
                      ? w->cpuset : NULL,
        .rlimits = req_rlimits,
        .nrlimits = nrl,
        .actions = req_actions,
        .nactions = (int)w->nactions,
        .fds = req_fds,
        .nfds = nfds + 2,
        .sig_default = 0,
        .sig_ignore = w->sigign & ~parked.ctor_sigs,
        .emulate_cloexec = 1,
    };
    return 0;
}

void zygote_drop_request(void *base, size_t size, struct wire_go *go, int *fds, int nfds)
{
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    munmap(base, size);
    if (go)
        munmap(go, sizeof *go);
}

/* A private copy of the SIZE bytes of memfd FD, or MAP_FAILED. */
static void *private_copy(int fd, size_t size)
{
    char *copy = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return copy;
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, copy + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            munmap(copy, size);
            return MAP_FAILED;
        }
        done += (size_t)n;
    }
    return copy;
}

/* One message and the fds it brings, FIRST of them before its memfd (a
 * forwarded stand-in's connection).  See zygote_recv_request.  Returns 1,
 * 0 on end of file, -1 on a malformed message (its fds closed). */
static int recv_message(int sock, struct request_msg *msg, void **base, struct wire_go **go,
                        int *fds, int *nfds, int first)
{
    union {
        char buf[CMSG_SPACE(ZYGOTE_MSG_FDS * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec iov = { msg, sizeof *msg };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                         .msg_controllen = sizeof cm.buf };
    ssize_t n;
    /* ECONNRESET: the peer closed with data of ours unread; what it sent
     * before is still queued, and the next read has it (or the end). */
    while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && (errno == EINTR || errno == ECONNRESET))
        ;
    if (n < 0 || (n == 0 && mh.msg_controllen == 0))
        return 0;   /* the end of the file (a seqpacket's 0-byte message with fds is not) */
    *nfds = 0;
    for (struct cmsghdr *ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch))
        if (ch->cmsg_level == SOL_SOCKET && ch->cmsg_type == SCM_RIGHTS) {
            int k = (int)((ch->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            if (k > ZYGOTE_MSG_FDS - *nfds)
                k = ZYGOTE_MSG_FDS - *nfds;
            memcpy(fds + *nfds, CMSG_DATA(ch), k * sizeof(int));
            *nfds += k;
        }
    *base = MAP_FAILED;
    *go = MAP_FAILED;
    int request = msg->magic == PSPAWN_MAGIC;
    int head = first + (request ? ZYGOTE_REQ_HEAD : 1);
    if (n == sizeof *msg && (request || msg->magic == PSPAWN_FANOUT_MAGIC) &&
        !(mh.msg_flags & MSG_CTRUNC) &&
        msg->nfds <= (uint32_t)(request ? PSPAWN_FD_MAX : ZYGOTE_MSG_FDS) &&
        (uint32_t)*nfds == msg->nfds + (uint32_t)head && msg->size > 0 &&
        pspawn_memfd_check(fds[first], msg->size, 1) == 0) {
        if (!request) {
            *go = NULL;
            *base = mmap(NULL, msg->size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[first], 0);
        } else if (pspawn_memfd_check(fds[first + 1], sizeof **go, 1) == 0 &&
                   (*go = mmap(NULL, sizeof **go, PROT_READ | PROT_WRITE, MAP_SHARED,
                               fds[first + 1], 0)) != MAP_FAILED &&
                   (*base = private_copy(fds[first], msg->size)) == MAP_FAILED) {
            munmap(*go, sizeof **go);
            *go = MAP_FAILED;
        }
    }
    if (*base == MAP_FAILED) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        return -1;
    }
    return 1;
}

int zygote_recv_request(int sock, struct request_msg *msg, void **base, struct wire_go **go,
                        int *fds, int *nfds)
{
    return recv_message(sock, msg, base, go, fds, nfds, 0);
}

int zygote_recv_forwarded(int sock, struct request_msg *msg, int *conn, void **base,
                          struct wire_go **go, int *fds, int *nfds)
{
    int all[ZYGOTE_MSG_FDS], n;
    int r = recv_message(sock, msg, base, go, all, &n, 1);
    if (r <= 0)
        return r;
    *conn = all[0];
    *nfds = n - 1;
    memcpy(fds, all + 1, (size_t)*nfds * sizeof(int));
    return 1;
}
