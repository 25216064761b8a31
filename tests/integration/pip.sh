#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pip.sh - Process-in-Process (pspawn --pip, mode=pip): each task a process
# of its own (pid, fd table, signal handlers, exit status) in its root's
# address space, with its own copy of the program's globals; another
# task's variable found with pspawn_pip_get_addr; a crash kills only its
# task; destructors, atexit and stdio at exit as after an exec; more tasks
# than the loader's namespaces are exec'd; programs a root cannot load
# are refused, saying why, and still run.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

task=$TESTS_BUILDDIR/pip-task
pip() { "$PSPAWN_BIN" --pip "$@"; }

# Own globals: each task's counter is 100 + 1, at an address of its own;
# its own pid and environment (PSPAWN_RANK), a rank from its root.
pip -n 4 "$task" info >"$tmp/info" 2>"$tmp/info.err"
rc=$?
n=$(grep -c '^rank [0-3] pid [0-9]* env_rank [0-3] counter 101 at ' "$tmp/info")
pids=$(awk '/^rank/ {print $4}' "$tmp/info" | sort -u | wc -l)
addrs=$(awk '/^rank/ {print $10}' "$tmp/info" | sort -u | wc -l)
ranks=$(awk '/^rank/ {print $2}' "$tmp/info" | sort -u | tr '\n' ' ')
[ $rc = 0 ] && [ "$n" = 4 ] && [ "$pids" = 4 ] && [ "$addrs" = 4 ] && [ "$ranks" = "0 1 2 3 " ]
ok $? "4 PiP tasks: own pids, own globals (counter 101 each, 4 addresses), ranks 0-3 (rc $rc)" ||
    { diag_file "$tmp/info"; diag_file "$tmp/info.err" 5; }
! grep -q 'not PiP tasks' "$tmp/info.err"
ok $? "pspawn --pip says nothing when the tasks are PiP tasks" || diag_file "$tmp/info.err" 5

# One address space, own fd tables and signal handlers; rank 0 writes into
# rank 1's variable, which rank 1 sees.
pip -n 3 "$task" share >"$tmp/share" 2>"$tmp/share.err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^rank [12] .* vm shared files own sighand own missing ENOENT$' "$tmp/share")" = 2 ]
ok $? "ranks 1 and 2 share rank 0's address space (kcmp), not its fd table nor its signal handlers" ||
    { diag_file "$tmp/share"; diag_file "$tmp/share.err" 5; }
grep -q '^rank 1 mailbox 42 ' "$tmp/share"
ok $? "pspawn_pip_get_addr: rank 0 wrote 42 into rank 1's mailbox, rank 1 read it; an unknown symbol is ENOENT" ||
    diag_file "$tmp/share"

# Exit status per task: the highest, as from processes.
pip -n 3 "$task" exit 3 >"$tmp/exit" 2>&1
rc=$?
[ $rc = 5 ]
ok $? "exit codes pass through: tasks exit 3, 4 and 5, pspawn exits 5 (got $rc)" || diag_file "$tmp/exit"

# A crash kills its task only.
pip -n 3 "$task" crash >"$tmp/crash" 2>&1
rc=$?
[ $rc = 139 ] && [ "$(grep -c 'survived$' "$tmp/crash")" = 2 ]
ok $? "rank 1 dies of SIGSEGV: pspawn reports it (139, got $rc), the other two tasks run on" ||
    diag_file "$tmp/crash"

# exit(): the task's atexit handlers, then its destructors, its stdio
# flushed.
pip -n 2 "$task" finish >"$tmp/finish" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^rank [01] unflushed atexit destructor$' "$tmp/finish")" = 2 ]
ok $? "at exit: atexit handlers, then destructors, and unflushed stdio written, in each task" ||
    diag_file "$tmp/finish"

# More tasks than namespaces: 15 loaded, the rest exec'd, none lost.
PSPAWN_DEBUG=1 pip -n 17 "$task" info >"$tmp/many" 2>"$tmp/many.err"
rc=$?
loaded=$(grep -c '^rank [0-9]* .* counter 101 ' "$tmp/many")
execd=$(grep -c '^rank -1 .* counter 101 ' "$tmp/many")
[ $rc = 0 ] && [ "$loaded" = 15 ] && [ "$execd" = 2 ] &&
    [ "$(grep -c "no more namespaces available for dlmopen.*exec'd instead" "$tmp/many.err")" = 2 ]
ok $? "17 tasks: 15 loaded into namespaces, 2 exec'd saying why (no namespace left), all ran (rc $rc)" ||
    { diag_file "$tmp/many" 20; diag_file "$tmp/many.err" 8; }

# Programs a root cannot load: refused, saying why; their tasks are forked
# from the zygote (or exec'd) and run all the same.
refused() {
    name=$1 prog=$2 why=$3
    pip -n 2 "$prog" info >"$tmp/r.out" 2>"$tmp/r.err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c ' counter 101 ' "$tmp/r.out")" = 2 ] &&
        grep -q "not PiP tasks: .*$why" "$tmp/r.err"
    ok $? "$name: refused ($why), the 2 tasks run (rc $rc)" ||
        { diag_file "$tmp/r.err" 5; diag_file "$tmp/r.out" 4; }
}
refused "a fixed-address executable" "$TESTS_BUILDDIR/pip-task-nopie" "not a position-independent"
refused "a program with thread-local variables" "$TESTS_BUILDDIR/pip-task-tls" "thread-local"
refused "a program whose RUNPATH uses \$ORIGIN" "$TESTS_BUILDDIR/pip-task-origin" 'ORIGIN'
"$PSPAWN_BIN" --pip -n 2 "$TESTS_BUILDDIR/task" print >"$tmp/t.out" 2>"$tmp/t.err"
rc=$?
[ $rc = 0 ] && grep -q 'not PiP tasks: its main is not exported' "$tmp/t.err"
ok $? "a program that does not export main: refused, saying so, and run (rc $rc)" ||
    diag_file "$tmp/t.err" 5
"$PSPAWN_BIN" --pip -n 2 "$TESTS_BUILDDIR/task-static" print >"$tmp/s.out" 2>"$tmp/s.err"
rc=$?
[ $rc = 0 ] && grep -q 'not PiP tasks: .*static' "$tmp/s.err"
ok $? "a static program: exec'd, saying it is static (rc $rc)" || diag_file "$tmp/s.err" 5

# mode=pip wins over a fan-out (one root makes every task).
"$PSPAWN_BIN" --pip --fanout core -v -n 2 "$task" info >"$tmp/o.out" 2>"$tmp/o.err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^rank [01] .* counter 101 ' "$tmp/o.out")" = 2 ] &&
    grep -q 'via PiP' "$tmp/o.err"
ok $? "--pip --fanout core: mode=pip wins, the 2 tasks are PiP tasks of one root (rc $rc)" ||
    { diag_file "$tmp/o.out" 3; diag_file "$tmp/o.err" 5; }

tap_done
