#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The zygote's life in stand-in mode, driven through
# pspawn-shim as slurmstepd drives it (tests/integration/standin.sh has the rest):
#  - the stand-in that starts the zygote is killed while the zygote loads:
#    the zygote exits and the program's main never runs in it;
#  - once parked, the zygote outlives the stand-in that started it
#    (killed): a later stand-in of the step is served by it;
#  - /proc/PID/environ of the zygote (its token) and of its task holds no
#    PSPAWN_ZYGOTE_ variable;
#  - a library renamed over while the step runs: later tasks are exec'd.
. "$TESTS_SRCDIR/taplib.sh"

shim=$top_builddir/spank/pspawn-shim
lifeprog=$TESTS_BUILDDIR/lifeprog
[ -x "$shim" ] || bail "no $shim"
uid=$(id -u)
export PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_DEBUG=1

# gone PID: whether PID has exited (gone, or a zombie nobody reaps).
gone() {
    [ ! -e "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]
}

# 1. Killed while the zygote's library constructor sleeps.
export PSPAWN_SHIM_KEY="$uid.$$.1" PSPAWN_SHIM_LOCAL_TASKS=1
mkdir "$tmp/o"
PSPAWN_TEST_LIFE=slow=1500 PSPAWN_TEST_DIR=$tmp/o "$shim" "$lifeprog" 2>"$tmp/err1" &
spid=$!
for _ in $(seq 500); do ls "$tmp/o" | grep -q '^ctor\.' && break; sleep 0.02; done
zpid=$(ls "$tmp/o" | sed -n 's/^ctor\.//p' | head -n 1)
[ -n "$zpid" ]
ok $? "orphan: the zygote's library constructor started (pid $zpid)" || diag_file "$tmp/err1"
kill -KILL $spid
wait $spid 2>/dev/null
exited=1
for _ in $(seq 500); do [ -n "$zpid" ] && gone "$zpid" && { exited=0; break; }; sleep 0.02; done
ok $exited "orphan: the zygote exits once the stand-in that started it is gone"
[ $exited = 0 ] || kill -KILL "$zpid" 2>/dev/null
sleep 0.2
marks=$(ls "$tmp/o" | grep -c '^main\.')
[ "$marks" = 0 ]
ok $? "orphan: the program's main never ran ($marks marks)"

# 2. The stand-in that started the zygote is killed once it parked; a
#    stand-in of the step that comes later is served by the same zygote.
export PSPAWN_SHIM_KEY="$uid.$$.2" PSPAWN_SHIM_LOCAL_TASKS=3
"$shim" "$lifeprog" sleep 3000 2>"$tmp/err2a" &
spid_a=$!
for _ in $(seq 250); do grep -q 'forked by the zygote' "$tmp/err2a" 2>/dev/null && break; sleep 0.02; done
"$shim" "$lifeprog" sleep 2000 2>"$tmp/err2b" &
spid_b=$!
for _ in $(seq 250); do grep -q 'forked by the zygote' "$tmp/err2b" 2>/dev/null && break; sleep 0.02; done
kill -KILL $spid_a
wait $spid_a 2>/dev/null
"$shim" "$lifeprog" 2>"$tmp/err2c"
rc_c=$?
wait $spid_b
rc_b=$?
[ $rc_b = 0 ] && [ $rc_c = 0 ] && grep -q 'starting the zygote' "$tmp/err2a" &&
    grep -q 'forked by the zygote' "$tmp/err2c" && ! grep -q 'starting the zygote' "$tmp/err2c"
ok $? "a parked zygote outlives the stand-in that started it (rc $rc_b, $rc_c)" ||
    { diag_file "$tmp/err2a"; diag_file "$tmp/err2b"; diag_file "$tmp/err2c"; }

# 3. /proc/PID/environ of the zygote and of its task.
export PSPAWN_SHIM_KEY="$uid.$$.3" PSPAWN_SHIM_LOCAL_TASKS=1
PSPAWN_TEST_DIR=$tmp "$shim" "$lifeprog" sleep 2000 2>"$tmp/err3" &
spid=$!
for _ in $(seq 250); do grep -q 'forked by the zygote' "$tmp/err3" 2>/dev/null && break; sleep 0.02; done
zpid=$(sed -n 's/.*zygote \([0-9]*\) parked$/\1/p' "$tmp/err3" | head -n 1)
tpid=$(sed -n 's/.*task \([0-9]*\) forked by the zygote.*/\1/p' "$tmp/err3" | head -n 1)
if [ -n "$zpid" ] && [ -n "$tpid" ]; then
    tr '\0' '\n' <"/proc/$zpid/environ" >"$tmp/zenv"
    tr '\0' '\n' <"/proc/$tpid/environ" >"$tmp/tenv"
fi
wait $spid
rc=$?
[ -s "$tmp/zenv" ] && ! grep -q PSPAWN_ZYGOTE_ "$tmp/zenv" && grep -q '^PSPAWN_TEST_DIR=' "$tmp/zenv"
ok $? "environ: the stand-in zygote's /proc/PID/environ holds no PSPAWN_ZYGOTE_ (token included)" ||
    { diag_file "$tmp/err3"; grep PSPAWN_ZYGOTE_ "$tmp/zenv" | sed 's/=.*//' >"$tmp/zvars";
      diag_file "$tmp/zvars"; }
[ -s "$tmp/tenv" ] && ! grep -q PSPAWN_ZYGOTE_ "$tmp/tenv" && grep -q '^PSPAWN_TEST_DIR=' "$tmp/tenv" &&
    [ $rc = 0 ]
ok $? "environ: nor does its task's (rc $rc)"

# 4. A library renamed over while the step runs: the zygote refuses the
#    later stand-ins, which exec their tasks (the new library's code), and
#    the task it made before still ends as it did.
export PSPAWN_SHIM_KEY="$uid.$$.4" PSPAWN_SHIM_LOCAL_TASKS=3
mkdir "$tmp/lib"
cp "$TESTS_BUILDDIR/.libs/liblifelib.so" "$tmp/lib/liblifelib.so"
cp "$TESTS_BUILDDIR/.libs/liblifelib2.so" "$tmp/lib/liblifelib.so.new"
export LD_LIBRARY_PATH=$tmp/lib
"$shim" "$lifeprog" sleep 1500 2>"$tmp/err4a" &
spid=$!
for _ in $(seq 250); do grep -q 'forked by the zygote' "$tmp/err4a" 2>/dev/null && break; sleep 0.02; done
"$shim" "$lifeprog" version >"$tmp/v4b" 2>"$tmp/err4b"
rc_b=$?
mv "$tmp/lib/liblifelib.so.new" "$tmp/lib/liblifelib.so"
"$shim" "$lifeprog" version >"$tmp/v4c" 2>"$tmp/err4c"
rc_c=$?
wait $spid
rc_a=$?
unset LD_LIBRARY_PATH
[ "$(cat "$tmp/v4b")" = "version 1" ] && grep -q 'forked by the zygote' "$tmp/err4b" &&
    [ "$(cat "$tmp/v4c")" = "version 2" ] && grep -q 'plain exec' "$tmp/err4c" &&
    [ $rc_a = 0 ] && [ $rc_b = 0 ] && [ $rc_c = 0 ]
ok $? "library renamed over: the next stand-in's task is exec'd and runs version 2 ($(cat "$tmp/v4b"), then $(cat "$tmp/v4c"); rc $rc_a $rc_b $rc_c)" ||
    { diag_file "$tmp/err4b"; diag_file "$tmp/err4c"; }

tap_done
