/*
 * once - a program that loads once: its constructor creates the file
 * $ONCE_MARKER and exits 3 if it is there already.  A sub-zygote exec'd
 * after its root (fan-out, subzygote=exec) fails to start with it.
 *
 *   once FILE      append "RANK PID\n" to FILE (RANK: PSPAWN_RANK)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void load_once(void)
{
    const char *marker = getenv("ONCE_MARKER");
    if (!marker)
        return;
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        _exit(3);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *rank = getenv("PSPAWN_RANK");
    char line[64];
    snprintf(line, sizeof line, "%s %ld\n", rank ? rank : "-", (long)getpid());
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ssize_t n = fd < 0 ? -1 : write(fd, line, strlen(line));
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(line) ? 0 : 2;
}
