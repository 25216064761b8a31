/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The proxy's one entry: its constructor sees whether this process is a
 * zygote and records what the exec gave it; the __libc_start_main wrapper
 * lets every constructor run; park_main, in place of main(), parks
 * (park.c), or hands over to the mode that parks later, inside the
 * runtime it starts (a Python interpreter: python-embed.c, which plugs
 * its hooks into the park through parked.mode).
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
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
#include <sys/auxv.h>
#include <sys/time.h>
#include <unistd.h>

#include "pidfd.h"
#include "procfs.h"
#include "python.h"
#include "replica.h"
#include "unixsock.h"
#include "zygote.h"

typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

extern char **environ;


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

/* libc's own setenv and unsetenv.  A program may define its own (bash
 * does: they bind shell variables), which would win over libc's for our
 * calls too; a variable bash bound before its main is then exported by
 * every task, our channels' variables included. */
typedef int (*setenv_fn)(const char *, const char *, int);
typedef int (*unsetenv_fn)(const char *);
static setenv_fn libc_setenv = setenv;
static unsetenv_fn libc_unsetenv = unsetenv;

static void bind_libc_env(void)
{
    setenv_fn set = (setenv_fn)dlsym(RTLD_NEXT, "setenv");
    unsetenv_fn unset = (unsetenv_fn)dlsym(RTLD_NEXT, "unsetenv");
    if (set && unset) {
        libc_setenv = set;
        libc_unsetenv = unset;
    }
}

static void restore_env(void)
{
    static const char *const pairs[][2] = {
        { "LD_PRELOAD", PSPAWN_ENV_PRELOAD },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *user = getenv(pairs[i][1]);
        if (user)
            libc_setenv(pairs[i][0], user, 1);
        else
            libc_unsetenv(pairs[i][0]);
        libc_unsetenv(pairs[i][1]);
    }
    libc_unsetenv(PSPAWN_ENV_SOCK);
    libc_unsetenv(PSPAWN_ENV_REPORT);
    libc_unsetenv(PSPAWN_ENV_LISTEN);
    libc_unsetenv(PSPAWN_ENV_TOKEN);
    libc_unsetenv(PSPAWN_ENV_TASKS);
    libc_unsetenv(PSPAWN_ENV_IDLE);
    libc_unsetenv(PSPAWN_ENV_STARTER);
    libc_unsetenv(PSPAWN_ENV_PARENT);
    libc_unsetenv(PSPAWN_ENV_BASE);
    libc_unsetenv(PSPAWN_ENV_GROUP);
    libc_unsetenv(PSPAWN_ENV_FORWARD);
    libc_unsetenv(PSPAWN_ENV_REPLICA);
    libc_unsetenv(PSPAWN_ENV_TASK_CGROUP);
    libc_unsetenv(PSPAWN_ENV_PRELOAD_LIBS);
    libc_unsetenv(PSPAWN_ENV_EXEC);
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

/* A constructor's child lets go of the zygote's channels. */
static void drop_inherited_channels(pid_t starter)
{
    long fd;
    if (env_int(PSPAWN_ENV_SOCK, &fd) && zygote_is_channel((int)fd, 1, starter))
        close((int)fd);
    if (env_int(PSPAWN_ENV_REPORT, &fd) && zygote_is_channel((int)fd, 0, starter))
        close((int)fd);
    /* "FD:PATH": the program's fd, not close-on-exec until our
     * constructor runs either. */
    const char *exec = getenv(PSPAWN_ENV_EXEC);
    char *end;
    fd = exec ? strtol(exec, &end, 10) : -1;
    if (fd > 2 && *end == ':' && (fcntl((int)fd, F_GETFL) & O_PATH))
        close((int)fd);
}

/* ---- what /proc shows ----------------------------------------------------
 *
 * /proc/PID/environ shows the environment block the kernel copied at exec,
 * whatever unsetenv does to environ, and a fork keeps it.  Our variables
 * (a stand-in zygote's token among them) are overwritten there, in place:
 * those still in environ (the warm Python bootstrap's) move to the heap
 * first.  ENVP is the array the loader gave the constructors, which points
 * into that block. */
static int in_environ(const char *s)
{
    for (char **e = environ; e && *e; e++)
        if (*e == s)
            return 1;
    return 0;
}

static void restore_and_scrub_env(char **envp)
{
    size_t n = 0, k = 0;
    for (char **e = envp; e && *e; e++)
        n += strncmp(*e, "PSPAWN_ZYGOTE_", 14) == 0;
    char **ours = n ? malloc(n * sizeof *ours) : NULL;
    for (char **e = envp; ours && e && *e; e++)
        if (strncmp(*e, "PSPAWN_ZYGOTE_", 14) == 0)
            ours[k++] = *e;
    restore_env();
    for (size_t i = 0; i < k; i++) {
        char *eq = strchr(ours[i], '=');
        if (eq && in_environ(ours[i])) {
            char *name = strndup(ours[i], (size_t)(eq - ours[i]));
            if (!name || libc_setenv(name, eq + 1, 1) < 0 || in_environ(ours[i])) {
                free(name);
                continue;   /* still used: left as it is */
            }
            free(name);
        }
        memset(ours[i], 0, strlen(ours[i]));
    }
    free(ours);
}

/* After an exec by fd (launcher/zygote.c) the kernel named us after the
 * fd: the command name (comm) and AT_EXECFN, which sub-zygotes are exec'd
 * by and tasks inherit.  An exec by path names a process after the path's
 * last component, and AT_EXECFN is the path: both are made so again.
 * glibc's getauxval reads the auxiliary vector the kernel put on the stack
 * after the environment's pointers (ARGV's NULL, then the environment's,
 * then the vector; an unsetenv on the loader's array leaves more NULLs at
 * its end). */
static void rename_after_exec(char **argv, int argc, const char *path)
{
    const char *slash = strrchr(path, '/');
    char comm[16];
    snprintf(comm, sizeof comm, "%s", slash ? slash + 1 : path);
    prctl(PR_SET_NAME, comm, 0, 0, 0);
    unsigned long execfn = getauxval(AT_EXECFN);
    if (!argv || !execfn)
        return;
    char **p = argv + argc + 1;
    while (*p)
        p++;
    while (!*p)
        p++;
    for (ElfW(auxv_t) *a = (ElfW(auxv_t) *)p; a->a_type != AT_NULL; a++)
        if (a->a_type == AT_EXECFN) {
            if (a->a_un.a_val == execfn)
                a->a_un.a_val = (uintptr_t)path;
            return;
        }
}

static void record_exec(char **argv, int argc)
{
    const char *v = getenv(PSPAWN_ENV_EXEC);
    char *end;
    long fd = v ? strtol(v, &end, 10) : -1;
    if (!v || fd < 0 || *end != ':' || !end[1] || !(parked.exec_path = strdup(end + 1)))
        return;
    parked.exec_fd = (int)fd;
    if (fcntl(parked.exec_fd, F_SETFD, FD_CLOEXEC) < 0)
        parked.exec_fd = -1;
    rename_after_exec(argv, argc, parked.exec_path);
}

/* Called by the loader with the program's arguments and its initial
 * environment (glibc passes them to every constructor). */
__attribute__((constructor)) static void proxy_init(int argc, char **argv, char **envp)
{
    long sock, report, launcher, fd;
    /* What the loader loaded at exec ends here: what a constructor or a
     * preload loads later is bound as its dlopen said (bind.c). */
    parked.exec_last = zygote_bind_last();
    bind_libc_env();
    if (env_int(PSPAWN_ENV_PARENT, &launcher)) {
        if (!env_int(PSPAWN_ENV_SOCK, &sock))
            sock = -1;
        enum origin o = zygote_watch_starter((pid_t)launcher, (int)sock,
                                             getenv(PSPAWN_ENV_EXEC));
        if (o == ORPHANED)
            _exit(0);
        if (o == INHERITED) {
            drop_inherited_channels((pid_t)launcher);
            restore_and_scrub_env(envp);
            return;
        }
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
        if (!env_int(PSPAWN_ENV_IDLE, &parked.idle_ms) || parked.idle_ms < 0)
            parked.idle_ms = 0;
        if (!env_int(PSPAWN_ENV_STARTER, &parked.starter) || parked.starter <= 1)
            parked.starter = 0;
        parked.sock = (int)sock;
        parked.report = -1;
        parked.active = 1;
    } else if (env_int(PSPAWN_ENV_SOCK, &sock) && env_int(PSPAWN_ENV_REPORT, &report)) {
        parked.sock = (int)sock;
        parked.report = (int)report;
        parked.active = 1;
    }
    if (!parked.active) {
        if (parked.launcher_pidfd >= 0)
            close(parked.launcher_pidfd);
        parked.launcher_pidfd = -1;
        return;
    }
    parked.sock_at = parked.sock;
    parked.report_at = parked.report;
    if (env_int(PSPAWN_ENV_PARENT, &launcher))
        parked.launcher = (pid_t)launcher;
    record_exec(argv, argc);
    parked.task_cgroup = env_int(PSPAWN_ENV_TASK_CGROUP, &fd) ? (int)fd : -1;
    if (parked.task_cgroup >= 0)
        fcntl(parked.task_cgroup, F_SETFD, FD_CLOEXEC);
    const char *preload = getenv(PSPAWN_ENV_PRELOAD_LIBS);
    parked.preload = preload && *preload ? strdup(preload) : NULL;
    const char *python = getenv(PSPAWN_ENV_PYTHON);
    parked.python = python ? strdup(python) : NULL;
    parked.pip_wanted = getenv(PSPAWN_ENV_PIP) != NULL;
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
    restore_and_scrub_env(envp);
    int found = 0;
    dl_iterate_phdr(find_libc_start, &found);
    if (!found) {
        if (parked.sock >= 0)
            zygote_send_ready(parked.sock, ZYGOTE_NO_LIBC_START, 0);
        _exit(0);
    }
}

static int park_main(int argc, char **argv, char **envp)
{
    if (zygote_starter_gone())
        zygote_exit(0);
    zygote_preload();
    /* A Python interpreter parks later, inside itself (python-embed.c,
     * python.c). */
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
