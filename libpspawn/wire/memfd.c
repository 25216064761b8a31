/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memfd.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x1u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x2u
#endif

#define RESIZE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

void *pspawn_memfd_create(const char *name, size_t size, int *fd)
{
    int m = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (m < 0)
        return NULL;
    void *map = MAP_FAILED;
    /* Sealed before it is mapped or sent: no one can resize it after. */
    if (ftruncate(m, (off_t)size) == 0 && fcntl(m, F_ADD_SEALS, RESIZE_SEALS | F_SEAL_SEAL) == 0)
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(m);
        errno = e;
        return NULL;
    }
    *fd = m;
    return map;
}

int pspawn_memfd_check(int fd, size_t size, int exact)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & RESIZE_SEALS) != RESIZE_SEALS || fstat(fd, &st) < 0 ||
        !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size < size ||
        (exact && (uint64_t)st.st_size != size))
        return EINVAL;
    return 0;
}
