/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spawn sites (site.h).  site_of may run between vfork and exec: it reads
 * what site_init recorded, stats one file and scans argv, on the stack.
 */
#include "config.h"

#include <link.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "site.h"

/* Written once, in the constructor. */
static struct {
    uint64_t exe;                   /* the launcher's executable, hashed */
    uintptr_t main_lo, main_hi;     /* the main program's load range */
} self;

static int main_range(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    /* The first object is the main program. */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (hi > lo) {
        self.main_lo = lo;
        self.main_hi = hi;
    }
    return 1;
}

int site_init(void)
{
    struct stat st;
    if (stat("/proc/self/exe", &st) < 0)
        return -1;
    uint64_t h = PSPAWN_HASH_INIT;
    pspawn_hash(&h, &st.st_dev, sizeof st.st_dev);
    pspawn_hash(&h, &st.st_ino, sizeof st.st_ino);
    pspawn_hash(&h, &st.st_mtim, sizeof st.st_mtim);
    self.exe = h;
    dl_iterate_phdr(main_range, NULL);
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

enum interp { NOT_INTERP, SHELL, PYTHON, PERL };

static enum interp interpreter(const char *path)
{
    const char *b = base_name(path);
    if (!strcmp(b, "sh") || !strcmp(b, "dash") || !strcmp(b, "bash"))
        return SHELL;
    if (!strncmp(b, "python", 6))
        return PYTHON;
    return !strcmp(b, "perl") ? PERL : NOT_INTERP;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

/* The length of the word at S: up to a blank or what a shell gives a
 * meaning to. */
static size_t word_len(const char *s)
{
    size_t n = 0;
    while (s[n] && !blank(s[n]) && !strchr(";&|<>()`$\"'", s[n]))
        n++;
    return n;
}

/* The first word of command CMD that names a program (CMD's own words). */
static const char *first_word(const char *cmd, size_t *len)
{
    for (;;) {
        while (blank(*cmd))
            cmd++;
        size_t n = word_len(cmd);
        const char *eq = memchr(cmd, '=', n);
        int assignment = eq && eq > cmd && !memchr(cmd, '/', (size_t)(eq - cmd));
        if (n && (assignment || (n == 4 && !strncmp(cmd, "exec", 4)))) {
            cmd += n;
            continue;
        }
        *len = n;
        return cmd;
    }
}

/* What tells one use of interpreter KIND apart: the command's first word,
 * the module, or the script (into *LEN); NULL if nothing. */
static const char *what_runs(enum interp kind, char *const argv[], size_t *len)
{
    for (int i = 1; argv[i]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            a = argv[i + 1];
            *len = a ? strlen(a) : 0;
            return a;
        }
        if (a[0] != '-' && !(kind == SHELL && a[0] == '+')) {
            *len = strlen(a);
            return a;
        }
        int command = kind == SHELL ? a[1] != '-' && strchr(a + 1, 'c') != NULL
                      : kind == PYTHON ? a[1] == 'c'
                                       : a[1] == 'e' || a[1] == 'E';
        const char *next = argv[i + 1];
        if (command && kind != SHELL && a[2])
            return first_word(a + 2, len);      /* python -cCODE, perl -eCODE */
        if (command)
            return next ? first_word(next, len) : NULL;
        if (kind == PYTHON && a[1] == 'm') {
            a = a[2] ? a + 2 : next;
            *len = a ? strlen(a) : 0;
            return a;
        }
        /* Options that take the next argument. */
        if ((kind == SHELL && a[1] == 'o' && !a[2]) ||
            (kind == PYTHON && (a[1] == 'W' || a[1] == 'X') && !a[2]))
            i++;
        if (!argv[i])
            break;
    }
    return NULL;
}

uint64_t site_of(const void *ret, const char *path, char *const argv[])
{
    struct stat st;
    if (!path || stat(path, &st) < 0)
        return 0;
    uint64_t h = self.exe;
    uintptr_t at = (uintptr_t)ret;
    uint64_t where = at >= self.main_lo && at < self.main_hi ? at - self.main_lo
                                                             : UINT64_MAX; /* a library */
    pspawn_hash(&h, &where, sizeof where);
    pspawn_hash(&h, &st.st_dev, sizeof st.st_dev);
    pspawn_hash(&h, &st.st_ino, sizeof st.st_ino);
    enum interp kind = interpreter(path);
    size_t len = 0;
    const char *what = kind != NOT_INTERP && argv && argv[0] ? what_runs(kind, argv, &len) : NULL;
    if (what) {
        pspawn_hash(&h, &kind, sizeof kind);
        pspawn_hash(&h, what, len);
    }
    return h ? h : 1;
}
