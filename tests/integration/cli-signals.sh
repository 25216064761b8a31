#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cli-signals.sh - SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to
# pspawn reach every task exactly once.
#
# Each task (tests/fixtures/task signals LOG) records every one of those signals it
# gets in LOG as "RANK SIGNAME", and exits 0 half a second after the first
# (time for a duplicate to show).  The signal goes to pspawn's pid only;
# the tasks are in a process group of their own, so whatever they get,
# pspawn forwarded.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

task=$TESTS_BUILDDIR/task
ntasks=3

ready_count() {
    [ "$(grep -c ' ready$' "$1" 2>/dev/null)" -ge "$ntasks" ]
}

# forwarded SIG [PSPAWN_OPTION]
forwarded() {
    sig=$1 mode=${2:-}
    name="SIG$sig${mode:+ ($mode)}"
    log=$tmp/log.$sig$mode
    : >"$log"
    # An asynchronous command of a non-interactive shell starts with
    # SIGINT ignored, one under nohup with SIGHUP ignored, and pspawn
    # keeps what it was started with ignored ignored: give it every
    # default, as from a terminal.
    env --default-signal "$PSPAWN_BIN" $mode -n $ntasks "$task" signals "$log" \
        >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    if ! wait_until 10 ready_count "$log"; then
        ok 1 "$name: all $ntasks tasks started"
        diag_file "$log"
        kill -KILL $pid 2>/dev/null
        wait $pid
        return
    fi
    kill -"$sig" $pid
    # Never hang: one that outlives 20 s fails (killed: 137).
    for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    kill -KILL $pid 2>/dev/null
    wait $pid
    rc=$?
    pkill -KILL -f "signals $log\$" 2>/dev/null
    [ $rc -eq 0 ]
    if ! ok $? "$name: pspawn exits 0 once the tasks have handled it (got $rc)"; then
        diag_file "$tmp/err" 5
    fi
    r=0 want="" got=""
    while [ $r -lt $ntasks ]; do
        want="$want$r $sig
"
        r=$((r + 1))
    done
    printf '%s' "$want" >"$tmp/want"
    grep -v ' ready$' "$log" | sort >"$tmp/got"
    equal "$name: every task got it exactly once" "$tmp/want" "$tmp/got"
}

if ! env --default-signal true 2>/dev/null; then
    bail "env --default-signal is missing (coreutils >= 8.31)"
fi

for sig in INT TERM HUP USR1 USR2; do
    forwarded $sig
done
forwarded USR1 --exec
forwarded TERM --exec

tap_done
