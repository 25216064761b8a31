/*
 * lifelib - the library of tests/lifeprog, for the zygote-lifecycle tests
 * (tests/lifecycle.c, tests/lifecycle-standin.sh).  Its constructor runs
 * before the proxy's (the loader runs a program's libraries' constructors
 * before a preloaded library's) and does what PSPAWN_TEST_LIFE says
 * (comma-separated):
 *   slow=MS   create $PSPAWN_TEST_DIR/ctor.PID, then sleep MS milliseconds
 *             (a library that takes long to load)
 *   fds=N     open N fds on /dev/null, which a task keeps (an exec'd one
 *             runs the constructor itself and has them too)
 *   daemon=1  start a helper as daemons start: fork, setsid, fork again,
 *             and exec /bin/sh, which creates $PSPAWN_TEST_DIR/daemon.PID
 *             (it inherits the zygote's variables, but not as its child)
 * Built twice: liblifelib (version 1) and liblifelib2 (LIFELIB_VERSION=2),
 * to rename one over the other on disk.  Never instrumented.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef LIFELIB_VERSION
#define LIFELIB_VERSION 1
#endif

#define LIFELIB_MAX_FDS 4096

int lifelib_fds[LIFELIB_MAX_FDS];
int lifelib_nfds;

int lifelib_version(void)
{
    return LIFELIB_VERSION;
}

static long option(const char *name)
{
    const char *v = getenv("PSPAWN_TEST_LIFE");
    size_t len = strlen(name);

    while (v && *v) {
        if (strncmp(v, name, len) == 0 && v[len] == '=')
            return strtol(v + len + 1, NULL, 10);
        v = strchr(v, ',');
        if (v)
            v++;
    }
    return 0;
}

__attribute__((constructor)) static void lifelib_init(void)
{
    long ms = option("slow"), nfds = option("fds");
    const char *dir = getenv("PSPAWN_TEST_DIR");

    if (ms > 0 && dir) {
        char path[4096];
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        int fd;

        snprintf(path, sizeof path, "%s/ctor.%d", dir, (int)getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            close(fd);
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    if (option("daemon") && dir && fork() == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        execl("/bin/sh", "sh", "-c", ": >\"$PSPAWN_TEST_DIR/daemon.$$\"", (char *)NULL);
        _exit(127);
    }
    for (long i = 0; i < nfds && lifelib_nfds < LIFELIB_MAX_FDS; i++) {
        int fd = open("/dev/null", O_RDONLY);

        if (fd < 0)
            break;
        lifelib_fds[lifelib_nfds++] = fd;
    }
}
