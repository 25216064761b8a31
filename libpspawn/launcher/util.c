#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

uint64_t pspawn_sigset_to_u64(const sigset_t *s)
{
    uint64_t m = 0;
    for (int sig = 1; sig <= 64; sig++)
        if (sigismember(s, sig) == 1)
            m |= UINT64_C(1) << (sig - 1);
    return m;
}

int pspawn_env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

double pspawn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
