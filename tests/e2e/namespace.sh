#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# namespace/linux (Slurm >= 25.11) and its predecessor job_container/tmpfs:
# the tasks a zygote forks are in the job's namespaces (namespace/linux:
# mount and PID; job_container/tmpfs: mount, with a private /tmp) and in
# their step's cgroups, as plain tasks are.  tests/e2e/run runs it on a
# cluster started with PSPAWN_NAMESPACE=namespace/linux (the sid flavour)
# or PSPAWN_JOBCONTAINER=job_container/tmpfs (trixie's Slurm 24.11);
# elsewhere it says so and skips.
. "$(dirname "$0")/lib.sh"

config=$(ax "scontrol show config")
if echo "$config" | grep -q '^NamespaceType *= *namespace/linux'; then
    private_pid=1
elif echo "$config" | grep -q '^JobContainerType *= *job_container/tmpfs'; then
    private_pid=0
else
    skip "neither NamespaceType=namespace/linux nor JobContainerType=job_container/tmpfs (the cluster was not started with PSPAWN_NAMESPACE or PSPAWN_JOBCONTAINER)" \
        "tasks in the job's namespaces"
    tap_done
fi

# Each task: its pid and mount namespaces, whether it is a fork of a zygote
# (libpspawn's proxy mapped: bash builtins only, so that nothing else's
# maps are read), its /tmp, and its cgroups.
cat >"$tmp/report.sh" <<'EOF'
m=0
while read -r l; do case $l in *libpspawn-proxy*) m=1 ;; esac; done </proc/$$/maps
echo "ns task=$SLURM_PROCID step=$SLURM_STEP_ID pidns=$(readlink /proc/$$/ns/pid) mntns=$(readlink /proc/$$/ns/mnt) forked=$m tmp=$(cat /tmp/pspawn-ns-mark 2>/dev/null || echo none) pid1=$(cat /proc/1/comm)"
while read -r l; do echo "cg step=$SLURM_STEP_ID task=$SLURM_PROCID cgroup=$l"; done </proc/$$/cgroup
EOF
docker exec -i -u alice "$CTL" tee "$E2E/ns-report.sh" <"$tmp/report.sh" >/dev/null

# One job, three steps on one node: a plain step writes a mark into the
# job's private /tmp, then a plain and a --pspawn step report.
# In these containers Slurm 26.05's namespace/linux now and then fails to
# set up a job's namespaces before any step exists (slurmd: "_create_ns: ns
# mnt mount failed: Invalid argument"; the allocation is revoked, plain
# jobs alike: 7 of 10 `srun -N3 -n6 hostname` once): such a job is
# submitted again, up to 8 times, and said so.
for try in 1 2 3 4 5 6 7 8; do
    ax "salloc -N1 -n4 -w c1 bash -c 'srun -n1 bash -c \"echo \\\$SLURM_JOB_ID > /tmp/pspawn-ns-mark\";
        srun -n4 bash ns-report.sh; srun --pspawn -n4 bash ns-report.sh'" >"$tmp/out" 2>&1
    # (Slurm 24.11 with job_container/tmpfs says "revoked" as every job
    # ends, after its steps: only a job that ran none is submitted again.)
    grep -q '^ns task=' "$tmp/out" || ! grep -q 'has been revoked' "$tmp/out" && break
    diag "try $try: Slurm revoked the job's allocation before any step ran (its namespace setup): submitted again"
done
job_tmp=$(grep -m1 -o 'tmp=[^ ]*' "$tmp/out" | cut -d= -f2)
grep '^ns task=.* step=1 ' "$tmp/out" >"$tmp/plain"
grep '^ns task=.* step=2 ' "$tmp/out" >"$tmp/pspawn"
diag "plain:  $(head -n1 "$tmp/plain")"
diag "pspawn: $(head -n1 "$tmp/pspawn")"

n=$(grep -c 'forked=1' "$tmp/pspawn")
[ "$n" = 4 ] && [ "$(grep -c 'forked=0' "$tmp/plain")" = 4 ]
ok $? "the --pspawn step's 4 tasks are forks of a zygote ($n), the plain step's are not" ||
    diag_file "$tmp/out"

field() { grep -o " $1=[^ ]*" "$2" | sort -u; }
host_pidns=$(on c1 "readlink /proc/1/ns/pid")
# (job_container/tmpfs gives a job no PID namespace: both steps' are the
# node's)
is_nodes=0; [ "$(field pidns "$tmp/plain")" = " pidns=$host_pidns" ] && is_nodes=1
[ "$(field pidns "$tmp/pspawn")" = "$(field pidns "$tmp/plain")" ] &&
    [ "$(field pidns "$tmp/plain" | wc -l)" = 1 ] && [ $is_nodes != $private_pid ]
ok $? "one PID namespace for both steps' tasks, $([ $private_pid = 1 ] && echo "the job's, not the node's" || echo "the node's, as plain tasks'") ($(field pidns "$tmp/pspawn" | tr -d '\n') / node $host_pidns)"

host_mntns=$(on c1 "readlink /proc/1/ns/mnt")
[ "$(field mntns "$tmp/pspawn")" = "$(field mntns "$tmp/plain")" ] &&
    [ "$(field mntns "$tmp/plain" | wc -l)" = 1 ] &&
    [ "$(field mntns "$tmp/plain")" != " mntns=$host_mntns" ]
ok $? "one mount namespace for both steps' tasks, the job's ($(field mntns "$tmp/pspawn" | tr -d '\n') / node $host_mntns)"

[ -n "$job_tmp" ] && [ "$job_tmp" != none ] && [ "$(field tmp "$tmp/pspawn")" = " tmp=$job_tmp" ] &&
    ! on c1 "test -e /tmp/pspawn-ns-mark"
ok $? "the forked tasks see the job's private /tmp (mark $job_tmp), the node does not"

# Each forked task is in the cgroups a plain task of the same rank is in
# (with its own step's name): the step's, and the task plugin's task_N.
cgroups() { grep "^cg step=$1 " "$tmp/out" | sed -E "s/^cg step=$1 //; s|/step_$1/|/step_S/|; s|/step_$1\$|/step_S|" | sort; }
cgroups 1 >"$tmp/cg.plain"
cgroups 2 >"$tmp/cg.pspawn"
n_task=$(grep -c '/step_S/task_' "$tmp/cg.pspawn")
diff "$tmp/cg.plain" "$tmp/cg.pspawn" >"$tmp/cg.diff" && [ "$n_task" -ge 4 ] &&
    [ "$(grep -c 'step_S' "$tmp/cg.pspawn")" -ge 4 ]
ok $? "each forked task is in its step's cgroups and its own task_N, as the plain task of its rank ($n_task per-task lines)" ||
    { diag_file "$tmp/cg.diff" 20; diag_file "$tmp/cg.pspawn" 12; }
tap_done
