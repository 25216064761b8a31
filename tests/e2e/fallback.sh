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
