/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse=job's state and the manager's answer, as root reads them
 * (spank/pspawn_jobstate.c): a zygote's key (whose user root signals),
 * an entry's file, the job's secret, the manager's answer.  The input is
 * one text, read by each.
 *
 * Invariants: a key parses only in the form job.UID.JOBID.NONCE.HASH
 * (decimal numbers without a leading zero that fit 32 bits, 16 lowercase
 * hex digits each), and then its numbers are what it says; an entry is
 * its first line, parsed as a key, and never overruns its buffer (of any
 * size); a secret is 16 and 32 hex digits, copied whole; an answer "ok"
 * gives terminated key, token (32 hex) and how, which fit their buffers,
 * and anything else gives a WHY inside the text.
 */
#include <assert.h>

#include "fuzz.h"
#include "pspawn_jobzygote.h"

static void check_key(const char *text)
{
    uid_t uid = 7;
    uint32_t jobid = 7;
    if (pspawn_job_key_parse(text, &uid, &jobid) != 0)
        return;
    char again[160];
    int n = snprintf(again, sizeof again, "job.%u.%u.", (unsigned)uid, jobid);
    FUZZ_CHECK(n > 0 && strncmp(text, again, (size_t)n) == 0, "key \"%s\" read as %u.%u", text,
               (unsigned)uid, jobid);
    FUZZ_CHECK(strlen(text) == (size_t)n + 33 && text[n + 16] == '.' &&
                   strspn(text + n, "0123456789abcdef") == 16 &&
                   strspn(text + n + 17, "0123456789abcdef") == 16,
               "key \"%s\"", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    assert(text);
    memcpy(text, data, size);
    text[size] = 0;

    check_key(text);
    for (size_t len = 0; len < 200; len += len < 8 ? 1 : 37) {
        char *key = malloc(len ? len : 1);
        uid_t uid;
        assert(key);
        if (pspawn_job_entry_parse(text, key, len, &uid) == 0) {
            FUZZ_CHECK(memchr(key, 0, len) && strncmp(key, text, strlen(key)) == 0 &&
                           (text[strlen(key)] == '\n' || text[strlen(key)] == 0),
                       "entry \"%.200s\" gave \"%s\"", text, key);
            check_key(key);
        }
        free(key);
    }
    char nonce[17], token[33];
    if (pspawn_job_secret_parse(text, nonce, token) == 0)
        FUZZ_CHECK(strlen(nonce) == 16 && strlen(token) == 32 && !strncmp(text, nonce, 16) &&
                       !strncmp(text + 17, token, 32),
                   "secret \"%.60s\"", text);
    char key[160], tok[64], how[16];
    const char *why = NULL;
    if (pspawn_job_answer_parse(text, key, sizeof key, tok, sizeof tok, how, sizeof how, &why) == 0) {
        FUZZ_CHECK(!strncmp(text, "ok ", 3) && strlen(tok) == 32 && memchr(how, 0, sizeof how),
                   "answer \"%.200s\"", text);
        check_key(key);
    } else {
        FUZZ_CHECK(why >= text && why <= text + size, "why outside the answer");
    }
    free(text);
    return 0;
}
