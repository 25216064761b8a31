#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Where the zygote cannot be faithful, srun --pspawn is a plain srun; and
# one user cannot use another's zygote.
. "$(dirname "$0")/lib.sh"

both static "-N2 -n4 -l ./task-static print s"
same static "a static program: same output"
[ $rc_pspawn = 0 ]
ok $? "a static program runs under --pspawn (rc $rc_pspawn)"

ax "printf '0 ./probe\n1-3 ./probe\n' > multi.conf"
ax "srun --pspawn -n4 --multi-prog multi.conf" >"$tmp/multi" 2>&1
[ "$(grep -c '^x.proxy_mapped=0' "$tmp/multi")" = 4 ]
ok $? "--multi-prog: plain exec for every task" || diag_file "$tmp/multi" 5

ax "srun --pspawn=off -n2 ./probe" >"$tmp/off" 2>&1
[ "$(grep -c '^x.proxy_mapped=0' "$tmp/off")" = 2 ]
ok $? "--pspawn=off: plain exec"

ax "cp probe probe-suid && chmod u+s probe-suid && srun --pspawn -n2 ./probe-suid" >"$tmp/suid" 2>&1
[ "$(grep -c '^x.proxy_mapped=0' "$tmp/suid")" = 2 ]
ok $? "a set-user-ID program: plain exec"

# Timers the program's constructors arm: a zygote's tasks get its alarm
# and profiling timer again (exec keeps them, fork does not); a POSIX timer
# makes every task a plain exec.
both itimers "-N2 -n4 -l --export=ALL,PSPAWN_TEST_TIMERS=itimer,PSPAWN_TEST_PROXY=1 ./timers"
same itimers "constructor-armed alarm and profiling timer: the same in every task as with plain srun" \
    "sed 's/ proxy=[01]//' | sort"
[ "$(grep -c 'real=1,0 prof=1,10000 sigprof=1 posix=0 proxy=1$' "$tmp/itimers.pspawn")" = 4 ] &&
    [ "$(grep -c 'real=1,0 prof=1,10000 sigprof=1 posix=0 proxy=0$' "$tmp/itimers.plain")" = 4 ]
ok $? "constructor-armed timers: all 4 tasks have them, forked by the zygote under --pspawn" ||
    diag_file "$tmp/itimers.pspawn" 5
ax "PSPAWN_TEST_TIMERS=posix PSPAWN_TEST_PROXY=1 srun --pspawn -N2 -n4 ./timers" >"$tmp/ptimer" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'posix=1 proxy=0$' "$tmp/ptimer")" = 4 ]
ok $? "a POSIX timer at main: plain exec for every task, each with its timer (rc $rc)" ||
    diag_file "$tmp/ptimer" 5

# --pty: srun gives task 0 a terminal, which the stand-in could not pass
# on as slurmstepd set it up: a plain exec.
ax "script -qec 'srun --pspawn --pty -n1 ./probe' /dev/null" >"$tmp/pty" 2>&1
[ "$(grep -c '^x.proxy_mapped=0' "$tmp/pty")" = 1 ] && [ "$(grep -c '^x.proxy_mapped=1' "$tmp/pty")" = 0 ]
ok $? "--pty: plain exec" || diag_file "$tmp/pty" 5

# The zygote cannot be reached: killed at once, before it parks, or 3 ms
# after its constructors, while tasks are being forked.  Either way every
# task runs once and the step's output and exit code are plain srun's
# (task lines compared without the parent, the zygote flag and whether the
# task leads its process group: a forked task is in its stand-in's group,
# spank/README.md).
if have_srun_pmix; then
    ax "srun -w c1 -N1 -n4 --mpi=pmix ./mpix hello" >"$tmp/lost.plain" 2>&1
    rc_plain=$?
    for delay in 0 3000; do
        on c1 "rm -f /tmp/srun-die"
        ax "MPIX_ZYGOTE_DIE=/tmp/srun-die:$delay srun --pspawn -w c1 -N1 -n4 --mpi=pmix ./mpix hello" \
            >"$tmp/lost$delay.pspawn" 2>&1
        rc=$?
        armed=$(on c1 "test -e /tmp/srun-die && echo 1 || echo 0")
        n=$(grep -c '^hello .* sum 6 ring 10 ' "$tmp/lost$delay.pspawn")
        f=$(grep -c ' forked 1$' "$tmp/lost$delay.pspawn")
        [ $rc = 0 ] && [ $rc_plain = 0 ] && [ "$armed" = 1 ] && [ "$n" = 4 ]
        ok $? "zygote killed $delay us after its constructors: all 4 tasks ran once, srun exits $rc ($f forked, $((4 - f)) exec'd)" ||
            diag_file "$tmp/lost$delay.pspawn" 8
        norm() { sed -E 's/ parent [^ ]+//; s/ pgid_is_pid [01]//; s/ forked [01]$//' "$1" | sort; }
        cmp -s <(norm "$tmp/lost.plain") <(norm "$tmp/lost$delay.pspawn")
        ok $? "zygote killed $delay us after its constructors: every task's line is plain srun's" ||
            diff <(norm "$tmp/lost.plain") <(norm "$tmp/lost$delay.pspawn") | head -5 | sed 's/^/# /'
    done
    on c1 "rm -f /tmp/srun-die"
else
    for delay in 0 3000; do
        skip "$NO_PMIX_WHY" "zygote killed $delay us after its constructors: all 4 tasks ran once"
        skip "$NO_PMIX_WHY" "zygote killed $delay us after its constructors: every task's line is plain srun's"
    done
fi

# srun under a parallel debugger (--debugger-test takes srun's MPIR path):
# slurmstepd stops each task at its exec for the debugger to attach, so
# --pspawn execs the tasks itself: what the debugger finds stopped is the
# program, as with plain srun, not the shim; srun's note to the step does
# not reach the tasks' environment.  srun's proctable is the same too.
for m in plain pspawn; do
    opt=; [ $m = pspawn ] && opt=--pspawn
    docker exec -u alice -w $E2E "$CTL" bash -c "timeout 60 srun $opt --debugger-test -w c1 -N1 -n2 /bin/sleep 1" \
        >"$tmp/dbg.$m" 2>&1 &
    for _ in $(seq 60); do
        [ "$(on c1 "ps -u alice -o stat= | grep -c '^T'")" = 2 ] && break
        sleep 0.5
    done
    on c1 'for p in $(ps -u alice -o pid=,stat= | awk "\$2 ~ /^T/ {print \$1}"); do
        echo "T $(readlink /proc/$p/exe) pspawn_vars=$(tr "\0" "\n" </proc/$p/environ | grep -c "PSPAWN_SHIM_\|SLURM_PSPAWN_")"
    done' >"$tmp/dbg-state.$m"
    ax "scancel -u alice" >/dev/null 2>&1
    wait
done
want=$(printf 'T /usr/bin/sleep pspawn_vars=0\nT /usr/bin/sleep pspawn_vars=0')
[ "$(cat "$tmp/dbg-state.plain")" = "$want" ] && [ "$(cat "$tmp/dbg-state.pspawn")" = "$want" ]
ok $? "under a parallel debugger (--debugger-test): the 2 stopped tasks are the program, as with plain srun, with no PSPAWN_SHIM_ or SLURM_PSPAWN_ variable" ||
    { diag_file "$tmp/dbg-state.plain" 4; diag_file "$tmp/dbg-state.pspawn" 4; }
grep 'executable:' "$tmp/dbg.plain" | sed -E 's/pid:[0-9]+/pid:N/' | sort >"$tmp/dbg-table.plain"
grep 'executable:' "$tmp/dbg.pspawn" | sed -E 's/pid:[0-9]+/pid:N/' | sort >"$tmp/dbg-table.pspawn"
[ "$(wc -l <"$tmp/dbg-table.plain")" = 2 ] && cmp -s "$tmp/dbg-table.plain" "$tmp/dbg-table.pspawn"
ok $? "under a parallel debugger: srun's proctable is the same ($(wc -l <"$tmp/dbg-table.pspawn") tasks)" ||
    { diag_file "$tmp/dbg.plain" 4; diag_file "$tmp/dbg.pspawn" 4; }

# A zygote of alice's, kept alive by a waiting task; bob tries its socket.
ax "sbatch -N1 -n2 -w c1 -o /dev/null --wrap='srun --pspawn ./task wait' | awk '{print \$4}'" >"$tmp/job"
job=$(cat "$tmp/job")
sleep 4
# The step's own name: @pspawn-UID.JOB.STEP.NONCE (16 hex digits), not its
# .lock or .fail names.
name=$(on c1 "grep -oE '@pspawn-[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9a-f]{16}( |\$)' /proc/net/unix | tr -d ' ' | head -1")
res=$(docker exec -u bob pspawn-c1 python3 -c "
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.settimeout(5)
try:
    s.connect('\0' + '${name#@}'); print('closed' if s.recv(64) == b'' else 'answered')
except ConnectionResetError: print('closed')
except socket.timeout: print('kept')
except OSError as e: print('refused', e)
" 2>&1)
[ -n "$name" ] && [ "$res" = closed ]
ok $? "bob cannot use alice's zygote ${name:-(none found)}: $res"
ax "scancel $job"

tap_done
