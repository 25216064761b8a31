#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Zygotes that serve a whole job (srun --pspawn=reuse=job): within one
# allocation, later steps of the same program on a node are forked by the
# zygote the first one started, which lives in the job's extern step;
# each task is in its own step's cgroups and accounting; another program,
# other loader variables, another job or another user get another zygote;
# a zygote killed between or during steps loses no task; eviction (zygotes=),
# the idle limit (idle=), a TaskProlog's loader variable (exec), and nothing
# left after the job's end or scancel.
. "$(dirname "$0")/lib.sh"

R="--pspawn=on,reuse=job,fanout=none"
# The task's view: node, step, its parent (the zygote), the parent's uid
# and whether the parent is in the job's extern step, and its own cgroups
# (step and task numbers as they are).
view='echo $(hostname) step $SLURM_STEP_ID task $SLURM_PROCID parent $PPID uid $(stat -c %u /proc/$PPID) extern $(grep -q step_extern /proc/$PPID/cgroup && echo 1 || echo 0) cg $(grep -E ":(freezer|cpuset|memory):|^0::" /proc/self/cgroup | cut -d: -f3 | sort -u | tr "\n" " ")'

# job NAME SALLOC_ARGS [USER] <SCRIPT: run the bash SCRIPT in an allocation
# (as alice, or USER); its output in $tmp/NAME, salloc's words about the
# allocation and the "N: " labels left out.
job() {
    local runner=ax
    [ "${3:-}" = bob ] && runner=bx
    docker exec -i "$CTL" bash -c "cat >/tmp/reuse-$1.sh; chmod 644 /tmp/reuse-$1.sh"
    $runner "salloc $2 bash /tmp/reuse-$1.sh" >"$tmp/$1" 2>&1
    local rc=$?
    sed -i -E -e '/^salloc: /d' -e 's/^[0-9]+: //' "$tmp/$1"
    return $rc
}
# parents FILE STEP: the sorted "node parent" pairs of STEP's tasks.
parents() { awk -v s="$2" '$2 == "step" && $3 == s { print $1, $7 }' "$1" | sort -u; }
cg_of() {
    awk -v s="$2" '$2 == "step" && $3 == s { l = $1 " task " $5; c = 0
                                             for (i = 1; i <= NF; i++) { if ($i == "cg") c = 1; if (c) l = l " " $i }
                                             print l }' "$1" | sed -E "s/step_$2/step_S/g" | sort
}

ax "mkdir -p $E2E && printf '%s\n' '$view' >$E2E/view.sh"

# 1-4: one job, three steps of one program, one of another.
job steps "-N2 -n4 --ntasks-per-node=2" <<EOF
srun $R -l bash $E2E/view.sh; echo rc0=\$?
srun $R -l bash $E2E/view.sh; echo rc1=\$?
srun -l bash $E2E/view.sh; echo rc2=\$?
LD_LIBRARY_PATH=/nonexistent srun $R -l bash $E2E/view.sh; echo rc3=\$?
srun $R -l sh -c 'exit 3'; echo rc4=\$?
echo jobid \$SLURM_JOB_ID
EOF
jrc=$?
jid=$(awk '$1 == "jobid" {print $2}' "$tmp/steps")
p0=$(parents "$tmp/steps" 0); p1=$(parents "$tmp/steps" 1); p3=$(parents "$tmp/steps" 3)
n0=$(grep -c ' step 0 ' "$tmp/steps"); n1=$(grep -c ' step 1 ' "$tmp/steps")
diag "step 0 parents: $(echo $p0); step 1: $(echo $p1); step 3: $(echo $p3)"
[ $jrc = 0 ] && grep -q '^rc0=0$' "$tmp/steps" && grep -q '^rc1=0$' "$tmp/steps" && [ "$n0" = 4 ] &&
    [ "$n1" = 4 ] && [ "$(echo "$p0" | wc -l)" = 2 ] && [ -n "$p0" ] && [ "$p0" = "$p1" ]
ok $? "two steps of one program in a job: all 4 tasks of each, forked by the same zygote on each node" ||
    diag_file "$tmp/steps" 20
auid=$(ax "id -u")
[ "$(grep -c " step [013] .* uid $auid extern 1 " "$tmp/steps")" = 12 ]
ok $? "the job's zygotes are alice's and in the job's extern step" || grep ' step [013] ' "$tmp/steps" | head -4 | sed 's/^/# /'
diff <(cg_of "$tmp/steps" 2) <(cg_of "$tmp/steps" 1) >"$tmp/cg.diff"
ok $? "each task is in its own step's and task's cgroups, as a plain step's task is" || diag_file "$tmp/cg.diff" 10
[ "$(grep -c ' step 3 ' "$tmp/steps")" = 4 ] && grep -q '^rc3=0$' "$tmp/steps" && [ -n "$p3" ] &&
    [ -z "$(comm -12 <(echo "$p0") <(echo "$p3"))" ]
ok $? "a step with other loader variables (LD_LIBRARY_PATH) gets a zygote of its own" || diag_file "$tmp/steps" 20
grep -q '^rc4=3$' "$tmp/steps"
ok $? "a step's exit code passes through the job's zygote (exit 3)" || diag_file "$tmp/steps" 20

# sacct of the job's steps (slurmdbd: wait for it to have them).
for i in $(seq 30); do
    [ "$(ax "sacct -n -P -j $jid.0,$jid.1,$jid.2,$jid.4 --format=State" | grep -cE 'COMPLETED|FAILED')" = 4 ] && break
    sleep 1
done
ax "sacct -n -P -j $jid.1,$jid.2,$jid.4 --format=JobID,NTasks,State,ExitCode" >"$tmp/sacct"
grep -q "^$jid.1|4|COMPLETED|0:0$" "$tmp/sacct" && grep -q "^$jid.2|4|COMPLETED|0:0$" "$tmp/sacct" &&
    grep -q "^$jid.4|4|FAILED|3:0$" "$tmp/sacct"
ok $? "sacct: a step served by the job's zygote shows its 4 tasks, state and exit code as a plain step does" ||
    diag_file "$tmp/sacct"

# leftovers JOB: anything of the job left on any node: its state
# directory, a process in its cgroups, a zygote's name.
leftovers() {
    local n out=
    for n in c1 c2 c3; do
        out+=$(on $n "ls -d /run/pspawn/job_$1 2>/dev/null; grep -l '/job_$1/' /proc/[0-9]*/cgroup 2>/dev/null | sed 's|/cgroup||' | while read -r p; do echo \"\$p \$(tr '\\0' ' ' <\$p/cmdline 2>/dev/null)\"; done; grep -o '@pspawn-job\.[0-9]*\.$1\.[^ ]*' /proc/net/unix" | sed "s/^/$n: /")
        out+=$'\n'
    done
    echo "$out" | sed '/^$/d'
}
left=
for i in $(seq 20); do
    left=$(leftovers "$jid")
    [ -z "$left" ] && break
    sleep 1
done
[ -n "$jid" ] && [ -z "$left" ]
ok $? "nothing of job $jid is left on any node after its end (state, processes, zygotes' names)" ||
    diag "$left"

# 5-6: killed between steps, and during one.
job kill "-N1 -n2" <<EOF
srun $R -l bash $E2E/view.sh; echo rc0=\$?
srun $R -n1 bash -c 'kill -KILL \$PPID; echo killed'; echo rc1=\$?
srun $R bash $E2E/view.sh | tee /tmp/reuse-kill.\$SLURM_JOB_ID; echo rc2=\${PIPESTATUS[0]}
zygote=\$(awk '\$2 == "step" {print \$7; exit}' /tmp/reuse-kill.\$SLURM_JOB_ID)
srun $R -l bash -c 'sleep 2; echo slept' & sleep 1
srun --overlap -n1 kill -KILL \$zygote; wait \$!; echo rc3=\$?
srun $R -l bash $E2E/view.sh; echo rc4=\$?
EOF
k0=$(parents "$tmp/kill" 0); k2=$(parents "$tmp/kill" 2); k4=$(parents "$tmp/kill" 4)
[ "$(grep -c '^killed$' "$tmp/kill")" = 1 ] && grep -q '^rc1=0$' "$tmp/kill" &&
    [ "$(grep -c ' step 2 ' "$tmp/kill")" = 2 ] && grep -q '^rc2=0$' "$tmp/kill" &&
    [ -n "$k2" ] && [ "$k0" != "$k2" ]
ok $? "the job's zygote killed by its own tasks: they run to the end, and the next step starts a new zygote" ||
    diag_file "$tmp/kill" 20
[ "$(grep -c '^slept$' "$tmp/kill")" = 2 ] && grep -q '^rc3=0$' "$tmp/kill" &&
    [ "$(sed -n '/^rc3=/,$p' "$tmp/kill" | grep -c ' step [0-9]* task ')" = 2 ] && grep -q '^rc4=0$' "$tmp/kill"
ok $? "the job's zygote killed while a step's tasks run: no task lost, their exit codes kept, the next step served" ||
    diag_file "$tmp/kill" 20

# 7: eviction: zygotes=1, a second program's zygote evicts the first's.
#    (Zygotes counted by their names, less their keepers' NAME.keeper.)
job evict "-N1 -n1" <<'EOF'
srun --pspawn=on,reuse=job,fanout=none,zygotes=1 bash -c 'echo first $PPID'
srun --pspawn=on,reuse=job,fanout=none,zygotes=1 sh -c 'echo second $PPID'
sleep 0.5; srun --overlap bash -c 'echo alive $(grep -o "@pspawn-job[^ ]*" /proc/net/unix | grep -v "[.]keeper$" | sort -u | wc -l)'
EOF
zf=$(awk '$1 == "first" {print $2}' "$tmp/evict")
zs=$(awk '$1 == "second" {print $2}' "$tmp/evict")
names=$(awk '$1 == "alive" {print $2}' "$tmp/evict")
[ -n "$zf" ] && [ -n "$zs" ] && [ "$zf" != "$zs" ] && [ "$names" = 1 ]
ok $? "zygotes=1: a second program's zygote evicts the first's (one zygote's name left: $names)" ||
    diag_file "$tmp/evict"

# 8: idle=1: a zygote that serves nothing for 1 s ends.
job idle "-N1 -n1" <<'EOF'
srun --pspawn=on,reuse=job,fanout=none,idle=1 bash -c 'echo z $PPID'
sleep 3; srun --overlap bash -c 'echo names $(grep -c @pspawn-job /proc/net/unix)'
EOF
grep -q '^names 0$' "$tmp/idle" && grep -q '^z [0-9]' "$tmp/idle"
ok $? "idle=1: the job's zygote ends after a second without a task" || diag_file "$tmp/idle"

# 9: another user's job on the same node gets its own zygote: bob's tasks'
# parent is bob's.
job bob "-N1 -n2" bob <<EOF
srun $R bash -c 'echo bob \$(stat -c %U /proc/\$PPID) \$(grep -q step_extern /proc/\$PPID/cgroup && echo 1)'
EOF
[ "$(grep -c '^bob bob 1$' "$tmp/bob")" = 2 ]
ok $? "another user's job: its tasks come from a zygote of its own, in its own extern step" ||
    diag_file "$tmp/bob"

# 10: a TaskProlog that exports a loader variable (docker/etc/taskprolog.sh,
# asked for by a file in alice's home): it runs after the job's zygote
# started, which never saw the variable, so the tasks are exec'd (their
# parent is slurmstepd, root's), with the variable, and the step succeeds.
ax "touch ~/.pspawn-taskprolog-ld"
job tprolog "-N1 -n2" <<EOF
srun $R bash -c 'echo tp \$(stat -c %u /proc/\$PPID) \$LD_PSPAWN_TASKPROLOG'; echo rc=\$?
EOF
ax "rm -f ~/.pspawn-taskprolog-ld"
[ "$(grep -c '^tp 0 1$' "$tmp/tprolog")" = 2 ] && grep -q '^rc=0$' "$tmp/tprolog"
ok $? "a TaskProlog that exports LD_*: the job's zygote cannot serve the tasks, which are exec'd with it" ||
    diag_file "$tmp/tprolog"

# 11: the job's zygote runs under the step's resource limits, as its tasks
# do (srun propagates the user's soft limits; root starts the zygote).
job limits "-N1 -n2" <<EOF
ulimit -S -n 777
srun $R bash -c 'echo lim \$(awk "/^Max open files/ {print \\\$4}" /proc/\$PPID/limits) \$(ulimit -S -n)'
EOF
[ "$(grep -c '^lim 777 777$' "$tmp/limits")" = 2 ]
ok $? "the job's zygote has the step's soft limits, as its tasks (open files: 777)" || diag_file "$tmp/limits"

# 12: --pspawn=auto,reuse=job (as a site's default=auto with reuse=job):
# the first step of a program no step has run goes through the job's
# zygote; its end teaches each node's table what that zygote held, so a
# program of few objects (a fresh copy of bash) is exec'd from its second
# step on (the task's parent is slurmstepd, root's), while a Python
# script's steps stay on the job's warm zygote.
ax "rm -f $E2E/bash-auto && cp /bin/bash $E2E/bash-auto && cat >$E2E/view.py" <<'EOF'
import os, socket
p = os.getppid()
print(socket.gethostname(), "step", os.environ["SLURM_STEP_ID"], "task", os.environ["SLURM_PROCID"],
      "parent", p, "uid", os.stat("/proc/%d" % p).st_uid,
      "extern", int("step_extern" in open("/proc/%d/cgroup" % p).read()))
EOF
A="--pspawn=auto,reuse=job,fanout=none"
job auto "-N2 -n4 --ntasks-per-node=2" <<EOF
srun $A -l $E2E/bash-auto $E2E/view.sh; echo rc0=\$?
sleep 2
srun $A -l $E2E/bash-auto $E2E/view.sh; echo rc1=\$?
srun $A -l python3 $E2E/view.py; echo rc2=\$?
srun $A -l python3 $E2E/view.py; echo rc3=\$?
EOF
alice=$(ax "id -u")
forked() { [ "$(awk -v s="$1" -v u="$alice" '$2 == "step" && $3 == s && $9 == u && $11 == 1' "$tmp/auto" | wc -l)" = 4 ]; }
exec_d() { [ "$(awk -v s="$1" '$2 == "step" && $3 == s && $9 == 0 && $11 == 0' "$tmp/auto" | wc -l)" = 4 ]; }
forked 0 && exec_d 1 && forked 2 && forked 3 && [ "$(grep -c '^rc[0-3]=0$' "$tmp/auto")" = 4 ]
ok $? "auto with reuse=job: a new program's first step forked, its second exec'd (few objects); a Python script's steps forked" ||
    diag_file "$tmp/auto" 20

# 13: scancel of a job whose step runs: nothing left.
ax "sbatch -N2 -n2 --ntasks-per-node=1 --wrap 'srun $R sleep 600'" >"$tmp/sbatch" 2>&1
sjid=$(grep -o '[0-9]*$' "$tmp/sbatch")
for i in $(seq 30); do
    [ "$(ax "squeue -h -j $sjid -s -o %i" | grep -c "^$sjid\.0$")" = 1 ] && break
    sleep 1
done
sleep 1
running=$(leftovers "$sjid" | grep '@pspawn-job' | grep -v '[.]keeper$' | sort -u | wc -l)
ax "scancel $sjid"
for i in $(seq 30); do
    left=$(leftovers "$sjid")
    [ -z "$left" ] && break
    sleep 1
done
[ -n "$sjid" ] && [ "$running" = 2 ] && [ -z "$left" ]
ok $? "scancel of a job whose step runs on the job's zygotes ($running zygotes' names seen): nothing left on any node" ||
    diag "$left"

tap_done
