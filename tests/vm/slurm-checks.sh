#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/slurm-checks.sh - runs in the cgroup v2 guest of
# tests/vm/slurm-vm.sh (as root, from the guest's second disk, output on
# the serial port): srun --pspawn against plain srun on Slurm's cgroup/v2,
# c1 under systemd (Delegate=yes, scope over D-Bus) and c2 with
# IgnoreSystemd=yes in a cgroup namespace of its own.  Every check runs
# both ways in the same guest and compares.
here=$(cd "$(dirname "$0")" && pwd)
echo; echo "slurm-vm: begin"
t_begin=$(date +%s)
PSPAWN_BIN=unused TESTS_BUILDDIR=unused
. "$here/taplib.sh"
# finish: the plan, then the end marker tests/vm/slurm-vm.sh looks for.
finish() { diag "checks: $(( $(date +%s) - t_begin )) s"; echo "1..$tap_n"; echo "slurm-vm: end $tap_failed"; exit 0; }
src=/usr/src/libpspawn
E2E=/home/alice/vm
export SLURM_TIME_FORMAT=standard

# ax CMD: CMD as alice in $E2E.  root_c2 CMD: CMD as root in node c2's
# namespaces (its /tmp, /run, cgroup tree).
ax() { runuser -u alice -- bash -c "cd $E2E 2>/dev/null; $1"; }
on() {
    if [ "$1" = c1 ]; then bash -c "$2"
    else nsenter -t "$(pgrep -o -f '^/usr/sbin/slurmd -D -N c2')" -n -u -m -C bash -c "$2"; fi
}

# The cluster: both nodes idle (slurmd and slurmctld start after systemd
# reaches its units; under QEMU's emulator that takes a while).
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt 300 ]; do
    [ "$(timeout 20 sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" = 2 ] && break
    sleep 1
done
diag "systemd $(systemctl --version | head -n 1 | cut -d' ' -f2), kernel $(uname -r), $(sinfo -V), cluster idle after $(( $(date +%s) - t0 )) s of checks' wait, $(cut -d' ' -f1 /proc/uptime) s since boot"
[ "$(sinfo -h -N -o %T | grep -c '^idle$')" = 2 ]
if ! ok $? "two nodes idle: $(sinfo -h -N -o '%N=%T' | xargs)"; then
    for u in slurmctld slurmd slurmd-c2; do systemctl status --no-pager -l $u 2>&1 | tail -n 8 | sed 's/^/# /'; done
    tail -n 20 /var/log/slurm/*.log | sed 's/^/# /'
    finish
fi
stat -f -c %T /sys/fs/cgroup | grep -qx cgroup2fs
ok $? "the guest runs cgroup v2 only (/sys/fs/cgroup is $(stat -f -c %T /sys/fs/cgroup))"
grep -qx 'Delegate=yes' <(systemctl show -p Delegate slurmd.service)
ok $? "c1's slurmd is a systemd unit with Delegate=yes ($(systemctl show -p ControlGroup --value slurmd.service))"
c2cg=$(systemctl show -p ControlGroup --value slurmd-c2.service)
on c2 'cat /proc/$(pgrep -o -f "^/usr/sbin/slurmd -D -N c2")/cgroup' | grep -q '^0::/slurmd'
ok $? "c2's slurmd is in a cgroup namespace of its own, rooted at $c2cg"

# The plugin says, as slurmd starts, what this kernel lacks: trixie's 6.12
# keeps no exit status for a reaped process's pidfd (PIDFD_INFO_EXIT,
# 6.15); sid's kernel lacks nothing, and the log says nothing.
said=$(grep -h -o 'pspawn: kernel [^:]*: no [A-Za-z_ ]* (Linux [0-9.]*)' /var/log/slurm/slurmd-c1.log 2>/dev/null | sort -u)
release=$(uname -r | cut -d- -f1)
if [ "$(printf '%s\n' "$release" 6.15 | sort -V | head -n 1)" != 6.15 ]; then
    echo "$said" | grep -q 'no PIDFD_INFO_EXIT (Linux 6.15)'
    ok $? "slurmd's log says what Linux $release lacks: $(echo $said)"
else
    [ -z "$said" ]
    ok $? "slurmd's log says Linux $release lacks nothing (${said:-nothing said})"
fi

mkdir -p "$E2E" && chown alice:alice "$E2E"
ax "gcc -D_GNU_SOURCE -O2 -o task $src/tests/fixtures/task.c &&
    gcc -D_GNU_SOURCE -O2 -o probe $src/tests/fixtures/probe.c"
ok $? "the test programs build in the guest" || { finish; }
mkdir -p /home/bob/vm && chown bob:bob /home/bob/vm
runuser -u bob -- gcc -O2 -I$src/libpspawn/wire -I$src/spank -o /home/bob/vm/hostile $src/tests/e2e/hostile.c &&
    gcc -O2 -I$src/libpspawn/wire -o /root/vm-reuse-pid $src/tests/e2e/reuse-pid.c
ok $? "bob's tool and root's (tests/e2e/hostile.c, reuse-pid.c) build in the guest"

settled() {
    for _ in $(seq 100); do
        sinfo -h -N -o %T | grep -qvx idle || return 0
        sleep 0.3
    done
}
# both NAME SRUN_ARGS [PSPAWN]: srun SRUN_ARGS plain, then with --pspawn
# (or PSPAWN); outputs in $tmp/NAME.plain, NAME.pspawn, codes in
# $rc_plain, $rc_pspawn.
both() {
    settled; ax "srun $2" >"$tmp/$1.plain" 2>&1; rc_plain=$?
    settled; ax "srun ${3:---pspawn} $2" >"$tmp/$1.pspawn" 2>&1; rc_pspawn=$?
}
# same NAME DESCRIPTION [FILTER]: the two outputs agree through FILTER.
same() {
    if diff <(eval "${3:-sort}" <"$tmp/$1.plain") <(eval "${3:-sort}" <"$tmp/$1.pspawn") >"$tmp/$1.diff"; then
        ok 0 "$2"
    else
        ok 1 "$2"; diag_file "$tmp/$1.diff" 12
    fi
}
# The job's folder is job_N on Slurm < 26.05 (or with CgroupJobIdPaths=yes)
# and the job's SLUID on 26.05: one name for either, for comparing.
jobname="sed -E 's#/(job_[0-9]+|s[0-9A-Z]{13})/#/JOB/#'"

# checks: srun --pspawn against plain srun, every way; once per way Slurm
# names a job's folder (below).
checks() {
    # 1. Each task's cgroup, for each way a task can be made.
    for way in "--pspawn" "--pspawn=on,fanout=core" "--pspawn=on,mode=pip"; do
        n=cg$(echo "$way" | tr -c 'a-z0-9\n' _)
        both "$n" "-N2 -n4 -l cat /proc/self/cgroup" "$way"
        grep -qE '^[0-9]+: 0::/system.slice/([^/]+_)?slurmstepd.scope/[^/]+/step_[0-9]+/user/task_[0-9]+$' "$tmp/$n.plain" &&
            [ $rc_plain = 0 ] && [ $rc_pspawn = 0 ]
        ok $? "$way: plain tasks are in step_S/user/task_T, both steps exit 0 ($rc_plain, $rc_pspawn)" ||
            { diag_file "$tmp/$n.plain" 4; diag_file "$tmp/$n.pspawn" 4; }
        same "$n" "$way: every task's /proc/self/cgroup equals plain srun's, on both nodes" "$jobname | sort"
    done
    # reuse=job: the job's zygote sits in the extern step; its tasks are moved
    # out of it into their step's task_T, as plain tasks are.
    reuse_job() {
        ax "salloc -N2 -n4 bash -c 'srun $1 -l cat /proc/self/cgroup; srun $1 -l cat /proc/self/cgroup'" 2>&1 |
            grep -E '^[0-9]+: ' | sed -E 's#/step_[0-9]+/#/step_S/#'
    }
    settled; reuse_job "" >"$tmp/reuse.plain"
    settled; reuse_job "--pspawn=on,reuse=job" >"$tmp/reuse.pspawn"
    [ "$(wc -l <"$tmp/reuse.plain")" = 8 ]
    ok $? "salloc with two steps: 8 task lines plain" || diag_file "$tmp/reuse.plain" 8
    same reuse "reuse=job: every task's /proc/self/cgroup equals plain srun's (two steps in one job)" "$jobname | sort"
    # ... and it was the job's zygote that forked them: their parent is in the
    # job's extern step (where a plain task's parent is its slurmstepd).
    settled
    ax "salloc -N2 -n4 bash -c 'srun --pspawn=on,reuse=job -l bash -c \"cat /proc/\\\$PPID/cgroup\"'" >"$tmp/reuse.parent" 2>&1
    [ "$(grep -cE '^[0-9]+: 0::/.*/step_extern(/|$)' "$tmp/reuse.parent")" = 4 ]
    ok $? "reuse=job: all 4 tasks' parent is in the job's extern step (the job's zygote)" || diag_file "$tmp/reuse.parent" 6
    # A Python step (the warm Python zygote).
    both py "-N2 -n4 -l python3 -c 'print(open(\"/proc/self/cgroup\").read().strip())'"
    [ $rc_plain = 0 ] && [ $rc_pspawn = 0 ]
    ok $? "Python step: both exit 0 ($rc_plain, $rc_pspawn)" || diag_file "$tmp/py.pspawn" 6
    same py "Python step: every task's /proc/self/cgroup equals plain srun's" "$jobname | sort"

    # 2. cpuset and devices: the plain task's.
    both cpus "-N2 -n4 -l bash -c 'c=\$(cut -d: -f3 /proc/self/cgroup); echo \$(cat /sys/fs/cgroup\$c/cpuset.cpus.effective) \$(grep Cpus_allowed_list /proc/self/status)'"
    same cpus "cpuset.cpus.effective of each task's cgroup and its affinity equal plain srun's"
    # /dev/full is a GRES device here (gres.conf): a task without --gres is
    # denied it by the step's device program, one with --gres=gpu:1 is not.
    both dev "-N1 -n1 bash -c 'echo > /dev/full; echo rc=\$?'"
    grep -q 'Operation not permitted' "$tmp/dev.plain"
    ok $? "plain: /dev/full (a GRES device not allocated) is denied" || diag_file "$tmp/dev.plain" 3
    same dev "--pspawn: the same device denial as plain"
    both devok "-N1 -n1 --gres=gpu:1 bash -c 'echo > /dev/full; echo rc=\$?'"
    same devok "--gres=gpu:1: the device allowed (ENOSPC) both ways"

    # 3. Memory.  A task allocating past --mem is OOM-killed, as a plain one.
    both oom "-N1 -n1 --mem=100M ./task hold 300 5"
    diag "--mem=100M, 300 MB: plain rc $rc_plain, --pspawn rc $rc_pspawn"
    [ $rc_plain != 0 ] && [ $rc_plain = $rc_pspawn ]
    ok $? "a task over --mem ends with the same srun status both ways ($rc_plain, $rc_pspawn)"
    grep -qi 'oom' "$tmp/oom.plain" && grep -qi 'oom' "$tmp/oom.pspawn"
    ok $? "both report an OOM kill" || { diag_file "$tmp/oom.plain" 4; diag_file "$tmp/oom.pspawn" 4; }
    # A task's own memory is charged to its task_T, not to the zygote's
    # cgroup: the task's shell reads its own cgroup's memory.current while its
    # child holds 128 MB.
    both mem "-N2 -n2 --mem=400M bash -c './task hold 128 10 & sleep 7; cat /sys/fs/cgroup\$(cut -d: -f3 /proc/self/cgroup)/memory.current; wait'"
    diag "memory.current of a task holding 128 MB: plain $(xargs <"$tmp/mem.plain"), --pspawn $(xargs <"$tmp/mem.pspawn")"
    [ "$(awk -v m=$((128 << 20)) '$1 >= m' "$tmp/mem.plain" | wc -l)" = 2 ] &&
        [ "$(awk -v m=$((128 << 20)) '$1 >= m' "$tmp/mem.pspawn" | wc -l)" = 2 ]
    ok $? "each task's 128 MB are charged to its own task_T cgroup, on both nodes, both ways"

    # Where the rest is charged: each folder of the job on c1 while 2 tasks
    # hold 16 MB each (memory.current, and memory.stat's pagetables), plain,
    # with a step zygote and with the job's zygote (reuse=job, extern step;
    # the program by absolute path: reuse=job starts ./task's zygote in its
    # step, spank/README.md).
    cat >"$E2E/charges.sh" <<'SH'
srun "$@" "$PWD/task" hold 16 12 &
sleep 8
# The job's folder (job_N, or the job's SLUID on Slurm 26.05): a task's
# cgroup (a process whose command line starts with the program's: not
# srun's) up to its step's folder.
task=$(pgrep -u "$(id -u)" -f "^$PWD/task hold 16" | head -n 1)
cg=$(cut -d: -f3 "/proc/$task/cgroup" 2>/dev/null)
case $cg in */step_*) ;; *) echo "no task's cgroup ($task: $cg)"; exit 1 ;; esac
cd "/sys/fs/cgroup${cg%%/step_*}" || exit 1
for d in $(find . -name memory.current | sort); do
    d=${d%/memory.current}
    echo "$d $(cat $d/memory.current) $(awk '$1 == "pagetables" { print $2 }' $d/memory.stat)"
done
wait
SH
    for way in "" --pspawn "--pspawn=on,reuse=job"; do
        settled
        diag "bytes charged to each folder of the job (memory.current, pagetables), 2 tasks of 16 MB, srun ${way:-(plain)}:"
        diag "$(ax "salloc -N1 -n2 -w c1 bash charges.sh $way" 2>/dev/null | awk 'NF == 3 && $1 ~ /^[.]/ { print "   " $0 }')"
    done

    # 4. scancel and the job's end leave nothing: no task, no zygote, no folder.
    leftovers() {
        { ps -u alice -o pid=,args= | grep -v -e ' ps -u' -e 'bash -c'
          on c1 'ls -d /sys/fs/cgroup/system.slice/*slurmstepd.scope/*/ 2>/dev/null | grep -v system/'
          on c2 'ls -d /sys/fs/cgroup/system.slice/*slurmstepd.scope/*/ 2>/dev/null | grep -v system/'; } | sed '/^$/d'
    }
    for way in "" "--pspawn" "--pspawn=on,reuse=job"; do
        settled
        ax "srun $way -N2 -n4 -J sc $E2E/task hold 1 600 >/dev/null 2>&1 & sleep 1
            for i in \$(seq 60); do [ -n \"\$(squeue -h -n sc -t R)\" ] && break; sleep 0.5; done; sleep 3
            scancel -n sc; wait" >/dev/null 2>&1
        for _ in $(seq 60); do [ -z "$(leftovers)" ] && break; sleep 0.5; done
        left=$(leftovers)
        [ -z "$left" ]
        ok $? "scancel of srun ${way:-(plain)}: no process of alice's and no job folder left on either node" ||
            diag "$left"
    done

    # 5. The zygote SIGKILLed while its tasks run (this kernel, 6.12, keeps no
    #    exit status for a reaped process's pidfd): each task still ends with
    #    its own exit code, told to its stand-in by the zygote's keeper, and
    #    srun reports the codes plain srun reports.  Each task writes its
    #    parent (the zygote) where root finds it.
    cat >"$E2E/exits.sh" <<'SH'
echo $PPID >"$HOME/vm/zyg.$SLURM_PROCID"
sleep 6
exit $((3 + SLURM_PROCID))
SH
    codes() { grep -o 'task[s]* [0-9-]*: Exited with exit code [0-9]*' "$1" | sort; }
    for way in "" "--pspawn" "--pspawn=on,reuse=job"; do
        settled
        rm -f "$E2E"/zyg.*
        n=exits$(echo "$way" | tr -c 'a-z0-9\n' _)
        ax "salloc -N2 -n4 srun $way bash $E2E/exits.sh" >"$tmp/$n" 2>&1 &
        job=$!
        for _ in $(seq 60); do [ "$(ls "$E2E"/zyg.* 2>/dev/null | wc -l)" = 4 ] && break; sleep 0.5; done
        killed=0
        if [ -n "$way" ]; then
            for z in $(cat "$E2E"/zyg.* 2>/dev/null | sort -u); do kill -KILL "$z" && killed=$((killed + 1)); done
        fi
        wait $job
        rc=$?
        if [ -z "$way" ]; then
            rc_plain=$rc
            codes "$tmp/$n" >"$tmp/exits.plain"
            [ "$(wc -l <"$tmp/exits.plain")" -ge 2 ]
            ok $? "plain srun: each task's exit code reported (rc $rc): $(xargs <"$tmp/exits.plain")" ||
                diag_file "$tmp/$n" 8
        else
            codes "$tmp/$n" >"$tmp/exits.pspawn"
            [ $killed = 2 ] && [ $rc = $rc_plain ] && cmp -s "$tmp/exits.plain" "$tmp/exits.pspawn"
            ok $? "srun $way, each node's zygote SIGKILLed under its 2 running tasks ($killed killed): every task's exit code as plain srun reports it (rc $rc)" ||
                { diag_file "$tmp/$n" 8; diag_file "$tmp/exits.pspawn" 4; }
        fi
    done
    rm -f "$E2E"/zyg.*

    # 6. --wait-for-children (Slurm >= 25.05, cgroup v2).
    if srun --help 2>&1 | grep -q -- --wait-for-children; then
        both wfc "-N1 -n1 --wait-for-children bash -c '(sleep 3; echo child done) & echo parent done'"
        same wfc "--wait-for-children waits for a task's child both ways"
    else
        skip "srun $(sinfo -V | cut -d' ' -f2) has no --wait-for-children (Slurm >= 25.05)" "--wait-for-children"
    fi

    # 7. sstat per task while the step runs (jobacct_gather/cgroup reads
    #    each task_T): 2 tasks
    #    holding 64 MB each, the step's task count and its biggest task's
    #    MaxRSS as plain srun's, within 10 %.
    cat >"$E2E/sstat.sh" <<'SH'
srun "$@" -n2 "$PWD/task" hold 64 14 &
sleep 10
sstat -n -P -j "$SLURM_JOB_ID.0" -o NTasks,MaxRSS
wait
SH
    for way in "" --pspawn; do
        settled
        ax "salloc -N1 -n2 -w c1 bash sstat.sh $way" 2>/dev/null | grep '|' >"$tmp/sstat.${way:-plain}"
    done
    diag "sstat NTasks|MaxRSS: plain $(xargs <"$tmp/sstat.plain"), --pspawn $(xargs <"$tmp/sstat.--pspawn")"
    # MaxRSS in K, M or G: in KB.
    kb() { awk -F'|' '{ v = $2; u = substr(v, length(v)); n = v + 0
                        if (u == "M") n *= 1024; else if (u == "G") n *= 1048576
                        print $1, int(n) }' "$1"; }
    read -r n_plain rss_plain < <(kb "$tmp/sstat.plain")
    read -r n_pspawn rss_pspawn < <(kb "$tmp/sstat.--pspawn")
    [ "${n_plain:-0}" = 2 ] && [ "${n_pspawn:-0}" = 2 ] && [ "${rss_plain:-0}" -ge $((60 * 1024)) ] &&
        awk -v a="$rss_plain" -v b="${rss_pspawn:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= a / 10) }'
    ok $? "sstat: 2 tasks, and the biggest task's MaxRSS as plain srun's within 10 % (${rss_plain:-none} KB, ${rss_pspawn:-none} KB)"

    # 8. sacct (slurmdbd on c1): one job over both nodes, each way a step
    #    whose task 2 holds 96 MB, then one whose tasks exit 3; slurmdbd's
    #    records of the --pspawn steps are the plain ones'.  TotalCPU is
    #    said, not compared: it also counts the zygote's start.
    cat >"$E2E/acct.sbatch" <<'SH'
#!/bin/bash
hold='exec ./task hold $([ $SLURM_PROCID = 2 ] && echo 96 || echo 8) 6'
srun bash -c "$hold"
srun --pspawn bash -c "$hold"
srun bash -c 'exit 3'
srun --pspawn bash -c 'exit 3'
SH
    settled
    jid=$(ax "sbatch --parsable -N2 -n4 -o /dev/null acct.sbatch")
    for _ in $(seq 240); do
        [ "$(ax "sacct -n -P -j $jid.0,$jid.1,$jid.2,$jid.3 -o State" | grep -cE '^(COMPLETED|FAILED)')" = 4 ] && break
        sleep 0.5
    done
    for s in 0 1 2 3; do
        ax "sacct -n -P -j $jid.$s -o NTasks,MaxRSS,MaxRSSTask,MaxVMSizeTask,State,ExitCode,TotalCPU" >"$tmp/sacct.$s"
    done
    diag "sacct NTasks|MaxRSS|MaxRSSTask|MaxVMSizeTask|State|ExitCode|TotalCPU: plain $(cat "$tmp/sacct.0"), --pspawn $(cat "$tmp/sacct.1"); exit 3: plain $(cat "$tmp/sacct.2"), --pspawn $(cat "$tmp/sacct.3")"
    IFS='|' read -r nt_plain rss_plain rsst_plain vmt_plain st_plain ec_plain _ <"$tmp/sacct.0"
    IFS='|' read -r nt_pspawn rss_pspawn rsst_pspawn vmt_pspawn st_pspawn ec_pspawn _ <"$tmp/sacct.1"
    rss_plain=$(echo "0|$rss_plain" | kb /dev/stdin | cut -d' ' -f2)
    rss_pspawn=$(echo "0|$rss_pspawn" | kb /dev/stdin | cut -d' ' -f2)
    [ "$nt_plain" = 4 ] && [ "$nt_pspawn" = 4 ] && [ "$st_plain|$ec_plain" = "COMPLETED|0:0" ] &&
        [ "$st_pspawn|$ec_pspawn" = "COMPLETED|0:0" ] && [ "${rss_plain:-0}" -ge $((90 * 1024)) ] &&
        awk -v a="$rss_plain" -v b="${rss_pspawn:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= a / 10) }'
    ok $? "sacct: both steps recorded with 4 tasks, COMPLETED 0:0, the biggest task's MaxRSS as plain's within 10 % (${rss_plain:-none} KB, ${rss_pspawn:-none} KB)"
    # (MaxVMSizeTask is said, not compared: on cgroup v2 plain srun's
    # record names task 0 or 1 too, not the task holding 96 MB.)
    [ "$rsst_plain" = 2 ] && [ "$rsst_pspawn" = 2 ]
    ok $? "sacct: the biggest task is task 2 in both records (MaxRSSTask $rsst_plain $rsst_pspawn; MaxVMSizeTask $vmt_plain $vmt_pspawn)"
    [ "$(cut -d'|' -f1,5,6 "$tmp/sacct.2")" = "4|FAILED|3:0" ] && [ "$(cut -d'|' -f1,5,6 "$tmp/sacct.3")" = "4|FAILED|3:0" ]
    ok $? "sacct: tasks that exit 3 give the same record both ways ($(cut -d'|' -f1,5,6 "$tmp/sacct.2"), $(cut -d'|' -f1,5,6 "$tmp/sacct.3"))"

    hostile_checks
}

# 9. bob, a second user, on both nodes against alice's --pspawn steps (what
#    tests/e2e/hostile.sh does on cgroup v1 that touches cgroups or the
#    mover): his binds of her next step's names, his probes of every name
#    of hers while her step runs (junk, a request with a 1 GiB memfd, a
#    mover request for one of her pids with a made-up token) and his
#    signals to her processes change nothing: her tasks' cgroups are plain
#    srun's; and root, ending her reuse=job job, does not kill a process of
#    bob's that took the pid of her job zygote's listener.
# bn NODE CMD: CMD as bob on NODE (its namespaces), in ~bob/vm, in a
# session of his own: the kernel lets SIGCONT reach any process of one's
# own session, and these scripts' session is alice's srun's too.
bn() { on "$1" "runuser -u bob -- setsid -w bash -c $(printf %q "cd /home/bob/vm && $2")"; }
hostile_checks() {
    local auid buid n next names tag step
    auid=$(id -u alice) buid=$(id -u bob)
    step="-N2 -n4 -l bash -c 'cat /proc/self/cgroup; sleep \${1:-0}' x"
    settled; ax "srun $step" >"$tmp/h.plain" 2>&1
    # His binds (full queues) of the zygote's names of her next job's steps.
    next=$({ scontrol -o show jobs | grep -o '^JobId=[0-9]*' | cut -d= -f2
             sacct -a -X -n -P -o JobID -S now-1days; echo 0; } | grep -E '^[0-9]+$' | sort -n | tail -n 1)
    next=$((next + 1))
    names=$(for j in $next $((next + 1)); do for x in "" .lock .fail; do echo -n " pspawn-$auid.$j.0$x"; done; done)
    for n in c1 c2; do bn $n "rm -f sq.$n.*; (timeout 200 ./hostile squat --full 150 $names >sq.$n.out 2>&1 &)"; done
    for n in c1 c2; do
        for _ in $(seq 100); do [ "$(bn $n "grep -c '^squat .* seqpacket ok$' sq.$n.out 2>/dev/null")" = 6 ] && break; sleep 0.2; done
    done
    settled; ax "srun --pspawn $step" >"$tmp/h.squat" 2>&1; rc=$?
    for n in c1 c2; do bn $n "pkill -u bob -x hostile; sleep 1; cat sq.$n.out"; done >"$tmp/h.squatters"
    diag "bob's binds: $(grep -c ' seqpacket ok$' "$tmp/h.squatters") of 12 names ($names on each node), $(grep -c '^conn ' "$tmp/h.squatters") connections of alice's to them"
    [ $rc = 0 ] && diff <(eval "$jobname | sort" <"$tmp/h.plain") <(eval "$jobname | sort" <"$tmp/h.squat") >"$tmp/h.squat.diff" &&
        ! grep -q '^conn .* bytes=[1-9]' "$tmp/h.squatters"
    ok $? "bob holds her next steps' names on both nodes: her step exits 0, every task in plain srun's cgroups, nothing sent to him (rc $rc)" ||
        { diag_file "$tmp/h.squat.diff" 8; grep '^conn ' "$tmp/h.squatters" | head -4 | sed 's/^/# /'; }
    # While a step of hers runs: his probes and signals, on each node.
    settled
    ax "srun --pspawn $step 20" >"$tmp/h.live" 2>&1 &
    local job=$!
    for _ in $(seq 100); do [ "$(grep -c "@pspawn-$auid\." /proc/net/unix)" -ge 1 ] && sleep 2 && break; sleep 0.3; done
    : >"$tmp/h.probe"; : >"$tmp/h.signal"
    for n in c1 c2; do
        bn $n "names=\$(grep -oE '@pspawn-(job\.)?$auid\.[^ ]*' /proc/net/unix | sort -u | cut -c2-); echo names \$names;
            victim=\$(ps -u alice -o pid= | sort -n | tail -n 1);
            timeout 120 ./hostile probe --pid \${victim:-1} \$names" >>"$tmp/h.probe" 2>&1
        bn $n "timeout 120 ./hostile signal \$(ps -u alice -o pid=)" >>"$tmp/h.signal" 2>&1
    done
    wait $job; rc=$?
    bad=$(awk '$1 == "attempt" { kind = $2 ~ /\.(lock|fail)$/ ? "other" : "zygote"; r = $4
            good = r ~ /^refused:/ || r == "burst-refused" || (kind == "zygote" && r ~ /^closed/) ||
                   (kind == "other" && (r == "nothing" || r ~ /^closed/))
            if (!good) print }' "$tmp/h.probe")
    n_names=$(grep '^names' "$tmp/h.probe" | wc -w)
    n_att=$(grep -c '^attempt ' "$tmp/h.probe")
    [ $((n_names - 2)) -ge 2 ] && [ "$n_att" -gt 0 ] && [ -z "$bad" ] && grep -q ' mover-request ' "$tmp/h.probe"
    ok $? "her live step: bob's $n_att connections and messages to her $((n_names - 2)) names on both nodes (a mover request for her pid among them) all refused" ||
        { echo "$bad" | head -6 | sed 's/^/# /'; diag_file "$tmp/h.probe" 4; }
    n_sig=$(grep -c '^attempt ' "$tmp/h.signal")
    [ "$n_sig" -gt 0 ] && [ "$(grep -c ' ALLOWED$' "$tmp/h.signal")" = 0 ] &&
        [ "$(grep '^attempt ' "$tmp/h.signal" | grep -vcE ' (EPERM|EACCES|ESRCH)$')" = 0 ]
    ok $? "her live step: bob's $n_sig signals, traces and reads of her processes all refused" ||
        grep '^attempt ' "$tmp/h.signal" | grep -vE ' (EPERM|EACCES|ESRCH)$' | head -6 | sed 's/^/# /'
    [ $rc = 0 ] && diff <(eval "$jobname | sort" <"$tmp/h.plain") <(eval "$jobname | sort" <"$tmp/h.live") >"$tmp/h.live.diff"
    ok $? "her live step exits 0, every task in plain srun's cgroups (rc $rc)" || diag_file "$tmp/h.live.diff" 8
    # Root acts only on a pid it pinned: her job's zygote's listener (c1)
    # gives its socket to a process of hers and dies; a process of bob's
    # takes its pid (reuse-pid); her job's end must leave it alive.
    settled
    ax "sbatch --parsable -N1 -w c1 -o /dev/null --wrap='srun --pspawn=on,reuse=job,fanout=none -n1 true; sleep 20'" >"$tmp/h.pin"
    local pj zname res taker owner
    pj=$(cat "$tmp/h.pin")
    for _ in $(seq 300); do
        zname=$(grep -oE "@pspawn-job\.$auid\.$pj\.[0-9a-f]{16}\.[0-9a-f]{16}( |\$)" /proc/net/unix | tr -d ' ' | head -n 1 | cut -c2-)
        [ -n "$zname" ] && break
        sleep 0.2
    done
    # (Into a file: the holder and the taker keep its stdout open, and a
    # $(...) would wait for them, 300 s.)
    timeout 60 /root/vm-reuse-pid "$zname" "$auid" "$buid" >"$tmp/h.res" 2>&1 </dev/null
    res=$(head -n 1 "$tmp/h.res")
    taker=$(awk '{ print $6 }' <<<"$res")
    for _ in $(seq 180); do [ -z "$(squeue -h -j "$pj" 2>/dev/null)" ] && break; sleep 0.5; done
    sleep 3
    owner=$( [ "${taker:-0}" != 0 ] && stat -c %U "/proc/$taker" 2>/dev/null)
    [ -n "$zname" ] && [ "${taker:-0}" != 0 ] && [ "$owner" = bob ]
    ok $? "her reuse=job job $pj's end: bob's process that took the pid of her job zygote's listener ($res) lives" ||
        diag "zygote name '$zname', the taker's owner now '$owner'"
    pkill -u bob 2>/dev/null; pkill -u alice -f vm-reuse-pid 2>/dev/null
    true
}

# The job's folder: job_N before Slurm 26.05; from 26.05 on the job's
# SLUID under cgroup v2, unless cgroup.conf says CgroupJobIdPaths=yes.
# Slurm 26.05 runs every check both ways.
# folder_style: a task's job folder into $folder, its kind into $style.
folder_style() {
    settled
    local cg
    cg=$(ax "srun -N1 -n1 cat /proc/self/cgroup" | grep '^0::/')
    folder=${cg%%/step_*}; folder=${folder##*/}
    case $folder in
        job_[0-9]*) style=job_N ;;
        s[0-9A-Z]*) style=SLUID; [ ${#folder} = 14 ] || style=other ;;
        *) style=other ;;
    esac
}
# Each point of a pass is named by its pass.
eval "ok_unlabelled() $(declare -f ok | tail -n +2)"
eval "skip_unlabelled() $(declare -f skip | tail -n +2)"
ok() { ok_unlabelled "$1" "$pass$2"; }
skip() { skip_unlabelled "$1" "$pass$2"; }
pass=""
version=$(sinfo -V | awk '{ print $2 }')
if [ "$(printf '%s\n' "$version" 26.05 | sort -V | head -n 1)" = 26.05 ]; then
    pass="SLUID folders: "
    folder_style
    [ "$style" = SLUID ]
    ok $? "Slurm $version names each job's folder by its SLUID ($style, $folder)"
    checks
    # The same with job_N folders: CgroupJobIdPaths=yes in both nodes'
    # cgroup.conf, read as slurmd starts.
    echo CgroupJobIdPaths=yes >>/etc/slurm/cgroup.conf
    echo CgroupJobIdPaths=yes >>/etc/slurm/cgroup-c2.conf
    systemctl restart slurmd slurmd-c2
    t0=$(date +%s)
    while [ $(( $(date +%s) - t0 )) -lt 300 ]; do
        [ "$(timeout 20 sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" = 2 ] && break
        sleep 1
    done
    pass="CgroupJobIdPaths=yes: "
    folder_style
    [ "$style" = job_N ]
    ok $? "with CgroupJobIdPaths=yes Slurm $version names each job's folder job_N ($style, $folder; nodes idle after $(( $(date +%s) - t0 )) s)"
    checks
else
    checks
fi
# bench/vm-srun's smoke timing (tests/vm/slurm-bench.sh), after the checks.
[ -d "$here/bench" ] && bash "$here/slurm-bench.sh" "$here/bench"

finish
