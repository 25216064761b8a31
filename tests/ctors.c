/*
 * ctors - a program linked against ctorlib (whose constructor starts a
 * shell, lowers RLIMIT_CORE or sets a umask: see ctorlib.c); its own
 * constructor starts a shell too with PSPAWN_TEST_CTOR=spawn.  It prints
 * one line:
 *   "ctors ARG1 system=S,S core=CUR:MAX umask=OOO pgid=P forked=F"
 * S: the constructors' system() statuses; F: 1 when libpspawn's proxy is
 * in its memory (a zygote's task), 0 when it was exec'd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

extern int ctorlib_system_status;
static int own_system_status = -1;

__attribute__((constructor)) static void own_init(void)
{
    const char *what = getenv("PSPAWN_TEST_CTOR");

    if (what && strstr(what, "spawn"))
        own_system_status = system("exit 0");
}

static int proxy_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    int found = 0;

    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "libpspawn-proxy"))
            found = 1;
    if (f)
        fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    struct rlimit rl;
    mode_t m = umask(0);

    getrlimit(RLIMIT_CORE, &rl);
    printf("ctors %s system=%d,%d core=%lld:%lld umask=%03o pgid=%d forked=%d\n",
           argc > 1 ? argv[1] : "-", ctorlib_system_status, own_system_status,
           rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
           rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max,
           (unsigned)m, (int)getpgrp(), proxy_mapped());
    return 0;
}
