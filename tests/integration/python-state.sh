#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-state.sh - what a module draws or sets up at its import is each
# warm task's own, as in an exec'd interpreter, once the zygote preloads
# it: multiprocessing's authentication key, the main thread's native id,
# os.register_at_fork hooks (never run by the zygote's forks, run by the
# task's own), random's state, standard streams and logging set up at
# import.  Each case runs exec'd, then warm, learning then learned.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

need_python
cd "$tmp" || exit 1

# run_both NAME PSPAWN_ARGS...: exec'd into $tmp/x.out, then warm
# (learning, then learned) into $tmp/w1.out and $tmp/w2.out, each sorted.
run_both() {
    "$PSPAWN_BIN" --exec "$@" 2>"$tmp/x.err" | sort >"$tmp/x.out"
    for i in 1 2; do
        PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v "$@" 2>"$tmp/w$i.err" | sort >"$tmp/w$i.out"
    done
}
# served FILE: that warm run's tasks came from the warm zygote.
served() {
    grep -q 'parked inside Python' "$1" && ! grep -q 'exec fallback\|exec instead' "$1"
}
# count PATTERN FILE: lines of FILE matching PATTERN.
count() { grep -c "$1" "$2"; }

# 1-3. multiprocessing's authkey and the main thread's native id, two
#      tasks, with multiprocessing learnt.
cat >mp.py <<'PY'
import multiprocessing, os, threading
print("authkey", multiprocessing.current_process().authkey.hex())
print("native_id is pid", threading.main_thread().native_id == os.getpid())
PY
run_both -n 2 -l $py mp.py
served "$tmp/w2.err" && grep -q 'multiprocessing' "$tmp"/cache/python/mp.py-*
ok $? "multiprocessing learnt and preloaded, served warm"
keys() { sed -n 's/.*authkey //p' "$1" | sort -u | wc -l; }
[ "$(keys "$tmp/x.out")" = 2 ] && [ "$(keys "$tmp/w2.out")" = 2 ]
ok $? "each task its own multiprocessing authkey (exec'd $(keys "$tmp/x.out"), warm $(keys "$tmp/w2.out") distinct of 2)"
[ "$(count 'native_id is pid True' "$tmp/w2.out")" = 2 ] &&
    [ "$(count 'native_id is pid True' "$tmp/x.out")" = 2 ]
ok $? "threading.main_thread().native_id is the task's pid"

# 4-7. os.register_at_fork at a preloaded module's import.
cat >hookmod.py <<'PY'
import os
calls = []
os.register_at_fork(before=lambda: calls.append("before"),
                    after_in_parent=lambda: calls.append("parent"),
                    after_in_child=lambda: calls.append("child %s" % os.environ.get("PSPAWN_RANK")))
PY
cat >hooks.py <<'PY'
import os, random, hookmod
print("zygote's hooks seen", [c for c in hookmod.calls if not c.startswith("child")])
print("child hook at start", sorted(set(c for c in hookmod.calls if c.startswith("child"))))
start = len(hookmod.calls)
pid = os.fork()
if pid == 0:
    print("in the task's fork child", hookmod.calls[start:], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("in the task after its fork", hookmod.calls[start:])
print("random", random.random())
PY
touch -d '-1 min' hookmod.py hooks.py
run_both -n 2 -l -p hookmod,random $py hooks.py
served "$tmp/w2.err"
ok $? "hookmod and random preloaded (-p), served warm"
[ "$(count "zygote's hooks seen \[\]" "$tmp/w2.out")" = 2 ]
ok $? "the zygote ran none of the preloaded module's before/after_in_parent hooks" ||
    diag_file "$tmp/w2.out" 10
[ "$(count "child hook at start \['child 0'\]" "$tmp/w2.out")" = 1 ] &&
    [ "$(count "child hook at start \['child 1'\]" "$tmp/w2.out")" = 1 ]
ok $? "its after_in_child hook ran once in each task, with the task's environment" ||
    diag_file "$tmp/w2.out" 10
grep 'fork' "$tmp/x.out" | sed 's/^ *[0-9]*: //' | sort >"$tmp/x.fork"
grep 'fork' "$tmp/w2.out" | sed 's/^ *[0-9]*: //' | sort >"$tmp/w.fork"
[ -s "$tmp/x.fork" ] && cmp -s "$tmp/x.fork" "$tmp/w.fork"
ok $? "the task's own fork runs the module's hooks as exec'd: $(tr '\n' ' ' <"$tmp/x.fork")" ||
    diff "$tmp/x.fork" "$tmp/w.fork" | sed 's/^/# /'
r=$(sed -n 's/.*random //p' "$tmp/w2.out" | sort -u | wc -l)
[ "$r" = 2 ]
ok $? "random preloaded: each task draws its own numbers ($r distinct of 2)"

# A preloaded module that kept register_at_fork (from os import) and
# registers a hook once the task runs: registered for real, as exec'd.
cat >laterhook.py <<'PY'
from os import register_at_fork
def later():
    register_at_fork(after_in_child=lambda: print("later hook in the child", flush=True))
    return "registered"
PY
printf 'import os, laterhook
print(laterhook.later(), flush=True)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
' >later.py
touch -d '-1 min' laterhook.py later.py
run_both -p laterhook $py later.py
served "$tmp/w2.err" && [ -s "$tmp/x.out" ] && cmp -s "$tmp/x.out" "$tmp/w2.out"
ok $? "a hook registered after the park, through a name taken at import: as exec'd ($(tr '\n' ' ' <"$tmp/w2.out"))" ||
    diag_file "$tmp/w2.err" 8

# 8-11. Standard streams and logging set up at a module's import.
cat >streamhelp.py <<'PY'
import sys
sys.stdout.reconfigure(line_buffering=True)
PY
printf 'import streamhelp, sys\nprint("line buffered", sys.stdout.line_buffering)\n' >streams.py
cat >loghelp.py <<'PY'
import logging, sys
logging.basicConfig(stream=sys.stdout, format="log: %(message)s")
PY
cat >logs.py <<'PY'
import loghelp, logging, sys
print("first")
logging.warning("second")
print("third")
sys.stdout.flush()
PY
# (Written a minute ago: a module whose file is younger than the task that
# imported it is learnt as the task's own, never preloaded.)
touch -d '-1 min' streamhelp.py streams.py loghelp.py logs.py
for s in streams logs; do
    "$PSPAWN_BIN" --exec $py $s.py >"$tmp/x.out" 2>/dev/null
    for i in 1 2; do
        PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v $py $s.py >"$tmp/w$i.out" 2>"$tmp/w$i.err"
    done
    [ -s "$tmp/x.out" ] && cmp -s "$tmp/x.out" "$tmp/w1.out" && cmp -s "$tmp/x.out" "$tmp/w2.out"
    ok $? "$s.py: learning and learned, the output as exec'd: $(tr '\n' ' ' <"$tmp/x.out")" ||
        { diag_file "$tmp/w2.out" 5; diag_file "$tmp/w2.err" 5; }
    served "$tmp/w2.err"
    ok $? "$s.py: still served warm (its helper imported by the task)"
done
v() { cat "$tmp"/cache/python/* | awk -v m="$1" '$2 == m { print $1 }'; }
[ "$(v streamhelp)" = replaced_or_reconfigured_a_standard_stream ] &&
    [ "$(v loghelp)" = added_a_logging_handler ]
ok $? "the helpers are left out of the zygote, with the reason ($(v streamhelp); $(v loghelp))"

# 15. What a preloaded module reads at its import that differs between
#     tasks: a rank (none is in the zygote's environment), sys.argv.  Chosen
#     (-p), each task is exec'd, with the reason, and reads its own; learnt,
#     the first run that preloads it execs, and the module is left out from
#     then on: served warm, each task imports it and reads its own.
printf 'import os\nAT_IMPORT = os.environ.get("PSPAWN_RANK")\n' >rankmod.py
printf 'import os, rankmod\nprint("at import", rankmod.AT_IMPORT, "now", os.environ["PSPAWN_RANK"])\n' >rank.py
printf 'import sys\nAT_IMPORT = sys.argv[1:]\n' >argvmod.py
printf 'import sys, argvmod\nprint("argv at import", argvmod.AT_IMPORT, "now", sys.argv[1:])\n' >argv.py
touch -d '-1 min' rankmod.py rank.py argvmod.py argv.py
PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l -p rankmod $py rank.py 2>"$tmp/r.err" | sort >"$tmp/r.out"
[ "$(count 'at import \([01]\) now \1$' "$tmp/r.out")" = 2 ] &&
    [ "$(count 'exec instead: the preloaded module rankmod read PSPAWN_RANK at its import, which this task has set' "$tmp/r.err")" = 2 ]
ok $? "-p, a module that reads the rank at import: each task exec'd, with the reason, reads its own: $(tr '\n' ' ' <"$tmp/r.out")" ||
    diag_file "$tmp/r.err" 6
for i in 1 2 3 4; do
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l $py rank.py 2>"$tmp/r$i.err" | sort >"$tmp/r$i.out"
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l $py argv.py x$i 2>"$tmp/a$i.err" | sort >"$tmp/a$i.out"
done
own=0
for i in 1 2 3 4; do
    [ "$(count 'at import \([01]\) now \1$' "$tmp/r$i.out")" = 2 ] && own=$((own + 1))
    [ "$(count "argv at import \['x$i'\] now \['x$i'\]" "$tmp/a$i.out")" = 2 ] && own=$((own + 1))
done
[ "$own" = 8 ]
ok $? "learnt, each task reads its own rank and sys.argv at import, every run ($own of 8)" ||
    { diag_file "$tmp/r2.out"; diag_file "$tmp/a2.out"; }
served "$tmp/r4.err" && served "$tmp/a4.err" &&
    [ "$(v rankmod)" = "read_PSPAWN_RANK_at_import,_which_differs_between_tasks" ] &&
    [ "$(v argvmod)" = "reads_sys.argv_at_import" ]
ok $? "and from then on served warm, the module left out with the reason ($(v rankmod); $(v argvmod))"

# 16. A module that prints at its import, learnt: each task prints it, as
#     each exec'd one does (labelled as its own), not the zygote once; the
#     learning run that tries it prints it no more than that.
printf 'import sys\nprint("printed at import", file=sys.stderr)\n' >printer.py
printf 'import printer\n' >prints.py
touch -d '-1 min' printer.py prints.py
"$PSPAWN_BIN" --exec -n 2 -l $py prints.py 2>&1 >/dev/null | grep 'printed at import' | sort >"$tmp/p.x"
for i in 1 2 3; do
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l $py prints.py 2>"$tmp/p$i.err" >/dev/null
    grep 'printed at import' "$tmp/p$i.err" | sort >"$tmp/p$i.got"
done
served "$tmp/p3.err" && grep -q 'printer' "$tmp"/cache/python/prints.py-* &&
    [ "$(wc -l <"$tmp/p.x")" = 2 ] && cmp -s "$tmp/p.x" "$tmp/p2.got" && cmp -s "$tmp/p.x" "$tmp/p3.got"
ok $? "an import's output, preloaded: each task's own, as exec'd ($(tr '\n' ';' <"$tmp/p3.got")), when tried and after" ||
    { diag_file "$tmp/p2.got"; diag_file "$tmp/p3.got"; }

# 17-20. What a module draws for its process at import (a generator, a
#        UUID, a key, its pid, a time, numpy's default_rng) is each task's
#        own, as exec'd: learning (the tasks import them), then learned
#        (tried twice at once, left out with the reason) and after.  A
#        module of constants beside them is served.
printf 'import random\nGEN = random.Random()\n' >drawgen.py
printf 'import uuid\nU = uuid.uuid4()\n' >drawuuid.py
printf 'import os\nKEY = os.urandom(8)\n' >drawkey.py
printf 'import os\nPID = os.getpid()\n' >drawpid.py
printf 'import time\nT0 = time.time()\n' >drawtime.py
printf 'import numpy\nRNG = numpy.random.default_rng()\n' >drawnp.py
printf 'LIMIT = 10\nNAME = "constants"\n' >plainmod.py
cat >draws.py <<'PY'
import os, plainmod, drawgen, drawuuid, drawkey, drawpid, drawtime
try:
    import drawnp
    np = drawnp.RNG.random()
except ImportError:
    np = None
print("drawn", drawgen.GEN.random(), drawuuid.U, drawkey.KEY.hex(), drawtime.T0, np)
print("pid is the task's", drawpid.PID == os.getpid())
PY
# (written a while ago: a module written just before its task is the
# task's own to write, and never learnt)
touch -d '-1 min' draw*.py plainmod.py
for i in 1 2 3; do
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -v -n 2 -l $py draws.py 2>"$tmp/d$i.err" |
        sed 's/^ *[0-9]*: //' >"$tmp/d$i.out"
done
distinct() { grep '^drawn' "$1" | sort -u | wc -l; }
[ "$(distinct "$tmp/d1.out")" = 2 ] && [ "$(distinct "$tmp/d2.out")" = 2 ] &&
    [ "$(distinct "$tmp/d3.out")" = 2 ] &&
    [ "$(cat "$tmp"/d[123].out | count "pid is the task's True" -)" = 6 ]
ok $? "each task draws its own at those imports, learning, learned and after ($(distinct "$tmp/d3.out") of 2 distinct; its own pid)" ||
    { diag_file "$tmp/d2.out"; diag_file "$tmp/d2.err" 8; }
served "$tmp/d3.err"
ok $? "still served warm"
left=0
for m in drawgen.GEN drawuuid.U drawkey.KEY drawpid.PID drawtime.T0 drawnp.RNG; do
    [ "$(v "${m%%.*}")" = "draws_per-process_state_at_import_($m)" ] && left=$((left + 1))
done
$py -c 'import numpy' 2>/dev/null || left=$((left + 1))
[ "$left" = 6 ]
ok $? "each drawing module is left out, the reason naming what it drew ($left of 6): $(v drawgen)"
[ "$(v plainmod)" = ok ]
ok $? "a module of constants beside them is served ($(v plainmod))"

tap_done
