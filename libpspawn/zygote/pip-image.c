/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode=pip, at the park: may this program's tasks be PiP tasks (pip.c),
 * and the copy of its image they load.  Everything here reads the image
 * the loader mapped (dl_iterate_phdr, dladdr), not the file.
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zygote.h"

#ifndef DF_1_PIE
#define DF_1_PIE 0x08000000
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x1U
#define MFD_ALLOW_SEALING 0x2U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x1
#define F_SEAL_SHRINK 0x2
#define F_SEAL_GROW 0x4
#define F_SEAL_WRITE 0x8
#endif

struct main_object {
    struct pip_image *img;
    int seen;
    struct dl_phdr_info info;
    int mpi;
    const char *interp;
};

static int look_at(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct main_object *m = data;
    if (!m->seen) {
        m->seen = 1;
        m->info = *info;
        for (int i = 0; i < info->dlpi_phnum; i++)
            if (info->dlpi_phdr[i].p_type == PT_INTERP)
                m->interp = (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        return 0;
    }
    const char *slash = strrchr(info->dlpi_name, '/');
    const char *base = slash ? slash + 1 : info->dlpi_name;
    if (strncmp(base, "libmpi.so", 9) == 0 || strncmp(base, "libmpich.so", 11) == 0)
        m->mpi = 1;
    if (m->interp && strcmp(info->dlpi_name, m->interp) == 0)
        m->img->rtld_addr = info->dlpi_addr;
    return 0;
}

/* What in the program's dynamic section matters here: where DT_FLAGS_1
 * sits in the file (0: nowhere) and its value, and whether a search path
 * uses $ORIGIN. */
struct dynamic_facts {
    off_t flags1_at;
    ElfW(Xword) flags1;
    int origin;
};

static int read_dynamic(const struct dl_phdr_info *info, struct dynamic_facts *f)
{
    memset(f, 0, sizeof *f);
    const ElfW(Phdr) *dyn_ph = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_phdr[i].p_memsz > 0)
            return PIP_OWN_TLS;
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn_ph = &info->dlpi_phdr[i];
    }
    if (!dyn_ph)
        return PIP_NOT_PIE;
    const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + dyn_ph->p_vaddr);
    uintptr_t strtab = 0;
    ElfW(Xword) paths[2] = { (ElfW(Xword))-1, (ElfW(Xword))-1 };
    for (size_t i = 0; d[i].d_tag != DT_NULL; i++) {
        switch (d[i].d_tag) {
        case DT_FLAGS_1:
            f->flags1 = d[i].d_un.d_val;
            f->flags1_at = (off_t)(dyn_ph->p_offset + i * sizeof *d + offsetof(ElfW(Dyn), d_un));
            break;
        case DT_STRTAB:
            strtab = d[i].d_un.d_ptr;
            break;
        case DT_RPATH:
            paths[0] = d[i].d_un.d_val;
            break;
        case DT_RUNPATH:
            paths[1] = d[i].d_un.d_val;
            break;
        }
    }
    /* The loader relocates DT_STRTAB in place where the section is
     * writable (x86_64), not where it is read-only. */
    if (strtab && strtab < info->dlpi_addr)
        strtab += info->dlpi_addr;
    for (int k = 0; k < 2 && strtab; k++)
        if (paths[k] != (ElfW(Xword))-1 && strstr((const char *)strtab + paths[k], "ORIGIN"))
            f->origin = 1;
    return f->origin ? PIP_ORIGIN : PIP_OK;
}

/* The image we were exec'd from, into a sealed memfd, DF_1_PIE cleared. */
static int copy_image(const struct dynamic_facts *f, struct pip_image *img)
{
    ssize_t n = readlink("/proc/self/exe", img->exe, sizeof img->exe - 1);
    if (n <= 0)
        return PIP_NO_COPY;
    img->exe[n] = 0;
    int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (src < 0 || fstat(src, &st) < 0) {
        if (src >= 0)
            close(src);
        return PIP_NO_COPY;
    }
    const char *slash = strrchr(img->exe, '/');
    char name[64];
    snprintf(name, sizeof name, "pspawn-pip:%.40s", slash ? slash + 1 : img->exe);
    int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    off_t at = 0;
    while (fd >= 0 && at < st.st_size) {
        ssize_t w = sendfile(fd, src, &at, (size_t)(st.st_size - at));
        if (w <= 0 && errno != EINTR)
            break;
    }
    close(src);
    ElfW(Xword) flags1 = f->flags1 & ~(ElfW(Xword))DF_1_PIE;
    if (fd < 0 || at != st.st_size ||
        (f->flags1_at && (f->flags1 & DF_1_PIE) &&
         pwrite(fd, &flags1, sizeof flags1, f->flags1_at) != (ssize_t)sizeof flags1) ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        if (fd >= 0)
            close(fd);
        return PIP_NO_COPY;
    }
    img->memfd = zygote_move_high(fd);
    snprintf(img->load_path, sizeof img->load_path, "/proc/self/fd/%d", img->memfd);
    return PIP_OK;
}

int zygote_pip_image(struct pip_image *img)
{
    struct main_object m = { .img = img };
    dl_iterate_phdr(look_at, &m);
    if (!m.seen || m.info.dlpi_addr == 0)
        return PIP_NOT_PIE;
    Dl_info di;
    if (!parked.real_main || !dladdr((void *)parked.real_main, &di) || !di.dli_sname ||
        strcmp(di.dli_sname, "main") != 0 || di.dli_saddr != (void *)parked.real_main)
        return PIP_NO_MAIN;
    struct dynamic_facts f;
    int why = read_dynamic(&m.info, &f);
    if (!why && m.mpi)
        why = PIP_MPI;
    return why ? why : copy_image(&f, img);
}


/* ---- in a task, after its load: copy relocations ------------------------
 *
 * A -fPIE program reads the C library's data it names (stdout, optind,
 * environ) from copies in its own .bss, filled at load by copy
 * relocations with the library's initial bytes.  The loader looks for
 * the source past the main program only: in a namespace of its own the
 * program is an ordinary object, found first, and copies itself onto
 * itself.  Every object of the namespace uses the program's copy (it comes
 * first), so each copy that is still zero gets the bytes of the first
 * other object that defines the symbol.  A copy some constructor already
 * set (environ, program_invocation_name, a C++ stream) is left alone.
 * Built -fPIC, a program has none of this. */
#if defined(__x86_64__)
#define COPY_RELOC R_X86_64_COPY
#elif defined(__aarch64__)
#define COPY_RELOC R_AARCH64_COPY
#endif

static uintptr_t dyn_addr(const struct link_map *lm, uintptr_t v)
{
    return v && v < lm->l_addr ? v + lm->l_addr : v;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The bytes the first object after PROG in namespace NS defines as NAME. */
static const void *definition_past(Lmid_t ns, const struct link_map *prog, const char *name)
{
    for (const struct link_map *lm = prog->l_next; lm; lm = lm->l_next) {
        void *h = dlmopen(ns, lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        const void *p = dlsym(h, name);
        dlclose(h);
        if (p)
            return p;
    }
    return NULL;
}

void zygote_pip_complete_copies(void *handle)
{
#ifdef COPY_RELOC
    struct link_map *prog = NULL;
    Lmid_t ns;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &prog) != 0 || !prog ||
        dlinfo(handle, RTLD_DI_LMID, &ns) != 0)
        return;
    uintptr_t rela = 0, symtab = 0, strtab = 0;
    size_t relasz = 0;
    for (const ElfW(Dyn) *d = prog->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_RELA)
            rela = dyn_addr(prog, d->d_un.d_ptr);
        else if (d->d_tag == DT_RELASZ)
            relasz = d->d_un.d_val;
        else if (d->d_tag == DT_SYMTAB)
            symtab = dyn_addr(prog, d->d_un.d_ptr);
        else if (d->d_tag == DT_STRTAB)
            strtab = dyn_addr(prog, d->d_un.d_ptr);
    }
    if (!rela || !symtab || !strtab)
        return;
    const ElfW(Rela) *r = (const ElfW(Rela) *)rela;
    for (size_t i = 0; i < relasz / sizeof *r; i++) {
        if (ELF64_R_TYPE(r[i].r_info) != COPY_RELOC)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
        unsigned char *dest = (unsigned char *)(prog->l_addr + r[i].r_offset);
        if (!sym->st_size || !all_zero(dest, sym->st_size))
            continue;
        const void *src = definition_past(ns, prog, (const char *)strtab + sym->st_name);
        if (src && src != dest)
            memcpy(dest, src, sym->st_size);
    }
#else
    (void)handle;
#endif
}
