#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-frames.sh - a warm task's code runs with no frame of the zygote's
# under it, as in an exec'd interpreter: the script's module frame (-c's,
# runpy's for -m) is the bottom one.  What looks at the stack sees what it
# sees exec'd: sys._getframe, inspect.stack, traceback.print_stack,
# warnings and logging stack levels, faulthandler's dumps (and -X
# faulthandler's on a crash), an uncaught exception's traceback, and the
# depth that the recursion limit leaves.  Each case runs exec'd, then warm
# learning, then learned (a module of its own preloaded, -p, so that the
# zygote has something to serve).
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python
cd "$tmp" || exit 1
printf 'VALUE = 1\n' >helper.py

# three NAME PSPAWN_ARGS...: exec'd into $tmp/NAME.x, then warm (learning,
# learned) into $tmp/NAME.w1 and $tmp/NAME.w2, stdout and stderr together
# (no PSPAWN_DEBUG: its lines would be there too; a second warm run with it
# says whether the zygote served).
three() {
    _n=$1
    shift
    "$PSPAWN_BIN" --exec "$@" >"$tmp/$_n.x" 2>&1
    for i in 1 2; do
        "$PSPAWN_BIN" -p helper "$@" >"$tmp/$_n.w$i" 2>&1
    done
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -p helper "$@" >/dev/null 2>"$tmp/$_n.dbg"
}
# same NAME [FILTER]: the three outputs (through FILTER) are one, and the
# zygote served the warm runs.
same() {
    for f in x w1 w2; do
        ${2:-cat} <"$tmp/$1.$f" >"$tmp/$1.$f.f"
    done
    if [ -s "$tmp/$1.x.f" ] && cmp -s "$tmp/$1.x.f" "$tmp/$1.w1.f" &&
       cmp -s "$tmp/$1.x.f" "$tmp/$1.w2.f" && grep -q 'parked inside Python' "$tmp/$1.dbg" &&
       ! grep -q 'exec fallback\|exec instead' "$tmp/$1.dbg"; then
        return 0
    fi
    diag "exec'd:"; diag_file "$tmp/$1.x.f" 12
    diag "warm, learned:"; diag_file "$tmp/$1.w2.f" 12
    diag_file "$tmp/$1.dbg" 6
    return 1
}

# 1. The bottom frame, seen from the script.
cat >stack.py <<'PY'
import helper, inspect, sys, traceback
try:
    sys._getframe(1)
    print("a frame under the script's:", sys._getframe(1).f_code.co_name)
except ValueError:
    print("sys._getframe(1): ValueError")
print("inspect.stack():", len(inspect.stack()), "frame(s)")
traceback.print_stack(file=sys.stdout)
def inner():
    return len(inspect.stack())
print("from a function:", inner(), "frames")
PY
three stack $py stack.py
same stack
ok $? "the script's frame is the bottom one: $(head -2 "$tmp/stack.x" | tr '\n' ' ')"

# 2. Stack levels that reach past the module's frame.
cat >levels.py <<'PY'
import helper, logging, sys, warnings
logging.basicConfig(stream=sys.stdout, format="%(filename)s:%(lineno)d %(funcName)s %(message)s")
warnings.warn("module level", stacklevel=2)
logging.warning("module level", stacklevel=2)
def f():
    warnings.warn("in a function", stacklevel=3)
f()
PY
three levels $py levels.py
same levels
ok $? "warnings and logging with stacklevel=2 at module level: $(grep -m1 'Warning' "$tmp/levels.x")"

# 3-4. faulthandler's dump, and -X faulthandler's on a crash (the dump's
#      frames; its thread id and its list of extension modules differ).
cat >dump.py <<'PY'
import helper, faulthandler, sys
def deeper():
    sys.stdout.flush()
    faulthandler.dump_traceback(file=sys.stdout, all_threads=False)
deeper()
PY
three dump $py dump.py
same dump
ok $? "faulthandler.dump_traceback shows the script's frames only: $(grep -c 'File' "$tmp/dump.x") frames"
printf 'import helper, ctypes\ndef crash():\n    ctypes.string_at(0)\ncrash()\n' >crash.py
three crash $py -X faulthandler crash.py
frames() { grep '^  File'; }
same crash frames
ok $? "-X faulthandler's dump on a crash: the same frames ($(grep -c '^  File' "$tmp/crash.x"))"

# 5. An uncaught exception's traceback.
printf 'import helper\ndef fail():\n    raise ValueError("no")\nfail()\n' >fail.py
three fail $py fail.py
same fail
ok $? "an uncaught exception's traceback: $(head -1 "$tmp/fail.x")"

# 6. The recursion limit leaves the same depth.
cat >depth.py <<'PY'
import helper, sys
def down(n):
    try:
        return down(n + 1)
    except RecursionError:
        return n
print("depth reached", down(1), "of limit", sys.getrecursionlimit())
PY
three depth $py depth.py
same depth
ok $? "the depth reached before RecursionError: $(cat "$tmp/depth.x")"

# 7-8. -c and -m: -c's frame alone; -m's under runpy's, as exec'd.
three cmd $py -c 'import helper, sys, inspect
try:
    sys._getframe(1); print("a frame under -c")
except ValueError:
    print("no frame under -c:", len(inspect.stack()))'
same cmd
ok $? "-c: $(cat "$tmp/cmd.x")"
mkdir -p pkg && printf 'import helper, traceback, sys\ntraceback.print_stack(file=sys.stdout)\n' >pkg/stackmod.py
three mod $py -m pkg.stackmod
same mod
ok $? "-m: the frames under the module are runpy's, as exec'd ($(grep -c 'File' "$tmp/mod.x"))"

# 9-10. -X importtime and -X tracemalloc show what the task imports and
#       allocates, which modules imported ahead would change: no zygote
#       for them (the interpreter is exec'd, PSPAWN_DEBUG says why), and
#       the same modules listed as exec'd.
names() { sed -n 's/^import time: *[0-9]* | *[0-9]* | *//p' | sed 's/^ *//' | sort; }
"$PSPAWN_BIN" --exec $py -X importtime -c 'import json' 2>&1 | names >it.x
"$PSPAWN_BIN" -p json $py -X importtime -c 'import json' 2>&1 | names >it.w
PSPAWN_DEBUG=1 "$PSPAWN_BIN" -p json $py -X importtime -c 'import json' 2>it.dbg >/dev/null
[ -s it.x ] && cmp -s it.x it.w && grep -q 'exec fallback: the interpreter shows what its tasks import' it.dbg
ok $? "-X importtime: exec'd, the $(wc -l <it.x) modules listed as exec'd" ||
    { diff it.x it.w | head -5 | sed 's/^/# /'; diag_file it.dbg 4; }
tm='import tracemalloc, json; print("tracing", tracemalloc.is_tracing(), "json traced", any("json" in str(t.traceback) for t in tracemalloc.take_snapshot().traces))'
"$PSPAWN_BIN" --exec $py -X tracemalloc -c "$tm" >tm.x 2>&1
PSPAWN_DEBUG=1 "$PSPAWN_BIN" -p json $py -X tracemalloc -c "$tm" >tm.w 2>tm.dbg
grep -q 'tracing True json traced True' tm.x && cmp -s tm.x tm.w &&
    grep -q 'exec fallback: the interpreter shows what its tasks import' tm.dbg
ok $? "-X tracemalloc: exec'd, what json allocated at its import traced as exec'd: $(cat tm.w)"

tap_done
