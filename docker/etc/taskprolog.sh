#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# TaskProlog of the mini-cluster: runs as the user before each task's exec
# (after slurmstepd's user_init, where reuse=job starts the job's zygote);
# its "export K=V" lines land in the task's environment.  Silent unless a
# test asks: tests/e2e/reuse.sh touches ~/.pspawn-taskprolog-ld to have
# every task get a loader variable its job's zygote never saw.
if [ -e "$HOME/.pspawn-taskprolog-ld" ]; then
    echo "export LD_PSPAWN_TASKPROLOG=1"
fi
exit 0
