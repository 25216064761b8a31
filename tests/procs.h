/*
 * procs.h - what the C tests ask of processes without libpspawn's code
 * (header only): a process's parent, and whether any child is left.
 */
#ifndef TESTS_PROCS_H
#define TESTS_PROCS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

/* PID's parent, from /proc/PID/stat; -1 if it cannot be read. */
__attribute__((unused))
static long parent_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    long ppid = -1;
    return p && sscanf(p, ") %*c %ld", &ppid) == 1 ? ppid : -1;
}

/* Reap whatever has exited: whether no child at all is left. */
__attribute__((unused))
static int no_child_left(void)
{
    int st;
    pid_t w;
    int left = 0;
    while ((w = waitpid(-1, &st, WNOHANG)) > 0)
        left++;
    return left == 0 && w == -1 && errno == ECHILD;
}

#endif
