/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse=job: what the job's state (root's files in /run/pspawn/job_ID)
 * and its zygote manager's answer say, read in one place, as text
 * (pspawn_jobzygote.h).  Root acts on what these return: a key names the
 * zygote it signals at the job's end, and the user it must belong to.
 * Fuzzed by tests/fuzz/fuzz-jobstate.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pspawn_jobzygote.h"

/* Whether S starts with exactly N lowercase hex digits, then END. */
static int hex_run(const char *s, size_t n, char end)
{
    return strspn(s, "0123456789abcdef") == n && s[n] == end;
}

/* A decimal number of at most 10 digits, then END; its end in *NEXT. */
static int number(const char *s, char end, unsigned long *v, const char **next)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 10 || s[n] != end || (n > 1 && s[0] == '0'))
        return -1;
    *v = strtoul(s, NULL, 10);
    *next = s + n + 1;
    return *v <= 0xffffffffUL ? 0 : -1;
}

int pspawn_job_key_parse(const char *key, uid_t *uid, uint32_t *jobid)
{
    unsigned long u, j;
    const char *p;
    if (strncmp(key, "job.", 4) != 0 || number(key + 4, '.', &u, &p) < 0 ||
        number(p, '.', &j, &p) < 0 || !hex_run(p, 16, '.') || !hex_run(p + 17, 16, '\0'))
        return -1;
    *uid = (uid_t)u;
    *jobid = (uint32_t)j;
    return 0;
}

int pspawn_job_entry_parse(const char *text, char *key, size_t len, uid_t *uid)
{
    size_t n = strcspn(text, "\n");
    uint32_t jobid;
    if (n >= len)
        return -1;
    memcpy(key, text, n);
    key[n] = '\0';
    return pspawn_job_key_parse(key, uid, &jobid);
}

int pspawn_job_secret_parse(const char *text, char nonce[17], char token[33])
{
    if (!hex_run(text, 16, ' ') || !hex_run(text + 17, 32, '\n'))
        return -1;
    snprintf(nonce, 17, "%.16s", text);
    snprintf(token, 33, "%.32s", text + 17);
    return 0;
}

int pspawn_job_answer_parse(const char *text, char *key, size_t keylen, char *token,
                            size_t toklen, char *how, size_t howlen, const char **why)
{
    char k[160], t[64], h[16];
    uid_t uid;
    uint32_t jobid;
    *why = text;
    if (strncmp(text, "no ", 3) == 0) {
        *why = text + 3;
        return -1;
    }
    if (strncmp(text, "ok ", 3) != 0 || sscanf(text + 3, "%159s %63s %15s", k, t, h) != 3 ||
        strlen(k) >= keylen || strlen(t) >= toklen || strlen(h) >= howlen ||
        pspawn_job_key_parse(k, &uid, &jobid) < 0 || !hex_run(t, 32, '\0'))
        return -1;
    snprintf(key, keylen, "%s", k);
    snprintf(token, toklen, "%s", t);
    snprintf(how, howlen, "%s", h);
    return 0;
}
