#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stand-in mode under hostile or odd conditions, without Slurm (as
# standin.sh): a zygote whose requests are refused, tasks whose loader
# variables differ from the zygote's, more fds than a request passes, the
# step's token in /proc/PID/environ, a signal that comes as the task is
# released, and signals=auto with SignalChildrenProcesses=yes.
. "$TESTS_SRCDIR/taplib.sh"

shim=$top_builddir/spank/pspawn-shim
probe=$TESTS_BUILDDIR/probe
task=$TESTS_BUILDDIR/task
[ -x "$shim" ] || bail "no $shim"
uid=$(id -u)
export PSPAWN_SHIM_TOKEN="tok$$secret" PSPAWN_SHIM_DEBUG=1
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
task_pid() { sed -n 's/.*task \([0-9]*\) forked by the zygote.*/\1/p' "$@" 2>/dev/null | head -n 1; }

# 1. A zygote whose requests are all refused (the task is under a seccomp
#    filter the zygote is not: a fork would run outside it) is useless at
#    once: it exits when its starter's task ends, and the starter with it,
#    not a minute later.  The refused task runs once, by exec.
cat >"$tmp/seccomp.py" <<'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
# One BPF instruction: return SECCOMP_RET_ALLOW.
insn = struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000)
buf = ctypes.create_string_buffer(insn)
prog = struct.pack("HxxxxxxQ", 1, ctypes.addressof(buf))
pbuf = ctypes.create_string_buffer(prog)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.addressof(pbuf), 0, 0) != 0:
    sys.exit("seccomp: %s" % os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
EOF
export PSPAWN_SHIM_KEY="$uid.$$.1" PSPAWN_SHIM_LOCAL_TASKS=2
: >"$tmp/runs1"
t0=$(date +%s.%N)
( PSPAWN_RANK=0 timeout 60 "$shim" "$task" hold 0 1 0 2>"$tmp/err1.0"; echo $? >"$tmp/rc1.0" ) &
for _ in $(seq 200); do grep -q parked "$tmp/err1.0" 2>/dev/null && break; sleep 0.02; done
PSPAWN_RANK=1 timeout 60 /usr/bin/python3 "$tmp/seccomp.py" "$shim" "$task" append "$tmp/runs1" \
    >/dev/null 2>"$tmp/err1.1"
rc1=$?
wait
t=$(elapsed "$t0")
[ "$(cat "$tmp/rc1.0")" = 0 ] && [ $rc1 = 0 ] && grep -q 'plain exec: zygote refused' "$tmp/err1.1" &&
    [ "$(grep -c '^1 ' "$tmp/runs1")" = 1 ] && awk -v t="$t" 'BEGIN { exit !(t < 4) }'
ok $? "a refused request: the task runs once by exec, and the zygote and its starter end with the starter's 1 s task (${t}s)" ||
    { diag_file "$tmp/err1.0" 6; diag_file "$tmp/err1.1" 6; }

# 2. Loader variables: a task whose LD_LIBRARY_PATH or LD_PRELOAD differs
#    from the zygote's is exec'd, and the debug output says which; one
#    with the same is forked.
export PSPAWN_SHIM_KEY="$uid.$$.2" PSPAWN_SHIM_LOCAL_TASKS=4
: >"$tmp/runs2"
( PSPAWN_RANK=0 timeout 60 "$shim" "$task" hold 0 2 0 2>"$tmp/err2.0"; echo $? >"$tmp/rc2.0" ) &
for _ in $(seq 200); do grep -q 'forked by the zygote' "$tmp/err2.0" 2>/dev/null && break; sleep 0.02; done
PSPAWN_RANK=1 LD_LIBRARY_PATH=/nonexistent-$$ timeout 60 "$shim" "$task" append "$tmp/runs2" \
    >/dev/null 2>"$tmp/err2.1"
rc1=$?
lib=$(ls "$TESTS_BUILDDIR"/.libs/libtiny.so* 2>/dev/null | head -n 1)
PSPAWN_RANK=2 LD_PRELOAD=${lib:-/nonexistent-$$.so} timeout 60 "$shim" "$task" append "$tmp/runs2" \
    >/dev/null 2>"$tmp/err2.2"
rc2=$?
PSPAWN_RANK=3 timeout 60 "$shim" "$task" append "$tmp/runs2" >/dev/null 2>"$tmp/err2.3"
rc3=$?
wait
[ $rc1 = 0 ] && grep -q 'its LD_LIBRARY_PATH differs from the zygote' "$tmp/err2.1" &&
    grep -q 'plain exec' "$tmp/err2.1" && [ "$(grep -c '^1 ' "$tmp/runs2")" = 1 ]
ok $? "another LD_LIBRARY_PATH than the zygote's: exec'd, and said why (rc $rc1)" || diag_file "$tmp/err2.1" 8
[ $rc2 = 0 ] && grep -q 'its LD_PRELOAD differs from the zygote' "$tmp/err2.2" &&
    grep -q 'plain exec' "$tmp/err2.2" && [ "$(grep -c '^2 ' "$tmp/runs2")" = 1 ]
ok $? "another LD_PRELOAD than the zygote's: exec'd, and said why (rc $rc2)" || diag_file "$tmp/err2.2" 8
[ $rc3 = 0 ] && grep -q 'forked by the zygote' "$tmp/err2.3" && [ "$(grep -c '^3 ' "$tmp/runs2")" = 1 ]
ok $? "the zygote's own loader variables: forked (rc $rc3)" || diag_file "$tmp/err2.3" 8

# 3. Inherited fds: 50 go through the zygote, each at its own number; 100
#    are more than a request passes: the task is exec'd with all of them,
#    and the debug output says why (none is silently left out).
# open_fds N CMD...: run CMD with fds 10..N+9 open on /dev/null (sh
# itself may take no fd number over 9).
open_fds() {
    /usr/bin/python3 -c 'import os, sys
fd = os.open("/dev/null", os.O_RDONLY)
for i in range(int(sys.argv[1])):
    os.dup2(fd, 10 + i)
os.close(fd)
os.execv(sys.argv[2], sys.argv[2:])' "$@"
}
for n in 50 100; do
    export PSPAWN_SHIM_KEY="$uid.$$.3.$n" PSPAWN_SHIM_LOCAL_TASKS=1
    open_fds $n "$shim" "$probe" >"$tmp/probe3.$n" 2>"$tmp/err3.$n"
    rc=$?
    seen=$(grep -cE '^fd\.([1-9][0-9]|1[0-9][0-9])=' "$tmp/probe3.$n")
    if [ $n = 50 ]; then
        [ $rc = 0 ] && [ "$seen" = 50 ] && grep -q 'forked by the zygote' "$tmp/err3.$n"
        ok $? "50 inherited fds: the zygote's task has all 50 at their numbers ($seen, rc $rc)" ||
            diag_file "$tmp/err3.$n" 6
    else
        [ $rc = 0 ] && [ "$seen" = 100 ] && grep -q 'plain exec: more inherited fds than a request passes' "$tmp/err3.$n"
        ok $? "100 inherited fds: exec'd with all 100, and said why ($seen, rc $rc)" ||
            diag_file "$tmp/err3.$n" 6
    fi
done

# 4. The step's token and key: the task never has them, not even in the
#    bytes of /proc/PID/environ, and the shim's own /proc/PID/environ no
#    longer shows them once it runs (their values overwritten in place).
export PSPAWN_SHIM_KEY="$uid.$$.4" PSPAWN_SHIM_LOCAL_TASKS=1
"$shim" "$task" hold 0 2 0 2>"$tmp/err4" &
spid=$!
for _ in $(seq 200); do grep -q 'forked by the zygote' "$tmp/err4" 2>/dev/null && break; sleep 0.02; done
tpid=$(task_pid "$tmp/err4")
tr '\0' '\n' <"/proc/$spid/environ" >"$tmp/env4.shim" 2>/dev/null
tr '\0' '\n' <"/proc/$tpid/environ" >"$tmp/env4.task" 2>/dev/null
wait $spid
rc=$?
[ -n "$tpid" ] && [ -s "$tmp/env4.shim" ] && ! grep -q "$PSPAWN_SHIM_TOKEN" "$tmp/env4.shim" &&
    ! grep -q "$PSPAWN_SHIM_KEY" "$tmp/env4.shim"
ok $? "the shim's /proc/PID/environ shows neither the step's token nor its key (rc $rc)" ||
    diag_file "$tmp/env4.shim" 40
[ -n "$tpid" ] && [ -s "$tmp/env4.task" ] && ! grep -q PSPAWN_SHIM_ "$tmp/env4.task" &&
    ! grep -q "$PSPAWN_SHIM_KEY" "$tmp/env4.task"
ok $? "a forked task's /proc/PID/environ has no PSPAWN_SHIM_ variable nor the step's key" ||
    diag_file "$tmp/env4.task" 40
if [ -n "$tpid" ] && [ -s "$tmp/env4.task" ] && ! grep -q "$PSPAWN_SHIM_TOKEN" "$tmp/env4.task"; then
    ok 0 "a forked task's /proc/PID/environ has not the step's token"
else
    ok 1 "a forked task's /proc/PID/environ has not the step's token"
    grep "$PSPAWN_SHIM_TOKEN" "$tmp/env4.task" | diag_file /dev/stdin
fi
# The task's own view of its /proc/PID/environ: forked by the zygote, and
# exec'd by the shim (a token of 64 characters or more is not a step's).
long=$(printf 'x%.0s' $(seq 70))
for how in forked execd; do
    export PSPAWN_SHIM_KEY="$uid.$$.4$how" PSPAWN_SHIM_LOCAL_TASKS=1
    tok=$PSPAWN_SHIM_TOKEN
    [ $how = execd ] && tok=$long
    PSPAWN_SHIM_TOKEN=$tok "$shim" /bin/sh -c 'tr "\0" "\n" </proc/$$/environ' \
        >"$tmp/env4.$how" 2>"$tmp/err4.$how"
    [ -s "$tmp/env4.$how" ] && ! grep -q PSPAWN_SHIM_ "$tmp/env4.$how" &&
        ! grep -q "$tok" "$tmp/env4.$how" && ! grep -q "$PSPAWN_SHIM_KEY" "$tmp/env4.$how" &&
        if [ $how = forked ]; then grep -q 'forked by the zygote' "$tmp/err4.$how"
        else grep -q 'plain exec' "$tmp/err4.$how"; fi
    ok $? "a task $([ $how = forked ] && echo forked || echo "exec'd") reads in its own /proc/PID/environ no PSPAWN_SHIM_ variable, token or key" ||
        { diag_file "$tmp/env4.$how" 40; diag_file "$tmp/err4.$how" 6; }
done

# 5. signals=yes: a signal that comes just as the task is released (the
#    task sends it to its stand-in as its first act; strace holds the shim
#    half a second in the system calls it makes right after the release)
#    is relayed, not lost, and does not kill the shim.
if command -v strace >/dev/null && [ "$uid" = 0 ]; then
    export PSPAWN_SHIM_KEY="$uid.$$.5" PSPAWN_SHIM_LOCAL_TASKS=1 PSPAWN_SHIM_SIGNALS=yes
    : >"$tmp/sigs5"
    script='trap "echo USR1 >>$2; exit 0" USR1; kill -USR1 $1; i=0
            while [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; exit 3'
    timeout 60 strace -qq -o /dev/null -e trace=munmap,close -e inject=munmap:delay_exit=500000 \
        sh -c 'exec "$0" /bin/sh -c "$1" sh $$ "$2"' "$shim" "$script" "$tmp/sigs5" 2>"$tmp/err5"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c USR1 "$tmp/sigs5")" = 1 ] && grep -q 'forked by the zygote' "$tmp/err5"
    ok $? "signals=yes: a signal sent as the task is released reaches it once (rc $rc)" ||
        { diag_file "$tmp/err5" 8; diag_file "$tmp/sigs5"; }
    unset PSPAWN_SHIM_SIGNALS
else
    skip "needs strace and root" "signals=yes: a signal sent as the task is released reaches it once"
fi

# 6. signals=auto under proctrack/cgroup: the shim relays (Slurm signals
#    only the shims), unless cgroup.conf's SignalChildrenProcesses=yes
#    (the plugin says PSPAWN_SHIM_SIGNAL_CHILDREN=1), where Slurm signals
#    every process of the step, the task too: relayed as well, the task
#    would get each signal twice.
for children in 0 1; do
    export PSPAWN_SHIM_KEY="$uid.$$.6.$children" PSPAWN_SHIM_LOCAL_TASKS=1
    export PSPAWN_SHIM_SIGNALS=auto PSPAWN_SHIM_PROCTRACK=proctrack/cgroup
    [ $children = 1 ] && export PSPAWN_SHIM_SIGNAL_CHILDREN=1
    : >"$tmp/sigs6"
    PSPAWN_RANK=0 "$shim" "$task" signals "$tmp/sigs6" 2>"$tmp/err6" &
    spid=$!
    for _ in $(seq 100); do grep -q ready "$tmp/sigs6" && break; sleep 0.05; done
    tpid=$(task_pid "$tmp/err6")
    # As proctrack/cgroup does with SignalChildrenProcesses=yes: the task
    # too (first: two signals at once would merge into one).
    if [ $children = 1 ] && [ -n "$tpid" ]; then
        kill -USR1 "$tpid"
        for _ in $(seq 100); do grep -q USR1 "$tmp/sigs6" && break; sleep 0.01; done
    fi
    kill -USR1 $spid
    wait $spid
    rc=$?
    unset PSPAWN_SHIM_SIGNALS PSPAWN_SHIM_PROCTRACK PSPAWN_SHIM_SIGNAL_CHILDREN
    [ $rc = 0 ] && [ "$(grep -c USR1 "$tmp/sigs6")" = 1 ]
    good=$?
    if [ $children = 1 ]; then
        ok $good "signals=auto, proctrack/cgroup with SignalChildrenProcesses=yes: not relayed, SIGUSR1 reaches the task once (rc $rc)" ||
            { diag_file "$tmp/sigs6"; diag_file "$tmp/err6" 6; }
    else
        ok $good "signals=auto, proctrack/cgroup: relayed, SIGUSR1 reaches the task once (rc $rc)" ||
            { diag_file "$tmp/sigs6"; diag_file "$tmp/err6" 6; }
    fi
done

# 7. A topology helper that never answers (hwloc stuck on a broken /sys)
#    while the stand-in holds the step's .lock: it is killed after
#    2 x PSPAWN_TIMEOUT, the zygote serves without fan-out, and the task
#    runs once.
printf '#!/bin/sh\nexec sleep 60\n' >"$tmp/hung-topology"
chmod +x "$tmp/hung-topology"
export PSPAWN_SHIM_KEY="$uid.$$.7" PSPAWN_SHIM_LOCAL_TASKS=1 PSPAWN_SHIM_OPTIONS=fanout=core
: >"$tmp/runs7"
t0=$(date +%s.%N)
PSPAWN_TIMEOUT=0.5 PSPAWN_TOPOLOGY=$tmp/hung-topology PSPAWN_RANK=0 timeout 30 "$shim" "$task" \
    append "$tmp/runs7" >/dev/null 2>"$tmp/err7"
rc=$?
t=$(elapsed "$t0")
unset PSPAWN_SHIM_OPTIONS
[ $rc = 0 ] && [ "$(grep -c '^0 ' "$tmp/runs7")" = 1 ] && awk -v t="$t" 'BEGIN { exit !(t < 10) }'
ok $? "a topology helper that hangs: given up on after 2 x PSPAWN_TIMEOUT, the task runs once (${t}s, rc $rc)" ||
    diag_file "$tmp/err7" 6

tap_done
