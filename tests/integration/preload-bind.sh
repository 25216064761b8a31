#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# preload-bind.sh - learned preloads are bound in the zygote where that
# changes nothing a task sees: a library its tasks open RTLD_LAZY is loaded
# RTLD_NOW (its task binds nothing more), unless binding it now fails (a
# symbol no library defines) or could bind otherwise than the task would
# (a symbol from its own dependencies, which a later RTLD_GLOBAL load can
# take over, or RTLD_DEEPBIND): then it is loaded with the task's flags,
# and the cache and PSPAWN_DEBUG say why.  A library on the zygote's deny
# list, or one that loads such a library, is never preloaded: a stand-in
# for UCX's libucs reads the task's environment in its constructor.
# Each case runs twice, learning and learned, and with inputs that change
# between runs.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

lb=$TESTS_BUILDDIR/lazybind
libs=$TESTS_BUILDDIR/.libs
export PSPAWN_CACHE_DIR="$tmp/cache"
pick=$libs/libbindpick.so later=$libs/libbindlater.so undef=$libs/libbindundef.so

# run NAME WANT PSPAWN_ARGS...: every task prints WANT (its first two words).
run() {
    name=$1 want=$2
    shift 2
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -l -n 2 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    got=$(sed 's/^ *[0-9]*: //' "$tmp/out" | awk '{print $1, $2}' | sort -u | tr '\n' ';')
    [ "$got" = "$want;" ] && ! grep -q 'exec fallback' "$tmp/err"
    if ! ok $? "$name: tasks say '$want' (got '$got', status $rc)"; then
        diag_file "$tmp/out" 5
        grep -v '^ *[0-9]*:' "$tmp/err" | head -20 | sed 's/^/#   /'
    fi
}
cache() { cat "$tmp"/cache/preload/* 2>/dev/null; }
verdict() {     # verdict LIB: its entry's first word (the first entry decides)
    cache | awk -v lib="$1" '$NF == lib {print $1; exit}'
}
# exec'd LIB... : what a task says when exec'd, without libpspawn.
exec_says() { "$lb" "$@" | awk '{print $1, $2}'; }

# 0. Without preloads: a task's RTLD_LAZY dlopen binds lazily, as an
# exec'd task's does.  The zygote binds what it loaded at exec itself at
# the park, not through LD_BIND_NOW, which would make every later dlopen
# bind at once; a user's LD_BIND_NOW reaches the zygote as exec'd.
run "no preloads: a library with a symbol nobody defines" "loaded lazy-only" "$lb" "$undef"
run "no preloads: a later RTLD_GLOBAL library takes a symbol over" "loaded later" \
    "$lb" "$pick" "$later"
[ "$(LD_BIND_NOW=1 "$lb" "$undef" | awk '{print $1, $2}')" = "failed: $undef:" ]
ok $? "exec'd with LD_BIND_NOW=1: the same library fails to load"
LD_BIND_NOW=1 run "the user's LD_BIND_NOW=1" "failed: $undef:" "$lb" "$undef"
PSPAWN_DEBUG=1 LD_DEBUG=bindings "$PSPAWN_BIN" -n 1 "$lb" "$libs/libtiny.so" >"$tmp/out" 2>"$tmp/err"
task=$(awk '{print $3}' "$tmp/out")
grep -q "bound [1-9][0-9]* lazily bound functions of the loaded objects at the park" "$tmp/err"
ok $? "the zygote bound the program's functions at the park" || diag_file "$tmp/err" 5
LD_DEBUG=bindings "$lb" "$libs/libtiny.so" 2>"$tmp/plain" >/dev/null
n_exec=$(grep -c "binding file $lb .*normal symbol .printf'" "$tmp/plain")
n_task=$(grep "^ *$task:" "$tmp/err" | grep -c "binding file $lb ")
[ "$n_exec" -gt 0 ] && [ -n "$task" ] && [ "$n_task" = 0 ]
ok $? "a task binds none of the program's functions (exec'd: printf bound at its call, $n_exec; task $task: $n_task bindings)"

# A program not built as PIE that takes a library function's address:
# its PLT entry stands for the function; the zygote leaves its own slot to
# the lazy binding (bound to that entry, the call would never return).
fa=$TESTS_BUILDDIR/fnaddr
[ "$("$fa")" = "fnaddr 3 4" ]
ok $? "exec'd: a non-PIE program calls a library function it took the address of"
timeout 20 "$PSPAWN_BIN" -n 2 "$fa" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && [ "$(sort -u "$tmp/out")" = "fnaddr 3 4" ]
ok $? "from a zygote: the same (status $rc)" || diag_file "$tmp/err" 5

# 1. A library with nothing to take over: bound in the zygote.
[ "$(exec_says "$pick")" = "loaded local" ]
ok $? "exec'd: libbindpick's call binds to its own dependency"
run "learning" "loaded local" --preload auto "$lb" "$pick"
[ "$(verdict "$pick")" = untried ] && cache | grep -q "^untried 1 0 .* $pick\$"
ok $? "the tasks recorded it with their flags (RTLD_LAZY|RTLD_LOCAL)" || cache | sed 's/^/#   /'
run "learned" "preloaded local" --preload auto "$lb" "$pick"
[ "$(verdict "$pick")" = "lazy=pspawn_bind_who" ]
ok $? "its call into its own dependency keeps it lazy (cache: $(verdict "$pick"))"
grep -q "preload $pick: bound lazily.*pspawn_bind_who" "$tmp/err"
ok $? "PSPAWN_DEBUG says why it is bound lazily" || diag_file "$tmp/err" 5

# 2. A later RTLD_GLOBAL library takes the symbol over: bound lazily in
# the zygote, the task's call finds the later library, as exec'd.
rm -rf "$tmp/cache"
[ "$(exec_says "$pick" "$later")" = "loaded later" ]
ok $? "exec'd: the call binds to the RTLD_GLOBAL library loaded after it"
run "alone, learning" "loaded local" --preload auto "$lb" "$pick"
run "alone, learned" "preloaded local" --preload auto "$lb" "$pick"
run "a task that loads a library no earlier task loaded" "preloaded later" \
    --preload auto "$lb" "$pick" "$later"
run "learned with it" "preloaded later" --preload auto "$lb" "$pick" "$later"
[ "$(verdict "$later")" = ok ] && [ "$(verdict "$pick")" = "lazy=pspawn_bind_who" ]
ok $? "the later library is preloaded, the first stays lazy ($(verdict "$later"), $(verdict "$pick"))"

# 3. RTLD_DEEPBIND: its own dependency first, whoever loads later.
rm -rf "$tmp/cache"
[ "$(exec_says deepbind "$pick" "$later")" = "loaded local" ]
ok $? "exec'd with RTLD_DEEPBIND: the call binds to its own dependency"
run "deepbind, learning" "loaded local" --preload auto "$lb" deepbind "$pick" "$later"
run "deepbind, learned" "preloaded local" --preload auto "$lb" deepbind "$pick" "$later"

# 4. Binding now fails: loaded lazily, as the task loads it.
rm -rf "$tmp/cache"
[ "$(exec_says "$undef")" = "loaded lazy-only" ]
ok $? "exec'd: a library with a symbol nobody defines loads lazily"
run "unresolvable, learning" "loaded lazy-only" --preload auto "$lb" "$undef"
run "unresolvable, learned" "preloaded lazy-only" --preload auto "$lb" "$undef"
[ "$(verdict "$undef")" = "lazy=pspawn_bind_missing" ]
ok $? "the cache keeps why (verdict: $(verdict "$undef"))"
grep -q "preload $undef: bound lazily.*pspawn_bind_missing" "$tmp/err"
ok $? "PSPAWN_DEBUG says why"

# 5. A library all of whose calls the global scope answers: bound now.
# libtiny calls nothing; the lazily opened libthreadlib-free libc caller
# below is the dlopener fixture's libtiny, opened RTLD_LAZY here.
rm -rf "$tmp/cache"
run "a library bound now, learning" "loaded none" --preload auto "$lb" "$libs/libtiny.so"
run "a library bound now, learned" "preloaded none" --preload auto "$lb" "$libs/libtiny.so"
[ "$(verdict "$libs/libtiny.so")" = ok ]
ok $? "it is kept as ok: loaded RTLD_NOW in the zygote ($(verdict "$libs/libtiny.so"))"

# 6. The deny list: a component whose library is libucs is never
# preloaded; its constructor sees each task's own PSPAWN_RANK.
rm -rf "$tmp/cache"
dl=$TESTS_BUILDDIR/dlopener comp=$libs/mca_fake_ucx.so
ranks() {       # every task's value is its rank
    sed 's/^ *\([0-9]*\): [a-z]* \(-*[0-9]*\)$/\1 \2/' "$tmp/out" |
        awk '$1 != $2 {bad = 1} END {exit bad || NR != 2}'
}
run "a component built on libucs, learning" "loaded 0;loaded 1" --preload auto "$dl" "$comp"
ranks
ok $? "each task's constructor read its own rank" || diag_file "$tmp/out"
run "a component built on libucs, learned" "loaded 0;loaded 1" --preload auto "$dl" "$comp"
ranks
ok $? "each task's constructor still read its own rank" || diag_file "$tmp/out"
[ "$(verdict "$comp")" = "denied=libucs.so" ]
ok $? "the cache says it loads a denied library ($(verdict "$comp"))" || cache | sed 's/^/#   /'
grep -q "preload $comp: left out: it loads libucs.so, which runs UCX's global init" "$tmp/err"
ok $? "PSPAWN_DEBUG names the library and the reason" || diag_file "$tmp/err" 5
run "a component built on libucs, learned again" "loaded 0;loaded 1" --preload auto "$dl" "$comp"
[ "$(cache | grep -c " $comp\$")" = 1 ]
ok $? "tasks do not record again what their zygote left out (entries: $(cache | grep -c " $comp\$"))"

tap_done
