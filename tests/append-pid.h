/*
 * append-pid.h - for the programs the fallback tests launch (threaded,
 * timers): append "PID\n" to FILE with one write(), so that a test can
 * count how many times, and as which pid, the program ran.
 */
#ifndef PSPAWN_TESTS_APPEND_PID_H
#define PSPAWN_TESTS_APPEND_PID_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 0, or -1 if FILE could not be written. */
static int append_pid(const char *file)
{
    char line[32];
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    int ok;

    snprintf(line, sizeof line, "%ld\n", (long)getpid());
    ok = fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line);
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

#endif
