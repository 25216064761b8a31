#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
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
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
said = ""
try:
    s.connect("\0pspawn-$PSPAWN_SHIM_KEY")
    data = s.recv(1 << 18)
    # The hello (kind 4), then nothing until a request.
    if len(data) >= 16 and struct.unpack("<Ii", data[:8])[1] == 4:
        said = "hello, "
        data = s.recv(64)
    print(said + ("closed" if data == b"" else "answered"))
except ConnectionResetError:
    print(said + "closed")
except socket.timeout:
    print(said + "kept")
EOF
if command -v setpriv >/dev/null && [ "$uid" = 0 ]; then
    res=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$(cat "$tmp/connect.py")" 2>&1)
    [ "$res" = closed ]
    ok $? "another user's connection is closed at once ($res)"
else
    skip "needs root and setpriv to act as a second user" "another user's connection is closed"
fi
res=$(/usr/bin/python3 "$tmp/connect.py" 2>&1)
[ "$res" = "hello, kept" ]
ok $? "our own user's connection gets the zygote's hello, then is kept, waiting for a request ($res)"
kill -TERM $holder
wait $holder


# zygote_pid ERRFILE...: the pid of the zygote a stand-in started, from
# its debug line (empty until it parked).
zygote_pid() { sed -n 's/.*zygote \([0-9]*\) parked$/\1/p' "$@" 2>/dev/null | head -n 1; }

# 6. The zygote killed while its tasks run: each stand-in still waits for
#    its own task and exits as it did, told by the zygote's keeper (on
#    every kernel: see keeper.sh for older ones).
export PSPAWN_SHIM_KEY="$uid.$$.6" PSPAWN_SHIM_LOCAL_TASKS=4
t0=$(date +%s.%N)
for i in 0 1 2 3; do
    ( "$shim" "$task" hold 0 2 $((i + 3)) 2>"$tmp/err6.$i"; echo $? >"$tmp/rc6.$i" ) &
done
for _ in $(seq 100); do
    [ "$(cat "$tmp"/err6.* | grep -c 'forked by the zygote')" = 4 ] && break
    sleep 0.05
done
zpid=$(zygote_pid "$tmp"/err6.*)
[ -n "$zpid" ] && kill -KILL "$zpid"
wait
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
bad=0 kept=0
for i in 0 1 2 3; do
    rc=$(cat "$tmp/rc6.$i")
    grep -q "from the zygote's keeper" "$tmp/err6.$i" && kept=$((kept + 1))
    if [ "$rc" != $((i + 3)) ]; then
        bad=1; diag "stand-in $i exited $rc"; diag_file "$tmp/err6.$i" 5
    fi
done
[ -n "$zpid" ] && [ $bad = 0 ] && awk -v t="$t" 'BEGIN { exit !(t >= 1.9) }'
ok $? "zygote killed while its 4 tasks run: each stand-in waits for its task (${t}s) and exits with its code"
[ -n "$zpid" ] && [ $kept = 4 ]
ok $? "zygote killed while its 4 tasks run: every exit code told by the zygote's keeper ($kept of 4)"

# 7. The zygote killed at any moment of a batch of 8 stand-ins (and one
#    stand-in that starts late): see standin-case7.sh.
. "$TESTS_SRCDIR/../integration/standin-case7.sh"
for delay in 0 1 3 10 30; do
    kill_batch $delay
done
kill_batch 0 6

# 8. The zygote killed after it forked a task and before it told the
#    stand-in its pid (strace kills it as it sends that reply, which
#    carries the task's setup pipe: its first sendmsg): the held
#    task must not keep the stand-in's connection open, so that the
#    stand-in sees the zygote go, cancels the task and execs instead.
if command -v strace >/dev/null && [ "$uid" = 0 ]; then
    export PSPAWN_SHIM_KEY="$uid.$$.8" PSPAWN_SHIM_LOCAL_TASKS=2
    : >"$tmp/runs8"
    ( PSPAWN_RANK=0 "$shim" "$task" hold 0 2 5 2>"$tmp/err8.0"; echo $? >"$tmp/rc8.0" ) &
    zpid=
    for _ in $(seq 200); do
        grep -q 'forked by the zygote' "$tmp/err8.0" && zpid=$(zygote_pid "$tmp/err8.0") && break
        sleep 0.02
    done
    strace -qq -p "$zpid" -e trace=sendmsg -e inject=sendmsg:signal=KILL:when=1 -o "$tmp/strace8" 2>"$tmp/strace8.err" &
    spid=$!
    for _ in $(seq 250); do     # until strace has attached
        [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$zpid/status" 2>/dev/null)" = "$spid" ] && break
        sleep 0.02
    done
    PSPAWN_RANK=1 timeout 30 "$shim" "$task" append "$tmp/runs8" >/dev/null 2>"$tmp/err8.1"
    rc1=$?
    wait
    rc0=$(cat "$tmp/rc8.0")
    kill -0 "$zpid" 2>/dev/null
    gone=$?
    [ -n "$zpid" ] && [ $gone != 0 ] && [ $rc1 = 0 ] && [ "$(grep -c '^1 ' "$tmp/runs8")" = 1 ] &&
        grep -q 'plain exec: zygote lost before it started the task' "$tmp/err8.1"
    ok $? "zygote killed between forking a task and replying: the stand-in execs it instead, it runs once, nothing hangs (rc $rc1)" ||
        { diag_file "$tmp/err8.1" 6; diag_file "$tmp/runs8"; diag_file "$tmp/strace8"; diag_file "$tmp/strace8.err"; diag "zygote $zpid"; }
    [ "$rc0" = 5 ]
    ok $? "the task forked before that still ends as it did (its stand-in exits $rc0)" ||
        diag_file "$tmp/err8.0" 6
    kill $spid 2>/dev/null
else
    skip "needs strace and root" "zygote killed between forking a task and replying"
    skip "needs strace and root" "the task forked before that still ends as it did"
fi

# 9. The step's mover (root, in slurmstepd) reached through the end of a
#    socket pair the shim inherits (PSPAWN_SHIM_MOVER_FD), played here by
#    mover.py, which runs the shim with that end.  Whenever the mover does
#    not move the held task into the shim's cgroups, the shim cancels the
#    task (it never runs) and execs the program itself, in its own cgroups:
#    a task is never released in the zygote's cgroups, which for a job's
#    zygote are outside the step.
#    a. The zygote dies after it replied and before the move (the mover
#       finds the task is no longer the step's: init's, ESRCH).  The mover
#       stand-in, root like slurmstepd, kills the zygote first.
#    b. The mover refuses (EPERM), or says nothing within PSPAWN_TIMEOUT.
#    c. PSPAWN_SHIM_MOVER_FD names no socket.
#    d. The shim dies while its task is held, and its pid goes to another
#       process at once: the held task must still see its stand-in gone,
#       and end without running (its zygote pinned the stand-in at its
#       connect).  The task is stopped meanwhile, so that the pid is
#       another's before it looks.
# mover.py MODE OUT SHIM ARGS...: run SHIM ARGS with PSPAWN_SHIM_MOVER_FD,
# answer its request as MODE says (kill-zygote, eperm, silent, or
# kill-shim for d), exit with the shim's status.
cat >"$tmp/mover.py" <<'EOF'
import os, signal, socket, struct, subprocess, sys, time
mode, out, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
env = dict(os.environ, PSPAWN_SHIM_MOVER_FD=str(theirs.fileno()))
shim = subprocess.Popen(argv, pass_fds=[theirs.fileno()], env=env)
theirs.close()
ours.settimeout(20)
magic, pid = struct.unpack("<Ii", ours.recv(8 + 64)[:8])
if mode == "kill-zygote":
    def ppid(p):
        with open("/proc/%d/status" % p) as f:
            return int([l.split()[1] for l in f if l.startswith("PPid:")][0])
    zygote = ppid(pid)
    os.kill(zygote, signal.SIGKILL)
    for _ in range(500):                # until the task is someone else's
        if ppid(pid) != zygote:
            break
        time.sleep(0.01)
    ours.send(struct.pack("<Iii", magic, 3, 0))     # ESRCH
elif mode == "eperm":
    ours.send(struct.pack("<Iii", magic, 1, 0))
elif mode == "kill-shim":
    os.kill(pid, signal.SIGSTOP)
    shim.kill()
    shim.wait()
    taker = 0
    # The shim's pid, to another process.  Another process may take it
    # between our write and our fork (make -j, a loaded machine): again.
    for _ in range(2000):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(shim.pid - 1))
        taker = os.fork()
        if taker == 0:
            time.sleep(30)
            os._exit(0)
        if taker == shim.pid:
            break
        os.kill(taker, signal.SIGKILL)
        os.waitpid(taker, 0)
        taker = 0
    os.kill(pid, signal.SIGCONT)
    for _ in range(100):
        if not os.path.exists("/proc/%d" % pid) or " Z " in open("/proc/%d/stat" % pid).read():
            break
        time.sleep(0.05)
    held = os.path.exists("/proc/%d" % pid) and " Z " not in open("/proc/%d/stat" % pid).read()
    open(out, "a").write("task %d %s, shim's pid %s\n" % (pid, "still held" if held else "ended",
                         "reused" if taker else "not reused"))
    if held:
        os.kill(pid, signal.SIGKILL)
    if taker:
        os.kill(taker, signal.SIGKILL)
        os.waitpid(taker, 0)
    sys.exit(0 if not held and taker else 1)
open(out, "a").write("task %d\n" % pid)
sys.exit(shim.wait())
EOF
if [ "$uid" = 0 ]; then
    export PSPAWN_SHIM_LOCAL_TASKS=1
    for mode in kill-zygote eperm silent; do
        export PSPAWN_SHIM_KEY="$uid.$$.9.$mode"
        : >"$tmp/runs9.$mode"
        : >"$tmp/mover9.$mode"
        t0=$(date +%s.%N)
        PSPAWN_TIMEOUT=1 PSPAWN_RANK=0 timeout 60 /usr/bin/python3 "$tmp/mover.py" "$mode" "$tmp/mover9.$mode" \
            "$shim" "$task" append "$tmp/runs9.$mode" >/dev/null 2>"$tmp/err9.$mode"
        rc=$?
        t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        case $mode in
            kill-zygote) why='No such process (zygote lost)'; what="zygote lost before the mover moved the held task" ;;
            eperm) why='Operation not permitted'; what="the mover refuses the move" ;;
            silent) why='Connection timed out'; what="the mover says nothing" ;;
        esac
        [ $rc = 0 ] && [ "$(grep -c '^0 ' "$tmp/runs9.$mode")" = 1 ] && grep -q '^task ' "$tmp/mover9.$mode" &&
            grep -q "plain exec: the mover did not move task [0-9]* into our cgroups: $why" "$tmp/err9.$mode"
        ok $? "$what: the shim cancels the held task and execs the program, which runs once (rc $rc, ${t}s)" ||
            { diag_file "$tmp/err9.$mode" 6; diag_file "$tmp/runs9.$mode"; diag_file "$tmp/mover9.$mode"; }
    done
else
    for what in "zygote lost before the mover moved the held task" "the mover refuses the move" "the mover says nothing"; do
        skip "needs root (the mover is root's)" "$what"
    done
fi
export PSPAWN_SHIM_KEY="$uid.$$.9c" PSPAWN_SHIM_LOCAL_TASKS=1
: >"$tmp/runs9c"
for bad in 0 99 file; do
    if [ $bad = file ]; then
        PSPAWN_SHIM_MOVER_FD=5 PSPAWN_RANK=0 timeout 30 "$shim" "$task" append "$tmp/runs9c" >/dev/null 2>"$tmp/err9c" 5</dev/null
    else
        PSPAWN_SHIM_MOVER_FD=$bad PSPAWN_RANK=0 timeout 30 "$shim" "$task" append "$tmp/runs9c" >/dev/null 2>"$tmp/err9c"
    fi
    rc=$?
    [ $rc = 0 ] && grep -q 'plain exec: the mover did not move task [0-9]* into our cgroups: Bad file descriptor' "$tmp/err9c"
    ok $? "PSPAWN_SHIM_MOVER_FD naming no socket ($bad): the held task is cancelled and the program exec'd (rc $rc)" ||
        diag_file "$tmp/err9c" 6
done
[ "$(grep -c '^0 ' "$tmp/runs9c")" = 3 ]
ok $? "each of those ran once ($(grep -c '^0 ' "$tmp/runs9c") runs)"
unset PSPAWN_SHIM_MOVER_FD
if [ "$uid" = 0 ]; then
    export PSPAWN_SHIM_KEY="$uid.$$.9d"
    : >"$tmp/runs9d"
    : >"$tmp/mover9d"
    PSPAWN_RANK=0 timeout 60 /usr/bin/python3 "$tmp/mover.py" kill-shim "$tmp/mover9d" \
        "$shim" "$task" append "$tmp/runs9d" >/dev/null 2>"$tmp/err9d"
    rc=$?
    [ $rc = 0 ] && grep -q 'ended, shim.s pid reused' "$tmp/mover9d" && [ ! -s "$tmp/runs9d" ]
    ok $? "the shim killed while its task is held, its pid reused at once: the task ends, never run (rc $rc: $(cat "$tmp/mover9d"))" ||
        { diag_file "$tmp/err9d" 6; diag_file "$tmp/runs9d"; }
else
    skip "needs root (ns_last_pid)" "the shim killed while its task is held, its pid reused at once"
fi

# 10. Squatting: anyone can bind one of the step's abstract names first.
#     A process that squats the step's socket name and never accepts, its
#     listen queue full, may be a busy zygote of ours: a stand-in waits
#     for it no longer than 3 x PSPAWN_TIMEOUT; its task runs once, by exec.
#     One of another user's, on the name or the lock, with its queue full
#     or not, is never waited on.
# squat.py NAME [full]: listen on abstract NAME, never accept; "full":
# fill its queue first.  Says "squatting" on stdout.
cat >"$tmp/squat.py" <<'EOF'
import socket, sys, time
name = "\0" + sys.argv[1]
l = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
l.bind(name)
l.listen(0)
fill = []
for _ in range(4 if sys.argv[2:] == ["full"] else 0):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.setblocking(False)
    try:
        c.connect(name)
        fill.append(c)
    except BlockingIOError:
        break
print("squatting", len(fill), flush=True)
time.sleep(60)
EOF
# squat_run CASE WHO NAME [full]: start the squatter as WHO (me, nobody).
squat_run() {
    _out=$tmp/squat.$1
    if [ "$2" = nobody ]; then
        shift 2
        setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$(cat "$tmp/squat.py")" \
            "$@" >"$_out" 2>&1 &
    else
        shift 2
        /usr/bin/python3 "$tmp/squat.py" "$@" >"$_out" 2>&1 &
    fi
    squatter=$!
    for _ in $(seq 100); do grep -q squatting "$_out" 2>/dev/null && break; sleep 0.05; done
}
export PSPAWN_SHIM_KEY="$uid.$$.10" PSPAWN_SHIM_LOCAL_TASKS=1
squat_run 10 me "pspawn-$PSPAWN_SHIM_KEY" full
t0=$(date +%s.%N)
PSPAWN_TIMEOUT=0.5 PSPAWN_RANK=0 timeout 30 "$shim" "$task" exit 6 2>"$tmp/err10"
rc=$?
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
kill $squatter 2>/dev/null
wait $squatter 2>/dev/null
[ $rc = 6 ] && grep -q 'plain exec' "$tmp/err10" && awk -v t="$t" 'BEGIN { exit !(t < 10) }'
ok $? "the step's name squatted by a listener with a full queue: no hang, the task runs by exec (rc $rc, ${t}s)" ||
    { diag_file "$tmp/err10" 6; diag_file "$tmp/squat.10"; }
if command -v setpriv >/dev/null && [ "$uid" = 0 ]; then
    n=0
    for what in name lock; do
        for queue in open full; do
            n=$((n + 1))
            export PSPAWN_SHIM_KEY="$uid.$$.10.$n"
            case $what in
                name) sq="pspawn-$PSPAWN_SHIM_KEY" ;;
                lock) sq="pspawn-$PSPAWN_SHIM_KEY.lock" ;;
            esac
            squat_run "10.$n" nobody "$sq" $queue
            : >"$tmp/runs10"
            t0=$(date +%s.%N)
            PSPAWN_RANK=0 timeout 60 "$shim" "$task" append "$tmp/runs10" >/dev/null 2>"$tmp/err10.$n"
            rc=$?
            t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
            kill $squatter 2>/dev/null
            wait $squatter 2>/dev/null
            grep -q 'plain exec' "$tmp/err10.$n" && grep -q "is another user's" "$tmp/err10.$n"
            good=$?
            [ $rc = 0 ] && [ $good = 0 ] && [ "$(grep -c '^0 ' "$tmp/runs10")" = 1 ] &&
                awk -v t="$t" 'BEGIN { exit !(t < 5) }'
            ok $? "the $what's name squatted by another user ($queue queue): not waited on, the task runs once (rc $rc, ${t}s)" ||
                { diag_file "$tmp/err10.$n" 8; diag_file "$tmp/squat.10.$n"; }
        done
    done
else
    for what in name lock; do
        for queue in open full; do
            skip "needs root and setpriv to act as a second user" "the $what's name squatted by another user ($queue queue)"
        done
    done
fi

# 11. Fan-out (fanout=core: a zygote per CPU).  Stand-ins bound to CPU 0 get
#     their tasks from the root, those bound to CPU 1 from the sub-zygote
#     the root forwards them to (the root's child); each task is bound from
#     main on, each stand-in exits with its task's code, and every zygote
#     exits once the node's tasks are done.
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null && [ -x "${PSPAWN_TOPOLOGY:-}" ] &&
   [ "${TESTS_FANOUT:-yes}" = yes ]; then
    # Forked sub-zygotes, the shim's default.  (Exec'd ones are case 12's;
    # stand-ins forwarded to one that is still starting have run by plain
    # exec under load, which this case would report.)
    for sub in fork; do
        export PSPAWN_SHIM_KEY="$uid.$$.11$sub" PSPAWN_SHIM_LOCAL_TASKS=6
        export PSPAWN_SHIM_OPTIONS=fanout=core,subzygote=$sub
        : >"$tmp/runs11"
        rm -f "$tmp"/err11.* "$tmp"/rc11.*
        for i in 0 1 2 3 4 5; do
            ( PSPAWN_RANK=$i taskset -c $((i % 2)) "$shim" "$task" where "$tmp/runs11" \
                  2>"$tmp/err11.$i"; echo $? >"$tmp/rc11.$i" ) &
        done
        wait
        zpid=$(zygote_pid "$tmp"/err11.*)
        bad=0 subs=
        for i in 0 1 2 3 4 5; do
            line=$(grep "^$i " "$tmp/runs11")
            set -- $line
            want=$((1 << (i % 2)))
            if [ "$(grep -c "^$i " "$tmp/runs11")" != 1 ] || [ "$(cat "$tmp/rc11.$i")" != 0 ] ||
               [ "$4" != "$want" ]; then
                bad=1; diag "rank $i: '$line', stand-in exited $(cat "$tmp/rc11.$i")"
                diag_file "$tmp/err11.$i" 12
            elif [ $((i % 2)) = 0 ] && [ "$3" != "$zpid" ]; then
                bad=1; diag "rank $i (CPU 0) forked by $3, not the root $zpid"
            elif [ $((i % 2)) = 1 ]; then
                [ "$3" = "$zpid" ] && { bad=1; diag "rank $i (CPU 1) forked by the root"; }
                subs="$subs $3"
            fi
        done
        [ -n "$zpid" ] && [ $bad = 0 ] && [ "$(echo $subs | tr ' ' '\n' | sort -u | wc -l)" = 1 ]
        ok $? "fanout=core,subzygote=$sub: 6 stand-ins on CPUs 0 and 1: each task forked by its CPU's zygote, bound, run once, its code kept" ||
            { diag_file "$tmp/err11.1" 8; diag_file "$tmp/runs11"; }
        left=0
        for _ in $(seq 50); do
            left=0
            for p in $zpid $subs; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
            [ $left = 0 ] && break
            sleep 0.1
        done
        [ $left = 0 ]
        ok $? "fanout=core,subzygote=$sub: the root and its sub-zygote exit once the node's tasks are done ($left left)"
    done

    # 12. The sub-zygote killed: stand-ins of its CPU get their tasks from
    #     the root instead, each once.
    export PSPAWN_SHIM_KEY="$uid.$$.12" PSPAWN_SHIM_LOCAL_TASKS=5
    export PSPAWN_SHIM_OPTIONS=fanout=core,subzygote=exec
    : >"$tmp/runs12"
    ( PSPAWN_RANK=0 taskset -c 0 "$shim" "$task" hold 0 2 7 2>"$tmp/err12.0"; echo $? >"$tmp/rc12.0" ) &
    zpid=
    for _ in $(seq 200); do zpid=$(zygote_pid "$tmp/err12.0"); [ -n "$zpid" ] && break; sleep 0.02; done
    subpid=
    for _ in $(seq 100); do
        subpid=$(ps --ppid "$zpid" -o pid=,args= 2>/dev/null | awk -v t="$task" '$2 == t && NF == 2 { print $1 }')
        [ -n "$subpid" ] && break
        sleep 0.02
    done
    [ -n "$subpid" ] && kill -KILL "$subpid"
    for i in 1 2 3 4; do
        ( PSPAWN_RANK=$i taskset -c $((i % 2)) timeout 60 "$shim" "$task" where "$tmp/runs12" \
              2>"$tmp/err12.$i"; echo $? >"$tmp/rc12.$i" ) &
    done
    wait
    bad=0
    for i in 1 2 3 4; do
        [ "$(grep -c "^$i " "$tmp/runs12")" = 1 ] && [ "$(cat "$tmp/rc12.$i")" = 0 ] ||
            { bad=1; diag "rank $i: $(grep -c "^$i " "$tmp/runs12") runs, rc $(cat "$tmp/rc12.$i")"; }
    done
    [ -n "$subpid" ] && [ $bad = 0 ] && [ "$(cat "$tmp/rc12.0")" = 7 ]
    ok $? "sub-zygote killed: the stand-ins of its CPU get their tasks from the root, each runs once, every code kept (sub-zygote ${subpid:-not found})" ||
        { diag_file "$tmp/err12.1" 6; diag_file "$tmp/runs12"; }
    unset PSPAWN_SHIM_OPTIONS
else
    for t in "fanout=core,subzygote=fork: tasks forked by their CPU's zygote" "root and sub-zygote exit" \
             "sub-zygote killed: the root serves its stand-ins"; do
        skip "needs two CPUs, taskset, and a build with hwloc" "$t"
    done
fi

# 13. A zygote that stops answering (stopped after it parked): the next
#     stand-in does not wait for ever, but execs its task after 3 x
#     PSPAWN_TIMEOUT, and the task runs once.
export PSPAWN_SHIM_KEY="$uid.$$.13" PSPAWN_SHIM_LOCAL_TASKS=2 PSPAWN_TIMEOUT=0.5
: >"$tmp/runs13"
( PSPAWN_RANK=0 timeout 60 "$shim" "$task" hold 0 3 0 2>"$tmp/err13.0"; echo $? >"$tmp/rc13.0" ) &
zpid=
for _ in $(seq 200); do zpid=$(zygote_pid "$tmp/err13.0"); [ -n "$zpid" ] && break; sleep 0.02; done
[ -n "$zpid" ] && kill -STOP "$zpid"
t0=$(date +%s.%N)
PSPAWN_RANK=1 timeout 60 "$shim" "$task" append "$tmp/runs13" 2>"$tmp/err13.1"
rc=$?
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
[ -n "$zpid" ] && [ $rc = 0 ] && [ "$(grep -c '^1 ' "$tmp/runs13")" = 1 ] &&
    grep -q 'in time (3 x PSPAWN_TIMEOUT)' "$tmp/err13.1" && awk -v t="$t" 'BEGIN { exit !(t < 20) }'
ok $? "zygote stopped: a stand-in execs its task after the timeout (${t}s, rc $rc), which runs once" ||
    { diag_file "$tmp/err13.1" 6; diag_file "$tmp/runs13"; }
# The zygote's starter, whose 3 s task has ended meanwhile (unreaped, its
# zygote stopped): it gives up on the zygote's word and on the zygote
# itself (3 x PSPAWN_TIMEOUT stopped), and ends as its task did (/proc
# keeps an unreaped task's status).
for _ in $(seq 300); do [ -s "$tmp/rc13.0" ] && break; sleep 0.1; done
rc0=$(cat "$tmp/rc13.0" 2>/dev/null)
[ -n "$zpid" ] && kill -KILL "$zpid"
wait
[ "$rc0" = 0 ]
ok $? "zygote stopped: its starter ends all the same, once its own task has, with its code (rc ${rc0:-none after 30 s})" ||
    diag_file "$tmp/err13.0" 8
unset PSPAWN_TIMEOUT

# 14. A stand-in whose first try of the zygote's name fails just before
#     another's zygote parks and frees the lock (strace holds that try
#     1 s, while the other's task holds its zygote 4 s): it then wins the lock, and must use the zygote that is there,
#     not start a second one that finds the name taken and exec.
if command -v strace >/dev/null; then
    export PSPAWN_SHIM_KEY="$uid.$$.14" PSPAWN_SHIM_LOCAL_TASKS=2
    ( timeout 60 strace -qq -o /dev/null -e trace=connect -e inject=connect:delay_exit=1000000:when=1 \
          "$shim" "$task" hold 0 1 3 2>"$tmp/err14.0"; echo $? >"$tmp/rc14.0" ) &
    for _ in $(seq 500); do grep -q 'stand-in for' "$tmp/err14.0" 2>/dev/null && break; sleep 0.01; done
    timeout 60 "$shim" "$task" hold 0 4 4 2>"$tmp/err14.1"
    rc1=$?
    wait
    rc0=$(cat "$tmp/rc14.0")
    [ "$rc0" = 3 ] && [ $rc1 = 4 ] && [ "$(cat "$tmp"/err14.* | grep -c 'forked by the zygote')" = 2 ] &&
        [ "$(cat "$tmp"/err14.* | grep -c 'starting the zygote')" = 1 ] &&
        grep -q 'parked while we took its lock' "$tmp/err14.0"
    ok $? "a stand-in that wins the lock after the zygote parked uses that zygote: one started, both tasks forked (rc $rc0, $rc1)" ||
        { diag_file "$tmp/err14.0" 6; diag_file "$tmp/err14.1" 6; }
else
    skip "needs strace" "a stand-in that wins the lock after the zygote parked uses that zygote"
fi
tap_done
