#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cli-timeout.sh - --timeout S: after S seconds the tasks get SIGTERM (then
# SIGKILL 5 s later), pspawn says so and exits 124, and no task is left.
# Tasks done in time are not affected.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
within() { awk -v t="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(t >= lo && t < hi) }'; }

# No task of PIDFILE may still be alive (a zombie no one reaps is dead).
none_left() {
    for p in $(cat "$1"); do
        state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/"$p"/status 2>/dev/null)
        if [ -n "$state" ] && [ "$state" != Z ]; then
            diag "task $p still there (state $state)"
            return 1
        fi
    done
    return 0
}

cleanup_tasks() {
    for p in $(cat "$1"); do kill -KILL "$p" 2>/dev/null; done
}

# times_out NAME MIN MAX PSPAWN_ARGS...
times_out() {
    name=$1 min=$2 max=$3
    shift 3
    : >"$tmp/pids"
    t0=$(now)
    "$PSPAWN_BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    t=$(elapsed "$t0" "$(now)")
    [ $rc -eq 124 ]
    if ! ok $? "$name: exit 124 (got $rc)"; then diag_file "$tmp/err" 5; fi
    within "$t" "$min" "$max"
    ok $? "$name: took ${t}s (between $min and $max)"
    [ -s "$tmp/err" ]
    ok $? "$name: says so on stderr"
    [ "$(wc -w <"$tmp/pids")" -eq 2 ]
    ok $? "$name: both tasks had started"
    none_left "$tmp/pids"
    ok $? "$name: no task left"
    cleanup_tasks "$tmp/pids"
}

for mode in "" --exec; do
    m=${mode:+ ($mode)}
    times_out "2 sleeping tasks, --timeout 1$m" 0.9 4 $mode -n 2 --timeout 1 \
        sh -c 'echo $$ >>"$0"; exec sleep 30' "$tmp/pids"
done

# A task that ignores SIGTERM is killed 5 s later.
times_out "tasks ignoring SIGTERM, --timeout 1" 5.9 9 -n 2 --timeout 1 \
    sh -c 'trap "" TERM; echo $$ >>"$0"; exec sleep 30' "$tmp/pids"

# Done in time: no effect.
t0=$(now)
"$PSPAWN_BIN" -n 2 --timeout 5 sh -c 'exit 0' >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
t=$(elapsed "$t0" "$(now)")
[ $rc -eq 0 ] && within "$t" 0 3
ok $? "tasks done before the timeout: exit 0 at once (exit $rc, ${t}s)"
"$PSPAWN_BIN" -n 2 --timeout 5 sh -c 'exit 3' >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
[ $rc -eq 3 ]
ok $? "tasks done before the timeout keep their exit code (exit $rc)"

tap_done
