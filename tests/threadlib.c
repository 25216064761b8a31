/*
 * libthreadlib - a library whose constructor starts a thread: a zygote
 * must never load it (tests/preload.sh).
 */
#include <pthread.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
    (void)arg;
    sleep(60);
    return NULL;
}

__attribute__((constructor)) static void threadlib_init(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) == 0)
        pthread_detach(t);
}

int pspawn_tiny_value(void)
{
    return 7;
}
