/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes seed inputs for fuzz-request, fuzz-recv and fuzz-standin from
 * requests made by the library's own encoder (launcher/encode.c), so that
 * the seeds follow the wire format as it is now.  Run by
 * `tests/fuzz/run --make-seeds` after a change of protocol.h; the files
 * go to DIR/TARGET/enc-NAME.
 *
 *   make-seeds DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-msg.h"
#include "internal.h"
#include "pspawn.h"

#define TOKEN "fuzz-token-0123456789abcdef"    /* fuzz-standin's zygote has it */

static const char *dir;

static void put(const char *target, const char *name, const void *a, size_t na, const void *b, size_t nb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/enc-%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || fclose(f)) {
        perror(path);
        exit(1);
    }
}

/* The fuzz-msg.h prefix of a request message of SIZE bytes with NFDS
 * passed fds after the request and go memfds (into P); its length. */
static size_t msg_prefix(uint8_t *p, uint32_t size, uint32_t nfds)
{
    size_t n = 0;
    p[n++] = FLAG_SEALED;
    p[n++] = sizeof(struct request_msg);
    struct request_msg msg = { PSPAWN_MAGIC, 1, size, nfds };
    memcpy(p + n, &msg, sizeof msg);
    n += sizeof msg;
    p[n++] = (uint8_t)(2 + nfds);
    p[n++] = FD_REQUEST;
    p[n++] = FD_GO;
    for (uint32_t i = 0; i < nfds; i++)
        p[n++] = i % 2 ? FD_PIPE : FD_NULL;
    p[n++] = (uint8_t)(size & 0xff);
    p[n++] = (uint8_t)(size >> 8);
    return n;
}

static void seed(const char *name, const pspawn_attr_t *attr, int k, char *const *argv, char *const *envp,
                 const unsigned char *cpus)
{
    struct call *c = calloc(1, sizeof *c);
    if (!c || pspawn_call_init(c, attr, envp) != 0) {
        fprintf(stderr, "make-seeds: %s: pspawn_call_init failed\n", name);
        exit(1);
    }
    struct encode_task t[PSPAWN_REQ_MAX];
    for (int j = 0; j < k; j++)
        t[j] = (struct encode_task){ argv, envp, cpus && j % 2 ? cpus : NULL };
    for (int standin = 0; standin < 2; standin++) {
        struct encoded_request r;
        int err = pspawn_encode_request(&r, c, t, standin ? 1 : k, 0, standin ? TOKEN : NULL);
        if (err) {
            fprintf(stderr, "make-seeds: %s: encode: %s\n", name, strerror(err));
            exit(1);
        }
        char *buf = malloc(r.size);
        if (!buf || pread(r.memfd, buf, r.size, 0) != (ssize_t)r.size || r.size > 0xffff) {
            fprintf(stderr, "make-seeds: %s: request of %zu bytes\n", name, r.size);
            exit(1);
        }
        uint8_t p[512];
        size_t n = msg_prefix(p, (uint32_t)r.size, (uint32_t)c->nfds);
        if (standin) {
            /* fuzz-standin: no fan-out, then two groups (CPU 0, CPU 1),
             * then the message. */
            uint8_t all[600] = { 0x00, 0x02, 0x01, 0x02 };
            char fwd[256];
            memcpy(all + 1, p, n);
            put("fuzz-standin", name, all, n + 1, buf, r.size);
            all[0] = 0x02;
            all[1] = 0x01;
            memcpy(all + 3, p, n);
            snprintf(fwd, sizeof fwd, "%s-groups", name);
            put("fuzz-standin", fwd, all, n + 3, buf, r.size);
        } else {
            uint8_t ctl[3] = { 0, 0, (uint8_t)c->nfds };    /* parked state: defaults */
            put("fuzz-request", name, ctl, sizeof ctl, buf, r.size);
            put("fuzz-recv", name, p, n, buf, r.size);
        }
        free(buf);
        pspawn_encoded_release(&r);
    }
    free(c);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-seeds DIR\n");
        return 2;
    }
    dir = argv[1];
    char *args1[] = { "/bin/true", NULL };
    char *env1[] = { "A=1", NULL };
    char *args2[] = { "prog", "--flag", "", "a b c", NULL };
    char *env2[] = { "PATH=/usr/bin:/bin", "HOME=/home/u", "EMPTY=", NULL };
    char *none[] = { NULL };
    seed("simple", NULL, 1, args1, env1, NULL);
    seed("no-env", NULL, 1, args1, none, NULL);

    pspawn_attr_t a;
    pspawn_attr_init(&a);
    pspawn_attr_setcwd(&a, "/tmp");
    pspawn_attr_setumask(&a, 077);
    pspawn_attr_addopen(&a, 1, "/dev/null", O_WRONLY, 0);
    pspawn_attr_adddup2(&a, 2, 5);
    pspawn_attr_addclose(&a, 7);
    struct rlimit rl = { 64, 128 };
    pspawn_attr_setrlimit(&a, RLIMIT_NOFILE, &rl);
    pspawn_attr_setsid(&a);
    seed("actions", &a, 2, args2, env2, NULL);
    pspawn_attr_destroy(&a);

    unsigned char cpus[PSPAWN_CPUSET_BYTES] = { 0x3 };
    pspawn_attr_init(&a);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pspawn_attr_setcpuset(&a, sizeof set, &set);
    pspawn_attr_setpgroup(&a, 0);
    seed("cpus", &a, 4, args2, env1, cpus);
    pspawn_attr_destroy(&a);

    int fd = open("/dev/null", O_RDONLY);
    pspawn_attr_init(&a);
    for (int i = 0; i < 6 && fd >= 0; i++)
        pspawn_attr_adddup2(&a, fd, 10 + i);
    seed("fds", &a, 3, args1, env2, NULL);
    pspawn_attr_destroy(&a);
    return 0;
}
