/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Preloads bound in the zygote.  A task that dlopens a library RTLD_LAZY
 * binds each of its functions at the first call, searching the loaded
 * objects then; a zygote that loads it RTLD_NOW takes that cost once, for
 * every task.  The two bind alike unless the search's answer changes in
 * between.  The global scope is searched first and only grows at its end:
 * a symbol it already defines keeps that definition whatever loads later.
 * One it does not define (found in the object's own dependencies, or
 * nowhere) a later RTLD_GLOBAL load could take over, in the zygote or in
 * a task that loads something no earlier task loaded.  So an object is
 * bound now only if every lazily bound (PLT) symbol of it, and of every
 * object it brought in, is defined in the global scope once it is loaded;
 * the first that is not is the reason it stays lazy.
 *
 * The same holds for what the loader loaded at exec (the global scope is
 * their scope): at the park, the zygote binds each of their lazily bound
 * functions that the global scope defines, as lazy binding would at its
 * first call.  It is
 * not exec'd with LD_BIND_NOW for that: the loader reads LD_BIND_NOW once
 * and then binds every later dlopen at once too, RTLD_LAZY or not, in
 * the zygote and in every task, where a library with a symbol nobody
 * defines would fail to load, and one opened RTLD_GLOBAL later would not
 * take a symbol over, as they do in an exec'd task.
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "zygote.h"

struct link_map *zygote_bind_last(void)
{
    struct link_map *lm = NULL;
    void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm) < 0)
        lm = NULL;
    while (lm && lm->l_next)
        lm = lm->l_next;
    return lm;
}

/* An address in the dynamic section: glibc adjusts most of them by the
 * load address in place, except where the section is read-only. */
static const void *dyn_ptr(const struct link_map *lm, ElfW(Addr) value)
{
    return (const void *)(value < lm->l_addr ? value + lm->l_addr : value);
}

struct object_dyn {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const char *jmprel;         /* Rel or Rela entries, as DT_PLTREL says */
    size_t pltrelsz;
    ElfW(Sxword) pltrel;
    const ElfW(Half) *versym;
    const ElfW(Verneed) *verneed;
    const ElfW(Verdef) *verdef;
    int bound_at_load, symbolic;
};

static void read_dyn(const struct link_map *lm, struct object_dyn *o)
{
    *o = (struct object_dyn){ 0 };
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: o->symtab = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_STRTAB: o->strtab = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_JMPREL: o->jmprel = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: o->pltrelsz = d->d_un.d_val; break;
        case DT_PLTREL: o->pltrel = d->d_un.d_val; break;
        case DT_VERSYM: o->versym = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_VERNEED: o->verneed = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_VERDEF: o->verdef = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_BIND_NOW: o->bound_at_load = 1; break;
        case DT_SYMBOLIC: o->symbolic = 1; break;
        case DT_FLAGS:
            o->bound_at_load |= !!(d->d_un.d_val & DF_BIND_NOW);
            o->symbolic |= !!(d->d_un.d_val & DF_SYMBOLIC);
            break;
        case DT_FLAGS_1: o->bound_at_load |= !!(d->d_un.d_val & DF_1_NOW); break;
        }
    }
}

/* The first PLT symbol of LM that the global scope does not define now. */
static const char *unbound_symbol(const struct link_map *lm)
{
    struct object_dyn o;
    read_dyn(lm, &o);
    if (!o.symtab || !o.strtab || !o.jmprel)
        return NULL;
    size_t each = o.pltrel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    for (size_t at = 0; at + each <= o.pltrelsz; at += each) {
        /* r_info sits at the same place in both forms. */
        ElfW(Xword) info = ((const ElfW(Rel) *)(o.jmprel + at))->r_info;
#if __ELF_NATIVE_CLASS == 64
        size_t index = ELF64_R_SYM(info);
#else
        size_t index = ELF32_R_SYM(info);
#endif
        if (index == 0)
            continue;   /* IRELATIVE and the like: no symbol to look up */
        const char *name = o.strtab + o.symtab[index].st_name;
        if (*name && !dlsym(RTLD_DEFAULT, name))
            return name;
    }
    return NULL;
}

const char *zygote_bind_unsafe(struct link_map *last)
{
    const char *name = NULL;
    for (struct link_map *lm = last ? last->l_next : NULL; lm && !name; lm = lm->l_next)
        name = unbound_symbol(lm);
    return name;
}

/* The slot's relocation type, where this file knows the machine. */
#if defined(__x86_64__) && defined(__LP64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#define SLOT_VALUE(addr, rela) ((addr) + (rela)->r_addend)
#elif defined(__aarch64__) && defined(__LP64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#define SLOT_VALUE(addr, rela) (addr)
#endif

#ifdef JUMP_SLOT
/* The version a reference asks for (its VERSYM index names it in the
 * object's needed versions, or its own definitions), or NULL. */
static const char *reference_version(const struct object_dyn *o, size_t index)
{
    if (!o->versym)
        return NULL;
    ElfW(Half) want = o->versym[index] & 0x7fff;
    if (want < 2)
        return NULL;
    for (const ElfW(Verneed) *n = o->verneed; n;
         n = n->vn_next ? (const void *)((const char *)n + n->vn_next) : NULL) {
        const ElfW(Vernaux) *a = (const void *)((const char *)n + n->vn_aux);
        for (unsigned i = 0; i < n->vn_cnt; i++) {
            if (a->vna_other == want)
                return o->strtab + a->vna_name;
            a = (const void *)((const char *)a + a->vna_next);
        }
    }
    for (const ElfW(Verdef) *d = o->verdef; d;
         d = d->vd_next ? (const void *)((const char *)d + d->vd_next) : NULL)
        if (d->vd_ndx == want)
            return o->strtab + ((const ElfW(Verdaux) *)((const char *)d + d->vd_aux))->vda_name;
    return NULL;
}

/* Bind LM's lazy slots that still point into LM itself (not called yet)
 * to what the global scope defines.  The number bound. */
static long bind_object(struct link_map *lm, const struct link_map *program)
{
    struct object_dyn o;
    read_dyn(lm, &o);
    if (!o.symtab || !o.strtab || !o.jmprel || o.pltrel != DT_RELA || o.bound_at_load ||
        o.symbolic)
        return 0;
    long bound = 0;
    const ElfW(Rela) *rela = (const ElfW(Rela) *)o.jmprel;
    for (size_t i = 0; i < o.pltrelsz / sizeof(ElfW(Rela)); i++) {
        const ElfW(Rela) *r = &rela[i];
        size_t index = ELF64_R_SYM(r->r_info);
        if (ELF64_R_TYPE(r->r_info) != JUMP_SLOT || index == 0 ||
            ELF64_ST_BIND(o.symtab[index].st_info) == STB_LOCAL)
            continue;
        ElfW(Addr) *slot = (ElfW(Addr) *)(lm->l_addr + r->r_offset);
        Dl_info info;
        struct link_map *in = NULL;
        if (!dladdr1((void *)*slot, &info, (void **)&in, RTLD_DL_LINKMAP) || in != lm)
            continue;   /* bound already */
        const char *name = o.strtab + o.symtab[index].st_name;
        const char *version = reference_version(&o, index);
        /* A lazy binding takes the first definition in the scope that is
         * of the version asked for or of none (an interposer's, mostly).
         * dlvsym skips the unversioned ones, dlsym takes any default
         * version: where they agree, that is the lazy binding's answer;
         * where they do not, the slot is left to it. */
        void *addr = dlsym(RTLD_DEFAULT, name);
        if (version && addr != dlvsym(RTLD_DEFAULT, name, version))
            continue;
        /* An answer in the program is left to the lazy binding: where a
         * program not built as PIE takes a library function's address,
         * its PLT entry stands for that function (a canonical PLT entry),
         * and a lookup returns it; the loader's lazy binding skips it.
         * Bound to it, the program's own slot would jump to itself. */
        if (!addr || !dladdr1(addr, &info, (void **)&in, RTLD_DL_LINKMAP) || in == program)
            continue;
        *slot = SLOT_VALUE((ElfW(Addr))addr, r);
        bound++;
    }
    return bound;
}
#endif

long zygote_bind_loaded(struct link_map *last)
{
    long bound = 0;
#ifdef JUMP_SLOT
    /* The loader binds everything itself with these (an auditor sees
     * each binding it makes). */
    const char *now = getenv("LD_BIND_NOW");
    if ((now && *now) || getenv("LD_AUDIT") || getenv("LD_PROFILE"))
        return 0;
    struct link_map *program = NULL;
    void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!self || dlinfo(self, RTLD_DI_LINKMAP, &program) < 0)
        return 0;
    for (struct link_map *lm = program; lm && last; lm = lm->l_next) {
        bound += bind_object(lm, program);
        if (lm == last)
            break;
    }
#endif
    return bound;
}
