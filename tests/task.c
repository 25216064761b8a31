/*
 * task - the small program the tests launch many times.
 *
 *   task                       exit 0 at once (soak)
 *   task print [ARG...]        print one line: version, rank, size, args
 *   task append FILE [ARG...]  append "RANK PID\n" to FILE with one write()
 *                              (RANK from PSPAWN_RANK, "-" if unset), then
 *                              print as "print" does
 *   task where FILE            append "RANK PID PPID CPUS\n" to FILE: its parent
 *                              and its CPU affinity (a bit mask in hex) at main
 *   task exit CODE             exit with CODE
 *   task raise SIGNUM          kill itself with signal SIGNUM
 *   task wait                  pause() until a signal ends it
 *   task ready-wait            write "r" to stdout (so past exec), then pause()
 *   task hold MB SECONDS [CODE] touch MB megabytes of fresh memory, then
 *                              sleep SECONDS and exit CODE (default 0;
 *                              accounting tests)
 *   task signals FILE          append "RANK ready" to FILE, then record
 *                              every SIGINT, SIGTERM, SIGHUP, SIGUSR1 and
 *                              SIGUSR2 received as "RANK SIGNAME"; exit 0
 *                              half a second after the first one (so that
 *                              a duplicate would still be recorded)
 *
 * Built three times: tests/task (dynamic), tests/task-static (-static) and
 * tests/task-v2 (TASK_VERSION=2, to replace the binary on disk).  Built
 * without sanitizers: it is the program launched, not the launcher.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef TASK_VERSION
#define TASK_VERSION 1
#endif

static const char *rank(void)
{
    const char *r = getenv("PSPAWN_RANK");
    return r ? r : "-";
}

static int append_line(const char *file, const char *line)
{
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    size_t len = strlen(line);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, line, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static void print_line(int argc, char **argv, int first)
{
    const char *size = getenv("PSPAWN_SIZE"), *local = getenv("PSPAWN_LOCAL_RANK");

    printf("task version=%d rank=%s size=%s local=%s args=", TASK_VERSION,
           rank(), size ? size : "-", local ? local : "-");
    for (int i = first; i < argc; i++)
        printf("%s%s", i > first ? "," : "", argv[i]);
    putchar('\n');
}

static int log_fd = -1;
static char log_prefix[32];
static volatile sig_atomic_t signals_seen;

static void record(int sig)
{
    const char *name;
    char line[64];
    size_t len;

    switch (sig) {
    case SIGINT: name = "INT"; break;
    case SIGTERM: name = "TERM"; break;
    case SIGHUP: name = "HUP"; break;
    case SIGUSR1: name = "USR1"; break;
    case SIGUSR2: name = "USR2"; break;
    default: name = "OTHER"; break;
    }
    len = strlen(log_prefix);
    memcpy(line, log_prefix, len);
    memcpy(line + len, name, strlen(name));
    len += strlen(name);
    line[len++] = '\n';
    (void)!write(log_fd, line, len);
    signals_seen++;
}

static int record_signals(const char *file)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
    struct sigaction sa;
    struct timespec half = { 0, 500000000 };
    char ready[64];

    log_fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return 2;
    snprintf(log_prefix, sizeof log_prefix, "%s ", rank());
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaddset(&sa.sa_mask, sigs[i]);
        sigaction(sigs[i], &sa, NULL);
    }
    snprintf(ready, sizeof ready, "%sready\n", log_prefix);
    if (write(log_fd, ready, strlen(ready)) < 0)
        return 2;
    while (!signals_seen)
        pause();
    while (nanosleep(&half, &half) != 0 && errno == EINTR)
        ;
    return 0;
}

int main(int argc, char **argv)
{
    char line[64];

    if (argc < 2)
        return 0;
    if (strcmp(argv[1], "print") == 0) {
        print_line(argc, argv, 2);
        return 0;
    }
    if (strcmp(argv[1], "append") == 0 && argc >= 3) {
        snprintf(line, sizeof line, "%s %ld\n", rank(), (long)getpid());
        if (append_line(argv[2], line) != 0)
            return 2;
        print_line(argc, argv, 3);
        return 0;
    }
    if (strcmp(argv[1], "where") == 0 && argc == 3) {
        cpu_set_t cs;
        unsigned long mask = 0;
        if (sched_getaffinity(0, sizeof cs, &cs) != 0)
            return 2;
        for (int c = 0; c < 64; c++)
            if (CPU_ISSET(c, &cs))
                mask |= 1UL << c;
        char where[128];
        snprintf(where, sizeof where, "%s %ld %ld %lx\n", rank(), (long)getpid(), (long)getppid(),
                 mask);
        return append_line(argv[2], where) != 0 ? 2 : 0;
    }
    if (strcmp(argv[1], "exit") == 0 && argc == 3)
        return atoi(argv[2]);
    if (strcmp(argv[1], "signals") == 0 && argc == 3)
        return record_signals(argv[2]);
    if (strcmp(argv[1], "raise") == 0 && argc == 3) {
        signal(atoi(argv[2]), SIG_DFL);
        raise(atoi(argv[2]));
        return 3;
    }
    if (strcmp(argv[1], "hold") == 0 && (argc == 4 || argc == 5)) {
        size_t mb = (size_t)atol(argv[2]);
        char *p = malloc(mb << 20);
        if (mb && !p)
            return 1;
        for (size_t i = 0; i < (mb << 20); i += 4096)
            p[i] = 1;
        sleep((unsigned)atoi(argv[3]));
        free(p);
        return argc == 5 ? atoi(argv[4]) : 0;
    }
    if (strcmp(argv[1], "wait") == 0 && argc == 2) {
        pause();
        return 0;
    }
    if (strcmp(argv[1], "ready-wait") == 0 && argc == 2) {
        /* In main, so past exec (and its change of credentials). */
        if (write(1, "r", 1) != 1)
            return 1;
        pause();
        return 0;
    }
    fprintf(stderr, "task: bad usage\n");
    return 2;
}
