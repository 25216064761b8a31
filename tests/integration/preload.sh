#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# preload.sh - learned library preloads: with preload=auto, what tasks
# dlopen after main (ending normally, by _exit or by a signal) is recorded
# as it is loaded, and the next zygote of the program loads it before it
# parks; a changed library is dropped; one whose loading starts a thread is
# left out with the reason; PSPAWN_PRELOAD_SKIP keeps one out; a list file
# and PSPAWN_PRELOAD_LIBS give the libraries too; a bare name is found
# where the calling program's own DT_RUNPATH says, as without libpspawn.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

dl=$TESTS_BUILDDIR/dlopener
libs=$TESTS_BUILDDIR/.libs
export PSPAWN_CACHE_DIR="$tmp/cache"
cp "$libs/libtiny.so" "$tmp/libtiny.so"
lib=$tmp/libtiny.so

# run NAME WANT PSPAWN_ARGS...: every task's first word is WANT.
run() {
    name=$1 want=$2
    shift 2
    PSPAWN_DEBUG=1 "$PSPAWN_BIN" -l -n 2 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    got=$(sed 's/^ *[0-9]*: //' "$tmp/out" | awk '{print $1}' | sort -u | tr '\n' ' ')
    [ "$got" = "$want " ] && ! grep -q 'exec fallback' "$tmp/err"
    if ! ok $? "$name: tasks say $want (got '$got', status $rc)"; then
        diag_file "$tmp/out" 5
        diag_file "$tmp/err" 5
    fi
}
cache() { cat "$tmp"/cache/preload/dlopener-* 2>/dev/null; }

run "first launch" loaded --preload auto "$dl" "$lib" global
grep -q "^untried 258 0 .* $lib\$" "$tmp"/cache/preload/dlopener-* 2>/dev/null
ok $? "the tasks recorded the library, its flags (RTLD_NOW|RTLD_GLOBAL) and namespace" ||
    cache | sed 's/^/#   /'
run "second launch" preloaded --preload auto "$dl" "$lib" global
grep -q "^ok 258 0 .* $lib\$" "$tmp"/cache/preload/dlopener-*
ok $? "tried once in a child, then kept as ok"
[ "$(sed 's/^ *[0-9]*: //' "$tmp/out" | awk '{print $2}' | sort -u)" = 42 ]
ok $? "the preloaded library's constructor ran (in the zygote) and it works in the task"

touch -d '2001-01-01' "$lib"
run "after the library changed" loaded --preload auto "$dl" "$lib" global
run "once recorded again" preloaded --preload auto "$dl" "$lib" global
[ "$(cache | grep -c " $lib\$")" = 1 ]
ok $? "the changed library's old entry was dropped"

rm -rf "$tmp/cache"
run "tasks that end by _exit" loaded --preload auto "$dl" "$lib" local exit
run "after tasks that ended by _exit" preloaded --preload auto "$dl" "$lib" local
rm -rf "$tmp/cache"
"$PSPAWN_BIN" -n 1 --preload auto "$dl" "$lib" local kill >/dev/null 2>&1
run "after a task killed by SIGKILL" preloaded --preload auto "$dl" "$lib" local

export PSPAWN_PRELOAD_SKIP=libtiny.so
run "PSPAWN_PRELOAD_SKIP" loaded --preload auto "$dl" "$lib" local
unset PSPAWN_PRELOAD_SKIP

rm -rf "$tmp/cache"
run "a library whose constructor starts a thread" loaded --preload auto "$dl" "$libs/libthreadlib.so"
run "the same, next launch" loaded --preload auto "$dl" "$libs/libthreadlib.so"
grep -q "^thread .*libthreadlib.so\$" "$tmp"/cache/preload/dlopener-*
ok $? "it is left out, and the cache says why (thread)" || cache | sed 's/^/#   /'
grep -q 'parked' "$tmp/err"
ok $? "the zygote still parks and serves"

printf '# libraries to preload\n%s global\n' "$lib" >"$tmp/list"
run "preload=FILE" preloaded --preload "$tmp/list" "$dl" "$lib" global
export PSPAWN_PRELOAD_LIBS="$lib"
run "PSPAWN_PRELOAD_LIBS" preloaded "$dl" "$lib"
unset PSPAWN_PRELOAD_LIBS
run "without preloads" loaded "$dl" "$lib"

# A bare name: the program's DT_RUNPATH finds it, with the recorder
# between the program and glibc as without it.
rm -rf "$tmp/cache"
env -u LD_LIBRARY_PATH "$dl" libtiny.so >"$tmp/plain" 2>&1
run "bare name through the program's RUNPATH" loaded --preload auto "$dl" libtiny.so
[ "$(cat "$tmp/plain")" = "loaded 42" ]
ok $? "the same bare name without libpspawn loads too" || diag_file "$tmp/plain"
run "bare name, next launch" preloaded --preload auto "$dl" libtiny.so

"$PSPAWN_BIN" -n 1 --preload relative/list true 2>"$tmp/bad"
[ $? = 2 ] && grep -q 'preload=relative/list: expected off, auto or the absolute path' "$tmp/bad"
ok $? "a bad --preload is a usage error naming it"

tap_done
