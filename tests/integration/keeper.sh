#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# keeper.sh - a stand-in zygote's keeper (libpspawn/launcher/keeper.c):
# the zygote SIGKILLed while its tasks run, each stand-in still exits
# exactly as its task did, on every kernel (this one, and under the
# seccomp profiles of 4.18, 5.3 and 6.1, where no pidfd keeps a reaped
# task's status), for a step's zygote and for a job's (reuse=job); a
# task's daemons are reaped at once and never hold a step; another user
# who squats the keeper's name is not believed.
. "$TESTS_SRCDIR/taplib.sh"

shim=$top_builddir/spank/pspawn-shim
task=$TESTS_BUILDDIR/task
oldk=$TESTS_BUILDDIR/oldkernel
[ -x "$shim" ] || { skip "no pspawn-shim (built without Slurm's spank.h)" "the zygote's keeper"; tap_done; }
# A copy of our own: the leftover counts (pgrep -f) must not see the tasks
# of standin.sh, which make check may run at the same time.
mkdir -p "$tmp/bin" && cp "$task" "$tmp/bin/keeper-task" || bail "cannot copy $task"
task=$tmp/bin/keeper-task
uid=$(id -u)
export PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_DEBUG=1
unset PSPAWN_SHIM_JOB PSPAWN_SHIM_SIGNALS

kernels=host
if [ -x "$oldk" ] && "$oldk" --probe; then
    kernels="host 4.18 5.3 6.1"
else
    skip "no seccomp filter here" "older kernels' profiles"
fi
# on KERNEL CMD...: CMD on this kernel, or under that kernel's profile.
on() {
    _k=$1
    shift
    if [ "$_k" = host ]; then timeout 60 "$@"; else timeout 60 "$oldk" "$_k" "$@"; fi
}
zygote_pid() { sed -n 's/.*zygote \([0-9]*\) parked$/\1/p' "$@" 2>/dev/null | head -n 1; }
# wait_forked N PREFIX: until N stand-ins (logs $tmp/PREFIX.err.*) say
# their task was forked (10 s).
wait_forked() {
    for _ in $(seq 200); do
        [ "$(cat "$tmp/$2".err.* 2>/dev/null | grep -c 'forked by the zygote')" -ge "$1" ] && return 0
        sleep 0.05
    done
    return 1
}
# codes_kept PREFIX N BASE: stand-in I (0..N-1) exited BASE+I and was told
# by the keeper; diagnoses the others.
codes_kept() {
    _bad=0
    for i in $(seq 0 $(($2 - 1))); do
        _rc=$(cat "$tmp/$1.rc.$i")
        if [ "$_rc" != $(($3 + i)) ] || ! grep -q "from the zygote's keeper" "$tmp/$1.err.$i"; then
            _bad=1
            diag "stand-in $i exited $_rc"
            diag_file "$tmp/$1.err.$i" 12
        fi
    done
    return $_bad
}

# 1. A step's zygote killed under 4 running tasks.
for k in $kernels; do
    export PSPAWN_SHIM_KEY="$uid.$$.step.$k" PSPAWN_SHIM_LOCAL_TASKS=4
    rm -f "$tmp"/s.*
    t0=$(date +%s.%N)
    for i in 0 1 2 3; do
        ( on "$k" "$shim" "$task" hold 0 2 $((i + 3)) 2>"$tmp/s.err.$i"; echo $? >"$tmp/s.rc.$i" ) &
    done
    wait_forked 4 s
    zpid=$(zygote_pid "$tmp"/s.err.*)
    [ -n "$zpid" ] && kill -KILL "$zpid"
    wait
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    [ -n "$zpid" ] && codes_kept s 4 3 && awk -v t="$t" 'BEGIN { exit !(t >= 1.9) }'
    ok $? "$k: a step's zygote SIGKILLed under 4 running tasks: each stand-in waits for its task (${t}s) and exits with its code, told by the keeper"
    sleep 0.2
    left=$(pgrep -f "$task hold 0 2" | wc -l)
    [ "$left" = 0 ]
    ok $? "$k: no keeper, zygote or task left after the step ($left)"
done

# 2. A job's zygote (reuse=job), started by pspawn-shim --job-zygote as
#    the plugin starts it (holding the lock name), killed under 2 tasks.
starter=$TESTS_SRCDIR/python/job-starter.py
for k in host 6.1; do
    case " $kernels " in *" $k "*) ;; *) continue ;; esac
    export PSPAWN_SHIM_KEY="$uid.$$.job.$k" PSPAWN_SHIM_LOCAL_TASKS=0 PSPAWN_SHIM_IDLE_MS=1000
    rm -f "$tmp"/j.*
    on "$k" /usr/bin/python3 "$starter" "$shim" --job-zygote "$task" hold 0 2 2>"$tmp/j.starter"
    src=$?
    zpid=$(sed -n "s/.*the job's zygote \([0-9]*\) parked$/\1/p" "$tmp/j.starter" | head -n 1)
    for i in 0 1; do
        ( PSPAWN_SHIM_JOB=1 on "$k" "$shim" "$task" hold 0 2 $((i + 5)) 2>"$tmp/j.err.$i"
          echo $? >"$tmp/j.rc.$i" ) &
    done
    wait_forked 2 j
    [ -n "$zpid" ] && kill -KILL "$zpid"
    wait
    [ $src = 0 ] && [ -n "$zpid" ] && codes_kept j 2 5
    ok $? "$k: a job's zygote SIGKILLed under 2 running tasks: each stand-in exits with its code, told by the keeper (starter rc $src)" ||
        diag_file "$tmp/j.starter" 6
    for _ in $(seq 50); do pgrep -f "job-zygote $task" >/dev/null || break; sleep 0.1; done
    ! pgrep -f "job-zygote $task" >/dev/null
    ok $? "$k: the job's keeper ends once its stand-ins have their answers"
    unset PSPAWN_SHIM_IDLE_MS
done

# 3. A job's zygote not killed: once idle it ends, and its keeper with it.
export PSPAWN_SHIM_KEY="$uid.$$.jobidle" PSPAWN_SHIM_IDLE_MS=500
/usr/bin/python3 "$starter" "$shim" --job-zygote "$task" exit 0 2>"$tmp/ji.starter"
PSPAWN_SHIM_JOB=1 timeout 30 "$shim" "$task" exit 7 2>"$tmp/ji.err"
rc=$?
for _ in $(seq 50); do pgrep -f "job-zygote $task exit 0" >/dev/null || break; sleep 0.1; done
! pgrep -f "job-zygote $task exit 0" >/dev/null && [ $rc = 7 ] && grep -q 'forked by the zygote' "$tmp/ji.err"
ok $? "a job's zygote idle past its limit ends, and its keeper with it (task rc $rc)" ||
    diag_file "$tmp/ji.err"
unset PSPAWN_SHIM_IDLE_MS

# 4. A task's daemon (orphaned while the zygote lives) comes to the
#    keeper, which reaps it at once; one still running does not hold the
#    step, as it would not after an exec.
export PSPAWN_SHIM_KEY="$uid.$$.daemon" PSPAWN_SHIM_LOCAL_TASKS=1
t0=$(date +%s.%N)
timeout 30 "$shim" /bin/sh -c "sh -c 'sleep 1 & echo \$! >$tmp/d1; sleep 6 >/dev/null 2>&1 & echo \$! >$tmp/d2'; sleep 2; exit 5" \
    2>"$tmp/d.err" &
spid=$!
keeper=
for _ in $(seq 100); do
    keeper=$(sed -n 's/.*keeper \([0-9]*\) keeps the zygote$/\1/p' "$tmp/d.err" | head -n 1)
    [ -n "$keeper" ] && [ -s "$tmp/d1" ] && break
    sleep 0.05
done
d1=$(cat "$tmp/d1" 2>/dev/null)
adopted=$(awk '{ print $4 }' "/proc/$d1/stat" 2>/dev/null)
sleep 1.5
zombies=$(ps -o stat= --ppid "$keeper" 2>/dev/null | grep -c Z)
wait $spid
rc=$?
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
d2=$(cat "$tmp/d2" 2>/dev/null)
[ -n "$keeper" ] && [ "$adopted" = "$keeper" ] && [ "$zombies" = 0 ]
ok $? "a task's daemon is adopted by the keeper ($adopted, keeper $keeper) and reaped at once ($zombies zombies)" ||
    diag_file "$tmp/d.err" 6
[ $rc = 5 ] && awk -v t="$t" 'BEGIN { exit !(t < 5) }' && [ -n "$d2" ] && kill -0 "$d2" 2>/dev/null
ok $? "a daemon still running does not hold the stand-in (rc $rc, ${t}s), and runs on as after an exec"
[ -n "$d2" ] && kill "$d2" 2>/dev/null

# 5. Another user squats the keeper's name before the step, and answers
#    every question with exit 66: the stand-ins do not ask it (their tasks'
#    codes from the kernel, Linux 6.15, or said unknown).
new_kernel=$(uname -r | awk -F. '{ print ($1 > 6 || ($1 == 6 && $2 >= 15)) ? 1 : 0 }')
if command -v setpriv >/dev/null && [ "$uid" = 0 ]; then
    export PSPAWN_SHIM_KEY="$uid.$$.squat" PSPAWN_SHIM_LOCAL_TASKS=2
    cat >"$tmp/liar.py" <<'EOF'
import socket, struct, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0" + sys.argv[1])
s.listen(16)
print("squatting", flush=True)
def lie(c):
    q = c.recv(16)
    c.send(struct.pack("<IiiI", 0x7073706b, struct.unpack("<Ii", q[:8])[1], 1, 66 << 8))
while True:
    c, _ = s.accept()
    threading.Thread(target=lie, args=(c,), daemon=True).start()
EOF
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$(cat "$tmp/liar.py")" \
        "pspawn-$PSPAWN_SHIM_KEY.keeper" >"$tmp/liar.out" 2>&1 &
    liar=$!
    for _ in $(seq 100); do grep -q squatting "$tmp/liar.out" 2>/dev/null && break; sleep 0.05; done
    rm -f "$tmp"/q.*
    pids=
    for i in 0 1; do
        ( timeout 60 "$shim" "$task" hold 0 2 $((i + 3)) 2>"$tmp/q.err.$i"; echo $? >"$tmp/q.rc.$i" ) &
        pids="$pids $!"
    done
    wait_forked 2 q
    zpid=$(zygote_pid "$tmp"/q.err.*)
    [ -n "$zpid" ] && kill -KILL "$zpid"
    wait $pids
    kill $liar 2>/dev/null
    wait $liar 2>/dev/null
    bad=0
    for i in 0 1; do
        rc=$(cat "$tmp/q.rc.$i")
        if [ "$rc" = 66 ] || grep -q "from the zygote's keeper" "$tmp/q.err.$i" ||
           { [ "$rc" != $((i + 3)) ] && { [ $new_kernel = 1 ] || [ "$rc" != 1 ]; }; }; then
            bad=1; diag "stand-in $i exited $rc"; diag_file "$tmp/q.err.$i" 6
        fi
    done
    [ -n "$zpid" ] && [ $bad = 0 ] && grep -q 'keeper cannot listen' "$tmp"/q.err.*
    ok $? "the keeper's name squatted by another user who lies: not asked, the keeper says it cannot listen, no task's code taken from it"
else
    skip "needs root and setpriv to act as a second user" "the keeper's name squatted by another user"
fi

tap_done
