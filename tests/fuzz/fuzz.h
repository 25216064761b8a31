/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the libFuzzer targets share (header only): reading an input front
 * to back, a failed invariant that libFuzzer records as a crash, and the
 * check that a decoder kept or closed no fd it should not have.
 *
 * An input reads as zero past its end, so every prefix of a good input is
 * an input too, and the fuzzer can grow inputs from nothing.
 */
#ifndef TESTS_FUZZ_H
#define TESTS_FUZZ_H

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct fuzz_input {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t fz_u8(struct fuzz_input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static inline uint32_t fz_u32(struct fuzz_input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fz_u8(in) << (8 * i);
    return v;
}

/* Up to WANT bytes: *OUT points at them; returns how many there were. */
static inline size_t fz_bytes(struct fuzz_input *in, size_t want, const uint8_t **out)
{
    size_t k = want < in->n ? want : in->n;
    *out = in->p;
    in->p += k;
    in->n -= k;
    return k;
}

/* A broken invariant: say which, and abort so that libFuzzer keeps the
 * input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                        \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* The fds a decoder may touch lie below FUZZ_FD_LIMIT (the targets raise
 * RLIMIT_NOFILE no higher). */
#define FUZZ_FD_LIMIT 1024

/* RLIMIT_NOFILE down to FUZZ_FD_LIMIT (each target's LLVMFuzzerInitialize). */
static inline void fuzz_limit_fds(void)
{
    struct rlimit rl = { FUZZ_FD_LIMIT, FUZZ_FD_LIMIT };
    setrlimit(RLIMIT_NOFILE, &rl);
}

struct fuzz_fds {
    unsigned char open[FUZZ_FD_LIMIT];
};

/* From /proc/self/fd: a few system calls, where probing every number
 * would take a thousand per input. */
static inline void fuzz_fds_snapshot(struct fuzz_fds *s)
{
    memset(s->open, 0, sizeof s->open);
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        for (int fd = 0; fd < FUZZ_FD_LIMIT; fd++)
            s->open[fd] = fcntl(fd, F_GETFD) >= 0;
        return;
    }
    int own = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            int fd = atoi(e->d_name);
            if (fd != own && fd >= 0 && fd < FUZZ_FD_LIMIT)
                s->open[fd] = 1;
        }
    closedir(d);
}

/* Every fd open before is still open, and no other: a leaked fd per
 * message is a zygote that runs out of fds after enough stand-ins. */
static inline void fuzz_fds_same(const struct fuzz_fds *before, const char *what)
{
    struct fuzz_fds now;
    fuzz_fds_snapshot(&now);
    for (int fd = 0; fd < FUZZ_FD_LIMIT; fd++) {
        char link[64], target[256] = "?";
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        if (now.open[fd] != before->open[fd] && readlink(link, target, sizeof target - 1) < 0)
            strcpy(target, "?");
        FUZZ_CHECK(now.open[fd] == before->open[fd], "%s: fd %d %s (%s)", what, fd,
                   now.open[fd] ? "left open (leaked)" : "closed, but it was not the decoder's", target);
    }
}

#endif
