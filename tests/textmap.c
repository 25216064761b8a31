/*
 * textmap - print how many pages of libtiny's text (tests/tiny.c) are
 * mapped in this process when main() starts, read from /proc/self/pagemap
 * (the present bit, readable without privileges):
 *
 *   tiny_text pages=N present=P
 *
 * main() never calls into libtiny (only with more than 100 arguments, so
 * that the library stays needed).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pspawn_tiny_value(void);

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 100)
        return pspawn_tiny_value();
    FILE *maps = fopen("/proc/self/maps", "re");
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    char line[4096];
    long pages = 0, present = 0, page = sysconf(_SC_PAGESIZE);
    while (maps && pagemap >= 0 && fgets(line, sizeof line, maps)) {
        unsigned long start, end;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perm) != 3 || strcmp(perm, "r-xp") != 0 ||
            !strstr(line, "/libtiny"))
            continue;
        for (unsigned long a = start; a < end; a += (unsigned long)page) {
            uint64_t entry = 0;
            pages++;
            if (pread(pagemap, &entry, sizeof entry, (off_t)(a / (unsigned long)page * 8)) ==
                    (ssize_t)sizeof entry && (entry >> 63) & 1)
                present++;
        }
    }
    printf("tiny_text pages=%ld present=%ld\n", pages, present);
    return pages > 0 ? 0 : 1;
}
