/*
 * Direct mode: the launcher asked for its tasks itself.  Each is a
 * clone(CLONE_PARENT) of this zygote (the root or a sub-zygote, itself the
 * launcher's child), so the launcher's own child.  The kernel writes its
 * pid into the request before it can run; the zygote then releases it.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "go.h"
#include "zygote.h"

/* Clone the request's tasks.  Returns 1 in a task (with *ts filled), 0 in
 * the zygote, which has let go of the request before it reports it done:
 * once the launcher has every request done, the zygote holds none of their
 * fds. */
static int serve_request(char *base, size_t size, struct wire_go *go, uint32_t id, int *fds,
                         int nfds, struct task_start *ts)
{
    struct wire_request *w = (struct wire_request *)base;
    struct child_setup tmpl;
    int detail = 0;
    const int chan[2] = { parked.report, parked.sock };
    int refusal = zygote_parse_request(base, size, fds, nfds, chan, &tmpl, &detail);
    if (refusal) {
        zygote_drop_request(base, size, go, fds, nfds);
        zygote_report(parked.report, id, PSPAWN_REPORT_DONE, detail, refusal);
        return 0;
    }
    uint32_t ntasks = w->ntasks;
    for (uint32_t i = 0; i < ntasks; i++) {
        pid_t pid = zygote_clone(CLONE_PARENT, &go->pid[i]);
        if (pid == 0) {
            *ts = zygote_task_main(base, size, go, id, i, &tmpl, nfds, 0);
            return 1;
        }
        if (pid < 0)
            zygote_report(parked.report, id, i, -1, errno);
        else if (!(w->flags & REQ_LAUNCHER_GO))
            pspawn_go_swap(&go->go[i], GO_RUN);
    }
    zygote_drop_request(base, size, go, fds, nfds);
    zygote_report(parked.report, id, PSPAWN_REPORT_DONE, (int32_t)ntasks, 0);
    return 0;
}

struct task_start zygote_serve(void)
{
    zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group);
    for (;;) {
        struct request_msg msg = { 0 };
        void *base;
        struct wire_go *go;
        int fds[ZYGOTE_MSG_FDS], nfds;
        zygote_wait(parked.sock, -1, -1);
        int r = zygote_recv_request(parked.sock, &msg, &base, &go, fds, &nfds);
        if (r == 0)
            zygote_exit(0);     /* the launcher hung up */
        if (r < 0) {
            zygote_report(parked.report, msg.id, PSPAWN_REPORT_DONE, 0, REFUSE_MALFORMED);
            continue;
        }
        close(fds[0]);  /* the memfd: read */
        if (msg.magic == PSPAWN_FANOUT_MAGIC) {
            int sub = zygote_fanout(base, msg.size, fds + 1, nfds - 1, 0);
            munmap(base, msg.size);
            if (sub)    /* a new sub-zygote, on its own socket */
                zygote_send_ready(parked.sock, ZYGOTE_PARKED, parked.group);
            continue;
        }
        close(fds[1]);  /* the go block: mapped */
        struct task_start ts;
        if (serve_request(base, msg.size, go, msg.id, fds + ZYGOTE_REQ_HEAD,
                          nfds - ZYGOTE_REQ_HEAD, &ts))
            return ts;
    }
}
