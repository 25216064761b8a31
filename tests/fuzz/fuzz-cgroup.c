/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The /proc text that root's mover and the job's zygote manager decide
 * from (libpspawn/wire/cgroup.c): /proc/PID/cgroup of a process a user
 * controls, slurmstepd's own, and /proc/self/mountinfo.  The input is
 * three texts separated by NUL bytes: A, B and MOUNTINFO.
 *
 * Invariants:
 *  - pspawn_cg_moves(A, B, MOUNTINFO) gives at most PSPAWN_CG_MAX paths,
 *    each a terminated "<mount point>.../cgroup.procs" with no ".."
 *    component (where the mount points, the kernel's, have none);
 *  - pspawn_cg_job_extern(A) gives, for each hierarchy line of A that
 *    holds a "step_*" component, that path cut before its deepest such
 *    component, plus "/step_extern": text that pspawn_cg_job_extern's own
 *    reader takes, whose every line is within itself (pspawn_cg_within);
 *  - pspawn_cg_within(B, extern) is 1 only if some line of B has the path
 *    of an extern line with the same hierarchy, or one below it, and never
 *    for a path with a ".." component;
 *  - A itself is within what pspawn_cg_job_extern made of it only where a
 *    line of A is under an extern step already.
 */
#include <assert.h>

#include "cgroup.h"
#include "fuzz.h"

/* Whether path P (LEN bytes) has a ".." component: told component by
 * component, not as the library scans for one, so that this is a second
 * opinion. */
static int dotdot(const char *p, size_t len)
{
    const char *end = p + len;
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;
        if (stop - p == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        p = stop + 1;
    }
    return 0;
}

static void check_extern(const char *a, const char *ext, int n)
{
    int lines = 0;
    for (const char *l = ext; *l;) {
        const char *end = strchr(l, '\n');
        FUZZ_CHECK(end != NULL, "extern line not ended: \"%s\"", l);
        const char *c1 = memchr(l, ':', (size_t)(end - l));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        FUZZ_CHECK(c2 && c2[1] == '/', "extern line \"%.*s\"", (int)(end - l), l);
        size_t plen = (size_t)(end - c2 - 1);
        FUZZ_CHECK(plen > 12 && memcmp(end - 12, "/step_extern", 12) == 0 && !dotdot(c2 + 1, plen),
                   "extern path \"%.*s\"", (int)plen, c2 + 1);
        /* the hierarchy and the job's folder come from a line of A */
        size_t head = (size_t)(end - 12 - l);
        int from_a = 0;
        for (const char *al = a; *al && !from_a;) {
            const char *aend = strchrnul(al, '\n');
            from_a = (size_t)(aend - al) > head + 6 && memcmp(al, l, head) == 0 &&
                     memcmp(al + head, "/step_", 6) == 0;
            al = *aend ? aend + 1 : aend;
        }
        FUZZ_CHECK(from_a, "extern line \"%.*s\" from no line of A", (int)(end - l), l);
        char *one = strndup(l, (size_t)(end - l + 1));
        assert(one);
        FUZZ_CHECK(pspawn_cg_within(one, ext) == 1, "\"%s\" not within itself", one);
        free(one);
        lines++;
        l = end + 1;
    }
    FUZZ_CHECK(lines == n, "%d extern lines, %d said", lines, n);
}

static void check_within(const char *b, const char *ext)
{
    if (!pspawn_cg_within(b, ext))
        return;
    /* some line of B is an extern line's path or below it */
    int found = 0;
    for (const char *bl = b; *bl && !found;) {
        const char *bend = strchrnul(bl, '\n');
        const char *c2 = memchr(bl, ':', (size_t)(bend - bl));
        c2 = c2 ? memchr(c2 + 1, ':', (size_t)(bend - c2 - 1)) : NULL;
        for (const char *l = ext; c2 && *l && !found;) {
            const char *end = strchr(l, '\n');
            size_t len = (size_t)(end - l);
            found = (size_t)(bend - bl) >= len && memcmp(bl, l, len) == 0 &&
                    (bl + len == bend || bl[len] == '/') && !dotdot(c2 + 1, (size_t)(bend - c2 - 1));
            l = end + 1;
        }
        bl = *bend ? bend + 1 : bend;
    }
    FUZZ_CHECK(found, "B within extern, but no line is: B \"%s\" extern \"%s\"", b, ext);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 3);
    assert(text);
    memcpy(text, data, size);
    text[size] = text[size + 1] = text[size + 2] = 0;
    const char *a = text, *b = a + strlen(a) + 1;
    if (b > text + size)
        b = text + size + 1;
    const char *mounts = b + strlen(b) + 1;
    if (mounts > text + size + 1)
        mounts = text + size + 2;

    static char paths[PSPAWN_CG_MAX][PATH_MAX];
    int n = pspawn_cg_moves(a, b, mounts, paths);
    FUZZ_CHECK(n >= -1 && n <= PSPAWN_CG_MAX, "%d moves", n);
    int mounts_dotdot = strstr(mounts, "..") != NULL;
    for (int i = 0; i < n; i++) {
        size_t len = strnlen(paths[i], PATH_MAX);
        FUZZ_CHECK(len < PATH_MAX && len >= 13 && !strcmp(paths[i] + len - 13, "/cgroup.procs") &&
                       (mounts_dotdot || !dotdot(paths[i], len)),
                   "move path \"%.200s\"", paths[i]);
    }
    char dir[PATH_MAX];
    pspawn_cg2_dir(a, mounts, dir);

    size_t elen = strlen(a) + 16 * PSPAWN_CG_MAX + 1;
    char *ext = malloc(elen);
    assert(ext);
    int ne = pspawn_cg_job_extern(a, ext, elen);
    FUZZ_CHECK(ne >= -1, "%d", ne);
    if (ne >= 0) {
        check_extern(a, ext, ne);
        check_within(b, ext);
        check_within(a, ext);
    }
    /* too small a buffer: refused, never overrun (exactly sized) */
    char *tight = malloc(8);
    assert(tight);
    FUZZ_CHECK(pspawn_cg_job_extern(a, tight, 8) <= 0, "8 bytes held an extern line");
    free(tight);
    free(ext);
    free(text);
    return 0;
}
