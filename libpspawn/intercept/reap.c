/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wait family, wrapped in a launcher: a reaped child leaves the
 * scope's stand-in set (a stand-in killed by SIGKILL could not say so
 * itself) and, with spawn-site priorities, gives its site its run time.
 * What the launcher sees is the plain call's, to the bit: the same
 * arguments go to the real function (a status pointer of ours only where
 * the caller passed none), and errno is put back after our work.  Our
 * work is atomics, clock_gettime and write(2): a launcher may wait in its
 * SIGCHLD handler.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "intercept.h"
#include "predict.h"
#include "route.h"

#define EXPORT __attribute__((visibility("default")))

typedef pid_t (*wait_fn)(int *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef pid_t (*wait3_fn)(int *, int, struct rusage *);
typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
typedef int (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);

static struct {
    wait_fn wait;
    waitpid_fn waitpid;
    wait3_fn wait3;
    wait4_fn wait4;
    waitid_fn waitid;
} real;

__attribute__((constructor)) static void reap_init(void)
{
    real.wait = (wait_fn)intercept_next("wait");
    real.waitpid = (waitpid_fn)intercept_next("waitpid");
    real.wait3 = (wait3_fn)intercept_next("wait3");
    real.wait4 = (wait4_fn)intercept_next("wait4");
    real.waitid = (waitid_fn)intercept_next("waitid");
}

static void reaped(pid_t pid)
{
    int saved = errno;
    route_standin_remove(pid);
    predict_reaped(pid);
    errno = saved;
}

/* What a wait that returned PID with *STATUS did: reap it, or only see
 * it stop or continue. */
static pid_t seen(pid_t pid, const int *status)
{
    if (pid > 0 && (WIFEXITED(*status) || WIFSIGNALED(*status)))
        reaped(pid);
    return pid;
}

EXPORT pid_t wait(int *status)
{
    int st = 0, *s = status ? status : &st;
    pid_t pid = real.wait(s);
    return seen(pid, s);
}

EXPORT pid_t waitpid(pid_t which, int *status, int options)
{
    int st = 0, *s = status ? status : &st;
    pid_t pid = real.waitpid(which, s, options);
    return seen(pid, s);
}

EXPORT pid_t wait3(int *status, int options, struct rusage *usage)
{
    int st = 0, *s = status ? status : &st;
    pid_t pid = real.wait3(s, options, usage);
    return seen(pid, s);
}

EXPORT pid_t wait4(pid_t which, int *status, int options, struct rusage *usage)
{
    int st = 0, *s = status ? status : &st;
    pid_t pid = real.wait4(which, s, options, usage);
    return seen(pid, s);
}

EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    int r = real.waitid(type, id, info, options);
    /* WNOWAIT leaves it to be reaped by a later call; WNOHANG with none
     * ready leaves si_pid 0. */
    if (r == 0 && info && !(options & WNOWAIT) && info->si_pid > 0 &&
        (info->si_code == CLD_EXITED || info->si_code == CLD_KILLED ||
         info->si_code == CLD_DUMPED))
        reaped(info->si_pid);
    return r;
}
