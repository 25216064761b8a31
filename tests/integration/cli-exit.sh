#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cli-exit.sh - pspawn exits 0 when every task exits 0, otherwise with the
# highest of the tasks' exit codes and 128+signal for a task killed by a
# signal; the same with --exec.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

task=$TESTS_BUILDDIR/task

# exits NAME WANT PSPAWN_ARGS...
exits() {
    name=$1 want=$2
    shift 2
    "$PSPAWN_BIN" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq "$want" ]
    if ! ok $? "$name: exit $want (got $rc)"; then
        diag_file "$tmp/err" 5
    fi
}

for mode in "" --exec; do
    m=${mode:+ ($mode)}
    exits "4 tasks exit 0$m" 0 $mode -n 4 sh -c 'exit 0'
    exits "one task (rank 2) exits 3$m" 3 $mode -n 4 sh -c '[ "$PSPAWN_RANK" = 2 ] && exit 3; exit 0'
    exits "tasks exit 3 and 5$m" 5 $mode -n 4 \
        sh -c 'case $PSPAWN_RANK in 1) exit 5;; 3) exit 3;; esac; exit 0'
    exits "tasks exit 5 then 3$m" 5 $mode -n 4 \
        sh -c 'case $PSPAWN_RANK in 0) exit 5;; 3) exit 3;; esac; exit 0'
    exits "a task killed by SIGSEGV$m" 139 $mode -n 3 \
        sh -c '[ "$PSPAWN_RANK" = 1 ] && kill -SEGV $$; exit 0'
    exits "exit 3 and SIGSEGV: the highest, 139$m" 139 $mode -n 3 \
        sh -c 'case $PSPAWN_RANK in 0) exit 3;; 2) kill -SEGV $$;; esac; exit 0'
    exits "exit 200 and SIGTERM (143): 200$m" 200 $mode -n 2 \
        sh -c 'case $PSPAWN_RANK in 0) exit 200;; 1) kill -TERM $$;; esac'
    exits "every task killed by SIGKILL$m" 137 $mode -n 2 sh -c 'kill -KILL $$'
    exits "the test program exits 7$m" 7 $mode -n 3 "$task" exit 7
    exits "one task, exit 0$m" 0 $mode "$task"
done

tap_done
