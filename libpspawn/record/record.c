/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpspawn-record.so: preloaded, after the proxy, into a zygote that
 * learns its program's libraries (preload=auto).  It interposes dlopen and
 * dlmopen: each call goes on to glibc's as the caller made it, and each
 * object a task loads is told to the proxy (pspawn_record_dlopen), which
 * writes it to the program's cache at once, so that tasks ending by _exit
 * or a signal count too.
 *
 * glibc decides a call's namespace and, for a name without a slash, its
 * search path (the caller's DT_RPATH/DT_RUNPATH) from the caller's return
 * address, which would now be ours.  So the caller's namespace is passed
 * explicitly (dlmopen), and a bare name is looked up first where the
 * caller's own paths say (dlinfo RTLD_DI_SERINFO, glibc's list for that
 * object, without the default directories that come after ld.so.cache);
 * found there, it is opened by that path, as glibc would have.  Not
 * covered: glibc-hwcaps subdirectories of those paths, and a caller with
 * DT_RUNPATH in a program with DT_RPATH (glibc then skips the program's
 * DT_RPATH for it, and this lookup does not).
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static void *(*real_dlopen)(const char *, int);
static void *(*real_dlmopen)(Lmid_t, const char *, int);
static void (*record)(void *handle, int mode, long lmid);

__attribute__((constructor)) static void record_init(void)
{
    real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    real_dlmopen = (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_NEXT, "dlmopen");
    record = (void (*)(void *, int, long))dlsym(RTLD_DEFAULT, "pspawn_record_dlopen");
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

static unsigned long long loads(void)
{
    unsigned long long n = 0;
    dl_iterate_phdr(count_adds, &n);
    return n;
}

/* An ELF object of our class and machine, as glibc's search accepts. */
static int loadable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ElfW(Ehdr) h;
    ssize_t n = read(fd, &h, sizeof h);
    close(fd);
    return n == (ssize_t)sizeof h && memcmp(h.e_ident, ELFMAG, SELFMAG) == 0 &&
           h.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
           h.e_machine == (ElfW(Half))
#if defined(__x86_64__)
               EM_X86_64
#elif defined(__aarch64__)
               EM_AARCH64
#elif defined(__powerpc64__)
               EM_PPC64
#else
               h.e_machine
#endif
        ;
}

/* FILE where CALLER's own search path (before ld.so.cache) finds it. */
static int search_as(void *caller, const char *file, char *out, size_t size)
{
    Dl_serinfo sz;
    if (dlinfo(caller, RTLD_DI_SERINFOSIZE, &sz) < 0)
        return 0;
    Dl_serinfo *si = malloc(sz.dls_size);
    if (!si)
        return 0;
    si->dls_size = sz.dls_size;
    si->dls_cnt = sz.dls_cnt;
    int found = 0;
    if (dlinfo(caller, RTLD_DI_SERINFO, si) == 0)
        for (unsigned i = 0; i < si->dls_cnt && !found; i++) {
            if (si->dls_serpath[i].dls_flags & LA_SER_DEFAULT)
                continue;
            int n = snprintf(out, size, "%s/%s", si->dls_serpath[i].dls_name, file);
            found = n > 0 && (size_t)n < size && loadable(out);
        }
    free(si);
    return found;
}

static void *open_as(const void *ret, int have_ns, Lmid_t ns, const char *file, int mode)
{
    if (!real_dlopen)
        record_init();
    struct link_map *caller = NULL;
    Dl_info di;
    if (!dladdr1(ret, &di, (void **)&caller, RTLD_DL_LINKMAP))
        caller = NULL;
    if (!have_ns) {
        ns = LM_ID_BASE;
        if (caller)
            dlinfo(caller, RTLD_DI_LMID, &ns);
    }
    char found[4096];
    const char *name = file;
    if (file && !strchr(file, '/') && caller && !(mode & RTLD_NOLOAD) && ns != LM_ID_NEWLM) {
        /* Loaded already under that name: glibc matches names before it
         * searches, whoever calls. */
        void *h = ns == LM_ID_BASE ? real_dlopen(file, RTLD_LAZY | RTLD_NOLOAD)
                                   : real_dlmopen(ns, file, RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            dlclose(h);
        else if (search_as(caller, file, found, sizeof found))
            name = found;
    }
    unsigned long long before = record ? loads() : 0;
    void *h = ns == LM_ID_BASE ? real_dlopen(name, mode) : real_dlmopen(ns, name, mode);
    if (h && record && file && loads() != before) {
        Lmid_t where = ns;
        dlinfo(h, RTLD_DI_LMID, &where);
        record(h, mode, (long)where);
    }
    return h;
}

EXPORT void *dlopen(const char *file, int mode)
{
    return open_as(__builtin_return_address(0), 0, 0, file, mode);
}

EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    return open_as(__builtin_return_address(0), 1, lmid, file, mode);
}
