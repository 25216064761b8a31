/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The park: at main (start.c), or inside a runtime that parks later
 * (python.c), record the state the program reached, check that it can be
 * forked (selfcheck.c), and serve (serve.c, standin.c).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "pidfd.h"
#include "procfs.h"
#include "unixsock.h"
#include "zygote.h"

/* alarm() and setitimer() timers are not kept by fork either, but exec
 * keeps them: a task gets those its constructors armed, as they were at
 * the park (an exec'd task's were armed as long before main).  The zygote
 * itself stops them: an alarm would end it, a profiling timer interrupt
 * its serving. */
static void record_itimers(void)
{
    static const struct itimerval off;
    for (int which = ITIMER_REAL; which <= ITIMER_PROF; which++)
        if (getitimer(which, &parked.itimer[which]) == 0 &&
            (parked.itimer[which].it_value.tv_sec || parked.itimer[which].it_value.tv_usec)) {
            parked.itimers |= 1 << which;
            setitimer(which, &off, NULL);
        }
}

/* /proc/self/stat fields 26-28 and 45-51: what PR_SET_MM_MAP needs. */
static void record_mm(void)
{
    unsigned long long f[51 - 26 + 1];
    if (pspawn_proc_stat(0, 26, 51, f) < 0)
        return;
    parked.mm.start_code = f[26 - 26];
    parked.mm.end_code = f[27 - 26];
    parked.mm.start_stack = f[28 - 26];
    parked.mm.start_data = f[45 - 26];
    parked.mm.end_data = f[46 - 26];
    parked.mm.start_brk = f[47 - 26];
    parked.mm.auxv = NULL;
    parked.mm.auxv_size = 0;
    parked.mm.exe_fd = (uint32_t)-1;
    parked.have_mm = 1;
}

static void record_parked_state(void)
{
    if (!getcwd(parked.cwd, sizeof parked.cwd))
        parked.cwd[0] = 0;
    parked.umask = umask(022);
    umask(parked.umask);
    for (int r = 0; r < RLIM_NLIMITS; r++)
        getrlimit(r, &parked.rl[r]);
    errno = 0;
    parked.nice = getpriority(PRIO_PROCESS, 0);
    struct sched_param sp = { 0 };
    parked.sched_policy = sched_getscheduler(0);
    sched_getparam(0, &sp);
    parked.sched_priority = sp.sched_priority;
    sched_getaffinity(0, sizeof parked.cpuset, (cpu_set_t *)parked.cpuset);
    parked.have_mempolicy = pspawn_mempolicy_get(&parked.mempolicy, parked.nodemask) == 0;
    parked.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
    parked.seccomp = pspawn_seccomp_filters();
    pspawn_procstate_get(&parked.proc);
    zygote_record_handlers();
    if (prctl(PR_GET_TID_ADDRESS, &parked.tid_addr, 0, 0, 0) < 0)
        parked.tid_addr = NULL;
    if (syscall(SYS_get_robust_list, 0, &parked.robust_head, &parked.robust_len) < 0)
        parked.robust_head = NULL;
    record_mm();
    zygote_record_text();
    record_itimers();
}

struct task_start zygote_park(void)
{
    /* Whoever started us died while we loaded: nobody will ask for a task. */
    if (zygote_starter_gone())
        zygote_exit(0);
    zygote_check_forkable();
    long bound = zygote_bind_loaded(parked.exec_last);
    if (bound)
        zygote_say("bound %ld lazily bound functions of the loaded objects at the park", bound);
    fflush(NULL);
    /* Serve only the user who started us. */
    if (!pspawn_peer_uid_is(parked.sock, geteuid()))
        _exit(1);
    record_parked_state();
    memcpy(parked.launch_cpuset, parked.cpuset, sizeof parked.cpuset);
    parked.launch_mempolicy = parked.have_mempolicy ? parked.mempolicy : -1;
    memcpy(parked.launch_nodemask, parked.nodemask, sizeof parked.nodemask);
    /* Direct mode: a group of our own, so that the terminal's signals (a
     * Ctrl-C) and its launcher's kill(0, ...) reach its tasks (each joins
     * its caller's group) and not us.  Not before the park: a loading
     * program may use the terminal, which a background group may not.
     * A stand-in zygote blocks the step's signals instead (standin.c). */
    if (!parked.listen_name && !parked.forwarded && parked.root == 0)
        setpgid(0, 0);
    zygote_watch();
    zygote_libraries_watch();
    if (parked.have_exec_group) {
        parked.group = parked.exec_group.index;
        zygote_become_group(&parked.exec_group);
    }
    if (parked.pip_wanted)
        zygote_pip_prepare();
    /* A parked zygote holds no directory: an exec'd task's working
     * directory is held only while it runs, so a umount after the tasks
     * must not find it busy.  Each task changes into its own (the
     * request's, else the one we were started in, by name). */
    if (parked.cwd[0] == '/' && chdir("/") == 0)
        parked.cwd_released = 1;
    return parked.listen_name ? zygote_serve_standin() : zygote_serve();
}
