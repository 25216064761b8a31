#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-resolve.sh - a warm Python task imports the module an exec'd
# interpreter would, once the zygote has learnt the script's imports too:
# a plugin that the task's own sys.path picks, a module the task writes
# and then imports, sys.path's order after a module that puts a directory
# in front of it, a bootstrap module that the script's directory shadows.
# Each case runs exec'd (the reference), then warm again and again with
# inputs that change between runs (the first run learns, the later ones
# preload what it learnt), every run compared with the reference.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python
cd "$tmp" || exit 1

# same NAME ARGS...: PYTHON ARGS... warm, then exec'd, one task each: the
# same output and exit status.  (Warm first: its zygote imports what the
# files hold before its task runs, which a task that writes them must
# not see.)  "served warm" is not asked (a task that cannot be faithful
# warm is exec'd, as it should be); $tmp/w.err keeps what libpspawn said.
same() {
    name=$1
    shift
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v $py "$@" >"$tmp/w.out" 2>"$tmp/w.err"
    wrc=$?
    "$PSPAWN_BIN" --exec $py "$@" >"$tmp/x.out" 2>"$tmp/x.err"
    xrc=$?
    if [ $xrc = $wrc ] && [ -s "$tmp/x.out" ] && cmp -s "$tmp/x.out" "$tmp/w.out"; then
        ok 0 "$name: as exec'd ($(tr '\n' ' ' <"$tmp/x.out"))"
    else
        ok 1 "$name: as exec'd"
        echo "# exec'd ($xrc): $(tr '\n' ' ' <"$tmp/x.out")"
        echo "# warm ($wrc):   $(tr '\n' ' ' <"$tmp/w.out")"
        diag_file "$tmp/w.err" 8
    fi
}
# warm_served: the last warm run's task came from the warm zygote.
warm_served() {
    grep -q 'parked inside Python' "$tmp/w.err" && ! grep -q 'exec fallback\|exec instead' "$tmp/w.err"
}

# 1. A plugin directory the script puts first in sys.path, chosen by its
#    argument: runs with 1, 1, 1, 2, 2, 1.
mkdir -p plugins/plug/v1 plugins/plug/v2
echo 'V = "plugin v1"' >plugins/plug/v1/plugin.py
echo 'V = "plugin v2"' >plugins/plug/v2/plugin.py
cat >plugins/main.py <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "plug", "v" + sys.argv[1]))
import json, plugin
print(plugin.V, json.dumps(sys.argv[1]))
PY
run=0
for v in 1 1 1 2 2 1; do
    run=$((run + 1))
    same "plugin chosen by sys.path, run $run (v$v)" plugins/main.py $v
done
warm_served
ok $? "plugin: the task is still served warm"
# verdict NAME: what the cache says of module NAME (any script's).
verdict() { cat "$tmp"/cache/python/* 2>/dev/null | awk -v m="$1" '$2 == m { print $1 }' | sort -u; }
[ "$(verdict json)" = ok ] &&
    [ "$(verdict plugin)" = found_in_a_directory_the_task_added_to_sys.path ]
ok $? "plugin: learnt json (preloaded), and never plugin, found where the task looked ($(verdict plugin))"

# 2. A module the script writes, then imports: runs with 10, 20, 30, 40.
mkdir -p gen
cat >gen/main.py <<'PY'
import importlib, os, sys
with open(os.path.join(os.path.dirname(__file__), "gen_settings.py"), "w") as f:
    f.write("N = %s\n" % sys.argv[1])
importlib.invalidate_caches()
import gen_settings
print("N", gen_settings.N)
PY
for n in 10 20 30 40; do
    same "a module the script regenerates, run with $n" gen/main.py $n
done
[ "$(verdict gen_settings)" = written_while_a_task_ran ]
ok $? "a module the script writes is never preloaded ($(verdict gen_settings))"

# 3. A helper that puts a directory in front of sys.path at its import,
#    where a calendar.py shadows the standard library's: learned, then
#    with -p in both orders.
mkdir -p order/extra
echo 'WHO = "extra"' >order/extra/calendar.py
cat >order/helper.py <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "extra"))
PY
cat >order/main.py <<'PY'
import os, sys
here = os.path.dirname(os.path.realpath(__file__))
import helper
import calendar
print(getattr(calendar, "WHO", "stdlib"), [os.path.relpath(p, here) for p in sys.path[:2]])
PY
for run in 1 2 3; do
    same "sys.path order after a helper's insert, learned, run $run" order/main.py
done
warm_served
ok $? "sys.path order: served warm once learned"
for order in helper,calendar calendar,helper; do
    "$PSPAWN_BIN" --exec $py order/main.py >"$tmp/x.out" 2>/dev/null
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -p $order $py order/main.py >"$tmp/w.out" 2>"$tmp/w.err"
    cmp -s "$tmp/x.out" "$tmp/w.out" && [ -s "$tmp/x.out" ]
    ok $? "sys.path order, -p $order: as exec'd ($(tr '\n' ' ' <"$tmp/w.out"))" ||
        diag_file "$tmp/w.err" 8
done
grep -q 'finds calendar at .*extra/calendar.py' "$tmp/w.err"
ok $? "-p calendar,helper: exec'd, the reason names the module its sys.path finds elsewhere" ||
    diag_file "$tmp/w.err" 8

# 4. A module the bootstrap imports (ctypes), shadowed by a file in the
#    script's directory: the task gets that file, as exec'd.
mkdir -p shadow
echo 'WHO = "the script directory'"'"'s ctypes"' >shadow/ctypes.py
printf 'import ctypes\nprint(getattr(ctypes, "WHO", "stdlib ctypes"))\n' >shadow/main.py
for run in 1 2; do
    same "a bootstrap module shadowed by the script's directory, run $run" shadow/main.py
done

# 5. A learnt module changed between runs: the next run has the new one.
mkdir -p changes
echo 'V = 1' >changes/mod.py
printf 'import mod\nprint("V", mod.V)\n' >changes/main.py
for v in 1 1 2 3; do
    echo "V = $v" >changes/mod.py
    sleep 0.2   # (written just before a run, it counts as the task's)
    same "a learnt module rewritten between runs (V = $v)" changes/main.py
done
[ "$(verdict mod)" = changed_between_runs ]
ok $? "a module that changes between runs is no longer preloaded ($(verdict mod))"

# 6-9. Script forms the interpreter tells apart by more than a name: a
#      zipapp with a #! line, -x (the first line is not source), a CRLF
#      script with a #! line, compiled code.
mkdir -p forms/app
printf 'import sys\nprint("zipapp main", sys.argv[1:])\n' >forms/app/__main__.py
$py -m zipapp forms/app -p "$py" -o forms/app.pyz
for run in 1 2; do
    same "a zipapp with a #! line, run $run" forms/app.pyz a b
done
printf 'this first line is not Python (-x skips it)\nimport sys\nprint("-x", sys.argv[1:], flush=True)\nraise ValueError("on line 4")\n' >forms/skip.py
for run in 1 2; do
    same "-x: the first line skipped, run $run" -x forms/skip.py q
done
warm_served && [ $wrc = 1 ] && grep -q 'forms/skip.py", line 4' "$tmp/x.err" &&
    grep -q 'forms/skip.py", line 4' "$tmp/w.err"
ok $? "-x: served warm, and the traceback names the file's own line 4" || diag_file "$tmp/w.err" 8
printf '#!\r\nimport sys\r\nprint("crlf", sys.argv[1:])\r\n' >forms/crlf.py
same "a CRLF script whose first line is #!" forms/crlf.py z
warm_served
ok $? "a CRLF script: served warm, not taken for compiled code" || diag_file "$tmp/w.err" 5
printf 'print("compiled")\n' >forms/comp.py
$py -c 'import py_compile; py_compile.compile("forms/comp.py", cfile="forms/comp.pyc")'
same "compiled code (.pyc) as the script" forms/comp.pyc
grep -q 'exec instead: its script is compiled code' "$tmp/w.err"
ok $? "compiled code: exec'd, and the reason says so" || diag_file "$tmp/w.err" 5

# 6. The look-up each task makes of the preloaded names, made cheap: with
#    sys.path's directories unchanged since the zygote imported, a warm
#    task stats each directory once instead of asking the finders for each
#    name (three stats a name, on a shared file system a metadata request
#    each; python-job.sh changes one while a zygote lives).  A module
#    added under a preloaded name in the script's directory is the task's.
mkdir -p many/mods many/run
for i in $(seq 0 39); do echo "V = $i" >"many/mods/m$i.py"; done
cat >many/run/main.py <<'PY'
import sys
total = 0
for i in range(40):
    total += __import__('m%d' % i).V
print('total', total, 'm0 from', sys.modules['m0'].__file__.split('/')[-2])
PY
export PYTHONPATH="$tmp/many/mods" PYTHONDONTWRITEBYTECODE=1
same "40 modules, learning" many/run/main.py
same "40 modules, learnt" many/run/main.py
if command -v strace >/dev/null; then
    # The task's calls naming many/mods: the traced process that was not
    # exec'd (pspawn and the zygote were) and read the script.
    rm -f "$tmp/st".*
    PSPAWN_DEBUG=1 strace -ff -e trace=%stat,%file -o "$tmp/st" "$PSPAWN_BIN" -v $py many/run/main.py \
        >"$tmp/w.out" 2>"$tmp/w.err"
    calls=$(for f in "$tmp/st".*; do grep -q 'execve' "$f" && continue
                grep -q 'many/run/main.py' "$f" && grep -c 'many/mods' "$f"; done | head -n 1)
    [ -n "$calls" ] && [ "$calls" -le 8 ] && warm_served && grep -qx 'total 780 m0 from mods' "$tmp/w.out"
    ok $? "learnt, directories unchanged: the task stats the modules' directory $calls times for 40 preloaded names" ||
        diag_file "$tmp/w.err" 8
else
    skip "no strace" "a warm task's look-ups of 40 preloaded names"
fi
echo 'V = 1000' >many/run/m0.py
same "a module under a preloaded name added in the script's directory" many/run/main.py
same "and once more" many/run/main.py
unset PYTHONPATH PYTHONDONTWRITEBYTECODE

tap_done
