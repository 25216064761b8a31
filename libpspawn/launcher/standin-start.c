/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in client's zygote, started: exec'd by its keeper (keeper.c)
 * with the step's options, warm when the program is a Python interpreter,
 * and, once parked, told its fan-out.  Apart from standin.c, which starts
 * the keeper: the keeper calls this, never back.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "internal.h"
#include "python.h"

void pspawn_standin_say(const struct pspawn_standin_client *c, const char *fmt, ...)
{
    if (!c->log)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->log(buf);
}

/* The root, parked, makes its sub-zygotes for the step's CPUs on this
 * node (not only ours: task/affinity bound us to our task's), or, hearing
 * nothing but the end of the connection, serves alone. */
static void fan_out(const struct pspawn_standin_client *c, const struct pspawn_options *o,
                    int sock)
{
    struct pspawn_topology t;
    if (o->fanout == PSPAWN_FANOUT_NONE || pspawn_topology_groups(o, 1, &t) != 0)
        return;
    pspawn_standin_say(c, "%s", t.describe);
    if (t.ngroups > 1 && (errno = pspawn_fanout_send_standin(sock, &t, o)) != 0)
        pspawn_standin_say(c, "could not send the fan-out: %s", strerror(errno));
    pspawn_topology_free(&t);
}

/* The zygote as our child, with /dev/null as its stdio (it must not hold
 * our task's pipes open). */
pid_t pspawn_standin_start_zygote(const struct pspawn_standin_client *c, const char *name)
{
    int rs[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rs) < 0)
        return -1;
    char listen_var[256], token_var[128], tasks_var[64], starter_var[64] = "";
    snprintf(listen_var, sizeof listen_var, PSPAWN_ENV_LISTEN "=%s", name);
    snprintf(token_var, sizeof token_var, PSPAWN_ENV_TOKEN "=%s", c->token);
    snprintf(tasks_var, sizeof tasks_var, PSPAWN_ENV_TASKS "=%s",
             c->local_tasks ? c->local_tasks : "0");
    /* The step's options; ones that do not parse are said, and the
     * defaults used, without fan-out. */
    struct pspawn_options o;
    char msg[256];
    pspawn_options_defaults(&o);
    if (pspawn_options_parse(&o, c->options, msg, sizeof msg) < 0) {
        pspawn_standin_say(c, "options \"%s\": %s: the defaults, no fan-out", c->options, msg);
        pspawn_options_defaults(&o);
        o.fanout = PSPAWN_FANOUT_NONE;
    }
    if (o.pip)
        o.python = 0;
    /* A Python interpreter starts warm, with this task's options. */
    struct python_start ps = { 0 };
    if (c->prog && pspawn_python_start(&o, c->prog, c->argv, &ps) != 0)
        memset(&ps, 0, sizeof ps);
    char preload_var[PATH_MAX + 64] = PSPAWN_ENV_PRELOAD_LIBS "=";
    strncat(preload_var, o.preload, PATH_MAX);
    if (c->starter > 0)
        snprintf(starter_var, sizeof starter_var, PSPAWN_ENV_STARTER "=%d", (int)c->starter);
    char *first_only[2];
    char idle_var[64] = "";
    if (c->idle_ms > 0)
        snprintf(idle_var, sizeof idle_var, PSPAWN_ENV_IDLE "=%ld", c->idle_ms);
    /* (The python variables are NULL, the list's end, when not warm.) */
    const char *const extra[] = { listen_var, token_var, tasks_var, idle_var, starter_var,
                                  PSPAWN_ENV_SOCK "=3", o.preload[0] ? preload_var : "",
                                  o.pip ? PSPAWN_ENV_PIP "=1" : "", ps.first_var, ps.modules_var, NULL };
    struct zygote_exec x = {
        .path = c->path, .argv = c->prog ? pspawn_python_exec_argv(c->prog, &ps, first_only) : NULL,
        .extra_env = extra, .null_stdio = 1, .record = !strcmp(o.preload, "auto"), .pip = o.pip,
        .fds = { rs[1] }, .at = { 3 }, .nfds = 1,
    };
    pid_t pid;
    int err = pspawn_zygote_exec(&x, &pid);
    pspawn_python_start_free(&ps);
    close(rs[1]);
    if (err) {
        close(rs[0]);
        pspawn_standin_say(c, "could not start the zygote: %s", err == ESTALE
            ? "the program changed on disk since it was inspected" : strerror(err));
        return -1;
    }
    struct zygote_ready ready;
    err = pspawn_zygote_await(rs[0], pid, 120000, &ready);
    if (err || ready.status != ZYGOTE_PARKED) {
        close(rs[0]);
        char why[160];
        if (err == ETIMEDOUT)
            snprintf(why, sizeof why, "no answer from the zygote");
        else if (err)
            snprintf(why, sizeof why, "the zygote died or sent no ready message");
        else
            pspawn_zygote_refusal(why, sizeof why, (int)ready.status, ready.detail);
        pspawn_standin_say(c, "zygote did not park: %s", why);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    fan_out(c, &o, rs[0]);
    close(rs[0]);
    return pid;
}
