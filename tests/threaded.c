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

#include "append-pid.h"

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
    if (argc >= 2 && append_pid(argv[1]) != 0)
        return 2;
    printf("threaded main ran\n");
    return 0;
}
