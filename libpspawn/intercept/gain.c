/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether routing a program pays (gain.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gain.h"
#include "nolibc.h"

/* The entry of the program this process runs, if its launcher counted
 * its start (gain_note_exec). */
static struct route_program *self;

static uint64_t clock_us(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t gain_cpu_us(void)
{
    return clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

uint64_t gain_now_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

static uint32_t clamp_us(uint64_t us)
{
    return us == 0 ? 1 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* *AT = min(*AT, US), 0 meaning none yet. */
static void lower_to(uint32_t *at, uint32_t us)
{
    uint32_t old = __atomic_load_n(at, __ATOMIC_ACQUIRE);
    while ((old == 0 || us < old) &&
           !__atomic_compare_exchange_n(at, &old, us, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
}

void gain_note_exec(char *const envp[])
{
    struct stat st;
    if (!route_table)
        return;
    uint32_t us = clamp_us(gain_cpu_us());
    /* Every process's start, the launcher's first: this machine's
     * cheapest, which a routed one is guessed from. */
    lower_to(&route_table->exec_floor_us, us);
    if (stat("/proc/self/exe", &st) != 0)
        return;
    struct route_program *e = route_program_find(route_program_key(&st, envp));
    if (!(self = e) || __atomic_load_n(&e->verdict, __ATOMIC_ACQUIRE) != ROUTE_YES)
        return;
    /* The cheapest: a start slowed by a busy machine would make routing
     * look better than it is. */
    lower_to(&e->exec_us, us);
    __atomic_add_fetch(&e->execs, 1, __ATOMIC_ACQ_REL);
}


void gain_note_routed(uint64_t key, uint64_t us)
{
    struct route_program *e = route_program_find(key);
    if (!e)
        return;
    uint32_t v = clamp_us(us);
    lower_to(&e->routed_us, v);
    __atomic_add_fetch(&e->routed, 1, __ATOMIC_ACQ_REL);
    lower_to(&route_table->routed_floor_us, v);
}

static int python_interpreter(const char *path)
{
    return nl_prefix(nl_base(path), "python");
}

const char *gain_refusal(const struct route_program *e, const char *path, int all, char *buf,
                         size_t len)
{
    if (all || python_interpreter(path))
        return NULL;
    uint32_t exec_us = __atomic_load_n(&e->exec_us, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&e->execs, __ATOMIC_ACQUIRE) < GAIN_EXEC_SAMPLES || exec_us == 0)
        return "what its exec costs is not measured yet";
    /* Its own routed starts decide once there are enough of them: one
     * start slowed by a busy machine must not end its routing. */
    uint32_t routed_us = __atomic_load_n(&e->routed, __ATOMIC_ACQUIRE) >= GAIN_ROUTED_SAMPLES
                             ? __atomic_load_n(&e->routed_us, __ATOMIC_ACQUIRE) : 0;
    const char *how = "measured";
    /* The scope's cheapest routed start, where it cannot be one of ours */
    if (routed_us == 0 && __atomic_load_n(&e->routed, __ATOMIC_ACQUIRE) == 0) {
        routed_us = __atomic_load_n(&route_table->routed_floor_us, __ATOMIC_ACQUIRE);
        how = "another program's";
    }
    if (routed_us == 0) {
        uint32_t floor_us = __atomic_load_n(&route_table->exec_floor_us, __ATOMIC_ACQUIRE);
        routed_us = floor_us ? floor_us * GAIN_GUESS_PCT / 100 : GAIN_ROUTED_GUESS_US;
        how = "taken to be";
    }
    if ((uint64_t)exec_us * 100 > (uint64_t)routed_us * (100 + GAIN_MARGIN_PCT))
        return NULL;
    if (!buf)   /* the figures only where they are shown: snprintf touches pages */
        return "a fork does not beat its exec";
    snprintf(buf, len,
             "a fork does not beat its exec: an exec'd start %u.%03u ms, a routed one %s "
             "%u.%03u ms",
             exec_us / 1000, exec_us % 1000, how, routed_us / 1000, routed_us % 1000);
    return buf;
}

void gain_note_launch(void)
{
    if (self && !__atomic_load_n(&self->launches, __ATOMIC_RELAXED))
        __atomic_store_n(&self->launches, 1, __ATOMIC_RELEASE);
}

/* A run that ends through exit() (a zygote's tasks too: they have its
 * entry) is counted; one that dies or calls _exit is not. */
__attribute__((destructor)) static void gain_fini(void)
{
    if (self)
        __atomic_add_fetch(&self->ends, 1, __ATOMIC_ACQ_REL);
}

static int never_leaf(const char *path)
{
    /* Shells, make and env: a run of builtins, or with nothing to do,
     * says nothing of the next.  Writers of files in place: a parked
     * zygote's ETXTBSY is lifted only through the library (textbusy.c). */
    static const char *const launchers[] = {
        "sh", "dash", "bash", "zsh", "ksh", "mksh", "busybox", "make", "gmake", "env",
        "cp", "install", "dd", "tee", "truncate", NULL,
    };
    const char *base = nl_base(path);
    for (size_t i = 0; launchers[i]; i++)
        if (nl_equal(base, launchers[i]))
            return 1;
    return nl_prefix(base, "python") || nl_prefix(base, "perl") || nl_prefix(base, "ruby");
}

int gain_leaf(const struct route_program *e, const char *path)
{
    return __atomic_load_n(&e->ends, __ATOMIC_ACQUIRE) >= GAIN_LEAF_ENDS &&
           !__atomic_load_n(&e->launches, __ATOMIC_ACQUIRE) && !never_leaf(path);
}

/* Whether the LD_PRELOAD entry [P, P + N) is the interception library. */
static int is_us(const char *p, size_t n)
{
    static const char name[] = "libpspawn-intercept.so";
    size_t k = sizeof name - 1;
    return n >= k && nl_same(p + n - k, name, k) && (n == k || p[n - k - 1] == '/');
}

int gain_env_bare(char **out, char *buf, size_t len, char *const envp[], size_t envc)
{
    static const char var[] = "LD_PRELOAD=";
    size_t at = envc, o = 0;
    for (size_t i = 0; i < envc && at == envc; i++)
        if (nl_prefix(envp[i], var))
            at = i;
    if (at == envc || nl_len(envp[at]) >= len)
        return 0;
    nl_copy(buf, var, sizeof var - 1);
    size_t b = sizeof var - 1, kept = 0;
    int found = 0;
    /* ld.so takes spaces and colons between entries */
    for (const char *p = envp[at] + sizeof var - 1; *p;) {
        size_t n = nl_span_to(p, ':', ' ');
        if (n && is_us(p, n)) {
            found = 1;
        } else if (n) {
            if (kept++)
                buf[b++] = ':';
            nl_copy(buf + b, p, n);
            b += n;
        }
        p += n;
        if (*p)
            p++;
    }
    buf[b] = '\0';
    if (!found)
        return 0;
    for (size_t i = 0; i < envc; i++)
        if (i != at || kept)
            out[o++] = i == at ? buf : envp[i];
    out[o] = NULL;
    return 1;
}
