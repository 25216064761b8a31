#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the programs the end-to-end tests launch, as alice, in the shared
# /home: the tests' task, probe and timers, a static task, an MPI program.
. "$(dirname "$0")/lib.sh"
docker exec -u alice "$CTL" mkdir -p "$E2E" || exit 1
docker exec -i -u alice "$CTL" tee "$E2E/mpi.c" >/dev/null <<'MPI'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("hello %d of %d on %s sum %d\n", rank, size, host, sum);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
MPI
ax "gcc -D_GNU_SOURCE -O2 -o task /usr/src/libpspawn/tests/fixtures/task.c &&
    gcc -D_GNU_SOURCE -O2 -static -o task-static /usr/src/libpspawn/tests/fixtures/task.c &&
    gcc -D_GNU_SOURCE -O2 -o probe /usr/src/libpspawn/tests/fixtures/probe.c &&
    gcc -D_GNU_SOURCE -O2 -o timers /usr/src/libpspawn/tests/fixtures/timers.c &&
    mpicc -O2 -o mpi mpi.c &&
    mpicc -O2 -o mpix /usr/src/libpspawn/tests/e2e/mpix.c && cp mpix mpix2" || exit 1
bx "gcc -O2 -I/usr/src/libpspawn/libpspawn/wire -I/usr/src/libpspawn/spank -o hostile /usr/src/libpspawn/tests/e2e/hostile.c && gcc -O2 -I/usr/src/libpspawn/libpspawn/wire -o reuse-pid /usr/src/libpspawn/tests/e2e/reuse-pid.c" && ax "gcc -O2 -o faults-task /usr/src/libpspawn/tests/e2e/faults-task.c" || exit 1
# ssh between the nodes for alice (mpirun with a host list starts prted
# over ssh); the key is in the shared /home.
ax "mkdir -p ~/.ssh && chmod 700 ~/.ssh &&
    { [ -f ~/.ssh/id_ed25519 ] || ssh-keygen -q -t ed25519 -N '' -f ~/.ssh/id_ed25519; } &&
    cp ~/.ssh/id_ed25519.pub ~/.ssh/authorized_keys && chmod 600 ~/.ssh/authorized_keys &&
    printf 'StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\nLogLevel ERROR\nBatchMode yes\n' > ~/.ssh/config"
