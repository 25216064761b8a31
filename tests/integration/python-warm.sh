#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-warm.sh - a warm Python zygote gives a task what an exec'd
# interpreter gives it: the parity probe's fields for a script, -c and -m;
# exit codes, tracebacks, atexit and SIGINT; thread pools sized from the
# task's environment; modules that start threads or keep fds left out;
# modules learned from earlier tasks, and forgotten when the script
# changes; numpy/scipy results.  Each warm run is checked to have used the
# warm zygote (pspawn -v, PSPAWN_DEBUG).
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python
probe=$TESTS_SRCDIR/python/probe.py
cp "$probe" "$tmp/probe.py"
mkdir -p "$tmp/pkg/probemod"
cp "$probe" "$tmp/pkg/probemod/__main__.py"
: >"$tmp/pkg/probemod/__init__.py"
has_numpy=0
$py -c 'import numpy, threadpoolctl' 2>/dev/null && has_numpy=1

# Every run starts from default signal dispositions, whatever this script
# was started with (a background job of a non-interactive shell ignores
# SIGINT and SIGQUIT), but for the cases that set $sigs to ignore some.
sigs_default="env --default-signal"
sigs=$sigs_default

# warm NAME PSPAWN_ARGS...: run through the zygote into $tmp/w.out/.err;
# a pass only if the zygote parked inside Python and no task was exec'd.
warm() {
    name=$1
    shift
    PSPAWN_DEBUG=1 $sigs "$PSPAWN_BIN" -v "$@" >"$tmp/w.out" 2>"$tmp/w.err"
    wrc=$?
    grep -v '^libpspawn\|^pspawn:' "$tmp/w.err" >"$tmp/w.err2"
    grep -q 'parked inside Python' "$tmp/w.err" && ! grep -q 'exec fallback\|exec instead' "$tmp/w.err"
    if ! ok $? "$name: served warm"; then
        diag_file "$tmp/w.err" 10
    fi
}
cold() {
    PSPAWN_DEBUG=1 $sigs "$PSPAWN_BIN" --exec "$@" >"$tmp/x.out" 2>"$tmp/x.err"
    xrc=$?
}

# parity NAME PSPAWN_ARGS...: two tasks exec'd and two warm, the probe's
# lines the same but for the random draws, which differ between tasks.
parity() {
    name=$1
    shift
    cold -n 2 -l "$@"
    warm "$name" -n 2 -l "$@"
    for f in x w; do
        grep -v ' random' "$tmp/$f.out" | sort >"$tmp/$f.same"
        grep ' random' "$tmp/$f.out" | sed 's/^ *[0-9]*: //' | sort -u | wc -l >"$tmp/$f.rand"
    done
    if cmp -s "$tmp/x.same" "$tmp/w.same" && [ -s "$tmp/x.same" ]; then
        ok 0 "$name: every probe field the same as exec'd"
    else
        ok 1 "$name: every probe field the same as exec'd"
        diff "$tmp/x.same" "$tmp/w.same" | head -20 | sed 's/^/#   /'
    fi
    want=$(cat "$tmp/x.rand")
    [ "$(cat "$tmp/w.rand")" = "$want" ] && [ "$want" -ge 2 ]
    ok $? "$name: random draws differ between warm tasks ($(cat "$tmp/w.rand") distinct, exec'd $want)"
}

cd "$tmp" || exit 1
parity "script" $py "$tmp/probe.py" a 'b c'
parity "relative script" $py probe.py x
parity "./script" $py ./probe.py x
{ echo "#!$py -u"; cat "$tmp/probe.py"; } >"$tmp/shebang.py"
chmod +x "$tmp/shebang.py"
parity "#! script with an option" ./shebang.py y
parity "-c" $py -c "exec(open('$tmp/probe.py').read())" arg
cd "$tmp/pkg" || exit 1
parity "-m" $py -m probemod y
cd "$tmp" || exit 1
parity "-X option" $py -X utf8 "$tmp/probe.py"

# Signals the caller ignores: an exec'd interpreter records SIG_IGN for
# them at its start, and so must a warm task's signal module (its zygote
# started with every signal at its default).  pspawn itself relays SIGINT,
# so its tasks get that one at its default; SIGQUIT stays ignored.
sigs="$sigs_default --ignore-signal=INT,QUIT"
parity "SIGINT and SIGQUIT ignored by pspawn's caller" $py "$tmp/probe.py"
sig_ign=$($py -c 'import signal; print(signal.SIG_IGN)')    # '1', or 3.9's 'Handlers.SIG_IGN'
sig_dfl=$($py -c 'import signal; print(signal.SIG_DFL)')
quit_ign="(3, '$sig_ign')"
grep -q "signals .*$quit_ign" "$tmp/x.out" && grep -q "signals .*$quit_ign" "$tmp/w.out"
ok $? "SIGQUIT ignored by the caller: the signal module says SIG_IGN, exec'd and warm"
sigs=$sigs_default

# SIGINT ignored by a launcher that does not handle it itself (the
# library, here through ctypes): an exec'd interpreter keeps it ignored
# and installs no KeyboardInterrupt handler.
lib="$top_builddir/libpspawn/.libs/libpspawn.so.0"
cat >"$tmp/launch.py" <<'PY'
# launch.py exec|warm LIB ARGV...: one task of ARGV through libpspawn
# (pspawn_exec, or a context's zygote); exits as the task did.  A
# sanitizer build's runtime, preloaded for us, is kept from the task.
import ctypes, os, sys
mode, lib, argv = sys.argv[1], ctypes.CDLL(sys.argv[2]), [os.fsencode(a) for a in sys.argv[3:]]
c_argv = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
env = [b'%s=%s' % kv for kv in os.environb.items() if kv[0] not in (b'LD_PRELOAD', b'ASAN_OPTIONS')]
c_env = (ctypes.c_char_p * (len(env) + 1))(*env, None)
pid = ctypes.c_int(-1)
if mode == 'exec':
    err = lib.pspawn_exec(ctypes.byref(pid), argv[0], None, c_argv, c_env)
else:
    ctx = ctypes.c_void_p()
    err = lib.pspawn_context_create_argv(ctypes.byref(ctx), argv[0], c_argv, c_env, None)
    if not err and not lib.pspawn_context_uses_zygote(ctypes.byref(ctx)):
        sys.exit('launch.py: no zygote')
    if not err:
        err = lib.pspawn_ex(ctypes.byref(pid), ctypes.byref(ctx), None, c_argv, c_env)
        lib.pspawn_context_destroy(ctypes.byref(ctx))
if err:
    sys.exit('launch.py: %s' % os.strerror(err))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid.value, 0)[1]) % 256)
PY
launch_pre=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ { printf "%s%s", sep, $3; sep = ":" }')
# launch MODE NAME ARGV...: into $tmp/MODE.out/.err and $MODE_rc, with
# SIGINT and SIGQUIT ignored by the launcher.
launch() {
    mode=$1 name=$2
    shift 2
    LD_PRELOAD=$launch_pre ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 PSPAWN_DEBUG=1 \
        $sigs_default --ignore-signal=INT,QUIT $py "$tmp/launch.py" $mode "$lib" "$@" \
        >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    eval ${mode}_rc=$?
    if [ $mode = warm ]; then
        grep -q 'parked inside Python' "$tmp/warm.err" && ! grep -q 'exec fallback\|exec instead' "$tmp/warm.err"
        ok $? "$name: served warm" || diag_file "$tmp/warm.err" 10
    fi
}
launch exec x $py "$tmp/probe.py"
launch warm "SIGINT and SIGQUIT ignored by the library's caller" $py "$tmp/probe.py"
grep -v '^random' "$tmp/exec.out" >"$tmp/exec.same"
grep -v '^random' "$tmp/warm.out" >"$tmp/warm.same"
if [ $exec_rc = 0 ] && [ $warm_rc = 0 ] && cmp -s "$tmp/exec.same" "$tmp/warm.same" &&
    grep -q "signals \[(1, '$sig_dfl'), (2, '$sig_ign'), $quit_ign" "$tmp/exec.same"; then
    ok 0 "SIGINT ignored by the library's caller: every probe field the same as exec'd, SIGINT and SIGQUIT SIG_IGN"
else
    ok 1 "SIGINT ignored by the library's caller: every probe field the same as exec'd, SIGINT and SIGQUIT SIG_IGN"
    diag "exit status: exec'd $exec_rc, warm $warm_rc"
    diag_file "$tmp/exec.err" 5
    diff "$tmp/exec.same" "$tmp/warm.same" | head -10 | sed 's/^/#   /'
fi
code='import os, signal; os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGQUIT); print("still here", signal.getsignal(signal.SIGINT))'
launch exec x $py -c "$code"
launch warm "SIGINT sent to a task that ignores it" $py -c "$code"
[ $exec_rc = 0 ] && [ $warm_rc = 0 ] && [ "$(cat "$tmp/exec.out")" = "$(cat "$tmp/warm.out")" ] &&
    grep -q '^still here' "$tmp/warm.out"
ok $? "SIGINT and SIGQUIT ignored, no KeyboardInterrupt: exit 0 and the same output (exec'd $exec_rc, warm $warm_rc: $(cat "$tmp/warm.out"))"
if [ $has_numpy = 1 ]; then
    parity "numpy preloaded" -p numpy,threadpoolctl $py "$tmp/probe.py"
    for e in OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2; do
        parity "thread pools with $e" -e $e -p numpy,threadpoolctl $py "$tmp/probe.py"
    done
    cat >"$tmp/sci.py" <<'PY'
import numpy as np
import scipy.linalg, scipy.sparse, scipy.optimize
a = np.arange(25, dtype=float).reshape(5, 5) + np.eye(5)
print(round(scipy.linalg.det(a), 6), scipy.optimize.brentq(lambda x: x * x - 2, 0, 2))
print(scipy.sparse.eye(4).sum(), np.linalg.solve(a, np.ones(5)).round(6).tolist())
PY
    cold -n 3 -l $py "$tmp/sci.py"
    warm "numpy/scipy" -n 3 -l -p numpy,scipy.linalg,scipy.sparse,scipy.optimize $py "$tmp/sci.py"
    sort "$tmp/x.out" >"$tmp/x.s"
    sort "$tmp/w.out" >"$tmp/w.s"
    cmp -s "$tmp/x.s" "$tmp/w.s" && [ -s "$tmp/x.s" ]
    ok $? "numpy/scipy: the same results as exec'd"
else
    skip "numpy or threadpoolctl missing" "thread pools and numpy/scipy results"
fi

# ends NAME WANT CODE: exit status and stderr of `python3 -c CODE`,
# exec'd and warm.
# -l: the task's output comes through pspawn, in whole lines, so that
# pspawn's own "launched" line (-v) cannot land inside a line of the
# task's traceback, as it can when both write to one file.
ends() {
    name=$1 want=$2 code=$3
    cold -l $py -c "$code"
    warm "$name" -l $py -c "$code"
    [ $xrc -eq "$want" ] && [ $wrc -eq "$want" ]
    ok $? "$name: exit status $want (exec'd $xrc, warm $wrc)"
    if cmp -s "$tmp/x.err" "$tmp/w.err2" && cmp -s "$tmp/x.out" "$tmp/w.out"; then
        ok 0 "$name: the same output and error output"
    else
        ok 1 "$name: the same output and error output"
        diff "$tmp/x.err" "$tmp/w.err2" | head -10 | sed 's/^/#   /'
    fi
}
ends "success" 0 'print("hi")'
ends "sys.exit(3)" 3 'import sys; sys.exit(3)'
ends "sys.exit(message)" 1 'import sys; sys.exit("bye")'
ends "uncaught exception" 1 'def f():
    raise ValueError("x")
f()'
ends "SyntaxError" 1 'x = ('
ends "SIGTERM" 143 'import os, signal; print("before", flush=True); os.kill(os.getpid(), signal.SIGTERM)'
ends "SIGINT gives KeyboardInterrupt" 130 'import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(5)'
ends "atexit and an unclosed file" 0 "import atexit; f = open('$tmp/unclosed', 'w'); f.write('kept'); atexit.register(print, 'atexit ran')"
[ "$(cat "$tmp/unclosed")" = kept ]
ok $? "an unclosed file's buffer is written at exit"
ends "stdout buffered into a pipe, then os._exit" 0 'import os, sys; print("lost"); sys.stdout.flush() if 0 else None; os._exit(0)'
cat >"$tmp/tb.py" <<'PY'
def inner():
    return {}["missing"]
inner()
PY
cold -l $py "$tmp/tb.py"
warm "traceback from a script" -l $py "$tmp/tb.py"
cmp -s "$tmp/x.err" "$tmp/w.err2"
if ! ok $? "traceback from a script: the same as exec'd"; then
    diff "$tmp/x.err" "$tmp/w.err2" | head -10 | sed 's/^/#   /'
fi

# Left out of the zygote: a module that starts a thread or keeps an fd
# open when imported, and one on the deny list; the tasks import them.
mkdir -p "$tmp/mods"
printf 'import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n' >"$tmp/mods/spawns_thread.py"
printf 'import os\nkept = os.open("/dev/null", os.O_RDONLY)\n' >"$tmp/mods/keeps_fd.py"
printf 'import sys\nprint(sorted(m for m in ("spawns_thread", "keeps_fd", "json") if m in sys.modules))\nimport spawns_thread, keeps_fd\nprint("imported")\n' >"$tmp/mods/main.py"
warm "thread and fd modules" -n 2 -l -p spawns_thread,keeps_fd,json,mpi4py.MPI $py "$tmp/mods/main.py"
grep -q 'module spawns_thread left out: started a thread' "$tmp/w.err"
ok $? "a module that starts a thread is left out, with the reason"
grep -q 'module keeps_fd left out: kept a file descriptor open' "$tmp/w.err"
ok $? "a module that keeps an fd open is left out, with the reason"
grep -q 'module mpi4py.MPI left out: is on the deny list' "$tmp/w.err"
ok $? "mpi4py.MPI is never imported in a zygote"
[ "$(grep -o "\['json'\]" "$tmp/w.out" | wc -l)" = 2 ] && [ "$(grep -o 'imported' "$tmp/w.out" | wc -l)" = 2 ]
ok $? "the tasks have json preloaded and import the others themselves"

# Learned: what a task imported is imported by the next zygote of its
# script, until the script changes.
printf 'import sys\nprint("decimal" in sys.modules)\nimport decimal, fractions\n' >"$tmp/learn.py"
for run in 1 2; do
    warm "learning, run $run" -n 2 $py "$tmp/learn.py"
    cp "$tmp/w.out" "$tmp/learn.$run"
done
# (words, not lines: with PYTHONUNBUFFERED two tasks' lines may interleave)
[ "$(grep -o 'True\|False' "$tmp/learn.1" | sort -u)" = False ] &&
    [ "$(grep -o 'True\|False' "$tmp/learn.2" | sort -u)" = True ]
ok $? "the second zygote of a script has what its first tasks imported"
touch -d '2001-01-01' "$tmp/learn.py"
warm "learning, script changed" -n 1 $py "$tmp/learn.py"
[ "$(cat "$tmp/w.out")" = False ]
ok $? "a changed script's learned modules are not used"

# What the zygote cannot serve is exec'd, and says why.
"$PSPAWN_BIN" -n 1 $py - <"$tmp/probe.py" >/dev/null 2>&1
ok $? "a program on standard input runs"
PSPAWN_DEBUG=1 "$PSPAWN_BIN" -n 1 $py -i -c 'print(1)' </dev/null >/dev/null 2>"$tmp/i.err"
grep -q 'exec fallback: task 0: its interpreter options ask for no program' "$tmp/i.err"
ok $? "-i is exec'd, with the reason"
"$PSPAWN_BIN" -n 1 -o python=off -v $py -c 'print(1)' >"$tmp/off.out" 2>"$tmp/off.err"
[ "$(cat "$tmp/off.out")" = 1 ] && ! grep -q 'inside Python' "$tmp/off.err"
ok $? "python=off parks the interpreter before main"

tap_done
