/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in zygote's hello, as a stand-in reads it (launcher/standin.c:
 * zygote_env_differs, included to reach it): the first standin_reply on
 * each connection, kind HELLO, followed by the "K=V" strings of the
 * environment the zygote was exec'd with, which the stand-in compares
 * with its own (a task whose loader variables differ is exec'd).
 *
 * Input: u8 bits (0: the step's options say preload=auto; 7: send our
 * own environment after the input's header, which must then agree), then
 * the message, sent whole on a real SOCK_SEQPACKET socket.
 *
 * Invariants: no crash, no undefined behaviour, no leak; the answer is
 * NULL (agree) or a terminated sentence; our own environment agrees.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "../../libpspawn/launcher/standin.c"

static char *own;       /* a hello of our own environment, after its header */
static size_t own_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char **env = pspawn_zygote_environ(NULL, environ, 0, 0);
    FUZZ_CHECK(env != NULL, "no environment");
    for (char **e = env; *e; e++)
        own_len += strlen(*e) + 1;
    own = malloc(own_len + 1);
    size_t at = 0;
    for (char **e = env; *e; e++) {
        memcpy(own + at, *e, strlen(*e) + 1);
        at += strlen(*e) + 1;
    }
    pspawn_strv_free(env);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = { data, size };
    struct fuzz_fds before;
    fuzz_fds_snapshot(&before);
    unsigned bits = fz_u8(&in);
    const uint8_t *msg;
    size_t n = fz_bytes(&in, in.n, &msg);
    int ours = (bits & 0x80) && n >= sizeof(struct standin_reply);
    char *buf = malloc((ours ? sizeof(struct standin_reply) + own_len : n) + 1);
    if (ours) {
        struct standin_reply h = { PSPAWN_MAGIC, STANDIN_HELLO, 0, 0 };
        memcpy(buf, &h, sizeof h);
        memcpy(buf + sizeof h, own, own_len);
        n = sizeof h + own_len;
    } else if (n) {
        memcpy(buf, msg, n);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        free(buf);
        return 0;
    }
    int sent = send(sv[0], buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n;
    close(sv[0]);
    /* (preload=auto adds the recorder to the zygote's LD_PRELOAD: ours
     * was made without it.) */
    struct pspawn_standin_client c = { .options = (bits & 1) && !ours ? "preload=auto" : "" };
    char why[256];
    memset(why, 'x', sizeof why);
    const char *r = zygote_env_differs(&c, sv[1], 0, why, sizeof why);
    FUZZ_CHECK(!r || (r[0] && (r != why || memchr(why, 0, sizeof why))), "an empty or unterminated answer");
    FUZZ_CHECK(!ours || !sent || !r, "our own environment differs: %s", r);
    close(sv[1]);
    free(buf);
    fuzz_fds_same(&before, "after the hello was read");
    return 0;
}
