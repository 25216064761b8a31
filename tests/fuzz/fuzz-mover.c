/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What root's mover reads of a shim's request and report
 * (spank/mover-request.c): any bytes, as any holder of a task's end of the
 * socket pair could send.  The input's first byte picks the token the
 * mover holds (one of two), the rest is the message.
 *
 * Invariants: 0 only for a message of exactly the request's size, with
 * its magic and the mover's token, and then the pid is the message's;
 * EPERM only for such a message with another token; EPROTO otherwise.
 * The same for a report, whose values must be in range when taken; and
 * the step's line made from it (slurmd's log, the user's stderr) is one
 * line, its reason quoted with nothing that ends the quote.
 */
#include <errno.h>

#include "fuzz.h"
#include "protocol.h"
#include "pspawn_cgroup.h"
#include "tally.h"

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

    struct pspawn_mover_report r;
    rc = pspawn_report_decode(copy, len, token, &r);
    struct pspawn_mover_report raw;
    int rshaped = len == sizeof raw;
    if (rshaped)
        memcpy(&raw, copy, sizeof raw);
    int rmagic = rshaped && raw.magic == PSPAWN_REPORT_MAGIC;
    FUZZ_CHECK(rc == 0 || rc == EPERM || rc == EPROTO, "report rc %d", rc);
    FUZZ_CHECK(rc != 0 || (rmagic && memcmp(raw.token, token, PSPAWN_MOVER_TOKEN) == 0),
               "a report taken without its magic or the token");
    FUZZ_CHECK(rc != EPERM || rmagic, "EPERM for what is not a report");
    if (rc == 0) {
        FUZZ_CHECK((r.forked == 0 || r.forked == 1) && (r.verbose == 0 || r.verbose == 1) &&
                   (!r.forked || r.zygote == PSPAWN_ZYGOTE_NEW || r.zygote == PSPAWN_ZYGOTE_JOB) &&
                   r.zygote_start_ms >= 0 && memchr(r.why, 0, sizeof r.why) &&
                   r.objects >= 0 && r.objects <= 0x7fff && (r.python == 0 || r.python == 1),
                   "a report taken with values out of range");
        struct pspawn_tally t;
        char line[640];
        pspawn_tally_init(&t, 2);
        if (r.forked)
            pspawn_tally_forked(&t, r.zygote, r.zygote_start_ms);
        else
            pspawn_tally_exec(&t, 1, r.why);
        pspawn_tally_format(&t, "c1", "step=1.0", line, sizeof line);
        const char *why = strstr(line, " why=\"");
        size_t n = strlen(line);
        FUZZ_CHECK(!strchr(line, '\n') && why && n > 0 && line[n - 1] == '"' &&
                   !memchr(why + 6, '"', (size_t)(line + n - 1 - (why + 6))),
                   "the step's line is not one line with its reason quoted: %s", line);
    }
    free(copy);
    return 0;
}
