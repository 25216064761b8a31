/*
 * threaded - a program whose constructor starts a thread, so its zygote
 * would have two threads at main() and must not be forked (fork copies
 * only the calling thread): libpspawn has to fall back to exec.
 *
 *   threaded [FILE]   append "PID\n" to FILE with one write(), then print
 *                     "threaded main ran"
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

__attribute__((constructor)) static void start_thread(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, idle_thread, NULL) == 0)
        pthread_detach(t);
}

int main(int argc, char **argv)
{
    if (argc >= 2) {
        char line[32];
        int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        snprintf(line, sizeof line, "%ld\n", (long)getpid());
        if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
            return 2;
        close(fd);
    }
    printf("threaded main ran\n");
    return 0;
}
