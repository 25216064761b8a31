#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Transparent interception on real launchers that nobody here wrote: GNU
# make -j, xargs -P, GNU parallel, Python's subprocess and multiprocessing
# (spawn), and MPICH's mpiexec.hydra.  Each runs plain and under
# pspawn --intercept; their output and exit codes must match, and the
# repeated program must have been forked by a zygote.
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
task=$TESTS_BUILDDIR/intercept-task
[ -x "$task" ] || bail "no $task"
unset PSPAWN_INTERCEPT_SCOPE LD_PRELOAD
export PSPAWN_DEBUG=1
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all
python=/usr/bin/python3

# both NAME CMD...: CMD's stdout and exit code plain ($tmp/NAME.plain) and
# intercepted ($tmp/NAME.icpt, stderr in $tmp/NAME.err), sorted; true if
# they match.
both() {
    _n=$1
    shift
    (cd "$tmp" && "$@" 2>/dev/null; echo "exit $?") | sort >"$tmp/$_n.plain"
    (cd "$tmp" && "$pspawn" --intercept --idle 2 -- "$@" 2>"$tmp/$_n.err"; echo "exit $?") |
        sort >"$tmp/$_n.icpt"
    if [ "$(wc -l <"$tmp/$_n.plain")" -gt 1 ] && cmp -s "$tmp/$_n.plain" "$tmp/$_n.icpt"; then
        return 0
    fi
    diff "$tmp/$_n.plain" "$tmp/$_n.icpt" | head -8 | sed 's/^/# /'
    diag_stderr "$tmp/$_n.err" 8
    return 1
}
# forked NAME PROG: how many starts of PROG a zygote forked.
forked() { grep -c "($2) forked by the zygote" "$tmp/$1.err"; }

# GNU make -j: posix_spawn of each recipe's command (no shell).
{
    printf 'all:'
    for i in $(seq 1 12); do printf ' t%d' "$i"; done
    printf '\n'
    for i in $(seq 1 12); do printf 't%d:\n\t@%s exit 0 %d\n' "$i" "$task" "$i"; done
    printf 'fail:\n\t@%s exit 3 x\n' "$task"
} >"$tmp/Makefile"
both make make -s -j2 -f "$tmp/Makefile" all
ok $? "make -j2: the same output and exit code"
n=$(forked make "$task")
[ "$n" -ge 10 ]
ok $? "make -j2: repeated recipes forked by a zygote ($n of 12)"
both make-fail make -s -j2 -f "$tmp/Makefile" fail
ok $? "make: a failing recipe's exit code reaches make as without"

# xargs -P: fork + execvp.
seq 1 20 >"$tmp/items"
both xargs xargs -P2 -n1 -a "$tmp/items" "$task" exit 0
ok $? "xargs -P2 -n1: the same output and exit code"
n=$(forked xargs "$task")
[ "$n" -ge 18 ]
ok $? "xargs -P2: forked by a zygote ($n of 20)"
printf '0\n5\n0\n' >"$tmp/codes"
both xargs-fail xargs -n1 -a "$tmp/codes" "$task" exit
ok $? "xargs: a task's exit code 5 gives xargs' own 123, as without"

# GNU parallel: a shell per job, which execs the command.  It makes each
# job a process group leader; a routed task is in its stand-in's group, so
# it is a member and not its leader (a documented difference): the tasks'
# pgrp_is_own field is left out of the comparison.
if command -v parallel >/dev/null; then
    # parallel's own PARALLEL_* variables and sequence numbers are the same
    # with and without; only the group leadership differs.
    both parallel bash -o pipefail -c "parallel -j2 '$task' exit 0 ::: \$(seq 1 12) | sed 's/ pgrp_is_own=.//'"
    ok $? "parallel -j2: the same output and exit code"
    n=$(forked parallel "$task")
    [ "$n" -ge 10 ]
    ok $? "parallel -j2: forked by a zygote ($n of 12)"
    both parallel-fail bash -o pipefail -c "parallel -j2 '$task' exit ::: 0 2 0 | sed 's/ pgrp_is_own=.//'"
    ok $? "parallel: failed jobs counted in its exit code as without"
else
    skip "GNU parallel is not installed" "parallel -j2"
    skip "GNU parallel is not installed" "parallel -j2: forked"
    skip "GNU parallel is not installed" "parallel: failed jobs"
fi

# Python: subprocess (vfork + execve) and multiprocessing's spawn method.
cat >"$tmp/launch.py" <<PY
import multiprocessing as mp, subprocess, sys

def square(x):
    return x * x

if __name__ == "__main__":
    for i in range(8):
        r = subprocess.run(["$task", "exit", str(i % 3)], stdout=subprocess.PIPE, text=True)
        print("run", i, r.returncode, r.stdout.split(" cwd=")[0])
    try:
        subprocess.run(["$tmp/missing"])
    except FileNotFoundError as e:
        print("missing", e.errno)
    p = subprocess.Popen(["$task", "raise", "15"], stdout=subprocess.DEVNULL)
    print("raise", p.wait())
    with mp.get_context("spawn").Pool(2) as pool:
        print("pool", pool.map(square, range(8)))
PY
both python "$python" "$tmp/launch.py"
ok $? "Python subprocess and multiprocessing (spawn): the same output, codes and errors"
n=$(forked python "$task")
[ "$n" -ge 7 ]
ok $? "Python subprocess: forked by a zygote ($n of 9)"
n=$(forked python "$python")
[ "$n" -ge 1 ]
ok $? "multiprocessing spawn: its interpreters forked by a zygote ($n)"

# MPICH's mpiexec.hydra: hydra_pmi_proxy forks each rank (in a session
# of its own), with PMI's fds.
if command -v mpicc.mpich >/dev/null && command -v mpiexec.hydra >/dev/null; then
    cat >"$tmp/mpi.c" <<C
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: sum %d\n", rank, size, sum);
    MPI_Finalize();
    return rank == 1 ? 7 : 0;
}
C
    mpicc.mpich -o "$tmp/mpi" "$tmp/mpi.c" 2>"$tmp/mpicc.err" || diag_file "$tmp/mpicc.err"
    both hydra mpiexec.hydra -n 4 "$tmp/mpi"
    ok $? "mpiexec.hydra -n 4: the same ranks' output and exit code"
    n=$(forked hydra "$tmp/mpi")
    [ "$n" -ge 3 ]
    ok $? "mpiexec.hydra: ranks forked by a zygote ($n of 4)"
else
    skip "MPICH (mpich, libmpich-dev) is not installed" "mpiexec.hydra -n 4"
    skip "MPICH (mpich, libmpich-dev) is not installed" "mpiexec.hydra: ranks forked"
fi

tap_done
