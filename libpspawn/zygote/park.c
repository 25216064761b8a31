/*
 * Parking: the proxy's constructor sees whether this process is a zygote,
 * the __libc_start_main wrapper lets every constructor run, and park_main,
 * in place of main(), records the state the program reached and serves.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "procfs.h"
#include "python.h"
#include "replica.h"
#include "unixsock.h"
#include "zygote.h"

typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

extern char **environ;

struct parked parked = { .sock = -1, .report = -1, .launcher_pidfd = -1 };

static int env_int(const char *name, long *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end)
        return 0;
    *out = x;
    return 1;
}

void zygote_send_ready(int sock, int status, int detail)
{
    struct zygote_ready r = { PSPAWN_MAGIC, status, detail, (int32_t)getpid(),
                              parked.python_warm ? READY_PYTHON : 0 };
    send(sock, &r, sizeof r, MSG_NOSIGNAL);
}

/* Does the main program call __libc_start_main at all?  If not (a Go
 * program, a non-glibc libc), our wrapper never runs and the zygote would
 * run main(): refuse before that can happen. */
static int find_libc_start(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    int *found = data;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) {
        *found = 1; /* nothing to check: let it be */
        return 1;
    }
    uintptr_t symtab = 0, strtab = 0, hash = 0, gnu_hash = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr;
        /* Relocated in place by ld.so on most targets, not on all. */
        if (v && v < info->dlpi_addr)
            v += info->dlpi_addr;
        if (dyn->d_tag == DT_SYMTAB) symtab = v;
        else if (dyn->d_tag == DT_STRTAB) strtab = v;
        else if (dyn->d_tag == DT_HASH) hash = v;
        else if (dyn->d_tag == DT_GNU_HASH) gnu_hash = v;
    }
    if (!symtab || !strtab || (!hash && !gnu_hash)) {
        *found = 1;
        return 1;
    }
    /* Undefined symbols precede the GNU hash table's first symbol. */
    size_t nsyms = hash ? ((const uint32_t *)hash)[1] : ((const uint32_t *)gnu_hash)[1];
    const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
    for (size_t i = 1; i < nsyms; i++)
        if (strcmp((const char *)strtab + sym[i].st_name, "__libc_start_main") == 0) {
            *found = 1;
            break;
        }
    return 1; /* the first object is the main program */
}

static void restore_env(void)
{
    static const char *const pairs[][2] = {
        { "LD_PRELOAD", PSPAWN_ENV_PRELOAD },
        { "LD_BIND_NOW", PSPAWN_ENV_BINDNOW },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *user = getenv(pairs[i][1]);
        if (user)
            setenv(pairs[i][0], user, 1);
        else
            unsetenv(pairs[i][0]);
        unsetenv(pairs[i][1]);
    }
    unsetenv(PSPAWN_ENV_SOCK);
    unsetenv(PSPAWN_ENV_REPORT);
    unsetenv(PSPAWN_ENV_LISTEN);
    unsetenv(PSPAWN_ENV_TOKEN);
    unsetenv(PSPAWN_ENV_TASKS);
    unsetenv(PSPAWN_ENV_PARENT);
    unsetenv(PSPAWN_ENV_BASE);
    unsetenv(PSPAWN_ENV_GROUP);
    unsetenv(PSPAWN_ENV_FORWARD);
    unsetenv(PSPAWN_ENV_REPLICA);
    unsetenv(PSPAWN_ENV_TASK_CGROUP);
    unsetenv(PSPAWN_ENV_PRELOAD_LIBS);
}

/* The environment we were exec'd with, for the sub-zygotes we may exec
 * (fanout.c): the program's constructors may change ours. */
static char **copy_environ(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = strdup(environ[i]);
    return v;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* An exec'd sub-zygote's group: "INDEX:NODE:ROOT:CPUS" (PSPAWN_ENV_GROUP). */
static void record_exec_group(void)
{
    const char *v = getenv(PSPAWN_ENV_GROUP);
    if (!v)
        return;
    struct wire_group *g = &parked.exec_group;
    memset(g, 0, sizeof *g);
    char *end;
    g->index = (int32_t)strtol(v, &end, 10);
    if (*end != ':')
        return;
    g->node = (int32_t)strtol(end + 1, &end, 10);
    if (*end != ':')
        return;
    parked.root = (pid_t)strtol(end + 1, &end, 10);
    if (*end != ':')
        return;
    const char *hex = end + 1;
    for (size_t i = 0; i < sizeof g->cpus && hex[2 * i] && hex[2 * i + 1]; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return;
        g->cpus[i] = (unsigned char)(hi << 4 | lo);
    }
    parked.have_exec_group = 1;
}

static void record_base(void)
{
    const char *b = getenv(PSPAWN_ENV_BASE);
    parked.have_base = b && pspawn_base_parse(b, &parked.base);
}

/* FD, named by a variable we inherited, is still the channel it names: a
 * seqpacket socket made by PARENT (a socketpair's peer credentials are
 * its creator's) or a pipe's write end. */
static int is_channel(int fd, int sock, pid_t parent)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return 0;
    if (!sock)
        return S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY;
    int type = 0;
    struct ucred peer;
    socklen_t tl = sizeof type;
    return S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_SEQPACKET &&
           pspawn_peer_cred(fd, &peer) == 0 && peer.pid == parent;
}

/* A program a zygote's constructor started (system(), popen(),
 * posix_spawn()) inherits the zygote's variables and its channels, which
 * are not close-on-exec until our constructor runs, after the other
 * libraries' constructors.  It must not park: it lets go of the channels
 * and runs as it would without us. */
static int inherited_zygote_env(void)
{
    long parent, fd;
    if (!env_int(PSPAWN_ENV_PARENT, &parent) || parent == (long)getppid())
        return 0;
    if (env_int(PSPAWN_ENV_SOCK, &fd) && is_channel((int)fd, 1, (pid_t)parent))
        close((int)fd);
    if (env_int(PSPAWN_ENV_REPORT, &fd) && is_channel((int)fd, 0, (pid_t)parent))
        close((int)fd);
    return 1;
}

__attribute__((constructor)) static void proxy_init(void)
{
    long sock, report, launcher, fd;
    if (inherited_zygote_env()) {
        restore_env();
        return;
    }
    const char *listen_name = getenv(PSPAWN_ENV_LISTEN);
    parked.forwarded = getenv(PSPAWN_ENV_FORWARD) != NULL;
    if (((listen_name && *listen_name) || parked.forwarded) && env_int(PSPAWN_ENV_SOCK, &sock)) {
        /* Stand-in mode: SOCK says whether we parked; then, for the root,
         * whether to fan out, and for a sub-zygote, its stand-ins. */
        parked.listen_name = strdup(listen_name ? listen_name : "");
        const char *tok = getenv(PSPAWN_ENV_TOKEN);
        snprintf(parked.token, sizeof parked.token, "%s", tok ? tok : "");
        if (!env_int(PSPAWN_ENV_TASKS, &parked.expect_tasks))
            parked.expect_tasks = 0;
        parked.sock = (int)sock;
        parked.report = -1;
        parked.active = 1;
    } else if (env_int(PSPAWN_ENV_SOCK, &sock) && env_int(PSPAWN_ENV_REPORT, &report)) {
        parked.sock = (int)sock;
        parked.report = (int)report;
        parked.active = 1;
    }
    if (!parked.active)
        return;
    parked.sock_at = parked.sock;
    parked.report_at = parked.report;
    if (env_int(PSPAWN_ENV_PARENT, &launcher))
        parked.launcher = (pid_t)launcher;
    parked.task_cgroup = env_int(PSPAWN_ENV_TASK_CGROUP, &fd) ? (int)fd : -1;
    if (parked.task_cgroup >= 0)
        fcntl(parked.task_cgroup, F_SETFD, FD_CLOEXEC);
    const char *preload = getenv(PSPAWN_ENV_PRELOAD_LIBS);
    parked.preload = preload && *preload ? strdup(preload) : NULL;
    const char *python = getenv(PSPAWN_ENV_PYTHON);
    parked.python = python ? strdup(python) : NULL;
    const char *replica = getenv(PSPAWN_ENV_REPLICA);
    parked.replica = replica ? strdup(replica) : NULL;
    record_exec_group();
    parked.exec_env = copy_environ();
    record_base();
    /* From here on a program started by the executable's constructors
     * sees neither our variables nor our channels. */
    if (parked.sock >= 0)
        fcntl(parked.sock, F_SETFD, FD_CLOEXEC);
    if (parked.report >= 0)
        fcntl(parked.report, F_SETFD, FD_CLOEXEC);
    restore_env();
    int found = 0;
    dl_iterate_phdr(find_libc_start, &found);
    if (!found) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_NO_LIBC_START, 0);
        _exit(0);
    }
}

/* POSIX timers (timer_create) a constructor made: a fork does not keep
 * them, and their notification cannot be read back to make them again.
 * 0 where /proc/self/timers is absent (no CONFIG_CHECKPOINT_RESTORE). */
static int count_posix_timers(void)
{
    FILE *f = fopen("/proc/self/timers", "re");
    char line[128];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "ID:", 3) == 0)
            n++;
    fclose(f);
    return n;
}

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

void zygote_rearm_itimers(void)
{
    for (int which = ITIMER_REAL; which <= ITIMER_PROF; which++)
        if (parked.itimers & 1 << which)
            setitimer(which, &parked.itimer[which], NULL);
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return 1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void record_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (fd <= 2 || fd == parked.sock || fd == parked.report || fd == dirfd(d))
            continue;
        if (parked.nctor_fds < MAX_CTOR_FDS)
            parked.ctor_fds[parked.nctor_fds++] = fd;
    }
    closedir(d);
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

/* ---- text prefault ------------------------------------------------------
 *
 * The kernel does not copy the page tables of file mappings at fork: they
 * refill on demand.  So a task takes a page fault in the text of each
 * library it runs, where an exec'd task took one when its loader ran the
 * library's initialisers.  A small text mapping is mapped whole by that
 * first fault anyway (the kernel maps up to 64 KB of cached pages around a
 * faulting address), so each task maps each such mapping itself with one
 * madvise(MADV_POPULATE_READ): the same pages, without a trap per library,
 * which with hundreds of libraries makes a task measurably cheaper
 * (bench/README.md).  Only private file-backed r-x mappings of at most
 * TEXT_PREFAULT_MAX bytes: a big library's text is left to fault in what
 * the task runs, as after an exec.  PSPAWN_PREFAULT=0 in the zygote's
 * environment turns it off; kernels before 5.14 (no MADV_POPULATE_READ)
 * just skip it. */
#define TEXT_PREFAULT_MAX (64 * 1024)

static void record_text(void)
{
    const char *v = getenv("PSPAWN_PREFAULT");
    if (v && strcmp(v, "0") == 0)
        return;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    char line[PATH_MAX + 128];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perm[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perm, &path_at) < 3 ||
            strcmp(perm, "r-xp") != 0 || !path_at || line[path_at] != '/' ||
            end - start > TEXT_PREFAULT_MAX)
            continue;
        if (parked.ntext == cap) {
            int ncap = cap ? 2 * cap : 256;
            struct text_range *t = realloc(parked.text, (size_t)ncap * sizeof *t);
            if (!t)
                break;
            parked.text = t;
            cap = ncap;
        }
        parked.text[parked.ntext++] = (struct text_range){ start, end - start };
    }
    fclose(f);
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
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction sa;
        if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &sa) == 0 &&
            sa.sa_handler != SIG_DFL)
            parked.ctor_sigs |= UINT64_C(1) << (sig - 1);
    }
    record_fds();
    if (prctl(PR_GET_TID_ADDRESS, &parked.tid_addr, 0, 0, 0) < 0)
        parked.tid_addr = NULL;
    if (syscall(SYS_get_robust_list, 0, &parked.robust_head, &parked.robust_len) < 0)
        parked.robust_head = NULL;
    record_mm();
    record_text();
    record_itimers();
}

struct task_start zygote_park(void)
{
    int threads = count_threads();
    if (threads > 1) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_THREADED, threads);
        _exit(0);
    }
    int timers = count_posix_timers();
    if (timers > 0) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_POSIX_TIMERS, timers);
        _exit(0);
    }
    fflush(NULL);
    /* Serve only the user who started us. */
    if (!pspawn_peer_uid_is(parked.sock, geteuid()))
        _exit(1);
    record_parked_state();
    memcpy(parked.launch_cpuset, parked.cpuset, sizeof parked.cpuset);
    parked.launch_mempolicy = parked.have_mempolicy ? parked.mempolicy : -1;
    memcpy(parked.launch_nodemask, parked.nodemask, sizeof parked.nodemask);
    zygote_watch();
    if (parked.have_exec_group) {
        parked.group = parked.exec_group.index;
        zygote_become_group(&parked.exec_group);
    }
    return parked.listen_name ? zygote_serve_standin() : zygote_serve();
}

static int park_main(int argc, char **argv, char **envp)
{
    zygote_preload();
    /* A Python interpreter parks later, inside itself (python.c). */
    if (parked.python && zygote_python_detect())
        return zygote_python_main(argc, argv, envp);
    struct task_start ts = zygote_park();
    return parked.real_main(ts.argc, ts.argv, ts.envp);
}

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (parked.active) {
        parked.real_main = main;
        main = park_main;
    }
    return next(main, argc, argv, init, fini, rtld_fini, stack_end);
}

/* ---- the zygote's own life -------------------------------------------- */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

void zygote_watch(void)
{
    /* A stand-in root outlives the stand-in that started it: it serves the
     * step's other stand-ins. */
    if (!parked.listen_name && parked.launcher > 0)
        parked.launcher_pidfd = (int)syscall(SYS_pidfd_open, parked.launcher, 0);
    if (parked.root > 0)
        parked.root_pidfd = (int)syscall(SYS_pidfd_open, parked.root, 0);
    else
        parked.root_pidfd = -1;
}

int zygote_wait(int sock, int extra, int timeout_ms)
{
    for (;;) {
        struct pollfd p[4] = {
            { sock, POLLIN, 0 }, { extra, POLLIN, 0 },
            { parked.launcher_pidfd, POLLIN, 0 }, { parked.root_pidfd, POLLIN, 0 },
        };
        int r = poll(p, 4, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -1;
        /* Its launcher or its root gone, a zygote has nobody to serve. */
        if ((p[2].revents | p[3].revents) & POLLIN)
            zygote_exit(0);
        if (p[1].revents)
            return 1;
        if (p[0].revents)
            return 0;
    }
}

void zygote_exit(int code)
{
    if (parked.replica)
        pspawn_replica_remove(parked.replica);
    _exit(code);
}
