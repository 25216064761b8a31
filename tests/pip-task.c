/*
 * pip-task: a program built to run as a Process-in-Process task (-fPIE
 * -pie -rdynamic, no TLS of its own), for tests/pip.sh.  Its globals say
 * whether each task has its own; pspawn_pip_get_addr() finds another's.
 *
 *   pip-task info        rank, pid, PSPAWN_RANK, its counter and its address
 *   pip-task share       rank 0 writes into rank 1's mailbox; rank 1 waits for it;
 *                        each task compares its address space, fd table and signal
 *                        handlers with rank 0's (kcmp)
 *   pip-task exit CODE   exits CODE + its PSPAWN_RANK
 *   pip-task crash       PSPAWN_RANK 1 dies of SIGSEGV, the others say they survived
 *   pip-task finish      prints without a newline; a destructor and an atexit
 *                        handler print too
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pspawn.h"

int counter = 100;
int my_pid;
volatile int mailbox;
_Atomic int checked;        /* rank 0's: how many others have compared with it */
static int finishing;

/* The launcher's word for this task's rank and the number of tasks: the
 * pspawn CLI's, Slurm's or Open MPI's. */
static const char *launcher_var(const char *pspawn, const char *slurm, const char *ompi)
{
    const char *v = getenv(pspawn);
    if (!v)
        v = getenv(slurm);
    return v ? v : getenv(ompi);
}

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Rank R's variable SYMBOL, waiting up to 5 s for it to load. */
static void *peer(int r, const char *symbol)
{
    for (int i = 0; i < 500; i++) {
        void *p = pspawn_pip_get_addr(r, symbol);
        if (p || errno != EAGAIN)
            return p;
        nap_ms(10);
    }
    return NULL;
}

static void bye(void)
{
    printf(" atexit");
}

__attribute__((destructor)) static void destructor(void)
{
    if (!finishing)
        return;
    printf(" destructor\n");
    fflush(stdout);
}

static int same(pid_t other, int type)
{
    return syscall(SYS_kcmp, getpid(), other, type, 0, 0) == 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "info";
    const char *env_rank = launcher_var("PSPAWN_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK");
    int rank = pspawn_pip_rank();
    my_pid = getpid();
    counter++;
    if (strcmp(what, "info") == 0) {
        printf("rank %d pid %d env_rank %s counter %d at %p\n", rank, (int)getpid(),
               env_rank ? env_rank : "-", counter, (void *)&counter);
        return 0;
    }
    if (strcmp(what, "share") == 0) {
        int *pid0 = peer(0, "my_pid");
        if (!pid0) {
            printf("rank %d: no address for rank 0's my_pid: %s\n", rank, strerror(errno));
            return 1;
        }
        while (*(volatile int *)pid0 == 0)
            nap_ms(1);
        /* While rank 0 lives: it waits for the others' comparisons. */
        const char *vm = same(*pid0, KCMP_VM) ? "shared" : "own";
        const char *files = same(*pid0, KCMP_FILES) ? "shared" : "own";
        const char *sighand = same(*pid0, KCMP_SIGHAND) ? "shared" : "own";
        const char *size = launcher_var("PSPAWN_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE");
        if (rank != 0) {
            _Atomic int *c = peer(0, "checked");
            if (c)
                (*c)++;
        } else {
            for (int i = 0; i < 500 && checked < (size ? atoi(size) : 1) - 1; i++)
                nap_ms(10);
        }
        if (rank == 0) {
            volatile int *box = peer(1, "mailbox");
            if (!box) {
                printf("rank 0: no address for rank 1's mailbox: %s\n", strerror(errno));
                return 1;
            }
            *box = 42;
        } else if (rank == 1) {
            for (int i = 0; i < 500 && mailbox != 42; i++)
                nap_ms(10);
        }
        printf("rank %d mailbox %d vm %s files %s sighand %s missing %s\n", rank, mailbox,
               vm, files, sighand,
               pspawn_pip_get_addr(0, "no_such_symbol") || errno != ENOENT ? "found?" : "ENOENT");
        return 0;
    }
    if (strcmp(what, "exit") == 0)
        return (argc > 2 ? atoi(argv[2]) : 0) + (env_rank ? atoi(env_rank) : 0);
    if (strcmp(what, "crash") == 0) {
        if (env_rank && strcmp(env_rank, "1") == 0)
            raise(SIGSEGV);
        nap_ms(300);
        printf("rank %s survived\n", env_rank ? env_rank : "-");
        return 0;
    }
    if (strcmp(what, "finish") == 0) {
        finishing = 1;
        atexit(bye);
        printf("rank %s unflushed", env_rank ? env_rank : "-");
        return 0;
    }
    fprintf(stderr, "pip-task: unknown mode %s\n", what);
    return 2;
}
