/* SPDX-License-Identifier: BSD-3-Clause */
/* What exec would make of a program, found out without exec'ing it. */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#else
#define HOST_MACHINE EM_NONE
#endif

#define BINPRM_BUF_SIZE 256

#ifndef SYS_faccessat2
#define SYS_faccessat2 439
#endif

/* Open PATH once, as exec finds it (an O_PATH fd opens nothing but the
 * name's file, whatever its type), and make on that fd the checks
 * execve(2) makes before it reads the file.  Returns the fd, or -1 with
 * errno as exec would set it. */
static int open_exec(const char *path, struct stat *st)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int err = 0;
    struct statvfs vfs;
    if (fstat(fd, st) < 0)
        err = errno;
    else if (!S_ISREG(st->st_mode))
        err = EACCES;
    else if (syscall(SYS_faccessat2, fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) < 0 &&
             (errno != ENOSYS || faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0))
        err = errno;    /* ENOSYS: before Linux 5.8, by name */
    else if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
        err = EACCES;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* FD's file, opened for reading: through its /proc/self/fd link (the same
 * file whatever happens to its name), else by name if that is still the
 * same file.  -1 if it cannot be read. */
static int open_read(int fd, const char *path, const struct stat *st)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int r = open(link, O_RDONLY | O_CLOEXEC);
    if (r >= 0 || errno != ENOENT)
        return r;
    struct stat now;
    if ((r = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return -1;
    if (fstat(r, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
        close(r);
        return -1;
    }
    return r;
}

/* Parse a #! line as binfmt_script does: interpreter, then at most one
 * argument (the rest of the line, trimmed). */
static int parse_shebang(char *buf, size_t len, char **interp, char **arg)
{
    char *end = memchr(buf, '\n', len);
    if (!end) {
        /* A line longer than the buffer is only accepted if the
         * interpreter name ended inside it. */
        end = buf + len;
    }
    *end = '\0';
    char *p = buf + 2;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p)
        return ENOEXEC;
    *interp = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    if (!*p && end == buf + len && len == BINPRM_BUF_SIZE)
        return ENOEXEC;
    *arg = NULL;
    if (*p) {
        *p++ = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        char *q = end;
        while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
            *--q = '\0';
        if (*p)
            *arg = p;
    }
    return 0;
}

static int inspect_elf(int fd, const unsigned char *buf, size_t len, const char **fallback)
{
    if (len < sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0)
        return ENOEXEC;
    Elf64_Ehdr eh;
    memcpy(&eh, buf, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != HOST_MACHINE) {
        /* The kernel may run it (32-bit emulation, binfmt_misc with
         * qemu-user): exec decides, and gives its own error if not. */
        *fallback = "not a native ELF program (another class or machine): exec decides";
        return 0;
    }
    if ((eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096)
        return ENOEXEC;
    size_t sz = eh.e_phnum * sizeof(Elf64_Phdr);
    Elf64_Phdr *ph = malloc(sz);
    if (!ph)
        return ENOMEM;
    if (pread(fd, ph, sz, (off_t)eh.e_phoff) != (ssize_t)sz) {
        free(ph);
        return ENOEXEC;
    }
    int has_interp = 0;
    for (int i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_INTERP)
            has_interp = 1;
    free(ph);
    if (!has_interp)
        *fallback = "static binary (no program interpreter): nothing to preload into";
    return 0;
}

static void note_setid(int readfd, const char *path, const struct stat *st,
                       const char **fallback)
{
    if (*fallback)
        return;
    if ((st->st_mode & S_ISUID) || ((st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP)))
        *fallback = "set-user-ID or set-group-ID binary: exec changes credentials, a fork cannot";
    else if ((readfd >= 0 ? fgetxattr(readfd, "security.capability", NULL, 0)
                          : getxattr(path, "security.capability", NULL, 0)) > 0)
        *fallback = "binary has file capabilities: exec grants them, a fork cannot";
}

/* Each file is opened once and everything about it is read from that fd;
 * the ELF the kernel loads stays open in *EXE_FD (an O_PATH fd, which exec
 * takes), if asked for, so that what runs is what was inspected. */
int pspawn_program_open(struct program *p, const char *path, int *exe_fd)
{
    memset(p, 0, sizeof *p);
    const char *cur = path;
    int err = 0, fd = -1;
    if (exe_fd)
        *exe_fd = -1;
    p->path = strdup(path);
    if (!p->path)
        return ENOMEM;
    for (int depth = 0;; depth++) {
        struct stat st;
        if ((fd = open_exec(cur, &st)) < 0) {
            err = errno;
            goto fail;
        }
        if (depth == 0)
            p->st_path = st;
        p->st_exe = st;
        int rfd = open_read(fd, cur, &st);
        note_setid(rfd, cur, &st, &p->fallback);
        if (rfd < 0) {
            /* Executable but not readable: exec can, we cannot look. */
            if (!p->fallback)
                p->fallback = "program is not readable: cannot inspect it";
            p->exe = strdup(cur);
            break;
        }
        unsigned char buf[BINPRM_BUF_SIZE + 1];
        ssize_t len = pread(rfd, buf, BINPRM_BUF_SIZE, 0);
        if (len < 0)
            len = 0;
        buf[len] = 0;
        if (len >= 2 && buf[0] == '#' && buf[1] == '!') {
            close(rfd);
            close(fd);
            fd = -1;
            char *interp, *arg;
            if (depth >= PSPAWN_MAX_INTERP) {
                err = ELOOP;
                goto fail;
            }
            if ((err = parse_shebang((char *)buf, (size_t)len, &interp, &arg)))
                goto fail;
            /* The kernel puts these words before the script's path, the
             * innermost interpreter first. */
            int add = arg ? 2 : 1;
            memmove(p->interp_argv + add, p->interp_argv, p->ninterp * sizeof(char *));
            p->interp_argv[0] = strdup(interp);
            if (arg)
                p->interp_argv[1] = strdup(arg);
            p->ninterp += add;
            cur = p->interp_argv[0];
            continue;
        }
        err = inspect_elf(rfd, buf, (size_t)len, &p->fallback);
        close(rfd);
        if (err)
            goto fail;
        p->exe = strdup(cur);
        break;
    }
    if (!p->exe) {
        err = ENOMEM;
        goto fail;
    }
    if (exe_fd)
        *exe_fd = fd;
    else
        close(fd);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    pspawn_program_free(p);
    return err;
}

int pspawn_program_inspect(struct program *p, const char *path)
{
    return pspawn_program_open(p, path, NULL);
}

void pspawn_program_free(struct program *p)
{
    free(p->path);
    free(p->exe);
    for (int i = 0; i < p->ninterp; i++)
        free(p->interp_argv[i]);
    memset(p, 0, sizeof *p);
}

static int same_file(const struct stat *a, const struct stat *b)
{
    /* Mode, owner and ctime too: a chmod (a-x, u+s) changes what exec
     * would do without changing the contents. */
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_mode == b->st_mode && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int pspawn_program_same(const struct program *a, const struct program *b)
{
    if (!same_file(&a->st_path, &b->st_path) || !same_file(&a->st_exe, &b->st_exe) ||
        a->ninterp != b->ninterp || a->fallback != b->fallback || !a->exe || !b->exe ||
        strcmp(a->exe, b->exe) != 0)
        return 0;
    for (int i = 0; i < a->ninterp; i++)
        if (strcmp(a->interp_argv[i], b->interp_argv[i]) != 0)
            return 0;
    return 1;
}

int pspawn_program_changed(const struct program *p)
{
    struct stat st;
    if (stat(p->path, &st) < 0 || !same_file(&st, &p->st_path))
        return 1;
    if (p->ninterp && (stat(p->exe, &st) < 0 || !same_file(&st, &p->st_exe)))
        return 1;
    return 0;
}


int pspawn_resolve(const char *file, char *const envp[], char *out, size_t outlen)
{
    if (!file || !*file)
        return ENOENT;
    if (strchr(file, '/')) {
        if (strlen(file) >= outlen)
            return ENAMETOOLONG;
        strcpy(out, file);
        return 0;
    }
    const char *path = NULL;
    extern char **environ;
    char *const *e = envp ? envp : environ;
    for (; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0) {
            path = *e + 5;
            break;
        }
    if (!path)
        path = "/bin:/usr/bin";
    int seen_eacces = 0, too_long = 0;
    size_t flen = strlen(file);
    for (const char *p = path;; p++) {
        const char *colon = strchrnul(p, ':');
        size_t dlen = (size_t)(colon - p);
        if (dlen + flen + 2 <= outlen) {
            if (dlen) {
                memcpy(out, p, dlen);
                out[dlen] = '/';
                strcpy(out + dlen + 1, file);
            } else {
                strcpy(out, file);  /* an empty entry is the cwd */
            }
            struct stat st;
            if (stat(out, &st) == 0) {
                if (S_ISREG(st.st_mode) && faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
                    return 0;
                seen_eacces = 1;
            } else if (errno == EACCES) {
                seen_eacces = 1;
            }
        } else {
            too_long = 1;
        }
        if (!*colon)
            break;
        p = colon;
    }
    return seen_eacces ? EACCES : too_long ? ENAMETOOLONG : ENOENT;
}
