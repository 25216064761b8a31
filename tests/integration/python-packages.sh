#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-packages.sh - packages a cluster's Python users import (torch,
# numba, pandas, scikit-learn, matplotlib with Agg) are imported in the
# warm zygote unless its trial finds what they leave behind, and a task
# gets what an exec'd interpreter gets from them: the same modules, files,
# threads after the import, thread-pool sizes and results, and their
# references to the standard streams are its own.  A module that holds a
# stream where a task cannot point it at its own is left out, with the
# reason.  torch and numba are required (config/install-deps installs
# them); a package Debian does not ship here is skipped, not passed.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python

# probe PACKAGE: what a task sees of PACKAGE, one line per fact.
cat >"$tmp/probe.py" <<'PY'
import sys, threading, importlib
name = sys.argv[1]
if name == 'matplotlib':
    import matplotlib
    matplotlib.use('Agg')
m = importlib.import_module(name)
print('modules', len([k for k in sys.modules if k == name or k.startswith(name + '.')]))
print('file', m.__file__)
print('threads after import', threading.active_count())
print('main thread stderr is ours', threading.main_thread()._stderr is sys.stderr)
if name == 'torch':
    print('threads', m.get_num_threads(), 'sum', m.arange(10.0).sum().item())
elif name == 'numba':
    f = m.njit(lambda n: sum(range(n)))
    print('threads', m.get_num_threads(), 'jit', f(10))
elif name == 'pandas':
    print('sum', m.DataFrame({'a': [1, 2, 3]})['a'].sum())
elif name == 'sklearn':
    from sklearn.linear_model import LinearRegression
    print('coef', round(float(LinearRegression().fit([[0], [1], [2]], [1, 3, 5]).coef_[0]), 6))
elif name == 'matplotlib':
    import matplotlib.pyplot as plt
    print('backend', matplotlib.get_backend(), 'axes', len(plt.figure().subplots(2).tolist()))
print('threads at the end', threading.active_count())
PY

for pkg in torch numba pandas sklearn matplotlib; do
    if ! $py -c "import $pkg" 2>/dev/null; then
        case $pkg in
        torch|numba) ok 1 "$pkg is installed (config/install-deps installs it)" ;;
        *) skip "$pkg is not installed" "$pkg: warm like exec'd" ;;
        esac
        continue
    fi
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" --exec -n 2 -l $py "$tmp/probe.py" $pkg >"$tmp/x.out" 2>"$tmp/x.err"
    xrc=$?
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l -p $pkg $py "$tmp/probe.py" $pkg >"$tmp/w.out" 2>"$tmp/w.err"
    wrc=$?
    grep -q 'parked inside Python' "$tmp/w.err" && ! grep -q 'exec fallback\|exec instead' "$tmp/w.err"
    ok $? "$pkg: served warm" || diag_file "$tmp/w.err" 10
    ! grep -q "module $pkg left out" "$tmp/w.err"
    ok $? "$pkg: imported in the zygote ($(grep -o "module $pkg left out: .*" "$tmp/w.err" | head -1))"
    sort "$tmp/x.out" >"$tmp/x.sorted"
    sort "$tmp/w.out" >"$tmp/w.sorted"
    [ $xrc = 0 ] && [ $wrc = 0 ] && [ -s "$tmp/x.sorted" ] && cmp -s "$tmp/x.sorted" "$tmp/w.sorted"
    if ! ok $? "$pkg: each task's modules, files, threads, pool sizes and results are an exec'd task's (rc $xrc, $wrc)"; then
        diff "$tmp/x.sorted" "$tmp/w.sorted" | head -10 | sed 's/^/#   /'
        diag_file "$tmp/w.err" 5
    fi
done

# torch sizes its pool from the task's OMP_NUM_THREADS, as exec'd.
if $py -c 'import torch' 2>/dev/null; then
    # (-l: each task's lines apart; PYTHONUNBUFFERED writes a line in pieces.)
    OMP_NUM_THREADS=2 "$PSPAWN_BIN" --exec -n 2 -l $py "$tmp/probe.py" torch 2>&1 |
        sed 's/^ *[0-9]*: //' >"$tmp/x.out"
    OMP_NUM_THREADS=2 PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l -p torch $py "$tmp/probe.py" torch \
        2>"$tmp/w.err" | sed 's/^ *[0-9]*: //' >"$tmp/w.out"
    grep -q '^threads 2 ' "$tmp/x.out" && [ "$(grep '^threads' "$tmp/w.out" | sort -u)" = "$(grep '^threads' "$tmp/x.out" | sort -u)" ] &&
        grep -q 'parked inside Python' "$tmp/w.err"
    ok $? "torch with OMP_NUM_THREADS=2: each task's pool as exec'd ($(grep '^threads' "$tmp/w.out" | sort -u | tr '\n' ' '))"
fi

# Stream references: where a module keeps the zygote's (a default
# argument, a global, a keyword default, an attribute), a task finds its
# own; one in a bare tuple is not the task's to re-point: left out.
mkdir -p "$tmp/mods"
cat >"$tmp/mods/holds_streams.py" <<'PY'
import sys
def show(file=sys.stdout):
    return file
def show_kw(*, file=sys.stderr):
    return file
OUT = sys.stderr
class Holder:
    pass
holder = Holder()
holder.stream = sys.stdout
PY
printf 'import sys\nPAIR = (sys.stdout, 1)\n' >"$tmp/mods/tuple_stream.py"
cat >"$tmp/mods/main.py" <<'PY'
import sys
import holds_streams as h, tuple_stream as t
print('default', h.show() is sys.stdout, 'kwdefault', h.show_kw() is sys.stderr,
      'global', h.OUT is sys.stderr, 'attribute', h.holder.stream is sys.stdout,
      'tuple', t.PAIR[0] is sys.stdout)
PY
# (-l: each task's lines apart; PYTHONUNBUFFERED would write a print in pieces.)
PSPAWN_DEBUG=1 "$PSPAWN_BIN" --exec -n 2 -l $py "$tmp/mods/main.py" >"$tmp/x.out" 2>"$tmp/x.err"
PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l -p holds_streams,tuple_stream $py "$tmp/mods/main.py" \
    >"$tmp/w.out" 2>"$tmp/w.err"
grep -q 'parked inside Python' "$tmp/w.err" && ! grep -q 'module holds_streams left out' "$tmp/w.err"
ok $? "a module holding the streams where a task can re-point them is imported in the zygote" ||
    diag_file "$tmp/w.err" 10
[ "$(sed 's/^ *[0-9]*: //' "$tmp/w.out" | sort -u)" = "default True kwdefault True global True attribute True tuple True" ] &&
    [ "$(sort "$tmp/x.out")" = "$(sort "$tmp/w.out")" ]
ok $? "each task's module holds the task's own streams, as exec'd ($(sed 's/^ *[0-9]*: //' "$tmp/w.out" | sort -u))" ||
    { diag_file "$tmp/x.out"; diag_file "$tmp/w.out"; }
grep -q "module tuple_stream left out: kept a reference to a standard stream where a task cannot point it at its own" "$tmp/w.err"
ok $? "a module holding a stream in a bare tuple is left out, with the reason" ||
    diag_file "$tmp/w.err" 10

tap_done
