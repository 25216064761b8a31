#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A hostile second user: bob, on the compute nodes, against alice's srun
# --pspawn steps (tests/e2e/hostile.c is his tool).  He binds the step's
# abstract names before her step starts, as far as he can predict them
# (the zygote's @pspawn-UID.JOB.STEP, its .lock and .fail: her job id is
# the next one squeue and sacct show, or that of her pending job; steps
# count from 0; the random part the plugin appends to each name is what he
# cannot know, so these binds must not matter), then, while a step of hers
# runs, connects to every name of hers he finds in /proc/net/unix (the
# mover has none) and sends junk, oversized messages, a request with a
# 1 GiB memfd, a mover request with a made-up token, and tries every way
# to signal, trace or read her processes; and floods her names with
# connections while another step of hers starts.  Every attempt must be
# refused, and each of her steps must finish at once with plain srun's
# output, every task in its own cgroups (by exec where it must).  Last,
# root (tests/e2e/reuse-pid.c) gives the pid of her job's zygote's
# listener to a process of bob's while the name is still held, as she
# could by cycling pids: root must not kill bob's process at her job's
# end.  Every command runs under `timeout`.
. "$(dirname "$0")/lib.sh"

nodes="c1 c2 c3"
# bn NODE CMD: CMD as bob on a compute node, in his home.
bn() { docker exec -u bob -w /home/bob "pspawn-$1" bash -c "$2"; }
bx "test -x hostile" || bail "no ~bob/hostile (tests/e2e/setup.sh builds it)"
auid=$(ax "id -u")

# Each task says who it is and where it runs, whether it is a fork of a
# zygote (bash builtins only), and its cgroups; then sleeps $1 s if given.
ax "cat > hostile-task.sh" <<'EOF'
m=0
while read -r l; do case $l in *libpspawn-proxy*) m=1 ;; esac; done </proc/$$/maps
echo "task $SLURM_PROCID of $SLURM_NTASKS on $(hostname) job $SLURM_JOB_ID step $SLURM_STEP_ID forked $m"
while read -r l; do echo "cg $SLURM_PROCID $l"; done </proc/$$/cgroup
[ -z "$1" ] || sleep "$1"
EOF
step="-N3 -n6 bash hostile-task.sh"
# norm: what must equal plain srun's (not the job, step, nor the fork flag).
norm() {
    sed -E '/^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$/d;
            s/ job [0-9]+ step [0-9]+ forked [01]$//; s/job_[0-9]+/job_J/g; s/step_[0-9]+/step_S/g' "$1" | sort
}
# run_alice NAME ARGS: `srun ARGS` as alice (under timeout): output in
# $tmp/NAME, exit code $rc, time $ms (milliseconds).
run_alice() {
    local t0=$(date +%s%N)
    ax "timeout -k 5 150 srun $2" >"$tmp/$1" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}
run_alice plain "$step"
norm "$tmp/plain" >"$tmp/plain.norm"
t_plain=$ms
[ $rc = 0 ] && [ "$(grep -c '^task ' "$tmp/plain")" = 6 ]
ok $? "plain srun $step: 6 tasks, exit 0 ($ms ms)" || diag_file "$tmp/plain" 10

# next_job: the job id the next submission gets, as anybody can see it.
next_job() {
    bx "{ scontrol -o show jobs | grep -o '^JobId=[0-9]*' | cut -d= -f2; sacct -a -X -n -P -o JobID -S now-1days; echo 0; } |
        grep -E '^[0-9]+\$' | sort -n | tail -1" | awk '{ print $1 + 1 }'
}

# squat TAG FLAGS NAMES: bob binds NAMES on every node (hostile squat
# FLAGS), until unsquat TAG; each bind must succeed.
squat() {
    local tag=$1 flags=$2 names=$3 n
    for n in $nodes; do
        bn $n "rm -f sq.$tag.$n.*; timeout 300 ./hostile squat $flags 280 $names >sq.$tag.$n.out 2>&1 & echo \$! >sq.$tag.$n.pid"
    done
    for n in $nodes; do
        for _ in $(seq 50); do
            [ "$(bn $n "grep -c '^squat ' sq.$tag.$n.out 2>/dev/null")" = $(( $(wc -w <<<"$names") * 3 )) ] && break
            sleep 0.1
        done
    done
    local held=0
    for n in $nodes; do held=$((held + $(bn $n "grep -c '^squat .* seqpacket ok$' sq.$tag.$n.out"))); done
    [ "$held" = $(( $(wc -w <<<"$names") * 3 )) ]
    ok $? "$tag: bob holds $(wc -w <<<"$names") names of alice's next steps on each node before they start" ||
        for n in $nodes; do bn $n "grep -v ' ok$' sq.$tag.$n.out" | head -3 | sed "s/^/# $n: /"; done
}
unsquat() {
    local tag=$1 n
    : >"$tmp/squat.$tag"
    for n in $nodes; do
        bn $n "kill \$(cat sq.$tag.$n.pid) 2>/dev/null; for i in \$(seq 50); do grep -q squat-done sq.$tag.$n.out && break; sleep 0.1; done; cat sq.$tag.$n.out" |
            sed "s/^/$n: /" >>"$tmp/squat.$tag"
    done
}
# Bob's squatters answer each connection with a zygote's hello, a "task
# started" and a mover's "moved" (bait), and read what comes: alice's side
# must have hung up without a byte (no token, no request), whoever answered.
heard_nothing() {
    local bytes conns
    bytes=$(awk '/squat-done/ { sub("bytes=", "", $NF); s += $NF } END { print s + 0 }' "$tmp/squat.$1")
    conns=$(awk '/squat-done/ { sub("foreign=", "", $(NF-1)); s += $(NF-1) } END { print s + 0 }' "$tmp/squat.$1")
    [ "$(grep -c squat-done "$tmp/squat.$1")" = 3 ] && [ "$bytes" = 0 ]
    ok $? "$1: alice's side connected $conns times to bob's names and sent nothing ($bytes bytes)" ||
        { grep -v ' bytes=0' "$tmp/squat.$1" | grep '^c.: conn ' | head -5 | sed 's/^/# /'; }
}
# alice_fine TAG NAME: her step ran as plain srun's did, at once.
alice_fine() {
    local forked
    forked=$(grep -c ' forked 1$' "$tmp/$2")
    norm "$tmp/$2" >"$tmp/$2.norm"
    [ $rc = 0 ] && cmp -s "$tmp/plain.norm" "$tmp/$2.norm"
    ok $? "$1: alice's step exits 0 with plain srun's output, every task in its own cgroups (rc $rc, $forked of 6 forked)" ||
        { diff "$tmp/plain.norm" "$tmp/$2.norm" | head -12 | sed 's/^/# /'; }
    [ "$ms" -le $((t_plain + 15000)) ]
    ok $? "$1: and without waiting on bob's names ($ms ms, plain $t_plain ms)"
}

# job_state JOB: sacct's "State|ExitCode" of JOB once it has ended (slurmdbd
# hears of it a moment after squeue forgets it).
job_state() {
    local st
    for _ in $(seq 60); do
        st=$(ax "sacct -n -X -P -j $1 -o State,ExitCode" | head -1)
        case $st in ''|RUNNING*|PENDING*|COMPLETING*) sleep 0.5 ;; *) break ;; esac
    done
    echo "$st"
}

# names_for JOB SUFFIX...: the names of jobs JOB..JOB+2, steps 0-2, with
# each SUFFIX ("-": the zygote's own name).
names_for() {
    local j=$1 s n x out=
    shift
    for n in $j $((j + 1)) $((j + 2)); do
        for s in 0 1 2; do
            for x in "$@"; do out="$out pspawn-$auid.$n.$s${x#-}"; done
        done
    done
    echo $out
}

for case in zygote:- lock:.lock fail:.fail all-full-queues:-,.lock,.fail; do
    tag=${case%%:*}
    flags=; [ "$tag" = all-full-queues ] && flags=--full
    next=$(next_job)
    # shellcheck disable=SC2046
    squat "$tag" "$flags" "$(names_for "$next" $(echo "${case#*:}" | tr ',' ' '))"
    run_alice "$tag" "--pspawn $step"
    unsquat "$tag"
    job=$(grep -m1 -o ' job [0-9]*' "$tmp/$tag" | awk '{ print $2 }')
    [ "$job" -ge "$next" ] 2>/dev/null && [ "$job" -le $((next + 2)) ]
    ok $? "$tag: alice's job is $job, one of those bob predicted ($next-$((next + 2)))"
    alice_fine "$tag" "$tag"
    heard_nothing "$tag"
done

# A job's later steps: bob reads alice's pending job in squeue and holds
# the names of its 3 steps before she lets it run.
ax "rm -f held.out; sbatch -H -N3 -n6 -o held.out --wrap='for s in 0 1 2; do srun --pspawn $step; done'" >/dev/null
held=$(bx "squeue -h -u alice -t PD -o %i" | head -1)
if [ -n "$held" ]; then
    squat held "" "$(for s in 0 1 2; do for x in '' .lock .fail; do echo -n " pspawn-$auid.$held.$s$x"; done; done)"
    t0=$(date +%s%N)
    ax "scontrol release $held"
    for _ in $(seq 240); do
        [ -z "$(ax "squeue -h -j $held 2>/dev/null")" ] && break
        sleep 0.5
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    unsquat held
    state=$(job_state "$held")
    ax "cat held.out" >"$tmp/held"
    norm "$tmp/held" >"$tmp/held.norm"
    for _ in 1 2 3; do cat "$tmp/plain.norm"; done | sort >"$tmp/plain3.norm"
    [ "$state" = "COMPLETED|0:0" ] && cmp -s "$tmp/plain3.norm" "$tmp/held.norm"
    ok $? "held job $held: its 3 steps ran as plain srun's, all of bob's names notwithstanding ($state, $(grep -c ' forked 1$' "$tmp/held") of 18 forked)" ||
        { diff "$tmp/plain3.norm" "$tmp/held.norm" | head -12 | sed 's/^/# /'; }
    [ "$ms" -le $((3 * t_plain + 25000)) ]
    ok $? "held job $held: done in $ms ms (plain step: $t_plain ms)"
    heard_nothing held
else
    ok 1 "bob sees alice's pending job in squeue"
fi

# A step of alice's running: bob connects to every name of hers he finds,
# sends what he can, and tries to signal, trace and read each of her
# processes on every node.
ax "rm -f live.out; sbatch -N3 -n6 -o live.out --wrap='srun --pspawn $step 12' | awk '{ print \$4 }'" >"$tmp/live.job"
live=$(cat "$tmp/live.job")
for _ in $(seq 100); do
    [ "$(on c1 "grep -c '@pspawn-$auid\\.$live\\.0' /proc/net/unix")" -ge 2 ] && break
    sleep 0.2
done
sleep 1
: >"$tmp/probe"; : >"$tmp/signal"; : >"$tmp/names"; : >"$tmp/victims"
for n in $nodes; do
    bn $n "names=\$(grep -o '@pspawn-$auid\\.[^ ]*' /proc/net/unix | sort -u | cut -c2-); echo \$names >&2;
        victim=\$(ps -u alice -o pid= | sort -n | tail -1);
        timeout 120 ./hostile probe --pid \${victim:-1} \$names" >>"$tmp/probe" 2>>"$tmp/names"
    bn $n "ps -u alice -o pid=,comm= >&2; timeout 120 ./hostile signal \$(ps -u alice -o pid=)" >>"$tmp/signal" 2>>"$tmp/victims"
done
for _ in $(seq 120); do
    [ -z "$(ax "squeue -h -j $live 2>/dev/null")" ] && break
    sleep 0.5
done
n_names=$(wc -w <"$tmp/names")
# A step's names: pspawn-UID.JOB.STEP.NONCE (16 hex digits, one per node);
# the mover has none (a socket pair per task).
n_zyg=$(tr ' ' '\n' <"$tmp/names" | grep -cE "^pspawn-$auid\\.$live\\.0\\.[0-9a-f]{16}\$")
n_mover=$(tr ' ' '\n' <"$tmp/names" | grep -c "mover")
[ "$n_zyg" = 3 ] && [ "$n_mover" = 0 ]
ok $? "live step $live.0: bob finds its zygote's names on the 3 nodes, and no mover's ($n_names names: $(tr '\n' ' ' <"$tmp/names"))"
# The zygote hangs up on him; a name that accepts nobody (a .lock) tells
# him nothing; none answers anything else.
bad=$(awk '$1 == "attempt" {
        kind = $2 ~ /\.(lock|fail)$/ ? "other" : "zygote"
        r = $4
        good = r ~ /^refused:/ || r == "burst-refused" || (kind == "zygote" && r ~ /^closed/) ||
               (kind == "other" && (r == "nothing" || r ~ /^closed/))
        if (!good) print
    }' "$tmp/probe")
n_att=$(grep -c '^attempt ' "$tmp/probe")
[ "$n_att" -ge $((n_names * 9)) ] && [ "$n_names" -gt 0 ] && [ -z "$bad" ]
ok $? "live step: $n_att connections and messages of bob's to alice's names (incl. 64-connection bursts), all refused" ||
    { echo "$bad" | head -10 | sed 's/^/# /'; }
n_sig=$(grep -c '^attempt ' "$tmp/signal")
n_allowed=$(grep -c ' ALLOWED$' "$tmp/signal")
n_gone=$(grep -c ' ESRCH$' "$tmp/signal")
n_victims=$(awk '$1 == "attempt" { print $2 }' "$tmp/signal" | sort -u | wc -l)
[ "$n_victims" -ge 9 ] && [ "$n_allowed" = 0 ] && [ "$(grep -vcE ' (EPERM|EACCES|ESRCH)$' "$tmp/signal")" = 0 ]
ok $? "live step: bob's $n_sig signals, traces and reads of alice's $n_victims processes (shims, zygotes, tasks) all refused by uid ($n_allowed allowed, $n_gone gone before)" ||
    { grep -vE ' (EPERM|EACCES|ESRCH)$' "$tmp/signal" | head -10 | sed 's/^/# /'; diag_file "$tmp/victims" 10; }
ax "cat live.out" >"$tmp/live"
state=$(job_state "$live")
norm "$tmp/live" >"$tmp/live.norm"
[ "$state" = "COMPLETED|0:0" ] && cmp -s "$tmp/plain.norm" "$tmp/live.norm"
ok $? "live step: alice's step finished as plain srun's ($state, $(grep -c ' forked 1$' "$tmp/live") of 6 forked)" ||
    { diff "$tmp/plain.norm" "$tmp/live.norm" | head -12 | sed 's/^/# /'; }

# A flood: while a step of alice's starts and runs (its tasks sleep 3 s,
# so that its zygotes' names are there to be found), bob connects to
# every name of hers on each node as fast as he can, keeping hundreds of
# connections open.  Her step must still run as plain srun's, every task
# in its own cgroups (no task may run in its zygote's).
for n in $nodes; do
    bn $n "rm -f fl.$n.out; (timeout 120 ./hostile flood 25 pspawn-$auid. >fl.$n.out 2>&1 &)"
done
sleep 1
run_alice flood "--pspawn $step 3"
for _ in $(seq 60); do
    [ "$(for n in $nodes; do bn $n "grep -c '^flood ' fl.$n.out 2>/dev/null"; done | awk '{ s += $1 } END { print s + 0 }')" = 3 ] && break
    sleep 1
done
conns=$(for n in $nodes; do bn $n "cat fl.$n.out"; done | awk '/^flood/ { sub("conns=", "", $3); s += $3 } END { print s + 0 }')
[ "$conns" -gt 0 ]
ok $? "flood: bob's connections to alice's names while her step started: $conns"
alice_fine flood flood

# Root acts only on a pid it has pinned.  alice's job's zygote (reuse=job)
# parks in her job's extern step; its listener's socket goes to another
# process of hers, the listener dies, and its pid goes to a process of
# bob's (root plays what she could do by cycling pids).  At her job's end
# root kills the job's zygotes: bob's process must live.
buid=$(bx "id -u")
ax "rm -f pin.out; sbatch -N1 -w c1 -o pin.out --wrap='srun --pspawn=on,reuse=job,fanout=none -n1 true; sleep 15' | awk '{ print \$4 }'" >"$tmp/pin.job"
pj=$(cat "$tmp/pin.job")
zname=
for _ in $(seq 100); do
    zname=$(on c1 "grep -oE '@pspawn-job\\.$auid\\.$pj\\.[0-9a-f]{16}\\.[0-9a-f]{16}( |\$)' /proc/net/unix | tr -d ' ' | head -1 | cut -c2-")
    [ -n "$zname" ] && break
    sleep 0.2
done
res=$(on c1 "timeout 60 /home/bob/reuse-pid '$zname' $auid $buid")
taker=$(awk '{ print $6 }' <<<"$res")
holder=$(awk '{ print $4 }' <<<"$res")
for _ in $(seq 120); do
    [ -z "$(ax "squeue -h -j $pj 2>/dev/null")" ] && break
    sleep 0.5
done
sleep 2
owner=$(on c1 "[ -n '$taker' ] && [ '$taker' != 0 ] && stat -c %U /proc/$taker 2>/dev/null")
[ -n "$zname" ] && [ "${taker:-0}" != 0 ] && [ "$owner" = bob ]
ok $? "job $pj's end: bob's process that took the pid of alice's job zygote's listener ($res) lives, not killed by root" ||
    diag "zygote name '$zname', the taker's owner now '$owner'"
on c1 "kill ${taker:-0} ${holder:-0} 2>/dev/null" || true

# Nothing of either user is left behind.
for _ in $(seq 40); do
    left=0
    for n in $nodes; do left=$((left + $(on $n "ps -u alice,bob -o pid= | wc -l"))); done
    [ "$left" = 0 ] && break
    sleep 0.5
done
[ "$left" = 0 ]
ok $? "no process of alice's or bob's left on the nodes ($left)" ||
    for n in $nodes; do on $n "ps -u alice,bob -o pid,ppid,stat,comm,args" | sed "s/^/# $n: /"; done
bx "rm -f sq.* fl.*" >/dev/null 2>&1
for n in $nodes; do bn $n "rm -f sq.* fl.*" >/dev/null 2>&1; done
tap_done
