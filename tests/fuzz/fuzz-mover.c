/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What root's mover reads of a shim's request (spank/mover-request.c):
 * any bytes, as any holder of a task's end of the socket pair could send.
 * The input's first byte picks the token the mover holds (one of two),
 * the rest is the message.
 *
 * Invariants: 0 only for a message of exactly the request's size, with
 * its magic and the mover's token, and then the pid is the message's;
 * EPERM only for such a message with another token; EPROTO otherwise.
 */
#include <errno.h>

#include "fuzz.h"
#include "protocol.h"
#include "pspawn_cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char tokens[2][PSPAWN_MOVER_TOKEN] = { "0123456789abcdef0123456789abcdef", "" };
    const char *token = tokens[size && (data[0] & 1)];
    const uint8_t *msg = size ? data + 1 : data;
    size_t len = size ? size - 1 : 0;
    /* exactly sized, so that a read past the message is an ASan report */
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, msg, len);
    pid_t pid = -12345;
    int rc = pspawn_mover_decode(copy, len, token, &pid);
    struct pspawn_mover_req q;
    int shaped = len == sizeof q;
    if (shaped)
        memcpy(&q, copy, sizeof q);
    int magic = shaped && q.magic == PSPAWN_MOVER_MAGIC;
    int same = magic && memcmp(q.token, token, PSPAWN_MOVER_TOKEN) == 0;
    FUZZ_CHECK(rc == 0 || rc == EPERM || rc == EPROTO, "rc %d", rc);
    FUZZ_CHECK((rc == 0) == same, "rc %d for a %s message", rc, same ? "good" : "bad");
    FUZZ_CHECK((rc == EPERM) == (magic && !same), "rc %d, magic %d, token %s", rc, magic,
               same ? "ours" : "other");
    FUZZ_CHECK(rc != 0 || pid == (pid_t)q.pid, "pid %d, message's %d", (int)pid, rc ? 0 : (int)q.pid);
    FUZZ_CHECK(rc == 0 || pid == -12345, "pid set on refusal (%d)", (int)pid);
    free(copy);
    return 0;
}
