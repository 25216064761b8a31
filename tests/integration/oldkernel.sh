#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# oldkernel.sh - the front doors on older kernels, without a guest: each
# runs under tests/fixtures/oldkernel's seccomp profile of a kernel version
# (ENOSYS for a missing system call, EINVAL/E2BIG for an unknown flag,
# ENOPROTOOPT for SO_PEERPIDFD, ENOTTY for PIDFD_GET_INFO), and must still
# fork its tasks, with their own exit codes and output, or exec them and
# say which kernel feature it lacked.  Every run has a timeout.
. "$TESTS_SRCDIR/taplib.sh"

oldk=$TESTS_BUILDDIR/oldkernel
task=$TESTS_BUILDDIR/task
pspawn=$PSPAWN_BIN
shim=$top_builddir/spank/pspawn-shim
[ -x "$oldk" ] && [ -x "$task" ] || bail "no $oldk or $task"
if ! "$oldk" --probe; then
    skip "no seccomp filter here (prctl or seccomp refused)" "older kernels under seccomp profiles"
    tap_done
fi
uid=$(id -u)
export PSPAWN_DEBUG=1
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_AFTER LD_PRELOAD

# 4.18: RHEL 8; 5.3: pidfds but no waitid(P_PIDFD); 5.10: close_range
# without CLOSE_RANGE_CLOEXEC; 5.14: RHEL 9; 6.1: Debian 12; 6.8: Ubuntu
# 24.04, SO_PEERPIDFD; 6.13: PIDFD_GET_INFO without PIDFD_INFO_EXIT.
profiles=${OLDKERNEL_PROFILES:-"4.18 5.3 5.10 5.14 6.1 6.8 6.13"}

# What the profile answers (oldkernel --check), as that kernel would.
expected() {
    case $1 in
    4.18) echo "pidfd_open=ENOSYS waitid_pidfd=EINVAL close_range=ENOSYS close_range_cloexec=ENOSYS clone3_8_88=ENOSYS/ENOSYS pidfd_getfd=ENOSYS so_peerpidfd=ENOPROTOOPT pidfd_get_info=ENOSYS" ;;
    5.3) echo "pidfd_open=ok waitid_pidfd=EINVAL close_range=ENOSYS close_range_cloexec=ENOSYS clone3_8_88=EINVAL/E2BIG pidfd_getfd=ENOSYS so_peerpidfd=ENOPROTOOPT pidfd_get_info=ENOTTY" ;;
    5.10) echo "pidfd_open=ok waitid_pidfd=ECHILD close_range=ok close_range_cloexec=EINVAL clone3_8_88=EINVAL/ok pidfd_getfd=EBADF so_peerpidfd=ENOPROTOOPT pidfd_get_info=ENOTTY" ;;
    5.14 | 6.1) echo "pidfd_open=ok waitid_pidfd=ECHILD close_range=ok close_range_cloexec=ok clone3_8_88=EINVAL/ok pidfd_getfd=EBADF so_peerpidfd=ENOPROTOOPT pidfd_get_info=ENOTTY" ;;
    6.8) echo "pidfd_open=ok waitid_pidfd=ECHILD close_range=ok close_range_cloexec=ok clone3_8_88=EINVAL/ok pidfd_getfd=EBADF so_peerpidfd=ok pidfd_get_info=ENOTTY" ;;
    6.13) echo "pidfd_open=ok waitid_pidfd=ECHILD close_range=ok close_range_cloexec=ok clone3_8_88=EINVAL/ok pidfd_getfd=EBADF so_peerpidfd=ok pidfd_get_info=ESRCH" ;;
    esac
}

# What pspawn_kernel_gaps (libpspawn/wire/kernel.c) finds missing.
expected_gaps() {
    case $1 in
    4.18) echo "no pidfd_open,no close_range,no clone3 CLONE_INTO_CGROUP" ;;
    5.3) echo "no waitid P_PIDFD,no PIDFD_INFO_EXIT,no close_range,no clone3 CLONE_INTO_CGROUP" ;;
    *) echo "no PIDFD_INFO_EXIT" ;;
    esac
}

# forked_clean FILE: the launch went through a zygote, nothing exec'd.
forked_clean() {
    grep -q 'via zygote' "$1" && ! grep -q 'exec fallback\|exec instead\|via exec' "$1"
}

py=${TESTS_PYTHON:-/usr/bin/python3}
has_py=0
[ -x "$py" ] && $py -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null && has_py=1

for v in $profiles; do
    run() { timeout 60 "$oldk" "$v" "$@"; }

    # 1. The profile answers as that kernel.
    got=$("$oldk" --check "$v")
    [ "$got" = "$(expected "$v")" ]
    ok $? "$v: the profile answers as Linux $v" || { diag "got:      $got"; diag "expected: $(expected "$v")"; }

    # 1b. What the Slurm plugin tells slurmd's log this kernel lacks.
    gaps=$(run "$TESTS_BUILDDIR/kernel-gaps" | sed 's/ (Linux.*//' | paste -sd, -)
    [ "$gaps" = "$(expected_gaps "$v")" ]
    ok $? "$v: the kernel's gaps said as slurmd starts: ${gaps:-none}" || diag "expected: $(expected_gaps "$v")"

    # 2. pspawn: plain launch, each task's output and the highest exit code.
    run "$pspawn" -v -n 4 "$task" print a >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(grep -c '^task version=1 rank=[0-3] size=4 .*args=a$' "$tmp/out")
    [ $rc = 0 ] && [ "$n" = 4 ] && forked_clean "$tmp/err"
    ok $? "$v: pspawn -n 4: every task forked by the zygote and printed ($n of 4, rc $rc)" ||
        diag_stderr "$tmp/err"
    run "$pspawn" -v -n 3 "$task" exit 7 >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc = 7 ] && forked_clean "$tmp/err"
    ok $? "$v: pspawn -n 3: the tasks' exit code 7 comes back (rc $rc), forked" || diag_stderr "$tmp/err"

    # 3. Fan-out: sub-zygotes on a fake 2 nodes x 2 cores.
    if [ "$TESTS_FANOUT" = yes ]; then
        HWLOC_SYNTHETIC="node:2 core:2 pu:1" run "$pspawn" -v --fanout core -n 8 "$task" print \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        n=$(grep -c '^task version=1 rank=' "$tmp/out")
        subs=$(grep -c 'sub-zygote [1-3]: pid [0-9]*,.*(serving)' "$tmp/err")
        [ $rc = 0 ] && [ "$n" = 8 ] && [ "$subs" = 3 ] && forked_clean "$tmp/err"
        ok $? "$v: --fanout core: 8 tasks through the root and 3 sub-zygotes ($n printed, $subs serving, rc $rc)" ||
            diag_stderr "$tmp/err"
    else
        skip "built without hwloc" "$v: --fanout core"
    fi

    # 4. Interception: a launcher's four starts, each forked by a zygote.
    run "$pspawn" --intercept --after 1 --idle 2 -- "$TESTS_BUILDDIR/intercept-launcher" fork 4 \
        "$TESTS_BUILDDIR/intercept-task" exit 3 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(grep -c '^launch [0-3]: exit 3$' "$tmp/out")
    f=$(grep -c 'forked by the zygote' "$tmp/err")
    [ $rc = 0 ] && [ "$n" = 4 ] && [ "$f" = 4 ]
    ok $? "$v: --intercept: 4 starts forked by a zygote, each exit 3 seen ($f forked, $n seen, rc $rc)" ||
        diag_stderr "$tmp/err"

    # 5. Stand-ins (srun --pspawn without Slurm): two shims, one zygote.
    if [ -x "$shim" ]; then
        for i in 0 1; do
            ( PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_KEY="$uid.$$.$v" PSPAWN_SHIM_LOCAL_TASKS=2 \
              PSPAWN_SHIM_DEBUG=1 run "$shim" "$task" exit $((i + 3)) 2>"$tmp/shim.$i"
              echo $? >"$tmp/shimrc.$i" ) &
        done
        wait
        r0=$(cat "$tmp/shimrc.0") r1=$(cat "$tmp/shimrc.1")
        f=$(cat "$tmp/shim.0" "$tmp/shim.1" | grep -c 'forked by the zygote')
        [ "$r0" = 3 ] && [ "$r1" = 4 ] && [ "$f" = 2 ]
        ok $? "$v: two stand-ins: each task forked by the zygote, each shim exits with its code ($r0 $r1, $f forked)" ||
            diag_stderr "$tmp/shim.0"
    else
        skip "no pspawn-shim (built without Slurm's spank.h)" "$v: stand-ins"
    fi

    # 6. The warm Python zygote.  (One write per line: a warm task's print
    #    is not one write as an exec'd one's, and two tasks' lines on one
    #    file could mix.)
    if [ $has_py = 1 ]; then
        run "$pspawn" -v -n 2 "$py" -c 'import os, sys; os.write(1, b"py %s\n" % os.environb[b"PSPAWN_RANK"]); sys.exit(5)' \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        n=$(grep -c '^py [01]$' "$tmp/out")
        [ $rc = 5 ] && [ "$n" = 2 ] && grep -q 'parked inside Python' "$tmp/err" && forked_clean "$tmp/err"
        ok $? "$v: warm Python: 2 tasks forked inside Python, exit 5 ($n printed, rc $rc)" ||
            diag_stderr "$tmp/err"
    else
        skip "no CPython 3.8 or later at $py" "$v: warm Python"
    fi
done

# 7. The session (asynchronous API, the session reaps): by pid without
#    pidfd_open (4.18), by pid with a pidfd that waitid cannot take (5.3).
for v in 4.18 5.3; do
    case " $profiles " in *" $v "*) ;; *) continue ;; esac
    timeout 120 "$oldk" "$v" "$top_builddir/tests/integration/session" >"$tmp/session" 2>&1
    rc=$?
    bad=$(grep -c '^not ok' "$tmp/session")
    good=$(grep -c '^ok' "$tmp/session")
    [ $rc = 0 ] && [ "$bad" = 0 ] && [ "$good" -gt 20 ]
    ok $? "$v: the session driver: every case passes ($good ok, $bad not ok, rc $rc)" ||
        grep -A3 '^not ok' "$tmp/session" | head -20 | sed 's/^/#   /'
done

# 8. Before close_range (5.9) the task's fds are closed as /proc lists
#    them: none left above the task's own lower RLIMIT_NOFILE.
case " $profiles " in *" 4.18 "*)
    # (a sub-zygote's task: fan-out's sockets sit at high fds)
    PSPAWN_OPTIONS=fanout=core,subzygote=fork timeout 120 "$oldk" 4.18 \
        "$top_builddir/tests/integration/parity-api-attrs" >"$tmp/attrs" 2>&1
    rc=$?
    bad=$(grep -c '^not ok' "$tmp/attrs")
    fd=$(grep -c '^ok .*all attributes: zygote: fd as after exec' "$tmp/attrs")
    [ $rc = 0 ] && [ "$bad" = 0 ] && [ "$fd" = 1 ]
    ok $? "4.18: parity-api-attrs, subzygote=fork (RLIMIT_NOFILE 256 for the task): fds as after exec, every case passes ($bad not ok, rc $rc)" ||
        grep -A3 '^not ok' "$tmp/attrs" | head -20 | sed 's/^/#   /'
esac

# 9. A stand-in whose zygote is killed while its task runs gets its
#    task's exit status from the zygote's keeper, with or without pidfds
#    (keeper.sh: several stand-ins, a job's zygote).
if [ -x "$shim" ]; then
    for v in 4.18 6.13; do
        case " $profiles " in *" $v "*) ;; *) continue ;; esac
        key="$uid.$$.lost.$v"
        ( PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_KEY="$key" PSPAWN_SHIM_LOCAL_TASKS=1 \
          PSPAWN_SHIM_DEBUG=1 timeout 60 "$oldk" "$v" "$shim" "$task" hold 0 1 6 2>"$tmp/lost"
          echo $? >"$tmp/lostrc" ) &
        for _ in $(seq 50); do
            grep -q 'forked by the zygote' "$tmp/lost" 2>/dev/null && break
            sleep 0.1
        done
        zpid=$(sed -n 's/.*: zygote \([0-9][0-9]*\) parked$/\1/p' "$tmp/lost" | head -n 1)
        [ -n "$zpid" ] && kill -KILL "$zpid" 2>/dev/null
        wait
        rc=$(cat "$tmp/lostrc")
        [ -n "$zpid" ] && [ "$rc" = 6 ] && grep -q "from the zygote's keeper" "$tmp/lost"
        ok $? "$v: zygote killed under a running stand-in task: its code (6) told by the zygote's keeper (rc $rc)" ||
            diag_file "$tmp/lost"
    done
fi

tap_done
