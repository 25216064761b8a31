/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpix - the MPI program of the mpirun end-to-end tests.
 *
 *   mpix hello    hello, an allreduce and a ring, one line per rank:
 *                 "hello R of N on HOST sum S ring T exe E parent P
 *                 pgid_is_pid G cpus C mempolicy M forked F"
 *                 (M: the NUMA memory policy main() started with, as
 *                 get_mempolicy gives it: "MODE/NODES")
 *                 (F: 1 if the process is not the one its constructors ran
 *                 in, i.e. a fork of a zygote; the tests compare all but F)
 *   mpix exit3    rank 1 returns 3 from main after MPI_Finalize
 *   mpix abort    rank 0 calls MPI_Abort(MPI_COMM_WORLD, 7)
 *   mpix sleep S  every rank sleeps S seconds after MPI_Init
 *   mpix stdin    rank 0 prints the lines it reads on stdin
 *   mpix init     prints CLOCK_REALTIME once MPI_Init returned (benchmark)
 *
 * MPIX_ZYGOTE_DIE=FILE:USEC (only with --mca odls pspawn): the first
 * process of the node to create FILE, which is the zygote (it runs the
 * constructors before any rank is forked from it; ranks exec'd later find
 * FILE there), is killed USEC microseconds later by a helper process it
 * forks (0: at once, before it parks).  The component must start every rank anyway.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t ctor_pid;

__attribute__((constructor)) static void record(void)
{
    ctor_pid = getpid();
    const char *die = getenv("MPIX_ZYGOTE_DIE");
    const char *colon = die ? strrchr(die, ':') : NULL;
    if (!colon)
        return;
    char file[256];
    snprintf(file, sizeof file, "%.*s", (int)(colon - die), die);
    int fd = open(file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    close(fd);
    long usec = atol(colon + 1);
    if (usec <= 0)
        kill(getpid(), SIGKILL);
    /* Not an alarm: exec keeps it, so a zygote's tasks get it again (and
     * the zygote stops its own).  A helper process kills us instead; it
     * holds none of our fds, and tini reaps it. */
    pid_t helper = fork();
    if (helper == 0) {
        for (int i = 0; i < 1024; i++)
            close(i);
        struct timespec ts = { usec / 1000000, (usec % 1000000) * 1000 };
        nanosleep(&ts, NULL);
        kill(ctor_pid, SIGKILL);
        _exit(0);
    }
}

static void cpus(char *out, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/self/status", "r");
    snprintf(out, len, "?");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            snprintf(out, len, "%s", line + 18 + strspn(line + 18, " \t"));
            out[strcspn(out, "\n")] = 0;
        }
    if (f)
        fclose(f);
}

/* The memory policy as the launcher left it: "MODE/NODES", NODES a list
 * ("-" for none). */
static void mempolicy(char *out, size_t len)
{
    const unsigned bits = 8 * sizeof(unsigned long);
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = { 0 };
    int mode = -1, any = 0;
    size_t n;
    if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, NULL, 0UL) != 0) {
        snprintf(out, len, "error-%d", errno);
        return;
    }
    n = (size_t)snprintf(out, len, "%#x/", (unsigned)mode);
    for (unsigned i = 0; i < 1024 && n + 8 < len; i++)
        if ((mask[i / bits] >> (i % bits)) & 1)
            n += (size_t)snprintf(out + n, len - n, "%s%u", any++ ? "," : "", i);
    if (!any)
        snprintf(out + n, len - n, "-");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "hello";
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME], mpol[320];

    /* "init": the time past MPI_Init, then the time main began (what
     * MPI_Init itself took, after the launch). */
    struct timespec t0, t;
    clock_gettime(CLOCK_REALTIME, &t0);
    mempolicy(mpol, sizeof mpol);
    MPI_Init(&argc, &argv);
    if (strcmp(mode, "init") == 0) {
        clock_gettime(CLOCK_REALTIME, &t);
        printf("init %ld.%09ld %ld.%09ld\n", (long)t.tv_sec, t.tv_nsec, (long)t0.tv_sec,
               t0.tv_nsec);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    if (strcmp(mode, "hello") == 0) {
        int sum = 0, token = 0;
        char c[128], exe[256] = "?";
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        /* the ring: each rank adds its rank + 1 to the token */
        if (size > 1) {
            if (rank == 0) {
                token = 1;
                MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                token += rank + 1;
                MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
            }
        }
        MPI_Bcast(&token, 1, MPI_INT, 0, MPI_COMM_WORLD);
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0)
            exe[n] = 0;
        cpus(c, sizeof c);
        char path[64], parent[64] = "?";
        snprintf(path, sizeof path, "/proc/%d/comm", (int)getppid());
        FILE *f = fopen(path, "r");
        if (f && fgets(parent, sizeof parent, f))
            parent[strcspn(parent, "\n")] = 0;
        if (f)
            fclose(f);
        printf("hello %d of %d on %s sum %d ring %d exe %s parent %s pgid_is_pid %d cpus %s "
               "mempolicy %s forked %d\n", rank, size, host, sum, token, basename(exe), parent,
               getpgrp() == getpid(), c, mpol, ctor_pid != getpid());
        MPI_Finalize();
        return sum == size * (size - 1) / 2 && token == size * (size + 1) / 2 ? 0 : 1;
    }
    if (strcmp(mode, "exit3") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return rank == 1 ? 3 : 0;
    }
    if (strcmp(mode, "abort") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            MPI_Abort(MPI_COMM_WORLD, 7);
        sleep(30);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "sleep") == 0) {
        sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 60);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "stdin") == 0) {
        char line[256];
        if (rank == 0)
            while (fgets(line, sizeof line, stdin))
                printf("rank 0 read: %s", line);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    fprintf(stderr, "mpix: unknown mode %s\n", mode);
    MPI_Finalize();
    return 2;
}
