# SPDX-License-Identifier: BSD-3-Clause
"""Where an mpi4py rank's start goes (bench/srun-python runs it): the time
from the process's start (/proc/self/stat, clock ticks) to its first line,
numpy's import, `from mpi4py import MPI` (MPI_Init) and the first
allreduce (which waits for the slowest rank), on stderr, one line a rank."""
import os
import sys


def since_start():
    with open('/proc/self/stat') as f:
        start = int(f.read().rsplit(')', 1)[1].split()[19]) / os.sysconf('SC_CLK_TCK')
    with open('/proc/uptime') as f:
        return float(f.read().split()[0]) - start


t0 = since_start()
import numpy  # noqa: E402
t1 = since_start()
from mpi4py import MPI  # noqa: E402
t2 = since_start()
MPI.COMM_WORLD.allreduce(1)
t3 = since_start()
print('start->main %.0f ms, numpy %.0f, mpi4py.MPI (MPI_Init) %.0f, allreduce %.0f'
      % (t0 * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000), file=sys.stderr)
