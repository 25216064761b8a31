/*
 * lifeprog - the program of the zygote-lifecycle tests (tests/lifecycle.c,
 * tests/lifecycle-standin.sh), linked with lifelib.  Its main first creates
 * $PSPAWN_TEST_DIR/main.PID, if that is set: a zygote must never get there.
 *
 *   lifeprog                exit 0
 *   lifeprog version        print "version N": lifelib's
 *   lifeprog fds            exit 0 if every fd lifelib's constructor opened
 *                           is open, else 1
 *   lifeprog pgid FILE      append "PID PGID\n" to FILE with one write()
 *   lifeprog environ        exit 0 if /proc/self/environ holds no
 *                           "PSPAWN_ZYGOTE_" and has PSPAWN_TEST_DIR, else 1
 *   lifeprog sleep MS       sleep MS milliseconds, exit 0
 *
 * Built twice: tests/lifeprog (dynamic) and tests/lifeprog-static (with
 * lifelib in it), to swap one for the other on disk.  Never instrumented.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern int lifelib_fds[];
extern int lifelib_nfds;
int lifelib_version(void);

static int environ_clean(void)
{
    static char buf[1 << 20];
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    ssize_t n;
    int dir = 0;

    if (fd < 0)
        return 0;
    while (len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) > 0)
        len += (size_t)n;
    close(fd);
    if (memmem(buf, len, "PSPAWN_ZYGOTE_", 14))
        return 0;
    for (size_t i = 0; i < len; i += strnlen(buf + i, len - i) + 1)
        dir |= strncmp(buf + i, "PSPAWN_TEST_DIR=", 16) == 0;
    return dir;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("PSPAWN_TEST_DIR");

    if (dir) {
        char path[4096];
        int fd;

        snprintf(path, sizeof path, "%s/main.%d", dir, (int)getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            close(fd);
    }
    if (argc < 2)
        return 0;
    if (strcmp(argv[1], "version") == 0) {
        printf("version %d\n", lifelib_version());
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (strcmp(argv[1], "fds") == 0) {
        for (int i = 0; i < lifelib_nfds; i++)
            if (fcntl(lifelib_fds[i], F_GETFD) < 0) {
                fprintf(stderr, "lifeprog: fd %d (%d of %d) is closed\n", lifelib_fds[i], i + 1,
                        lifelib_nfds);
                return 1;
            }
        return 0;
    }
    if (strcmp(argv[1], "pgid") == 0 && argc == 3) {
        char line[64];
        int fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        int len = snprintf(line, sizeof line, "%d %d\n", (int)getpid(), (int)getpgrp());

        if (fd < 0 || write(fd, line, (size_t)len) != len)
            return 1;
        close(fd);
        return 0;
    }
    if (strcmp(argv[1], "environ") == 0)
        return environ_clean() ? 0 : 1;
    if (strcmp(argv[1], "sleep") == 0 && argc == 3) {
        long ms = strtol(argv[2], NULL, 10);
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) != 0)
            ;
        return 0;
    }
    fprintf(stderr, "lifeprog: unknown mode %s\n", argv[1]);
    return 2;
}
