#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Python on the mini-cluster: numpy/scipy and mpi4py programs give the same
# output through srun --pspawn and mpirun --mca odls pspawn as without,
# and their tasks start with the preload modules already imported (a warm
# Python zygote per node); a job's zygote imports what its first step's
# tasks learned, for the later steps.
. "$(dirname "$0")/lib.sh"

ax "cat > sci.py" <<'PY'
import sys
warm = 'scipy.linalg' in sys.modules
import numpy as np
import scipy.linalg, scipy.sparse, scipy.optimize
a = np.arange(25, dtype=float).reshape(5, 5) + np.eye(5)
print('det', round(scipy.linalg.det(a), 6), scipy.sparse.eye(3).sum(),
      round(scipy.optimize.brentq(lambda x: x * x - 2, 0, 2), 9))
print('warm', warm, file=sys.stderr)
PY
ax "cat > allreduce.py" <<'PY'
import sys
warm = 'numpy' in sys.modules
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
total = comm.allreduce(np.arange(4) * (comm.rank + 1), op=MPI.SUM)
print('rank', comm.rank, 'of', comm.size, 'sum', total.tolist())
print('warm', warm, file=sys.stderr)
PY
mods=numpy:scipy.linalg:scipy.sparse:scipy.optimize
out() { grep -a -v '^warm' "$1" | sort; }
warm_count() { grep -ac '^warm True' "$1"; }

both sci "-N2 -n4 python3 sci.py" "--pspawn=on,modules=$mods"
[ $rc_plain = 0 ] && [ $rc_pspawn = 0 ] && diff <(out "$tmp/sci.plain") <(out "$tmp/sci.pspawn") >"$tmp/sci.diff" &&
    [ "$(out "$tmp/sci.plain" | grep -c '^det ')" = 4 ]
ok $? "srun --pspawn: numpy/scipy output equals plain srun's" ||
    { diag_file "$tmp/sci.diff"; diag_file "$tmp/sci.pspawn" 8; }
[ "$(warm_count "$tmp/sci.pspawn")" = 4 ] && [ "$(warm_count "$tmp/sci.plain")" = 0 ]
ok $? "srun --pspawn=on,modules=...: all 4 tasks started with scipy imported (plain: none)" ||
    diag_file "$tmp/sci.pspawn" 8

# A job's zygote (reuse=job) imports what a step's tasks learned while it
# is idle after them: the first step's tasks import scipy themselves
# (nothing learned yet), the later steps' start with it imported, forked
# by the same zygote on each node (no new start on their path).
ax "cat > learnjob.py" <<'PY'
import os, socket, sys
warm = 'scipy.linalg' in sys.modules
import numpy as np
import scipy.linalg
print('task', os.environ['SLURM_STEP_ID'], socket.gethostname(), os.getppid(), 'warm', warm,
      round(scipy.linalg.det(np.eye(3) * 2), 6))
PY
ax "rm -rf ~/.cache/pspawn/python; salloc -N2 -n4 --ntasks-per-node=2 bash -c '
    for s in 0 1 2; do srun --pspawn=on,reuse=job,fanout=none -N2 -n4 python3 learnjob.py; done'" \
    >"$tmp/learnjob" 2>&1
ljrc=$?
steps_warm() { awk -v s="$1" '$1 == "task" && $2 == s && $5 == "warm" && $6 == "True" && $7 == "8.0"' \
    "$tmp/learnjob" | wc -l; }
steps_cold() { awk -v s="$1" '$1 == "task" && $2 == s && $6 == "False" && $7 == "8.0"' \
    "$tmp/learnjob" | wc -l; }
parents() { awk -v s="$1" '$1 == "task" && $2 == s { print $3, $4 }' "$tmp/learnjob" | sort -u; }
[ $ljrc = 0 ] && [ "$(steps_cold 0)" = 4 ] && [ "$(steps_warm 1)" = 4 ] && [ "$(steps_warm 2)" = 4 ]
ok $? "srun --pspawn=reuse=job: step 0's 4 tasks import scipy themselves, steps 1 and 2 start with it imported" ||
    diag_file "$tmp/learnjob" 20
[ "$(parents 0 | wc -l)" = 2 ] && [ "$(parents 0)" = "$(parents 1)" ] && [ "$(parents 1)" = "$(parents 2)" ]
ok $? "srun --pspawn=reuse=job: the 3 steps' tasks forked by the same zygote on each node" ||
    diag_file "$tmp/learnjob" 20

if have_srun_pmix; then
    both mpi "--mpi=pmix -N2 -n4 python3 allreduce.py" "--pspawn=on,modules=numpy"
    [ $rc_plain = 0 ] && [ $rc_pspawn = 0 ] && diff <(out "$tmp/mpi.plain") <(out "$tmp/mpi.pspawn") >"$tmp/mpi.diff" &&
        [ "$(out "$tmp/mpi.plain" | grep -c 'of 4 sum \[0, 10, 20, 30\]')" = 4 ]
    ok $? "srun --mpi=pmix --pspawn: mpi4py allreduce output equals plain srun's (rc $rc_plain, $rc_pspawn)" ||
        { diag_file "$tmp/mpi.diff"; diag_file "$tmp/mpi.plain" 30; diag_file "$tmp/mpi.pspawn" 30; }
    [ "$(warm_count "$tmp/mpi.pspawn")" = 4 ]
    ok $? "srun --mpi=pmix --pspawn: the 4 ranks started warm (numpy imported, MPI initialised by each)" ||
        diag_file "$tmp/mpi.pspawn" 30
else
    skip "$NO_PMIX_WHY" "srun --mpi=pmix --pspawn: mpi4py allreduce output equals plain srun's"
    skip "$NO_PMIX_WHY" "srun --mpi=pmix --pspawn: the 4 ranks started warm"
fi

if have_odls_pspawn; then
    for m in default pspawn; do
        extra=
        [ $m = pspawn ] && extra="--prtemca odls_pspawn_modules numpy"
        ax "mpirun --host c1:2,c2:2 --mca odls $(odls_name $m) $extra -n 4 python3 allreduce.py" >"$tmp/mrun.$m" 2>&1
        eval "mrc_$m=\$?"
    done
    [ $mrc_default = 0 ] && [ $mrc_pspawn = 0 ] &&
        diff <(out "$tmp/mrun.default") <(out "$tmp/mrun.pspawn") >"$tmp/mrun.diff" &&
        [ "$(out "$tmp/mrun.default" | grep -c 'of 4 sum')" = 4 ]
    ok $? "mpirun --mca odls pspawn: mpi4py allreduce output equals the default component's" ||
        { diag_file "$tmp/mrun.diff"; diag_file "$tmp/mrun.pspawn" 8; }
    [ "$(warm_count "$tmp/mrun.pspawn")" = 4 ]
    ok $? "mpirun --mca odls pspawn: the 4 ranks started warm" || diag_file "$tmp/mrun.pspawn" 8
else
    skip "$NO_ODLS_WHY" "mpirun --mca odls pspawn: mpi4py allreduce output equals the default component's"
    skip "$NO_ODLS_WHY" "mpirun --mca odls pspawn: the 4 ranks started warm"
fi

tap_done
