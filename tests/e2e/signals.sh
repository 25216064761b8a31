#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Signals and cancellation: each task gets a signal once; nothing is left.
. "$(dirname "$0")/lib.sh"

# alice's processes on the nodes that run ./task or ./probe: the tasks
# ("./task wait" under mpirun, "/home/alice/e2e/./task wait" as slurmstepd
# builds argv[0]), a step's zygote, its shims, a batch script that runs them.
count_left() {
    local n=0 c
    for node in c1 c2 c3; do
        c=$(on $node "pgrep -u alice -f '(^|/)(task|probe)( |\$)|pspawn-shim' | wc -l")
        n=$((n + c))
    done
    echo $n
}

# until_within SECONDS CMD: run CMD every 0.2 s until it succeeds, for
# SECONDS at most (a bound, not a wait: most checks are true at once).
until_within() {
    local i
    for i in $(seq $(($1 * 5))); do
        eval "$2" && return 0
        sleep 0.2
    done
    return 1
}

for mode in plain pspawn; do
    opt=; [ $mode = pspawn ] && opt=--pspawn
    ax "rm -f sigs.$mode; sbatch -N3 -n6 -o /dev/null --wrap='srun $opt ./task signals $E2E/sigs.$mode' | awk '{print \$4}'" >"$tmp/job.$mode"
    job=$(cat "$tmp/job.$mode")
    for _ in $(seq 100); do
        [ "$(ax "grep -c ready sigs.$mode 2>/dev/null")" = 6 ] && break
        sleep 0.2
    done
    ax "scancel -s USR1 $job"   # the steps only: --full would kill the batch shell too
    # Once each task has said it, 0.5 s more for a second delivery to show.
    until_within 5 "[ \"\$(ax 'grep -c USR1 sigs.$mode 2>/dev/null')\" -ge 6 ]"
    sleep 0.5
    ax "cat sigs.$mode" >"$tmp/sigs.$mode"
done
p=$(grep -c USR1 "$tmp/sigs.plain"); q=$(grep -c USR1 "$tmp/sigs.pspawn")
[ "$q" = "$p" ] && [ "$q" = 6 ]
ok $? "scancel -s USR1: once per task (plain $p, pspawn $q)" || diag_file "$tmp/sigs.pspawn"

# With cgroup.conf's SignalChildrenProcesses=yes (Slurm 24.11), proctrack/
# cgroup signals every process of the step, each task as well as its shim:
# signals=auto must then relay nothing, or each task gets each signal
# twice.  (The cluster has the setting when docker/etc/cgroup.conf has it.)
# Several rounds: the direct and the relayed signal could merge into one.
children=$(on c1 "grep -Eiq '^[[:space:]]*SignalChildrenProcesses[[:space:]]*=[[:space:]]*(yes|true|1)' /etc/slurm/cgroup.conf && echo yes")
proctrack=$(ax "scontrol show config" | awk '$1 == "ProctrackType" { print $3 }')
if [ "$children" = yes ] && [ "$proctrack" = proctrack/cgroup ]; then
    bad=0
    for round in 1 2 3; do
        ax "rm -f sigs.sc; sbatch -N3 -n6 -o /dev/null --wrap='srun --pspawn ./task signals $E2E/sigs.sc' | awk '{print \$4}'" >"$tmp/job.sc"
        job=$(cat "$tmp/job.sc")
        for _ in $(seq 100); do
            [ "$(ax "grep -c ready sigs.sc 2>/dev/null")" = 6 ] && break
            sleep 0.2
        done
        ax "scancel -s USR1 $job"
        until_within 5 "[ \"\$(ax 'grep -c USR1 sigs.sc 2>/dev/null')\" -ge 6 ]"
        sleep 0.5
        ax "cat sigs.sc" >"$tmp/sigs.sc.$round"
        [ "$(grep -c USR1 "$tmp/sigs.sc.$round")" = 6 ] || bad=$round
        ax "scancel $job" >/dev/null 2>&1
    done
    [ $bad = 0 ]
    ok $? "SignalChildrenProcesses=yes: scancel -s USR1 reaches each --pspawn task once, 3 rounds (not relayed as well)" ||
        diag_file "$tmp/sigs.sc.$bad"
else
    skip "the cluster runs without SignalChildrenProcesses=yes under proctrack/cgroup ($proctrack)" \
        "SignalChildrenProcesses=yes: scancel -s USR1 reaches each --pspawn task once"
fi

for mode in plain pspawn; do
    opt=; [ $mode = pspawn ] && opt=--pspawn
    ax "sbatch -N3 -n6 -o /dev/null --wrap='srun $opt ./task wait' | awk '{print \$4}'" >"$tmp/job2"
    job=$(cat "$tmp/job2")
    until_within 10 '[ "$(count_left)" -ge 6 ]'
    running=$(count_left)
    ax "scancel $job"
    until_within 10 '[ "$(count_left)" = 0 ]'
    left=$(count_left)
    [ "$running" -ge 6 ] && [ "$left" = 0 ]
    ok $? "$mode: scancel leaves no task process on any node ($running before, $left after)"
done

for mode in plain pspawn; do
    opt=; [ $mode = pspawn ] && opt=--pspawn
    docker exec -u alice -w $E2E "$CTL" bash -c "rm -f srun.err; srun -v $opt -N3 -n6 ./task wait 2>srun.err & echo \$! > srun.pid; wait" >/dev/null 2>&1 &
    runner=$!
    # The SIGINTs once srun has heard from each node that its tasks
    # started (srun -v: "Node cN, K tasks started"), as a user sees them
    # run: while srun still waits for its allocation (the last job's
    # epilog) they do not end the step.
    for _ in $(seq 100); do
        [ "$(ax "grep -c 'tasks started' srun.err 2>/dev/null")" = 3 ] && [ "$(count_left)" -ge 6 ] && break
        sleep 0.2
    done
    running=$(count_left)
    # Slurm 26.05's srun now and then takes the second SIGINT, 0.3 s after
    # the first, for a first one too ("interrupt (one more within 1 sec to
    # abort)" twice; plain srun as often as --pspawn): the pair is sent
    # again then, up to 3 times, and said.
    hung=1 pairs=0
    while [ $hung = 1 ] && [ $pairs -lt 3 ]; do
        pairs=$((pairs + 1))
        ax "kill -INT \$(cat srun.pid); sleep 0.3; kill -INT \$(cat srun.pid)"
        for _ in $(seq 50); do kill -0 $runner 2>/dev/null || break; sleep 0.2; done
        kill -0 $runner 2>/dev/null || hung=0
        firsts=$(ax "grep -c 'one more within 1 sec to abort' srun.err")
        [ $hung = 1 ] && [ "$firsts" = $((2 * pairs)) ] &&
            diag "$mode: srun took both SIGINTs of pair $pairs for first ones (Slurm's $(ax 'srun --version')): sent again"
        [ $hung = 1 ] && [ "$firsts" != $((2 * pairs)) ] && break
    done
    if [ $hung = 1 ]; then
        diag "$mode: srun still running 10 s after $pairs pair(s) of SIGINTs: the job cancelled"
        ax "grep -v -e '^srun: debug' -e '^srun: jobid' srun.err" | tail -n 8 | sed 's/^/#   | /'
        ax "scancel -u alice" >/dev/null 2>&1
    fi
    wait $runner
    until_within 10 '[ "$(count_left)" = 0 ]'
    left=$(count_left)
    [ "$running" -ge 6 ] && [ "$left" = 0 ] && [ $hung = 0 ]
    ok $? "$mode: srun interrupted twice with SIGINT leaves no task process ($running before, $left after)"
done

tap_done
