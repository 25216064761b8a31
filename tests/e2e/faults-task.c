/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * faults-task - the task of the fault-injection soak (tests/e2e/faults.sh).
 *
 *   faults-task DIR LABEL MAX_MS
 *
 * Appends "LABEL RANK PID start" to DIR/LABEL as soon as main runs, sleeps
 * a random 0..MAX_MS ms (so that the soak's injector finds it running),
 * appends "LABEL RANK PID done" and exits 0.  Each line is one write() on
 * an O_APPEND file smaller than PIPE_BUF: lines of tasks on other nodes
 * (DIR is on the shared /home) never interleave.  A rank with two "start"
 * lines ran twice; one with none, in a step that exited 0, was lost.
 *
 * RANK: OMPI_COMM_WORLD_RANK or PMIX_RANK under mpirun, else SLURM_PROCID.
 * The command name becomes "faults-running" at main, so that the injector
 * tells a task that reached main from a zygote (the same program, parked
 * before main) without guessing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *rank(void)
{
    /* mpirun first: prted, started by srun, passes SLURM_PROCID on. */
    const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return v;
    }
    return "-";
}

static int append(const char *file, const char *label, const char *what)
{
    char line[256];
    int len = snprintf(line, sizeof line, "%s %s %d %s\n", label, rank(), (int)getpid(), what);
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || len <= 0 || (size_t)len >= sizeof line) {
        perror(file);
        return -1;
    }
    ssize_t n = write(fd, line, (size_t)len);
    close(fd);
    return n == len ? 0 : -1;
}

int main(int argc, char **argv)
{
    prctl(PR_SET_NAME, "faults-running", 0, 0, 0);
    if (argc != 4) {
        fprintf(stderr, "usage: faults-task DIR LABEL MAX_MS\n");
        return 2;
    }
    char file[4096];
    snprintf(file, sizeof file, "%s/%s", argv[1], argv[2]);
    if (append(file, argv[2], "start") < 0)
        return 3;
    long max_ms = atol(argv[3]);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    srandom((unsigned)(getpid() ^ now.tv_nsec));
    long ms = max_ms > 0 ? random() % (max_ms + 1) : 0;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0)
        ;
    return append(file, argv[2], "done") < 0 ? 4 : 0;
}
