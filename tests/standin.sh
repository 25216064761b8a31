#!/bin/sh
# Stand-in mode without Slurm: pspawn-shim processes started side by side,
# as slurmstepd starts them for a --pspawn step, hand their tasks to one
# zygote; each exits exactly as its task did.
. "$TESTS_SRCDIR/taplib.sh"

shim=$top_builddir/spank/pspawn-shim
probe=$TESTS_BUILDDIR/probe
task=$TESTS_BUILDDIR/task
[ -x "$shim" ] || bail "no $shim"
uid=$(id -u)
export PSPAWN_SHIM_TOKEN="tok$$"

# 1. Four stand-ins, one zygote, each exit code its own.
export PSPAWN_SHIM_KEY="$uid.$$.1" PSPAWN_SHIM_LOCAL_TASKS=4 PSPAWN_SHIM_DEBUG=1
for i in 0 1 2 3; do
    ( "$shim" "$task" exit $((i + 3)) 2>"$tmp/err.$i"; echo $? >"$tmp/rc.$i" ) &
done
wait
bad=0
for i in 0 1 2 3; do
    [ "$(cat "$tmp/rc.$i")" = $((i + 3)) ] || { bad=1; diag "stand-in $i exited $(cat "$tmp/rc.$i")"; }
done
ok $bad "four stand-ins exit with their own task's code"
n=$(cat "$tmp"/err.* | grep -c 'forked by the zygote')
starters=$(cat "$tmp"/err.* | grep -c 'starting the zygote')
[ "$n" = 4 ] && [ "$starters" = 1 ]
ok $? "one zygote started, all four tasks forked by it ($n forked, $starters started)" ||
    diag_file "$tmp/err.0"
sleep 0.2
pgrep -f "pspawn-$uid.$$.1" >/dev/null
[ $? -ne 0 ]
ok $? "the zygote exits once the node's tasks are done"

# 2. What a stand-in's task sees equals what exec gives, fds at their
#    own numbers included (PMI_FD and friends).
export PSPAWN_SHIM_KEY="$uid.$$.2" PSPAWN_SHIM_LOCAL_TASKS=1
mkdir "$tmp/wd"
# run_probe OUT CMD...: the probe's view, minus what differs by design
# (the parent: the zygote, not slurmstepd) or by run (pids).
run_probe() {
    _out=$1
    shift
    (cd "$tmp/wd" && umask 027 && exec "$@" a "b c" 5<"$probe" 7>"$tmp/seven") 2>/dev/null |
        grep -vE '^(x\.|parent\.|pgrp\.pgid|exe\.path|probe=)' >"$_out"
}
run_probe "$tmp/via-shim" "$shim" "$probe"
run_probe "$tmp/via-exec" env -u PSPAWN_SHIM_KEY -u PSPAWN_SHIM_TOKEN -u PSPAWN_SHIM_DEBUG \
    -u PSPAWN_SHIM_LOCAL_TASKS "$probe"
for group in argv cmdline env fd cwd umask rlimit sig sigmask cpus progname globals sched misc threads; do
    grep "^$group[.=]" "$tmp/via-shim" >"$tmp/g.shim"
    grep "^$group[.=]" "$tmp/via-exec" >"$tmp/g.exec"
    if [ -s "$tmp/g.exec" ] && cmp -s "$tmp/g.shim" "$tmp/g.exec"; then
        ok 0 "stand-in task and exec agree on $group"
    else
        ok 1 "stand-in task and exec agree on $group"
        diff "$tmp/g.exec" "$tmp/g.shim" | head -10 | sed 's/^/# /'
    fi
done
grep -q '^fd\.5=' "$tmp/via-shim" && grep -q '^fd\.7=' "$tmp/via-shim"
ok $? "fds 5 and 7 reach the task at their own numbers"
! grep -q PSPAWN_SHIM "$tmp/via-shim"
ok $? "no PSPAWN_SHIM_ variable reaches the task"

# 3. A task killed by a signal: the stand-in dies of the same signal,
#    without a core dump.
export PSPAWN_SHIM_KEY="$uid.$$.3" PSPAWN_SHIM_LOCAL_TASKS=1
(cd "$tmp" && ulimit -c 0 && "$shim" "$task" raise 11 2>/dev/null; echo $? >"$tmp/rc.segv")
[ "$(cat "$tmp/rc.segv")" = 139 ]
ok $? "a task killed by SIGSEGV: its stand-in dies of SIGSEGV (status $(cat "$tmp/rc.segv"))"

# 4. signals=yes: a signal sent to the stand-in reaches its task once.
export PSPAWN_SHIM_KEY="$uid.$$.4" PSPAWN_SHIM_LOCAL_TASKS=1 PSPAWN_SHIM_SIGNALS=yes
: >"$tmp/sigs"
PSPAWN_RANK=0 "$shim" "$task" signals "$tmp/sigs" 2>/dev/null &
spid=$!
for _ in $(seq 50); do grep -q ready "$tmp/sigs" && break; sleep 0.1; done
kill -USR1 $spid
wait $spid
rc=$?
[ "$(grep -c USR1 "$tmp/sigs")" = 1 ] && [ $rc = 0 ]
ok $? "signals=yes: SIGUSR1 to the stand-in reaches the task exactly once (rc $rc)" ||
    diag_file "$tmp/sigs"
unset PSPAWN_SHIM_SIGNALS

# 5. The zygote serves only its step's token and its own user.
export PSPAWN_SHIM_KEY="$uid.$$.5" PSPAWN_SHIM_LOCAL_TASKS=1
: >"$tmp/sigs5"
PSPAWN_SHIM_SIGNALS=yes PSPAWN_RANK=0 "$shim" "$task" signals "$tmp/sigs5" 2>/dev/null &
holder=$!
for _ in $(seq 50); do grep -q ready "$tmp/sigs5" && break; sleep 0.1; done
PSPAWN_SHIM_TOKEN=wrong "$shim" "$task" exit 4 2>"$tmp/err.tok"
rc=$?
[ $rc = 4 ] && grep -q 'plain exec: zygote refused' "$tmp/err.tok"
ok $? "a wrong token is refused; the task still runs once, by exec (rc $rc)" || diag_file "$tmp/err.tok"
cat >"$tmp/connect.py" <<EOF
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
try:
    s.connect("\0pspawn-$PSPAWN_SHIM_KEY")
    data = s.recv(64)
    print("closed" if data == b"" else "answered")
except ConnectionResetError:
    print("closed")
except socket.timeout:
    print("kept")
EOF
if command -v setpriv >/dev/null && [ "$uid" = 0 ]; then
    res=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$(cat "$tmp/connect.py")" 2>&1)
    [ "$res" = closed ]
    ok $? "another user's connection is closed at once ($res)"
else
    skip "needs root and setpriv to act as a second user" "another user's connection is closed"
fi
res=$(/usr/bin/python3 "$tmp/connect.py" 2>&1)
[ "$res" = kept ]
ok $? "our own user's connection is kept, waiting for a request ($res)"
kill -TERM $holder
wait $holder

tap_done
