#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fault-injection soak: FAULTS_STEPS steps (default 50) as alice, srun
# --pspawn (-N1..3, -n1..12, some with sub-zygotes) and salloc + mpirun
# --mca odls pspawn, mixed, 3 at a time, while on every node an injector
# (root) SIGKILLs, or SIGSTOPs for 0.1-3 s, her zygotes, sub-zygotes,
# pspawn-shims and tasks at random moments (tests/e2e/faults.py says
# what each part does).  Then: every step ended within its time limit,
# every exit code (srun's, sacct's) is what the tasks did, no task lost,
# none ran twice, no process of alice's and no cgroup of the soak's jobs
# left on any node.
#
#   FAULTS_STEPS=1000 tests/e2e/faults.sh    the long run (README)
#   FAULTS_SEED=N      the same plan of steps and the same random choices
#                      of faults again (their timing differs)
#   FAULTS_WORKERS=K   steps at a time (default 3)
#   FAULTS_TIMEOUT=S   a step still running after S s is a hang (default
#                      100; srun -t 1 / salloc -t 1 end it after 60 s)
#   FAULTS_SAVE=DIR    keep the run's files there (steps, faults, outputs)
. "$(dirname "$0")/lib.sh"

steps=${FAULTS_STEPS:-50}
workers=${FAULTS_WORKERS:-3}
timeout=${FAULTS_TIMEOUT:-100}
seed=${FAULTS_SEED:-$((RANDOM * 32768 + RANDOM))}
nodes="c1 c2 c3"
run=run-$(date +%s)-$$
dir=$E2E/faults/$run

ax "test -x faults-task" || bail "no $E2E/faults-task (tests/e2e/setup.sh builds it)"
docker exec -i -u alice "$CTL" bash -c "mkdir -p $dir && cat > $dir/faults.py" <"$repo/tests/e2e/faults.py" ||
    bail "cannot write $dir"
uid=$(ax "id -u")
diag "steps $steps, $workers at a time, seed $seed, files in $dir"

# Nothing of alice's may run before: what is left at the end is the soak's.
for _ in $(seq 60); do
    left=0
    for n in $nodes; do left=$((left + $(on "$n" "ps -u alice -o pid= | wc -l"))); done
    [ "$left" = 0 ] && break
    sleep 0.5
done
[ "$left" = 0 ] || bail "alice has $left processes on the nodes before the soak"

for n in $nodes; do
    on "$n" "touch /tmp/faults-$run"
    docker exec "pspawn-$n" python3 "$dir/faults.py" inject --uid "$uid" --node "$n" --dir "$dir" \
        --run "/tmp/faults-$run" --seed "$((seed + ${n#c}))" >"$tmp/inject-$n.err" 2>&1 &
done
t0=$(date +%s)
nompi=
have_odls_pspawn || { nompi=--no-mpirun; diag "srun steps only: $NO_ODLS_WHY"; }
ax "python3 $dir/faults.py drive --dir $dir --prog $E2E/faults-task --steps $steps --workers $workers --seed $seed --timeout $timeout $nompi" \
    >"$tmp/drive.err" 2>&1
drive_rc=$?
t1=$(date +%s)
for n in $nodes; do on "$n" "rm -f /tmp/faults-$run"; done
# Each injector ends within its last stop (3 s) and pause (1 s).
for _ in $(seq 40); do
    [ -z "$(jobs -pr)" ] && break
    sleep 0.5
done
for n in $nodes; do
    [ -s "$tmp/inject-$n.err" ] && { diag "injector on $n:"; diag_file "$tmp/inject-$n.err" 10; }
done
[ $drive_rc = 0 ] || { diag "driver exit $drive_rc:"; diag_file "$tmp/drive.err" 20; }

# The soak's jobs end, and with them every process of alice's (a step's
# processes go with its cgroup; slurmstepd waits KillWait, 10 s, at most).
for _ in $(seq 60); do
    busy=$(ax "squeue -h -u alice | wc -l")
    for n in $nodes; do busy=$((busy + $(on "$n" "ps -u alice -o pid= | wc -l"))); done
    [ "$busy" = 0 ] && break
    sleep 0.5
done
left=0
: >"$tmp/left"
for n in $nodes; do
    on "$n" "ps -u alice -o pid=,ppid=,stat=,etimes=,comm=,args=" | sed "s/^/$n: /" >>"$tmp/left.$n"
    c=$(wc -l <"$tmp/left.$n")
    left=$((left + c))
    cat "$tmp/left.$n" >>"$tmp/left"
done

ax "python3 $dir/faults.py check --dir $dir" >"$tmp/check" 2>&1
fig() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/check"; }

# Cgroups: any job_N directory, on any node, of a job of the soak (all
# ended now) is left over, once slurmd has had 30 s to remove it (a job's
# extern step, PrologFlags=Contain, is torn down after its last step).
ax "cat $dir/jobs.txt" >"$tmp/jobs" 2>/dev/null
for _ in $(seq 30); do
    cg=0
    : >"$tmp/cgroups"
    for n in $nodes; do
        # cgroup v1: CONTROLLER/slurm_NODE/uid_U/job_N; v2: .../slurmstepd.scope/job_N
        on "$n" "find /sys/fs/cgroup -maxdepth 5 -type d -name 'job_*' 2>/dev/null" >"$tmp/cg.$n"
        while read -r d; do
            j=${d##*/job_}
            grep -qx "$j" "$tmp/jobs" && { echo "$n: $d" >>"$tmp/cgroups"; cg=$((cg + 1)); }
        done <"$tmp/cg.$n"
    done
    [ "$cg" = 0 ] && break
    sleep 1
done

# Leave the cluster clean for whatever runs next: what the soak left, by pid.
for n in $nodes; do
    pids=$(awk '{ print $2 }' "$tmp/left.$n" | tr '\n' ' ')
    [ -n "${pids// }" ] && on "$n" "kill -CONT $pids; kill -KILL $pids" 2>/dev/null
done
[ -n "${FAULTS_SAVE:-}" ] && mkdir -p "$FAULTS_SAVE" && docker cp "$CTL:$dir/." "$FAULTS_SAVE/" >/dev/null &&
    cp "$tmp"/left "$tmp"/cgroups "$tmp"/check "$FAULTS_SAVE/" 2>/dev/null

n_steps=$(fig steps)
[ "${n_steps:-0}" = "$steps" ] && [ $drive_rc = 0 ]
ok $? "$steps steps ran in $((t1 - t0)) s: srun --pspawn $(fig srun), mpirun --mca odls pspawn $(fig mpirun) (driver exit $drive_rc)" ||
    diag_file "$tmp/check" 20
faults=$(fig faults)
[ "${faults:-0}" -ge $((steps / 5)) ] && [ "$(fig zygote_kill)" -gt 0 ]
ok $? "faults injected: $faults (zygotes $(fig zygote_kill) killed, $(fig early_zygote_kills) of these and the sub-zygotes' in their first 0.5 s or with a task held, $(fig zygote_stop) stopped; sub-zygotes $(fig subzygote_kill)/$(fig subzygote_stop); shims $(fig shim_kill)/$(fig shim_stop); tasks $(fig task_kill)/$(fig task_stop))"
# show KIND: the checker's failures of that kind.
show() { grep "^fail $1" "$tmp/check" | head -"${2:-10}" | sed 's/^fail /#   /'; }
[ "$(fig hangs)" = 0 ]
ok $? "every step ended within its time limit (hangs: $(fig hangs))" ||
    { show hang; ax "head -n 40 $dir/hang-*.txt" 2>/dev/null | sed 's/^/#   /'; }
[ "$(fig mismatches)" = 0 ]
ok $? "every exit code (srun's, sacct's) is what the tasks did: $(fig killed_steps) steps with a task or shim killed show it, the rest exit 0 (mismatches: $(fig mismatches), kills after the victim's end: $(fig late_kills))" ||
    show mismatch
[ "$(fig losses)" = 0 ]
ok $? "no task lost (losses: $(fig losses))" || show loss
[ "$(fig duplicates)" = 0 ] && [ "$(fig anomalies)" = 0 ]
ok $? "no task ran twice, no line of a task the step did not have (duplicates: $(fig duplicates), anomalies: $(fig anomalies))" ||
    { show duplicate; show anomaly; }
[ "$left" = 0 ]
ok $? "no process of alice's left on any node ($left)" || diag_file "$tmp/left" 20
[ "$cg" = 0 ]
ok $? "no cgroup of the soak's jobs left on any node ($cg)" || diag_file "$tmp/cgroups" 20
diag "faults summary: steps $n_steps, faults injected $faults, hangs $(fig hangs), losses $(fig losses), duplicates $(fig duplicates), leftovers $left processes + $cg cgroups, exit-code mismatches $(fig mismatches) (seed $seed, $((t1 - t0)) s)"
ax "rm -rf $dir" >/dev/null 2>&1
tap_done
