/*
 * libpspawn-proxy.so: preloaded into the zygote.  It wraps
 * __libc_start_main so that, once every constructor has run, the program
 * parks instead of entering main() and serves spawn requests: each task is
 * a clone of the parked process that sets itself up as exec would have,
 * waits to be released, and returns into the real main() with its own
 * argv and environ.
 *
 * Nothing here is exported but __libc_start_main.
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
#include <stddef.h>
#include <linux/futex.h>
#include <linux/prctl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "protocol.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

extern char **environ;

#define MAX_CTOR_FDS 64

struct text_range {
    uintptr_t start;
    size_t len;
};

/* What the zygote looked like when it parked: tasks change only what
 * differs from it. */
static struct {
    int active;
    int sock, report;
    const char *listen_name;    /* stand-in mode */
    char token[PSPAWN_TOKEN_LEN];
    long expect_tasks;
    long floor;             /* PSPAWN_FLOOR: fork this many, no protocol */
    main_fn real_main;
    char cwd[PATH_MAX];
    mode_t umask;
    int nice, sched_policy, sched_priority;
    int mempolicy, have_mempolicy;
    unsigned char nodemask[PSPAWN_NODEMASK_BYTES];
    int no_new_privs;
    int seccomp;            /* filters the zygote runs under */
    struct pspawn_base base;    /* the state the zygote was exec'd with */
    int have_base;
    struct wire_procstate proc;
    struct rlimit rl[RLIM_NLIMITS];
    unsigned char cpuset[PSPAWN_CPUSET_BYTES];
    uint64_t ctor_sigs;     /* dispositions a constructor set */
    int ctor_fds[MAX_CTOR_FDS];
    int nctor_fds;
    int *tid_addr;
    void *robust_head;
    size_t robust_len;
    struct prctl_mm_map mm;
    int have_mm;
    struct text_range *text;    /* small text mappings, mapped in each task */
    int ntext;
    struct itimerval itimer[3]; /* a constructor's alarm or interval timers */
    int itimers;                /* bit per armed one */
} P;

/* What a released task returns into main() with. */
struct task_start {
    int argc;
    char **argv;
    char **envp;
};

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

static void send_ready(int status, int detail)
{
    struct zygote_ready r = { PSPAWN_MAGIC, status, detail, (int32_t)getpid() };
    send(P.sock, &r, sizeof r, MSG_NOSIGNAL);
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
    unsetenv(PSPAWN_ENV_FLOOR);
    unsetenv(PSPAWN_ENV_LISTEN);
    unsetenv(PSPAWN_ENV_TOKEN);
    unsetenv(PSPAWN_ENV_TASKS);
    unsetenv(PSPAWN_ENV_PARENT);
    unsetenv(PSPAWN_ENV_BASE);
}

static void record_base(void)
{
    const char *b = getenv(PSPAWN_ENV_BASE);
    P.have_base = b && pspawn_base_parse(b, &P.base);
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
    socklen_t tl = sizeof type, pl = sizeof peer;
    return S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_SEQPACKET &&
           getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &pl) == 0 && peer.pid == parent;
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
    long sock, report, floor;
    if (inherited_zygote_env()) {
        restore_env();
        return;
    }
    const char *listen_name = getenv(PSPAWN_ENV_LISTEN);
    if (listen_name && *listen_name && env_int(PSPAWN_ENV_SOCK, &sock)) {
        /* Stand-in mode: SOCK only says whether we parked. */
        P.listen_name = strdup(listen_name);
        const char *tok = getenv(PSPAWN_ENV_TOKEN);
        snprintf(P.token, sizeof P.token, "%s", tok ? tok : "");
        if (!env_int(PSPAWN_ENV_TASKS, &P.expect_tasks))
            P.expect_tasks = 0;
        P.sock = (int)sock;
        P.report = -1;
        P.active = 1;
    } else if (env_int(PSPAWN_ENV_SOCK, &sock) && env_int(PSPAWN_ENV_REPORT, &report)) {
        P.sock = (int)sock;
        P.report = (int)report;
        P.active = 1;
    } else if (env_int(PSPAWN_ENV_FLOOR, &floor) && floor > 0) {
        P.floor = floor;
        P.sock = P.report = -1;
        P.active = 1;
    }
    if (!P.active)
        return;
    record_base();
    /* From here on a program started by the executable's constructors
     * sees neither our variables nor our channels. */
    if (P.sock >= 0)
        fcntl(P.sock, F_SETFD, FD_CLOEXEC);
    if (P.report >= 0)
        fcntl(P.report, F_SETFD, FD_CLOEXEC);
    restore_env();
    int found = 0;
    dl_iterate_phdr(find_libc_start, &found);
    if (!found) {
        if (P.sock >= 0)
            send_ready(ZYGOTE_NO_LIBC_START, 0);
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
        if (getitimer(which, &P.itimer[which]) == 0 &&
            (P.itimer[which].it_value.tv_sec || P.itimer[which].it_value.tv_usec)) {
            P.itimers |= 1 << which;
            setitimer(which, &off, NULL);
        }
}

static void rearm_itimers(void)
{
    for (int which = ITIMER_REAL; which <= ITIMER_PROF; which++)
        if (P.itimers & 1 << which)
            setitimer(which, &P.itimer[which], NULL);
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
        if (fd <= 2 || fd == P.sock || fd == P.report || fd == dirfd(d))
            continue;
        if (P.nctor_fds < MAX_CTOR_FDS)
            P.ctor_fds[P.nctor_fds++] = fd;
    }
    closedir(d);
}

/* /proc/self/stat fields 26-28 and 45-51: what PR_SET_MM_MAP needs. */
static void record_mm(void)
{
    char buf[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return;
    unsigned long long f[53] = { 0 };
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok && field < 52; tok = strtok(NULL, " "))
        f[++field] = strtoull(tok, NULL, 10);
    if (field < 51)
        return;
    P.mm.start_code = f[26];
    P.mm.end_code = f[27];
    P.mm.start_stack = f[28];
    P.mm.start_data = f[45];
    P.mm.end_data = f[46];
    P.mm.start_brk = f[47];
    P.mm.auxv = NULL;
    P.mm.auxv_size = 0;
    P.mm.exe_fd = (uint32_t)-1;
    P.have_mm = 1;
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
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
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
        if (P.ntext == cap) {
            int ncap = cap ? 2 * cap : 256;
            struct text_range *t = realloc(P.text, (size_t)ncap * sizeof *t);
            if (!t)
                break;
            P.text = t;
            cap = ncap;
        }
        P.text[P.ntext++] = (struct text_range){ start, end - start };
    }
    fclose(f);
}

/* In a new task. */
static void prefault_text(void)
{
    int saved = errno;
    for (int i = 0; i < P.ntext; i++)
        if (madvise((void *)P.text[i].start, P.text[i].len, MADV_POPULATE_READ) < 0 &&
            errno == EINVAL)
            break;      /* no MADV_POPULATE_READ here */
    errno = saved;
}

static void record_parked_state(void)
{
    if (!getcwd(P.cwd, sizeof P.cwd))
        P.cwd[0] = 0;
    P.umask = umask(022);
    umask(P.umask);
    for (int r = 0; r < RLIM_NLIMITS; r++)
        getrlimit(r, &P.rl[r]);
    errno = 0;
    P.nice = getpriority(PRIO_PROCESS, 0);
    struct sched_param sp = { 0 };
    P.sched_policy = sched_getscheduler(0);
    sched_getparam(0, &sp);
    P.sched_priority = sp.sched_priority;
    sched_getaffinity(0, sizeof P.cpuset, (cpu_set_t *)P.cpuset);
    P.have_mempolicy = pspawn_mempolicy_get(&P.mempolicy, P.nodemask) == 0;
    P.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
    P.seccomp = pspawn_seccomp_filters();
    pspawn_procstate_get(&P.proc);
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction sa;
        if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &sa) == 0 &&
            sa.sa_handler != SIG_DFL)
            P.ctor_sigs |= UINT64_C(1) << (sig - 1);
    }
    record_fds();
    if (prctl(PR_GET_TID_ADDRESS, &P.tid_addr, 0, 0, 0) < 0)
        P.tid_addr = NULL;
    if (syscall(SYS_get_robust_list, 0, &P.robust_head, &P.robust_len) < 0)
        P.robust_head = NULL;
    record_mm();
    record_text();
    record_itimers();
}

/* fork(2) without glibc's atfork handlers (exec does not run them either),
 * with the child's thread id written where glibc keeps it. */
static pid_t clone_task(unsigned long extra)
{
    unsigned long flags = extra | SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, P.tid_addr, 0);
    if (pid == 0 && P.robust_head)
        syscall(SYS_set_robust_list, P.robust_head, P.robust_len);
    return pid;
}

static void report(int fd, uint32_t req, uint32_t index, int32_t pid, int32_t err)
{
    struct task_report r = { req, index, pid, err };
    while (write(fd, &r, sizeof r) < 0 && errno == EINTR)
        ;
}

/* Copy this task's argv and environ out of the request, laid out as the
 * kernel lays them out (strings contiguous, argv then environ), so that
 * /proc/PID/cmdline and environ can point at them. */
static int build_args(const char *base, const struct wire_task *t, struct task_start *ts,
                      unsigned long *arg_start)
{
    size_t ptrs = (t->argc + 1 + t->envc + 1) * sizeof(char *);
    size_t total = ptrs + t->strings_len + t->env_len;
    char **v = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return ENOMEM;
    char *s = (char *)v + ptrs;
    memcpy(s, base + t->strings, t->strings_len + t->env_len);
    char *p = s;
    for (uint32_t i = 0; i < t->argc; i++) {
        v[i] = p;
        p += strlen(p) + 1;
    }
    v[t->argc] = NULL;
    char **e = v + t->argc + 1;
    for (uint32_t i = 0; i < t->envc; i++) {
        e[i] = p;
        p += strlen(p) + 1;
    }
    e[t->envc] = NULL;
    ts->argc = (int)t->argc;
    ts->argv = v;
    ts->envp = e;
    *arg_start = (unsigned long)s;
    return 0;
}

static int strings_valid(const char *base, size_t size, const struct wire_task *t)
{
    size_t len = (size_t)t->strings_len + t->env_len;
    if (t->strings > size || len > size - t->strings)
        return 0;
    const char *s = base + t->strings;
    uint32_t nul = 0;
    for (size_t i = 0; i < len; i++)
        nul += s[i] == 0;
    if (nul != t->argc + t->envc || (len && s[len - 1] != 0))
        return 0;
    /* argv strings end exactly at strings_len */
    uint32_t nul_args = 0;
    for (size_t i = 0; i < t->strings_len; i++)
        nul_args += s[i] == 0;
    return nul_args == t->argc && (!t->strings_len || s[t->strings_len - 1] == 0);
}

/* Wait for go[INDEX].  A task of a direct launcher is its child: it gives
 * up when its parent is no longer the launcher.  A stand-in's task is the
 * zygote's child: it gives up when the stand-in is gone. */
static void wait_go(const struct wire_request *w, uint32_t index, int standin)
{
    const uint32_t *go = &w->go[index];
    uint32_t v;
    while ((v = __atomic_load_n(go, __ATOMIC_ACQUIRE)) == GO_HOLD) {
        struct timespec ts = { 1, 0 };
        syscall(SYS_futex, go, FUTEX_WAIT, GO_HOLD, &ts, NULL, 0);
        /* The launcher died before releasing us: we never ran. */
        if (__atomic_load_n(go, __ATOMIC_ACQUIRE) == GO_HOLD &&
            (standin ? kill((pid_t)w->launcher_pid, 0) < 0 && errno == ESRCH
                     : getppid() != (pid_t)w->launcher_pid))
            _exit(127);
    }
    if (v != GO_RUN)
        _exit(127);
}

/* In a new task: become what exec would have made, then return the
 * arguments of main(). */
static struct task_start task_main(const char *base, size_t size, uint32_t id, uint32_t index,
                                   struct child_setup *tmpl, int nfds, int standin)
{
    const struct wire_request *w = (const struct wire_request *)base;
    const struct wire_task *t = (const struct wire_task *)(base + w->tasks) + index;
    struct child_setup s = *tmpl;
    int fds[PSPAWN_FD_MAX + 2];
    memcpy(fds, tmpl->fds, (nfds + 2) * sizeof(int));
    s.fds = fds;
    /* The task has no use for the control socket. */
    if (fds[nfds + 1] >= 0)
        close(fds[nfds + 1]);
    fds[nfds + 1] = -1;
    if (t->has_cpuset)
        s.cpuset = t->cpuset;

    struct task_start ts = { 0, NULL, NULL };
    unsigned long arg_start = 0;
    int err = strings_valid(base, size, t) ? 0 : EINVAL;
    if (!err)
        err = build_args(base, t, &ts, &arg_start);
    if (!err)
        err = pspawn_child_setup(&s);
    int report_fd = fds[nfds];
    if (standin) {
        /* Our parent is the zygote, which already has our pid: only a
         * failure needs telling (the pipe closes on success). */
        if (err) {
            while (write(report_fd, &err, sizeof err) < 0 && errno == EINTR)
                ;
            _exit(127);
        }
        if (w->flags & REQ_HOLD) {
            close(report_fd);   /* the zygote's read ends: it replies */
            wait_go(w, index, 1);
            /* Moving a task into another cpuset cgroup resets its CPU
             * affinity to that cgroup's: bind it again. */
            const unsigned char *aff = t->has_cpuset ? t->cpuset
                                       : (w->flags & REQ_CPUSET) ? w->cpuset : NULL;
            if (aff)
                sched_setaffinity(0, PSPAWN_CPUSET_BYTES, (const cpu_set_t *)aff);
        }
    } else {
        report(report_fd, id, index, (int32_t)getpid(), err);
        if (err)
            _exit(127);
        wait_go(w, index, 0);
    }

    prefault_text();
    int keep[PSPAWN_FD_MAX + 3 + MAX_CTOR_FDS];
    int nkeep = pspawn_child_keep_list(&s, P.ctor_fds, P.nctor_fds, keep);
    pspawn_child_close_others(keep, nkeep);
    uint64_t sigmask = w->sigmask;
    size_t strings_len = t->strings_len, env_len = t->env_len;
    munmap((void *)base, size);

    environ = ts.envp;
    program_invocation_name = ts.argc > 0 ? ts.argv[0] : (char *)"";
    char *slash = strrchr(program_invocation_name, '/');
    program_invocation_short_name = slash ? slash + 1 : program_invocation_name;
    if (P.have_mm) {
        struct prctl_mm_map mm = P.mm;
        mm.brk = (uint64_t)(uintptr_t)sbrk(0);
        mm.arg_start = arg_start;
        mm.arg_end = arg_start + strings_len;
        mm.env_start = mm.arg_end;
        mm.env_end = mm.env_start + env_len;
        prctl(PR_SET_MM, PR_SET_MM_MAP, &mm, sizeof mm, 0);
    }
    pspawn_child_sigmask(sigmask);
    rearm_itimers();
    return ts;
}

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
    if (ps->personality >= 0 && P.proc.personality >= 0 && ps->personality != P.proc.personality)
        flags |= REQ_PERSONALITY;
    if (ps->thp_disable >= 0 && P.proc.thp_disable >= 0 && ps->thp_disable != P.proc.thp_disable)
        flags |= REQ_THP_DISABLE;
    if (ps->ioprio >= 0 && P.proc.ioprio >= 0 && ps->ioprio != P.proc.ioprio)
        flags |= REQ_IOPRIO;
    if (ps->timerslack > 0 && P.proc.timerslack > 0 && ps->timerslack != P.proc.timerslack)
        flags |= REQ_TIMERSLACK;
    if (ps->mdwe > 0 && !(ps->mdwe & PR_MDWE_NO_INHERIT) && P.proc.mdwe == 0)
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
    if (!P.have_base)
        return differs;
    if (!caller)
        return 0;
    return ctor ? -1 : 1;
}

static int rl_differs(uint64_t cur, uint64_t max, const struct rlimit *rl)
{
    return cur != rl->rlim_cur || max != rl->rlim_max;
}

/* Check a request and turn it into the setup every task of it starts
 * from.  CHAN are the caller's two channels, which tasks must not lose
 * during their fd shuffle.  Returns 0, or a request_refusal (detail in
 * *DETAIL). */
static int parse_request(const char *base, size_t size, int *fds, int nfds, const int chan[2],
                         struct child_setup *tmpl, int *detail)
{
    const struct wire_request *w = (const struct wire_request *)base;
    if (size < sizeof *w || w->ntasks > PSPAWN_REQ_MAX || w->nactions > PSPAWN_FD_MAX + 3 ||
        w->nrlimits > RLIM_NLIMITS || w->tasks > size ||
        w->ntasks * sizeof(struct wire_task) > size - w->tasks ||
        w->actions > size || w->nactions * sizeof(struct wire_action) > size - w->actions ||
        w->rlimits > size || w->nrlimits * sizeof(struct wire_rlimit) > size - w->rlimits ||
        w->cwd >= size || !memchr(base + w->cwd, 0, size - w->cwd))
        return REFUSE_MALFORMED;
    static struct child_action actions[PSPAWN_FD_MAX + 3];
    const struct wire_action *wa = (const struct wire_action *)(base + w->actions);
    for (uint32_t i = 0; i < w->nactions; i++) {
        if ((wa[i].kind == FA_DUP2 && (wa[i].src < 0 || wa[i].src >= nfds)) || wa[i].fd < 0 ||
            (wa[i].kind == FA_OPEN && (wa[i].path >= size || !memchr(base + wa[i].path, 0, size - wa[i].path))))
            return REFUSE_MALFORMED;
        /* A constructor's fd would be clobbered: exec would have given
         * the constructor another number, we cannot. */
        if (wa[i].kind != FA_CLOSE && in_list(P.ctor_fds, P.nctor_fds, wa[i].fd)) {
            *detail = wa[i].fd;
            return REFUSE_FD_CONFLICT;
        }
        actions[i] = (struct child_action){ wa[i].kind, wa[i].fd, wa[i].src, wa[i].oflag,
                                            (mode_t)wa[i].mode,
                                            wa[i].kind == FA_OPEN ? base + wa[i].path : NULL };
    }
    /* A fork of the zygote would run outside filters its caller is under
     * (fewer than the zygote's: a constructor installed them, as it would
     * after an exec). */
    if (w->seccomp < 0 || (P.have_base ? w->seccomp != P.base.seccomp : w->seccomp > P.seccomp)) {
        *detail = w->seccomp;
        return REFUSE_SECCOMP;
    }
    /* Only what differs from the parked state costs a system call. */
    static struct wire_rlimit rl[RLIM_NLIMITS];
    int nrl = 0;
    const struct wire_rlimit *wr = (const struct wire_rlimit *)(base + w->rlimits);
    for (uint32_t i = 0; i < w->nrlimits; i++) {
        int r = wr[i].resource;
        if (r < 0 || r >= RLIM_NLIMITS)
            continue;
        int what = ctor_state(rl_differs(wr[i].cur, wr[i].max, &P.base.rl[r]),
                              rl_differs(P.rl[r].rlim_cur, P.rl[r].rlim_max, &P.base.rl[r]),
                              rl_differs(wr[i].cur, wr[i].max, &P.rl[r]));
        if (what < 0) {
            *detail = r;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            rl[nrl++] = wr[i];
    }
    unsigned flags = w->flags & (REQ_SETSID | REQ_SETPGROUP);
    if ((w->flags & REQ_CWD) && strcmp(base + w->cwd, P.cwd) != 0)
        flags |= REQ_CWD;
    if (w->flags & REQ_UMASK) {
        int what = ctor_state(w->umask != P.base.umask, P.umask != P.base.umask,
                              (mode_t)w->umask != P.umask);
        if (what < 0) {
            *detail = CTOR_STATE_UMASK;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            flags |= REQ_UMASK;
    }
    if (w->flags & REQ_NICE) {
        int what = ctor_state(w->nice != P.base.nice, P.nice != P.base.nice, w->nice != P.nice);
        if (what < 0) {
            *detail = CTOR_STATE_NICE;
            return REFUSE_CTOR_STATE;
        }
        if (what)
            flags |= REQ_NICE;
    }
    if ((w->flags & REQ_SCHED) &&
        (w->sched_policy != P.sched_policy || w->sched_priority != P.sched_priority))
        flags |= REQ_SCHED;
    if ((w->flags & REQ_MEMPOLICY) &&
        (!P.have_mempolicy || w->mempolicy != P.mempolicy ||
         memcmp(w->nodemask, P.nodemask, sizeof P.nodemask) != 0))
        flags |= REQ_MEMPOLICY;
    if ((w->flags & REQ_NO_NEW_PRIVS) && !P.no_new_privs)
        flags |= REQ_NO_NEW_PRIVS;
    struct wire_procstate ps = w->proc;
    flags |= procstate_flags(&ps);
    static int tfds[PSPAWN_FD_MAX + 2];
    memcpy(tfds, fds, nfds * sizeof(int));
    tfds[nfds] = chan[0];
    tfds[nfds + 1] = chan[1];
    *tmpl = (struct child_setup){
        .flags = flags,
        .umask = (mode_t)w->umask,
        .pgroup = w->pgroup,
        .nice = w->nice,
        .sched_policy = w->sched_policy,
        .sched_priority = w->sched_priority,
        .mempolicy = w->mempolicy,
        .nodemask = w->nodemask,
        .proc = ps,
        .cwd = base + w->cwd,
        .cpuset = (w->flags & REQ_CPUSET) && memcmp(w->cpuset, P.cpuset, sizeof P.cpuset)
                      ? w->cpuset : NULL,
        .rlimits = rl,
        .nrlimits = nrl,
        .actions = actions,
        .nactions = (int)w->nactions,
        .fds = tfds,
        .nfds = nfds + 2,
        .sig_default = 0,
        .sig_ignore = w->sigign & ~P.ctor_sigs,
        .emulate_cloexec = 1,
    };
    return 0;
}

/* Let go of a request's memfd mapping and passed fds. */
static void drop_request(void *base, size_t size, int *fds, int nfds)
{
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    munmap(base, size);
}

/* Direct mode: clone the request's tasks as the launcher's children.
 * Returns 1 in a task (with *ts filled), 0 in the zygote, which has let go
 * of the request before it reports it done: once the launcher has every
 * request done, the zygote holds none of their fds. */
static int serve_request(const char *base, size_t size, uint32_t id, int *fds, int nfds,
                         struct task_start *ts)
{
    const struct wire_request *w = (const struct wire_request *)base;
    struct child_setup tmpl;
    int detail = 0;
    const int chan[2] = { P.report, P.sock };
    int refusal = parse_request(base, size, fds, nfds, chan, &tmpl, &detail);
    if (refusal) {
        drop_request((void *)base, size, fds, nfds);
        report(P.report, id, PSPAWN_REPORT_DONE, detail, refusal);
        return 0;
    }
    uint32_t ntasks = w->ntasks;
    for (uint32_t i = 0; i < ntasks; i++) {
        pid_t pid = clone_task(CLONE_PARENT);
        if (pid == 0) {
            *ts = task_main(base, size, id, i, &tmpl, nfds, 0);
            return 1;
        }
        if (pid < 0)
            report(P.report, id, i, -1, errno);
    }
    drop_request((void *)base, size, fds, nfds);
    report(P.report, id, PSPAWN_REPORT_DONE, (int32_t)ntasks, 0);
    return 0;
}

/* Receive one request: its header, its memfd mapped (*BASE), and the fds
 * it passes.  Returns 1, 0 on end of file, -1 on a malformed message (its
 * fds closed). */
static int recv_request(int sock, struct request_msg *msg, void **base, int *fds, int *nfds)
{
    union {
        char buf[CMSG_SPACE((PSPAWN_FD_MAX + 1) * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec iov = { msg, sizeof *msg };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                         .msg_controllen = sizeof cm.buf };
    ssize_t n;
    while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return 0;
    *nfds = 0;
    for (struct cmsghdr *ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch))
        if (ch->cmsg_level == SOL_SOCKET && ch->cmsg_type == SCM_RIGHTS) {
            int k = (int)((ch->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            if (k > PSPAWN_FD_MAX + 1 - *nfds)
                k = PSPAWN_FD_MAX + 1 - *nfds;
            memcpy(fds + *nfds, CMSG_DATA(ch), k * sizeof(int));
            *nfds += k;
        }
    *base = MAP_FAILED;
    if (n == sizeof *msg && msg->magic == PSPAWN_MAGIC && *nfds >= 1 &&
        (uint32_t)*nfds == msg->nfds + 1 && !(mh.msg_flags & MSG_CTRUNC))
        *base = mmap(NULL, msg->size, PROT_READ, MAP_SHARED, fds[0], 0);
    if (*base == MAP_FAILED) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        return -1;
    }
    close(fds[0]);
    return 1;
}

/* Direct mode: wait for requests until the launcher hangs up. */
static struct task_start serve(void)
{
    for (;;) {
        struct request_msg msg = { 0 };
        void *base;
        int fds[PSPAWN_FD_MAX + 1], nfds;
        int r = recv_request(P.sock, &msg, &base, fds, &nfds);
        if (r == 0)
            _exit(0);
        if (r < 0) {
            report(P.report, msg.id, PSPAWN_REPORT_DONE, 0, REFUSE_MALFORMED);
            continue;
        }
        struct task_start ts;
        if (serve_request(base, msg.size, msg.id, fds + 1, nfds - 1, &ts))
            return ts;
    }
}

/* ---- stand-in mode ---------------------------------------------------- */

#define MAX_CLIENTS 1024

struct client {
    int fd;
    pid_t task;
};

/* What the stand-in zygote serves with: its listening socket, signalfd
 * and one entry per stand-in connection, kept (with fd -1) after the
 * stand-in hung up for as long as its task runs: only those tasks are
 * reaped as ours (a child a constructor made is not). */
static struct {
    int lfd, sfd, n;
    struct client c[MAX_CLIENTS];
} S = { -1, -1, 0, { { 0, 0 } } };

/* In a task just cloned: drop every fd the zygote serves with.  Held, the
 * task must not keep its stand-in's connection open: if the zygote dies
 * before it replies, the stand-in must see the connection close, cancel
 * the task and exec instead. */
static void close_serving_fds(void)
{
    close(S.lfd);
    close(S.sfd);
    for (int i = 0; i < S.n; i++)
        if (S.c[i].fd >= 0)
            close(S.c[i].fd);
}

static void standin_reply(int fd, int kind, pid_t pid, int status)
{
    struct standin_reply r = { PSPAWN_MAGIC, kind, (int32_t)pid, status };
    send(fd, &r, sizeof r, MSG_NOSIGNAL);
}

/* One stand-in's request: fork its task as our own child.  Returns 1 in the
 * task, 0 here. */
static int standin_request(struct client *c, struct task_start *ts)
{
    struct request_msg msg = { 0 };
    void *base;
    int fds[PSPAWN_FD_MAX + 1], nfds;
    int r = recv_request(c->fd, &msg, &base, fds, &nfds);
    if (r <= 0)
        return r == 0 ? -1 : (standin_reply(c->fd, STANDIN_FAILED, -1, EINVAL), 0);
    const struct wire_request *w = base;
    struct child_setup tmpl;
    int detail = 0, err = 0, errpipe[2] = { -1, -1 };
    if (msg.size < sizeof *w || w->ntasks != 1 ||
        !pspawn_tokens_equal(w->token, P.token, PSPAWN_TOKEN_LEN))
        err = EPERM;
    else if (pipe2(errpipe, O_CLOEXEC) < 0)
        err = errno;
    else {
        const int chan[2] = { errpipe[1], -1 };
        if (parse_request(base, msg.size, fds + 1, nfds - 1, chan, &tmpl, &detail))
            err = EINVAL;
    }
    pid_t pid = -1;
    if (!err) {
        pid = clone_task(0);
        if (pid == 0) {
            close(errpipe[0]);
            close_serving_fds();
            *ts = task_main(base, msg.size, msg.id, 0, &tmpl, nfds - 1, 1);
            return 1;
        }
        if (pid < 0)
            err = errno;
        close(errpipe[1]);
        int child_err = 0;
        ssize_t got;
        while ((got = read(errpipe[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
            ;
        if (pid > 0 && got == sizeof child_err) {
            err = child_err;
            waitpid(pid, NULL, 0);
            pid = -1;
        }
    }
    if (errpipe[0] >= 0)
        close(errpipe[0]);
    for (int i = 1; i < nfds; i++)
        close(fds[i]);
    munmap(base, msg.size);
    if (err) {
        standin_reply(c->fd, STANDIN_FAILED, -1, err);
        return -1;
    }
    c->task = pid;
    standin_reply(c->fd, STANDIN_STARTED, pid, 0);
    return 0;
}

/* Serve stand-ins until every task this node expects has been served and
 * has exited, or nothing happened for a while.  The zygote must outlive
 * signals sent to the step's process group: it blocks them (its tasks set
 * their own mask). */
static struct task_start serve_standin(void)
{
    int lfd = S.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr;
    int alen = pspawn_abstract_addr(&addr, P.listen_name);
    if (lfd < 0 || alen < 0)
        _exit(1);
    if (bind(lfd, (struct sockaddr *)&addr, (socklen_t)alen) < 0 ||
        listen(lfd, 128) < 0) {
        send_ready(ZYGOTE_LISTEN_FAILED, errno);
        _exit(1);
    }
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sfd = S.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    send_ready(ZYGOTE_PARKED, 0);
    close(P.sock);
    P.sock = -1;

    static struct pollfd pfd[MAX_CLIENTS + 2];
    long served = 0;
    for (;;) {
        if (P.expect_tasks > 0 && served >= P.expect_tasks && S.n == 0)
            _exit(0);
        int np = 0;
        pfd[np++] = (struct pollfd){ lfd, POLLIN, 0 };
        pfd[np++] = (struct pollfd){ sfd, POLLIN, 0 };
        for (int i = 0; i < S.n; i++)
            pfd[np++] = (struct pollfd){ S.c[i].fd, POLLIN, 0 };  /* -1: ignored */
        int r = poll(pfd, (nfds_t)np, 60000);
        if (r == 0 && S.n == 0)
            _exit(0);   /* idle: nobody left to serve */
        if (r <= 0)
            continue;
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            int st;
            pid_t pid;
            while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                for (int i = 0; i < S.n; i++)
                    if (S.c[i].task == pid) {
                        if (S.c[i].fd >= 0) {
                            standin_reply(S.c[i].fd, STANDIN_EXITED, pid, st);
                            close(S.c[i].fd);
                        }
                        S.c[i] = (struct client){ -1, 0 };
                    }
        }
        for (int i = 0; i < S.n; i++) {
            short ev = pfd[i + 2].revents;
            if (S.c[i].fd < 0 || !ev)
                continue;
            if (S.c[i].task == 0 && (ev & POLLIN)) {
                struct task_start ts;
                int rr = standin_request(&S.c[i], &ts);
                if (rr == 1)
                    return ts;
                if (rr == 0) {
                    served++;
                    continue;
                }
            } else if (!(ev & (POLLHUP | POLLERR))) {
                continue;
            }
            /* Failed, or the stand-in hung up: its task (if any) runs on,
             * reaped here with nobody to tell. */
            close(S.c[i].fd);
            S.c[i].fd = -1;
        }
        int k = 0;
        for (int i = 0; i < S.n; i++)
            if (S.c[i].fd >= 0 || S.c[i].task > 0)
                S.c[k++] = S.c[i];
        S.n = k;
        if (pfd[0].revents & POLLIN) {
            int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            struct ucred peer;
            socklen_t plen = sizeof peer;
            /* Only our own user, on every connection. */
            if (cfd >= 0 && (S.n >= MAX_CLIENTS ||
                             getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 ||
                             peer.uid != geteuid())) {
                close(cfd);
                cfd = -1;
            }
            if (cfd >= 0)
                S.c[S.n++] = (struct client){ cfd, 0 };
        }
    }
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* The floor: fork the parked program N times with no protocol at all.
 * Returns in each child, which then runs main() and exits through
 * __libc_start_main exactly as a task does. */
static void run_floor(void)
{
    double t0 = now_ns();
    long started = 0;
    for (long i = 0; i < P.floor; i++) {
        pid_t pid = clone_task(0);
        if (pid == 0) {
            prefault_text();    /* the task's own setup, not protocol */
            rearm_itimers();
            return;
        }
        if (pid > 0)
            started++;
    }
    int st;
    while (started > 0 && (wait(&st) > 0 || errno == EINTR))
        started--;
    double t1 = now_ns();
    fprintf(stderr, "pspawn-floor: n=%ld total_ns=%.0f\n", P.floor, t1 - t0);
    _exit(0);
}

static int park_main(int argc, char **argv, char **envp)
{
    (void)envp;
    int threads = count_threads();
    if (threads > 1) {
        if (P.sock >= 0)
            send_ready(ZYGOTE_THREADED, threads);
        _exit(0);
    }
    int timers = count_posix_timers();
    if (timers > 0) {
        if (P.sock >= 0)
            send_ready(ZYGOTE_POSIX_TIMERS, timers);
        _exit(0);
    }
    fflush(NULL);
    /* Serve only the user who started us. */
    struct ucred peer;
    socklen_t len = sizeof peer;
    if (P.sock >= 0 && (getsockopt(P.sock, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 ||
                        peer.uid != geteuid()))
        _exit(1);
    record_parked_state();
    if (P.floor) {
        run_floor();
        return P.real_main(argc, argv, environ);
    }
    struct task_start ts;
    if (P.listen_name) {
        ts = serve_standin();
    } else {
        send_ready(ZYGOTE_PARKED, 0);
        ts = serve();
    }
    return P.real_main(ts.argc, ts.argv, ts.envp);
}

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (P.active) {
        P.real_main = main;
        main = park_main;
    }
    return next(main, argc, argv, init, fini, rtld_fini, stack_end);
}
