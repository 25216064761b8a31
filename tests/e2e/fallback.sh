#!/usr/bin/env bash
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
name=$(on c1 "cat /proc/net/unix | grep -o '@pspawn-[0-9.]*' | grep -v '\\.lock\\|\\.fail' | head -1")
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
