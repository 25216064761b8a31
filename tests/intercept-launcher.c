/*
 * A launcher of the kinds libpspawn-intercept.so must not change
 * (tests/intercept.sh runs it plain and under pspawn --intercept and
 * compares): it starts a program N times by fork+execv, vfork+execve,
 * fork+execveat (a directory fd and the name), fork+fexecve, posix_spawn,
 * posix_spawnp, system, popen or from 4 threads, each with
 * INTERCEPT_TEST_VAR=i, /dev/null inherited at fd 5 and a close-on-exec
 * fd 6, and prints how each ended (exit code, signal, or the errno of a
 * failed exec).  At the end it checks, with waitpid(-1), that it has no
 * child it did not start (a zygote would be one).
 *
 *   intercept-launcher MODE N PROG [ARGS...]
 *   intercept-launcher sigpid|siggroup|kill9 PROG
 *   intercept-launcher waits PROG
 *
 * waits: every call of the wait family on children that exit, are
 * killed, stop and continue, or are not there (ECHILD), with PROG
 * (intercept-task) exec'd or a fork alone, printing what each call
 * returned: tests/intercept-priority.sh compares it with and without the
 * interception library's wait wrappers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char **env_for(int i)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    for (size_t k = 0; k < n; k++)
        env[k] = environ[k];
    if (asprintf(&env[n], "INTERCEPT_TEST_VAR=%d", i) < 0)
        exit(3);
    return env;
}

/* The variable env_for added is its last entry. */
static void free_env(char **env)
{
    size_t n = 0;
    while (env[n])
        n++;
    free(env[n - 1]);
    free(env);
}

static void report(int i, int st)
{
    if (WIFEXITED(st))
        printf("launch %d: exit %d\n", i, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("launch %d: signal %d\n", i, WTERMSIG(st));
    fflush(stdout);
}

static void report_error(int i, int err)
{
    printf("launch %d: error %s\n", i, strerror(err));
    fflush(stdout);
}

static void wait_for(int i, pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            printf("launch %d: waitpid: %s\n", i, strerror(errno));
            return;
        }
    report(i, st);
}

/* fork + execve, execveat (a directory fd and the name) or fexecve (a
 * file fd), as HOW says; the exec's error back through a close-on-exec
 * pipe. */
enum exec_how { BY_PATH, BY_DIRFD, BY_FILEFD };

static pid_t by_fork(char **argv, char **env, int *err, enum exec_how how)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : dir;
    if (slash)
        *slash = 0;
    int fd = how == BY_FILEFD ? open(argv[0], O_RDONLY | O_CLOEXEC)
             : how == BY_DIRFD ? open(slash ? (dir[0] ? dir : "/") : ".",
                                      O_PATH | O_DIRECTORY | O_CLOEXEC)
                               : 0;
    int p[2];
    if (fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
        *err = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (how == BY_FILEFD)
            fexecve(fd, argv, env);
        else if (how == BY_DIRFD)
            execveat(fd, name, argv, env, 0);
        else
            execve(argv[0], argv, env);
        int e = errno;
        if (write(p[1], &e, sizeof e) < 0)
            _exit(126);
        _exit(127);
    }
    close(p[1]);
    if (how != BY_PATH)
        close(fd);
    *err = 0;
    if (read(p[0], err, sizeof *err) == (ssize_t)sizeof *err) {
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(p[0]);
    return pid;
}

static pid_t by_vfork(char **argv, char **env, int *err)
{
    static volatile int child_errno;
    child_errno = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        execve(argv[0], argv, env);
        child_errno = errno;
        _exit(127);
    }
    *err = child_errno;
    if (*err) {
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static pid_t by_spawn(char **argv, char **env, int *err, int search)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    pid_t pid;
    *err = search ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, env)
                  : posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    return *err ? -1 : pid;
}

static void launch(const char *mode, int i, char **argv)
{
    char **env = env_for(i);
    int err = 0;
    pid_t pid = -1;
    if (!strcmp(mode, "fork") || !strcmp(mode, "threads"))
        pid = by_fork(argv, env, &err, BY_PATH);
    else if (!strcmp(mode, "vfork"))
        pid = by_vfork(argv, env, &err);
    else if (!strcmp(mode, "execveat") || !strcmp(mode, "fexecve"))
        pid = by_fork(argv, env, &err, !strcmp(mode, "fexecve") ? BY_FILEFD : BY_DIRFD);
    else if (!strcmp(mode, "spawn") || !strcmp(mode, "spawnp"))
        pid = by_spawn(argv, env, &err, !strcmp(mode, "spawnp"));
    free_env(env);
    if (pid < 0)
        report_error(i, err);
    else
        wait_for(i, pid);
}

/* ARGV as one shell command (the tests' words need no quoting). */
static char *command(char **argv)
{
    size_t len = 1;
    for (int k = 0; argv[k]; k++)
        len += strlen(argv[k]) + 1;
    char *cmd = calloc(1, len);
    for (int k = 0; argv[k]; k++) {
        strcat(cmd, argv[k]);
        if (argv[k + 1])
            strcat(cmd, " ");
    }
    return cmd;
}

static void by_shell(const char *mode, int n, char **argv)
{
    char *cmd = command(argv);
    for (int i = 0; i < n; i++) {
        char var[32];
        snprintf(var, sizeof var, "%d", i);
        setenv("INTERCEPT_TEST_VAR", var, 1);
        if (!strcmp(mode, "system")) {
            report(i, system(cmd));
            continue;
        }
        FILE *f = popen(cmd, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f))
            printf("popen %d: %s", i, line);
        report(i, f ? pclose(f) : -1);
    }
    unsetenv("INTERCEPT_TEST_VAR");
    free(cmd);
}

struct thread_arg {
    int first, n;
    char **argv;
};

static void *launch_thread(void *p)
{
    struct thread_arg *t = p;
    for (int i = t->first; i < t->first + t->n; i++)
        launch("threads", i, t->argv);
    return NULL;
}

/* Starts PROG WHAT [ARG] with fd 3 a pipe it says it is ready on (its
 * pid); in its own process group if OWN_GROUP. */
static pid_t start_signalled(char *prog, char *what, char *arg, int own_group, pid_t *task)
{
    int p[2];
    if (pipe(p) < 0)
        exit(3);
    pid_t pid = fork();
    if (pid == 0) {
        if (own_group)
            setpgid(0, 0);
        /* The read end first: it may be fd 3 itself (no fd inherited
         * below, as outside make, whose jobserver holds 3 and 4). */
        close(p[0]);
        if (p[1] != 3) {
            dup2(p[1], 3);
            close(p[1]);
        }
        char *argv[] = { prog, what, arg, NULL };
        execv(prog, argv);
        _exit(127);
    }
    close(p[1]);
    char buf[32] = "";
    ssize_t got = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    *task = got > 0 ? atoi(buf) : -1;
    return pid;
}

static int signals(const char *mode, char *prog)
{
    pid_t task;
    if (!strcmp(mode, "sigpid")) {
        pid_t pid = start_signalled(prog, "term", NULL, 0, &task);
        kill(pid, SIGTERM);
        wait_for(0, pid);
    } else if (!strcmp(mode, "siggroup")) {
        pid_t pid = start_signalled(prog, "usr1", "500", 1, &task);
        kill(-pid, SIGUSR1);
        wait_for(0, pid);
    } else {
        pid_t pid = start_signalled(prog, "sleep", "5000", 0, &task);
        kill(pid, SIGKILL);
        wait_for(0, pid);
        int gone = 0;
        for (int k = 0; k < 300 && !gone; k++) {
            gone = task > 0 && kill(task, 0) < 0 && errno == ESRCH;
            if (!gone)
                usleep(10000);
        }
        printf("task %s\n", gone ? "gone" : "still running");
    }
    return 0;
}

/* A child that execs PROG WHAT ARG, or, if PROG is NULL, raises ARG
 * (SIGSTOP: stops, then waits, continued, to be killed: an exit could
 * come before the wait for its continuing). */
static pid_t child(char *prog, char *what, char *arg)
{
    pid_t pid = fork();
    if (pid == 0 && prog) {
        char *argv[] = { prog, what, arg, NULL };
        execv(prog, argv);
        _exit(127);
    }
    if (pid == 0) {
        raise(atoi(arg));
        for (;;)
            pause();
    }
    return pid;
}

/* How a wait returned: "CALL: pid|-1 errno|0 (nothing)" and the status. */
static void said(const char *call, pid_t got, pid_t want, int st, int err)
{
    if (got < 0) {
        printf("%s: -1 %s\n", call, strerror(err));
    } else if (got == 0) {
        printf("%s: 0\n", call);
    } else {
        printf("%s: %s", call, got == want ? "its pid" : "another pid");
        if (WIFEXITED(st))
            printf(" exit %d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
            printf(" signal %d", WTERMSIG(st));
        else if (WIFSTOPPED(st))
            printf(" stopped %d", WSTOPSIG(st));
        else if (WIFCONTINUED(st))
            printf(" continued");
        printf("\n");
    }
}

static int waits(char *prog)
{
    int st = -1;
    struct rusage ru;
    pid_t pid = child(prog, "exit", "3");
    errno = 4321;       /* a wait that succeeds leaves errno as it was */
    pid_t got = waitpid(pid, &st, 0);
    said("waitpid", got, pid, st, errno);
    printf("errno after: %d\n", errno);
    pid = child(prog, "raise", "15");
    got = wait(&st);
    said("wait", got, pid, st, errno);
    pid = child(NULL, NULL, "19");
    got = wait3(&st, WUNTRACED, &ru);
    said("wait3 WUNTRACED", got, pid, st, errno);
    kill(pid, SIGCONT);
    got = wait4(pid, &st, WCONTINUED, &ru);
    said("wait4 WCONTINUED", got, pid, st, errno);
    kill(pid, SIGTERM);
    memset(&ru, 0, sizeof ru);
    got = wait4(pid, &st, 0, &ru);
    said("wait4", got, pid, st, errno);
    printf("rusage filled: %d\n", ru.ru_maxrss > 0);
    pid = child(prog, "exit", "7");
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
    printf("waitid WNOWAIT: %d code %d status %d pid %s\n", r, si.si_code, si.si_status,
           si.si_pid == pid ? "its" : "another");
    memset(&si, 0, sizeof si);
    r = waitid(P_PID, (id_t)pid, &si, WEXITED);
    printf("waitid: %d code %d status %d pid %s\n", r, si.si_code, si.si_status,
           si.si_pid == pid ? "its" : "another");
    pid = child(prog, "raise", "9");
    got = waitpid(pid, NULL, WNOHANG);
    got = got == 0 ? waitpid(pid, NULL, 0) : got;   /* no status asked for */
    printf("waitpid NULL: %s\n", got == pid ? "its pid" : "another pid");
    /* None left. */
    errno = 0;
    got = waitpid(-1, &st, 0);
    said("waitpid -1", got, 0, st, errno);
    errno = 0;
    got = wait(NULL);
    said("wait NULL", got, 0, 0, errno);
    errno = 0;
    got = wait3(&st, WNOHANG, NULL);
    said("wait3", got, 0, st, errno);
    errno = 0;
    got = wait4(-1, &st, 0, &ru);
    said("wait4", got, 0, st, errno);
    errno = 0;
    r = waitid(P_ALL, 0, &si, WEXITED);
    printf("waitid none: %d %s\n", r, strerror(errno));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "waits"))
        return waits(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argv[1];
    if (!strcmp(mode, "sigpid") || !strcmp(mode, "siggroup") || !strcmp(mode, "kill9"))
        return signals(mode, argv[2]);
    if (argc < 4)
        return 2;
    int n = atoi(argv[2]);
    char **targv = argv + 3;
    /* What every child gets: /dev/null at fd 5, and fd 6 only until exec. */
    int fd = open("/dev/null", O_RDONLY);
    if (dup2(fd, 5) < 0 || dup3(fd, 6, O_CLOEXEC) < 0)
        return 3;
    close(fd);
    if (!strcmp(mode, "system") || !strcmp(mode, "popen")) {
        by_shell(mode, n, targv);
    } else if (!strcmp(mode, "threads")) {
        pthread_t th[4];
        struct thread_arg ta[4];
        for (int k = 0; k < 4; k++) {
            ta[k] = (struct thread_arg){ k * (n / 4), n / 4, targv };
            pthread_create(&th[k], NULL, launch_thread, &ta[k]);
        }
        for (int k = 0; k < 4; k++)
            pthread_join(th[k], NULL);
    } else if (!strcmp(mode, "forked")) {
        /* The launcher's own fork, without exec, launches too. */
        pid_t half = fork();
        for (int i = 0; i < n; i++)
            launch("fork", half == 0 ? n + i : i, targv);
        if (half == 0)
            _exit(0);
        waitpid(half, NULL, 0);
    } else {
        for (int i = 0; i < n; i++)
            launch(mode, i, targv);
    }
    usleep(100000);
    int st;
    pid_t other = waitpid(-1, &st, WNOHANG);
    printf(other < 0 && errno == ECHILD ? "no other child\n" : "another child: %d\n", (int)other);
    return 0;
}
