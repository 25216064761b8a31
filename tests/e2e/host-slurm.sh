#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# host-slurm.sh BUILDDIR: srun --pspawn under the Slurm of this host
# (Debian 12: Slurm 22.05), where the plugin takes the path it takes before
# Slurm 23.11: no spank_prepend_task_argv, argv[0] of the task replaced in
# place and handed to the shim in PSPAWN_SHIM_ARGV0.  The mini-cluster runs
# Slurm 24.11; this is the same plugin's other half, run for real.
#
# As root: starts munged, slurmctld and slurmd of this host on their own
# ports, with a configuration in a scratch directory (proctrack/linuxproc,
# task/affinity: no cgroup set-up; 4 CPUs configured whatever the host has,
# as in the mini-cluster), the plugin and the shim from BUILDDIR;
# runs the same commands with and without --pspawn; stops everything.
# Prints TAP.
build=$(cd "${1:?usage: host-slurm.sh BUILDDIR}" && pwd)
PSPAWN_BIN=$build/cli/pspawn TESTS_BUILDDIR=$build/tests/fixtures
. "$(dirname "$0")/../fixtures/taplib.sh"     # $tmp, removed on exit
plugin=$build/spank/.libs/spank_pspawn.so
shim=$build/spank/pspawn-shim
proxy=$build/libpspawn/.libs/libpspawn-proxy.so
for f in "$plugin" "$shim" "$proxy" "$build/tests/fixtures/probe" "$build/tests/fixtures/task"; do
    [ -e "$f" ] || { echo "Bail out! $f is not built"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "Bail out! needs root (it starts slurmd)"; exit 1; }
for p in slurmctld slurmd munged srun; do
    command -v $p >/dev/null || [ -x /usr/sbin/$p ] || { echo "Bail out! $p is not installed"; exit 1; }
done

chmod 755 "$tmp"
node=$(hostname -s)
cpus=$(nproc)
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    sleep 1
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/work"
dd if=/dev/urandom of="$tmp/munge/key" bs=1024 count=1 status=none
chmod 700 "$tmp/munge"
chmod 400 "$tmp/munge/key"
/usr/sbin/munged --force --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" \
    --pid-file="$tmp/munge/pid" --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" ||
    { echo "Bail out! munged did not start"; exit 1; }
pids="$pids $(cat "$tmp/munge/pid")"

cat >"$tmp/plugstack.conf" <<EOF
optional $plugin shim=$shim
EOF
cat >"$tmp/slurm.conf" <<EOF
ClusterName=pspawnhost
SlurmctldHost=$node
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/sock
SlurmUser=root
SlurmdUser=root
SlurmctldPort=26817
SlurmdPort=26818
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$node CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 State=UNKNOWN
PartitionName=p Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# srun --container: an OCI runtime, runc (Docker's, or Debian's package)
# or crun, as root with its state in the scratch directory.  oci.conf
# sits beside slurm.conf and is read when slurmd starts; steps without
# --container never use it.
runtime=
for r in runc crun; do
    command -v $r >/dev/null && { runtime=$(command -v $r); break; }
done
if [ -n "$runtime" ]; then
    kill_all=--all; [ "${runtime##*/}" = crun ] && kill_all=-a
    cat >"$tmp/oci.conf" <<EOF
RunTimeQuery="$runtime --root $tmp/oci state %n.%u.%j.%s.%t"
RunTimeKill="$runtime --root $tmp/oci kill $kill_all %n.%u.%j.%s.%t"
RunTimeDelete="$runtime --root $tmp/oci delete --force %n.%u.%j.%s.%t"
RunTimeRun="$runtime --root $tmp/oci run --bundle %b %n.%u.%j.%s.%t"
EOF
fi
export SLURM_CONF=$tmp/slurm.conf
/usr/sbin/slurmctld -i -f "$SLURM_CONF" || { echo "Bail out! slurmctld did not start"; exit 1; }
for _ in $(seq 50); do [ -s "$tmp/slurmctld.pid" ] && break; sleep 0.1; done
pids="$pids $(cat "$tmp/slurmctld.pid" 2>/dev/null)"
/usr/sbin/slurmd -f "$SLURM_CONF" || { echo "Bail out! slurmd did not start"; exit 1; }
for _ in $(seq 50); do [ -s "$tmp/slurmd.pid" ] && break; sleep 0.1; done
pids="$pids $(cat "$tmp/slurmd.pid" 2>/dev/null)"
up=
for _ in $(seq 150); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix)' && { up=1; break; }
    sleep 0.2
done
[ -n "$up" ] || { tail -5 "$tmp/slurmctld.log" "$tmp/slurmd.log" | sed 's/^/# /'; echo "Bail out! the node did not come up"; exit 1; }
echo "# $(srun --version) on $node ($cpus CPUs, 4 configured)"

cp "$build/tests/fixtures/probe" "$build/tests/fixtures/task" "$build/tests/fixtures/pip-task" \
    "$build/tests/fixtures/task-static" "$tmp/work/"
cd "$tmp/work" || exit 1
# The shim finds the proxy in the build tree, as the tests' launchers do.
export PSPAWN_PROXY=$proxy

# More tasks than this host's CPUs: task/affinity cannot bind them to cores.
binding=--cpu-bind=none

# snapshot: the step's processes, where each waits, and slurmd's log tail.
snapshot() {
    ps -e -o stat,pid,ppid,pgid,wchan:24,args | grep -E "^STAT|slurmstepd|srun|pspawn|$tmp/work" |
        grep -vE "grep|docker-init" | sed 's/^/  /'
    for p in $(pgrep -f 'pspawn-shim|slurmstepd|/work/(task|probe)'); do
        echo "  $p $(cat /proc/$p/comm 2>/dev/null): $(grep -E '^State' /proc/$p/status 2>/dev/null)"
        ls -l /proc/$p/fd 2>/dev/null | awk 'NR > 1 {print "    fd", $9, $11}'
    done
    tail -n 30 "$tmp/slurmd.log" | sed 's/^/  slurmd: /'
}

# watched OUT CMD: runs CMD (timed out at 60 s) into OUT; if it still runs
# after 50 s, what the node's processes were doing goes to OUT.hang.
watched() {
    eval "timeout 60 $2" >"$1" 2>&1 &
    w_pid=$!
    # (its output nowhere: a sleep left behind would hold the reader of ours)
    (sleep 50; kill -0 $w_pid 2>/dev/null && snapshot >"$1.hang" 2>&1) >/dev/null 2>&1 &
    w_watch=$!
    wait $w_pid
    w_rc=$?
    kill $w_watch 2>/dev/null
    return $w_rc
}

# both NAME ARGS: `srun ARGS` and `srun --pspawn ARGS`, outputs and codes;
# $tmp/NAME.{plain,pspawn}.hang for a step that hung.
both() {
    watched "$tmp/$1.plain" "srun $binding $2"
    rc_plain=$?
    watched "$tmp/$1.pspawn" "srun $binding --pspawn $2"
    rc_pspawn=$?
    # srun's words about the job waiting for the node (the previous job
    # still completing) are about the scheduler, not the step.
    sed -i -E '/^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$/d' \
        "$tmp/$1.plain" "$tmp/$1.pspawn"
}

# diag_both NAME: outputs of both runs, and the snapshot of one that hung.
diag_both() {
    for w in plain pspawn; do
        echo "# srun ($w):"
        diag_file "$tmp/$1.$w" 10
        [ -s "$tmp/$1.$w.hang" ] && { echo "# it hung (or found nothing); then:"; diag_file "$tmp/$1.$w.hang" 80; }
    done
}

# With -l, and the labels removed (unlabel, taplib.sh, says why).
both used "-n4 -l ./probe"
unlabel "$tmp/used.plain"
unlabel "$tmp/used.pspawn"
n_used=$(grep -c '^x.proxy_mapped=1' "$tmp/used.pspawn")
n_plain=$(grep -c '^x.proxy_mapped=0' "$tmp/used.plain")
[ "$n_used" = 4 ] && [ "$n_plain" = 4 ]
ok $? "Slurm 22.05: --pspawn's 4 tasks are forks of a zygote ($n_used), plain srun's are not ($n_plain)" ||
    diag_both used
# What differs between two plain steps (ids, ports) is left out.
timeout 60 srun $binding -n4 -l ./probe >"$tmp/used.plain2" 2>&1
sed -i -E '/^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$/d' "$tmp/used.plain2"
unlabel "$tmp/used.plain2"
diff "$tmp/used.plain" "$tmp/used.plain2" | grep '^[<>]' | cut -c3- | cut -d= -f1 | sort -u >"$tmp/keys"
flt() { grep -vE '^(x\.|parent\.|pgrp\.|probe=)' "$1" | awk -F= 'NR == FNR { k[$1]; next } !($1 in k)' "$tmp/keys" - | sort; }
flt "$tmp/used.plain" >"$tmp/a"
flt "$tmp/used.pspawn" >"$tmp/b"
if [ "$n_used" = 4 ] && [ "$(grep -c '^argv\.0=' "$tmp/b")" = 4 ] && diff "$tmp/a" "$tmp/b" >"$tmp/d"; then
    ok 0 "Slurm 22.05: each task's argv, environment, fds, cwd, limits, signals and CPUs equal plain srun's"
else
    ok 1 "Slurm 22.05: each task's argv, environment, fds, cwd, limits, signals and CPUs equal plain srun's"
    head -20 "$tmp/d" | sed 's/^/# /'
fi
grep -q '^env.PSPAWN_SHIM' "$tmp/used.pspawn"
[ $? != 0 ]
ok $? "Slurm 22.05: no PSPAWN_SHIM_ variable (PSPAWN_SHIM_ARGV0 included) reaches a task"
grep -E '^argv\.0=' "$tmp/used.pspawn" | sort -u >"$tmp/argv0.pspawn"
grep -E '^argv\.0=' "$tmp/used.plain" | sort -u >"$tmp/argv0.plain"
cmp -s "$tmp/argv0.plain" "$tmp/argv0.pspawn" && [ -s "$tmp/argv0.plain" ]
ok $? "Slurm 22.05: argv[0] as slurmstepd would exec it, though the plugin replaced it in place ($(cat "$tmp/argv0.pspawn"))"

both label "-n4 -l ./task print x"
[ $rc_plain = 0 ] && [ $rc_pspawn = 0 ] && [ "$(sort "$tmp/label.plain")" = "$(sort "$tmp/label.pspawn")" ]
ok $? "Slurm 22.05: -l output labels equal, both exit 0 ($rc_plain, $rc_pspawn)" || diag_both label

both exit3 "-n4 sh -c '[ \$SLURM_PROCID = 2 ] && exit 3; exit 0'"
[ $rc_plain = 3 ] && [ $rc_pspawn = 3 ]
ok $? "Slurm 22.05: one task exits 3: srun exits 3 both ways ($rc_plain, $rc_pspawn)" || diag_both exit3

# Under a parallel debugger (--debugger-test takes srun's MPIR path),
# slurmstepd stops each task at its exec: with --pspawn the stopped tasks
# must be the program, as with plain srun, not the shim (the plugin's srun
# side tells the step to exec them).
# stopped_tasks: "COUNT EXE" of the stopped children of a slurmstepd.
stopped_tasks() {
    steps=" $(pgrep -d ' ' -x slurmstepd) "
    ps -e -o stat=,ppid=,pid= | while read -r st pp p; do
        case $st in T*) case $steps in *" $pp "*) readlink "/proc/$p/exe" ;; esac ;; esac
    done | sort | uniq -c | awk '{print $1, $2}'
}
for m in plain pspawn; do
    opt=; [ $m = pspawn ] && opt=--pspawn
    timeout 60 srun $binding $opt --debugger-test -n2 ./task wait >"$tmp/dbg.$m" 2>&1 &
    dbg=$!
    for _ in $(seq 60); do
        st=$(stopped_tasks)
        [ "${st%% *}" = 2 ] && break
        sleep 0.5
    done
    echo "$st" >"$tmp/dbg-state.$m"
    [ "${st%% *}" = 2 ] || snapshot >"$tmp/dbg.$m.hang" 2>&1
    scancel --state=RUNNING "$(squeue -h -o %i | head -1)" >/dev/null 2>&1
    wait $dbg 2>/dev/null
done
want="2 $(readlink -f ./task)"
[ "$(cat "$tmp/dbg-state.plain")" = "$want" ] && [ "$(cat "$tmp/dbg-state.pspawn")" = "$want" ]
ok $? "Slurm 22.05: under a parallel debugger the 2 stopped tasks are the program, as with plain srun ($(cat "$tmp/dbg-state.pspawn"))" ||
    diag_both dbg

# srun --pspawn=mode=pip: the step's tasks are PiP tasks of one root,
# each with its own globals; a crash and exit codes as with plain srun.
watched "$tmp/pip.info" "srun $binding --pspawn=mode=pip -n3 ./pip-task info"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^rank [0-2] pid [0-9]* env_rank [0-2] counter 101 ' "$tmp/pip.info")" = 3 ] &&
    [ "$(awk '/^rank/ {print $2}' "$tmp/pip.info" | sort -u | wc -l)" = 3 ]
ok $? "Slurm 22.05: --pspawn=mode=pip: 3 PiP tasks (ranks 0-2), each with its own globals (rc $rc)" ||
    diag_file "$tmp/pip.info" 8
watched "$tmp/pip.share" "srun $binding --pspawn=mode=pip -n3 ./pip-task share"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^rank [12] .* vm shared files own sighand own ' "$tmp/pip.share")" = 2 ] &&
    grep -q '^rank 1 mailbox 42 ' "$tmp/pip.share"
ok $? "Slurm 22.05: --pspawn=mode=pip: one address space, own fd tables; rank 0 wrote rank 1's mailbox (rc $rc)" ||
    diag_file "$tmp/pip.share" 8
watched "$tmp/pipcrash.plain" "srun $binding -n3 ./pip-task crash"
rc_plain=$?
watched "$tmp/pipcrash.pip" "srun $binding --pspawn=mode=pip -n3 ./pip-task crash"
rc_pip=$?
[ $rc_plain = $rc_pip ] && [ "$(grep -c 'survived$' "$tmp/pipcrash.pip")" = 2 ] &&
    grep -q 'task 1: Segmentation fault' "$tmp/pipcrash.pip"
ok $? "Slurm 22.05: --pspawn=mode=pip: task 1's SIGSEGV reported as by plain srun, exit $rc_pip ($rc_plain), the others run on" ||
    { diag_file "$tmp/pipcrash.plain" 6; diag_file "$tmp/pipcrash.pip" 6; }

# Site policy in plugstack.conf (read again by each srun and slurmstepd).
# allow=fanout: srun refuses another key, naming it and the rule, and
# runs nothing; an allowed key runs.
echo "optional $plugin shim=$shim allow=fanout" >"$tmp/plugstack.conf"
watched "$tmp/allow.refused" "srun $binding --pspawn=mode=pip -n2 ./probe"
rc=$?
watched "$tmp/allow.taken" "srun $binding --pspawn=fanout=none -n2 ./probe"
rc_taken=$?
[ $rc != 0 ] && grep -q 'mode= is not allowed on this cluster (its plugstack.conf says allow=fanout)' "$tmp/allow.refused" &&
    ! grep -q 'proxy_mapped' "$tmp/allow.refused" && [ $rc_taken = 0 ] &&
    [ "$(grep -c 'proxy_mapped=1' "$tmp/allow.taken")" = 2 ]
ok $? "Slurm 22.05: allow=fanout: --pspawn=mode=pip refused by srun with the rule (rc $rc), --pspawn=fanout=none forked (rc $rc_taken)" ||
    { diag_file "$tmp/allow.refused" 4; diag_file "$tmp/allow.taken" 4; }
# force=off: --pspawn's tasks are exec'd, srun says so, slurmd's log too.
echo "optional $plugin shim=$shim force=off" >"$tmp/plugstack.conf"
watched "$tmp/force" "srun $binding --pspawn -n2 ./probe"
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'proxy_mapped=0' "$tmp/force")" = 2 ] &&
    grep -q 'turned off on this cluster (plugstack.conf force=off)' "$tmp/force" &&
    grep -q "pspawn: node=[^ ]* step=[0-9.]* tasks=2 forked=0 exec=2 unknown=0 zygote=none zygote_start=- why=\"the site's force=off in plugstack.conf (2)\"" "$tmp/slurmd.log"
ok $? "Slurm 22.05: force=off: --pspawn's 2 tasks exec'd, the user told, slurmd's log says why (rc $rc)" ||
    { diag_file "$tmp/force" 4; grep pspawn "$tmp/slurmd.log" | tail -n 3 | sed 's/^/# /'; }
# ... and with verbose, the user sees that line, printed once (by task
# 0's child: no shim runs).
watched "$tmp/force.verbose" "srun $binding --pspawn=on,verbose -n2 ./probe"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^pspawn: node=.* tasks=2 forked=0 exec=2 unknown=0 zygote=none zygote_start=- why="the site.s force=off in plugstack.conf (2)"$' "$tmp/force.verbose")" = 1 ]
ok $? "Slurm 22.05: force=off with --pspawn=on,verbose: the node's line once on the user's stderr (rc $rc)" ||
    diag_file "$tmp/force.verbose" 6
echo "optional $plugin shim=$shim" >"$tmp/plugstack.conf"

# The node's line (tally.h): --pspawn=on,verbose prints it once per node
# on the user's stderr, forked tasks counted, the zygote's start within
# the step; slurmd logs the same line at info for every step that asked
# for pspawn, and none for a plain step.
# slurmstepd logs the line as the step ends, which may be after srun
# has returned: wait for it, 10 s at most.
logged() {
    for _ in $(seq 20); do
        grep -qF -- "$1" "$tmp/slurmd.log" && return 0
        sleep 0.5
    done
    return 1
}
lines_before=$(grep -c 'pspawn: node=' "$tmp/slurmd.log")
t0=$(date +%s)
watched "$tmp/verbose" "srun $binding --pspawn=on,verbose -n3 ./task print x"
rc=$?
t1=$(date +%s)
line=$(grep '^pspawn: node=' "$tmp/verbose")
zstart=$(echo "$line" | sed -n 's/.* zygote_start=\([^ ]*\) .*/\1/p')
zs=$(date -d "$(echo "$zstart" | tr T ' ')" +%s 2>/dev/null || echo 0)
step=$(echo "$line" | sed -n 's/.* \(step=[0-9.]*\) .*/\1/p')
[ $rc = 0 ] && [ "$(grep -c '^pspawn: node=' "$tmp/verbose")" = 1 ] &&
    echo "$line" | grep -qE '^pspawn: node=[^ ]+ step=[0-9]+\.[0-9]+ tasks=3 forked=3 exec=0 unknown=0 zygote=new zygote_start=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3} why=""$' &&
    [ "$zs" -ge "$t0" ] && [ "$zs" -le "$t1" ] && [ "$(grep -c '^task version=1 .* args=x$' "$tmp/verbose")" = 3 ] &&
    logged "$line"
ok $? "Slurm 22.05: --pspawn=on,verbose: one line, 3 forked by a new zygote started within the step ($zstart), the same in slurmd's log (rc $rc)" ||
    { diag_file "$tmp/verbose" 6; grep 'pspawn: node=' "$tmp/slurmd.log" | tail -n 3 | sed 's/^/# /'; }
watched "$tmp/verbose.static" "srun $binding --pspawn=on,verbose -n2 ./task-static print x"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^pspawn: node=' "$tmp/verbose.static")" = 1 ] &&
    grep -qE '^pspawn: node=.* tasks=2 forked=0 exec=2 unknown=0 zygote=none zygote_start=- why=".*static.* \(2\)"$' "$tmp/verbose.static"
ok $? "Slurm 22.05: --pspawn=on,verbose, a static program: the line says both tasks exec'd, and why (rc $rc)" ||
    diag_file "$tmp/verbose.static" 6
watched "$tmp/plainstep" "srun $binding -n2 ./task print x"
watched "$tmp/quiet" "srun $binding --pspawn -n2 ./task print x"
logged "tasks=2 forked=2 exec=0 "
[ "$(grep -c 'pspawn: node=' "$tmp/slurmd.log")" = $((lines_before + 3)) ] &&
    ! grep -q '^pspawn: node=' "$tmp/plainstep" && ! grep -q '^pspawn: node=' "$tmp/quiet" &&
    grep -qE 'pspawn: node=.* tasks=2 forked=2 exec=0 ' "$tmp/slurmd.log"
ok $? "Slurm 22.05: slurmd logs one line per step that asked for pspawn (3 since), none for a plain step; no line on stderr without verbose" ||
    { grep 'pspawn: node=' "$tmp/slurmd.log" | tail -n 4 | sed 's/^/# /'; diag_file "$tmp/quiet" 4; }

# default=auto (the site's default, no --pspawn) learns per program: its
# first step goes through pspawn, and the step's end teaches root's table
# how many objects its zygote held; its next step is exec'd when that is
# fewer than auto_objects= (the line says why), forked when not; an
# explicit --pspawn always forks.  ./probe-auto: a copy no step has run,
# named relative to the working directory (srun's PWD).
cp probe probe-auto
echo "optional $plugin shim=$shim default=auto" >"$tmp/plugstack.conf"
lines_before=$(grep -c 'pspawn: node=' "$tmp/slurmd.log")
watched "$tmp/auto.1" "srun $binding -n2 ./probe-auto"
rc1=$?
# (the step's end, which teaches the table, may come after srun returns)
for _ in $(seq 20); do
    [ "$(grep -c 'pspawn: node=' "$tmp/slurmd.log")" -gt "$lines_before" ] && break
    sleep 0.5
done
watched "$tmp/auto.2" "srun $binding --pspawn=auto,verbose -n2 ./probe-auto"
rc2=$?
[ $rc1 = 0 ] && [ "$(grep -c 'proxy_mapped=1' "$tmp/auto.1")" = 2 ] &&
    [ $rc2 = 0 ] && [ "$(grep -c 'proxy_mapped=0' "$tmp/auto.2")" = 2 ] &&
    grep -qE "^pspawn: node=[^ ]+ step=[0-9.]+ tasks=2 forked=0 exec=2 unknown=0 zygote=none zygote_start=- why=\"auto: probe-auto loaded [0-9]+ objects in its last zygote, fewer than auto_objects=200 \(2\)\"\$" "$tmp/auto.2"
ok $? "Slurm 22.05: default=auto: a new program's first step forked, its second exec'd with the reason on the user's stderr (rc $rc1, $rc2)" ||
    { diag_file "$tmp/auto.1" 4; diag_file "$tmp/auto.2" 4; grep pspawn "$tmp/slurmd.log" | tail -n 4 | sed 's/^/# /'; }
watched "$tmp/auto.on" "srun $binding --pspawn -n2 ./probe-auto"
rc=$?
echo "optional $plugin shim=$shim default=auto auto_objects=2" >"$tmp/plugstack.conf"
watched "$tmp/auto.low" "srun $binding -n2 ./probe-auto"
rc_low=$?
[ $rc = 0 ] && [ "$(grep -c 'proxy_mapped=1' "$tmp/auto.on")" = 2 ] &&
    [ $rc_low = 0 ] && [ "$(grep -c 'proxy_mapped=1' "$tmp/auto.low")" = 2 ]
ok $? "Slurm 22.05: the same program: forked with an explicit --pspawn, and under auto_objects=2 (rc $rc, $rc_low)" ||
    { diag_file "$tmp/auto.on" 4; diag_file "$tmp/auto.low" 4; }
cp task task-auto
echo "optional $plugin shim=$shim default=auto" >"$tmp/plugstack.conf"
watched "$tmp/auto.one" "srun $binding -n1 ./task-auto print x"
rc=$?
[ $rc = 0 ] && grep -q '^task version=1 .* args=x$' "$tmp/auto.one" && logged "why=\"auto: one task on this node (1)\""
ok $? "Slurm 22.05: default=auto, one task on the node: exec'd, and slurmd's log says why (rc $rc)" ||
    { diag_file "$tmp/auto.one" 4; grep pspawn "$tmp/slurmd.log" | tail -n 2 | sed 's/^/# /'; }
echo "optional $plugin shim=$shim" >"$tmp/plugstack.conf"

# srun --container=BUNDLE: slurmstepd writes each task's argv into the
# config.json of a bundle of the task's own and the runtime runs it in a
# container, where the shim (in the build tree here, under /usr/lib on a
# node) is not: the plugin execs the step, says why, and its task runs,
# in the container.  The bundle's root: sh, cat and ./task with their
# libraries, nothing else.  One task: Slurm 22.05 refuses more in a
# container step on a node ("Task count specification invalid").
ctr_check() {
    [ -n "$runtime" ] || return 2
    rootfs=$tmp/bundle/rootfs
    mkdir -p "$rootfs/proc" "$rootfs/dev" "$rootfs/tmp" "$rootfs/var/run/slurm" "$rootfs/$tmp/work"
    for b in /bin/sh /bin/cat "$tmp/work/task"; do
        cp --parents -L "$b" "$rootfs/" || return 1
        for l in $(ldd "$b" | grep -o '/[^ ]*'); do cp --parents -L "$l" "$rootfs/" || return 1; done
    done
    (cd "$tmp/bundle" && "$runtime" spec >/dev/null 2>&1) || return 1
    python3 - "$tmp/bundle/config.json" <<'EOF' || return 1
import json, sys
c = json.load(open(sys.argv[1]))
c["root"] = {"path": "rootfs", "readonly": True}
c["process"]["terminal"] = False
# the host's network (Slurm's own advice); no sysfs or cgroup mounts: a
# cgroup v1 host (runc) has no private ones to give
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]
c["linux"].pop("resources", None)
c["mounts"] = [m for m in c["mounts"] if m["destination"] not in ("/sys", "/sys/fs/cgroup")]
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF
    "$runtime" --root "$tmp/oci" run --bundle "$tmp/bundle" probe-runtime >"$tmp/ctr.runtime" 2>&1 || return 2
}
mkdir -p "$tmp/bundle"
ctr_check
ctr=$?
if [ $ctr = 2 ]; then
    skip "no OCI runtime that runs here (runc, crun: $(head -c 200 "$tmp/ctr.runtime" 2>/dev/null))" \
        "Slurm 22.05: srun --container --pspawn"
else
    lines_before=$(grep -c 'pspawn: node=' "$tmp/slurmd.log")
    watched "$tmp/ctr.plain" "srun $binding --container=$tmp/bundle -n1 $tmp/work/task print x"
    rc_plain=$?
    watched "$tmp/ctr.pspawn" "srun $binding --container=$tmp/bundle --pspawn=on,verbose -n1 $tmp/work/task print x"
    rc=$?
    watched "$tmp/ctr.inside" "srun $binding --container=$tmp/bundle --pspawn -n1 sh -c 'test -e $shim && echo shim-seen || echo shim-absent'"
    rc_in=$?
    [ $ctr = 0 ] && [ $rc_plain = 0 ] && [ $rc = 0 ] && [ $rc_in = 0 ] &&
        [ "$(grep -c '^task version=1 .* args=x$' "$tmp/ctr.plain")" = 1 ] &&
        [ "$(grep -c '^task version=1 .* args=x$' "$tmp/ctr.pspawn")" = 1 ] &&
        grep -q '^shim-absent$' "$tmp/ctr.inside" &&
        grep -qE '^pspawn: node=[^ ]+ step=[0-9.]+ tasks=1 forked=0 exec=1 unknown=0 zygote=none zygote_start=- why="--container: each task runs in an OCI container of its own \(1\)"$' "$tmp/ctr.pspawn"
    ok $? "Slurm 22.05: srun --container --pspawn ($(basename "$runtime")): the task runs in its container (where the shim is not), exec'd, and the line says why (rc $rc_plain, $rc, $rc_in)" ||
        { diag_file "$tmp/ctr.plain" 4; diag_file "$tmp/ctr.pspawn" 4; diag_file "$tmp/ctr.inside" 3; grep -iE 'container|oci|pspawn' "$tmp/slurmd.log" | tail -n 6 | sed 's/^/# /'; }
fi

tap_done
