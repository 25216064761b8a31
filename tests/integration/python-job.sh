#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-job.sh - a warm Python zygote that serves more than one step (a
# job's, reuse=job, started as the SPANK plugin starts it): what a step's
# tasks learned is imported in it while it is idle after them, so that
# the next step's tasks find it imported, from the same zygote (no new
# start on their path).  The script's imports change between steps: what
# is learned, then learned again; a module the trial refuses (it starts a
# thread) is left out and imported by each task; a module changed on disk
# after the zygote imported it is the task's new one; with fan-out, the
# sub-zygotes hold what the root imported.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python
shim=$top_builddir/spank/pspawn-shim
[ -x "$shim" ] || { skip "no pspawn-shim (built without Slurm's spank.h)" "job zygote, warm Python"; tap_done; }
export PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_DEBUG=1 PSPAWN_DEBUG=1
unset PSPAWN_SHIM_SIGNALS PSPAWN_SHIM_OPTIONS
uid=$(id -u)

# The job: a script that imports the modules named in $tmp/job/want
# (changed between steps) and says, of each, whether it was imported
# before its first line (by the zygote), its value, and its threads.
mkdir -p "$tmp/job"
cat >"$tmp/job/job.py" <<'PY'
import os, sys, threading, time
before = set(sys.modules)
# The step's tasks overlap, as a step's do: the zygote is not idle
# between them (it would import what the first one learned).
bar = os.environ['BARRIER']
open('%s.%d' % (bar, os.getpid()), 'w').close()
for _ in range(400):
    if sum(f.startswith(os.path.basename(bar) + '.')
           for f in os.listdir(os.path.dirname(bar))) >= int(os.environ['BARRIER_N']):
        break
    time.sleep(0.025)
names = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'want')).read().split()
for n in names:
    m = __import__(n)
    print('%s %s %s' % (n, 'preloaded' if n in before else 'imported', m.VALUE))
    if n == 'm_out':
        m.say('said by m_out')
print('threading %s, its main thread writes to our stderr: %s' % (
    'preloaded' if 'threading' in before else 'imported',
    getattr(threading.main_thread(), '_stderr', sys.stderr) is sys.stderr))
print('threads %d' % threading.active_count())
print('parent %d' % os.getppid())
PY
for m in a b c d; do echo "VALUE = '$m'" >"$tmp/job/m_$m.py"; done
cat >"$tmp/job/m_out.py" <<'PY'
import sys
def say(msg, file=sys.stdout):
    print(msg, file=file, flush=True)
VALUE = 'out'
PY
cat >"$tmp/job/m_thread.py" <<'PY'
import threading, time
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
VALUE = 'thread'
PY

starter=$TESTS_SRCDIR/python/job-starter.py

# start KEY: the job's zygote of the script, its pid in $zpid; its log
# (its debug lines, the starter's) in $tmp/KEY.log.
start() {
    export PSPAWN_SHIM_KEY="$uid.$$.$1" PSPAWN_SHIM_LOCAL_TASKS=0 PSPAWN_SHIM_IDLE_MS=20000
    timeout 60 $py "$starter" "$shim" --job-zygote $py "$tmp/job/job.py" \
        >"$tmp/$1.log" 2>&1
    zpid=$(sed -n "s/.*the job's zygote \([0-9]*\) parked$/\1/p" "$tmp/$1.log" | head -n 1)
    [ -n "$zpid" ]
}
# step NAME CPUS...: one task per CPU list, each under a stand-in bound
# there as slurmstepd binds it, all running at once; their outputs in
# $tmp/NAME.I.
mkdir -p "$tmp/bar"
step() {
    _n=$1
    shift
    _i=0
    for _c in "$@"; do
        ( BARRIER=$tmp/bar/$_n BARRIER_N=$# PSPAWN_SHIM_JOB=1 \
              timeout 60 taskset -c "$_c" "$shim" $py "$tmp/job/job.py" \
              >"$tmp/$_n.$_i" 2>"$tmp/$_n.err.$_i"; echo $? >"$tmp/$_n.rc.$_i" ) &
        _i=$((_i + 1))
    done
    wait
}
# saw NAME I LINE: task I of step NAME printed LINE.
saw() { grep -qx "$3" "$tmp/$1.$2"; }
# learned VERDICT MODULE: the script's cache says VERDICT of MODULE (the
# zygote writes it when it has tried MODULE between steps; its debug
# lines go nowhere: a job's zygote has /dev/null for its stdio).
learned() {
    wait_until 30 sh -c "cat '$PSPAWN_CACHE_DIR'/python/job.py-* 2>/dev/null | grep -qx '$1 $2 .*'"
}
fails() {
    for _f in "$tmp/$1".*; do diag "$_f:"; diag_file "$_f" 8; done
    diag_file "$tmp/$2.log" 20
}

# 1. Learned in step 1, imported between steps, preloaded in step 2: the
#    same zygote (the tasks' parent), no new start.
start job
ok $? "the job's zygote of a Python script started and parked" || diag_file "$tmp/job.log"
echo m_a >"$tmp/job/want"
step s1 0 0
saw s1 0 "m_a imported a" && saw s1 1 "m_a imported a" && saw s1 0 "parent $zpid"
ok $? "step 1: m_a imported by the tasks (not learned yet), forked by the job's zygote" || fails s1 job
learned ok m_a
ok $? "once idle after step 1, the zygote tried and imported what its tasks learned" ||
    diag_file "$PSPAWN_CACHE_DIR"/python/job.py-*
echo "m_a m_b m_out" >"$tmp/job/want"
step s2 0 0
saw s2 0 "m_a preloaded a" && saw s2 1 "m_a preloaded a" && saw s2 0 "m_b imported b" &&
    saw s2 0 "parent $zpid" && saw s2 1 "parent $zpid"
ok $? "step 2: m_a preloaded, by the same zygote; m_b (new in this step) imported by the task" ||
    fails s2 job
saw s2 0 "threading preloaded, its main thread writes to our stderr: True" &&
    saw s2 1 "threading preloaded, its main thread writes to our stderr: True"
ok $? "step 2: threading (learnt in step 1) preloaded, its main thread's stream the task's own" ||
    fails s2 job
! grep -q "exec instead\|exec fallback" "$tmp"/s2.err.*
ok $? "step 2: no task exec'd" || fails s2.err job

# 2. Learned again: m_b reaches step 3.  A module that starts a thread at
#    its import is learned, refused by the trial between steps, and each
#    task imports it itself, as an exec'd one does.
learned ok m_b
echo "m_a m_b m_out m_thread" >"$tmp/job/want"
step s3 0
saw s3 0 "m_a preloaded a" && saw s3 0 "m_b preloaded b" && saw s3 0 "m_thread imported thread" &&
    saw s3 0 "threads 2" && saw s3 0 "parent $zpid"
ok $? "step 3: m_a and m_b preloaded by the same zygote, m_thread imported by the task" ||
    fails s3 job
saw s3 0 "m_out preloaded out" && saw s3 0 "said by m_out" &&
    saw s3 0 "threading preloaded, its main thread writes to our stderr: True"
ok $? "step 3: m_out, learnt in step 2 and holding sys.stdout in a default argument, preloaded: it prints to the task's stdout; threading's main thread still the task's" ||
    fails s3 job
learned started_a_thread m_thread
ok $? "between steps 3 and 4, m_thread is tried and left out: it starts a thread" ||
    diag_file "$PSPAWN_CACHE_DIR"/python/job.py-*
step s4 0
saw s4 0 "m_a preloaded a" && saw s4 0 "m_b preloaded b" && saw s4 0 "m_thread imported thread" &&
    saw s4 0 "threads 2" && saw s4 0 "parent $zpid"
ok $? "step 4: m_thread still imported by the task (one thread of its own), the zygote still forks" ||
    fails s4 job

# 3. A module the zygote imported between steps, changed on disk: the
#    task gets the new one (its file is watched as the start's are).
echo "VALUE = 'b2'" >"$tmp/job/m_b.py"
echo "m_b" >"$tmp/job/want"
step s5 0
saw s5 0 "m_b imported b2" || saw s5 0 "m_b preloaded b2"
ok $? "step 5: m_b changed on disk after the zygote imported it between steps: the task has the new one" ||
    fails s5 job
kill "$zpid" 2>/dev/null

# 4. With fan-out (a sub-zygote per CPU): a task bound to the sub-zygote's
#    CPU finds what the root imported between steps, from a sub-zygote
#    made again (another parent than the root, and than before).
if [ "$(nproc)" -ge 2 ]; then
    export PSPAWN_SHIM_OPTIONS=fanout=core
    echo "VALUE = 'b'" >"$tmp/job/m_b.py"
    echo m_c >"$tmp/job/want"
    start fan
    ok $? "fanout=core: the job's zygote started" || diag_file "$tmp/fan.log"
    step f1 0 1
    p1=$(sed -n 's/^parent //p' "$tmp/f1.1")
    saw f1 0 "m_c imported c" && saw f1 1 "m_c imported c" && saw f1 0 "parent $zpid" &&
        [ -n "$p1" ] && [ "$p1" != "$zpid" ]
    ok $? "fanout=core step 1: the task on CPU 1 forked by a sub-zygote ($p1), not the root ($zpid)" ||
        fails f1 fan
    learned ok m_c
    ok $? "fanout=core: the root tried and imported m_c between steps" ||
        diag_file "$PSPAWN_CACHE_DIR"/python/job.py-*
    echo "m_c m_d" >"$tmp/job/want"
    step f2 0 1
    p2=$(sed -n 's/^parent //p' "$tmp/f2.1")
    saw f2 0 "m_c preloaded c" && saw f2 1 "m_c preloaded c" && saw f2 1 "m_d imported d" &&
        saw f2 0 "parent $zpid" && [ -n "$p2" ] && [ "$p2" != "$zpid" ] && [ "$p2" != "$p1" ]
    ok $? "fanout=core step 2: m_c preloaded on both CPUs, the CPU 1 task from a new sub-zygote ($p2)" ||
        fails f2 fan
    kill "$zpid" 2>/dev/null
    unset PSPAWN_SHIM_OPTIONS
else
    skip "one CPU: no sub-zygote" "fan-out after importing between steps"
fi
# 5. The task's cheap look-up of the preloaded names (python-resolve.sh),
#    once a directory changed while the zygote lives: a file added to the
#    modules' directory has each later task ask the finders again, one
#    look-up per name, and still get what an exec'd one gets.
if command -v strace >/dev/null; then
    mkdir -p "$tmp/look/mods"
    for i in $(seq 0 29); do echo "V = $i" >"$tmp/look/mods/k$i.py"; done
    cat >"$tmp/look/main.py" <<'PY'
import sys
before = set(sys.modules)
total = sum(__import__('k%d' % i).V for i in range(30))
print('total', total, 'preloaded', sum('k%d' % i in before for i in range(30)))
PY
    export PYTHONPATH="$tmp/look/mods" PYTHONDONTWRITEBYTECODE=1 PSPAWN_SHIM_KEY="$uid.$$.look"
    timeout 60 $py "$starter" "$shim" --job-zygote $py "$tmp/look/main.py" >"$tmp/look.log" 2>&1
    zpid=$(sed -n "s/.*the job's zygote \([0-9]*\) parked$/\1/p" "$tmp/look.log" | head -n 1)
    # looked NAME: one task of the script under a stand-in, the zygote
    # traced meanwhile; $calls: the task's calls naming look/mods.
    looked() {
        rm -f "$tmp/lt.$1".*
        strace -ff -e trace=%stat,%file -o "$tmp/lt.$1" -p "$zpid" 2>/dev/null &
        _st=$!
        sleep 0.5
        BARRIER=$tmp/bar/$1 BARRIER_N=1 PSPAWN_SHIM_JOB=1 timeout 60 "$shim" $py "$tmp/look/main.py" \
            >"$tmp/$1.out" 2>"$tmp/$1.err"
        kill -INT $_st
        wait $_st
        calls=$(for f in "$tmp/lt.$1".*; do grep -q 'look/main.py' "$f" && grep -c 'look/mods' "$f"; done |
                sort -n | tail -n 1)
    }
    looked l1
    wait_until 30 sh -c "cat '$PSPAWN_CACHE_DIR'/python/main.py-* 2>/dev/null | grep -qx 'ok k29 .*'"
    looked l2
    c2=$calls
    grep -qx 'total 435 preloaded 30' "$tmp/l2.out" && [ -n "$c2" ] && [ "$c2" -le 8 ]
    ok $? "a job's zygote: its task finds the 30 learnt modules preloaded, statting their directory $c2 times" ||
        { diag_file "$tmp/l2.out"; diag_file "$tmp/l2.err"; }
    : >"$tmp/look/mods/unrelated.txt"
    looked l3
    grep -qx 'total 435 preloaded 30' "$tmp/l3.out" && [ -n "$calls" ] && [ "$calls" -ge 30 ]
    ok $? "a file added to their directory since the zygote imported: the task asks the finders again ($calls calls), and is still served warm" ||
        { diag_file "$tmp/l3.out"; diag_file "$tmp/l3.err"; }
    kill "$zpid" 2>/dev/null
    unset PYTHONPATH PYTHONDONTWRITEBYTECODE
else
    skip "no strace" "a job's zygote's task, its look-ups before and after a directory changed"
    skip "no strace" "a job's zygote's task, its look-ups after a directory changed"
fi
tap_done
