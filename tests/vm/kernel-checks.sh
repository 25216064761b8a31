#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/kernel-checks.sh BUILD_DIR SRC_DIR - runs in a guest of
# tests/vm/kernel-vm.sh (as its /init's child, root, on Debian's packaged
# kernel of one release): the core subset of the integration tests against
# the real kernel, not a seccomp profile of it.  Prints one TAP point per
# test ("Linux 5.10.x: standin.sh: 53 passed, 0 skipped"), the failing
# lines of a test that failed, and the plan.
#
# A test passes where every point passed or skipped with its reason: on a
# kernel that lacks a feature each front door must fork where it still can
# and exec where it cannot, and say why, never fail or hang.
build=$1 src=$2
kernel=$(uname -r)
release=$(uname -r | cut -d- -f1 | cut -d+ -f1)
# ver_lt A B: version A is before B (major.minor).
ver_lt() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ] && [ "$1" != "$2" ]; }

export PSPAWN_PROXY=$build/libpspawn/.libs/libpspawn-proxy.so PSPAWN_BIN=$build/cli/pspawn
export PSPAWN_TOPOLOGY=$build/libpspawn/pspawn-topology
export PSPAWN_INTERCEPT_LIB=$build/libpspawn/.libs/libpspawn-intercept.so
export PSPAWN_INTERCEPT_STANDIN=$build/libpspawn/pspawn-standin
export TESTS_BUILDDIR=$build/tests/fixtures TESTS_SRCDIR=$src/tests/fixtures top_builddir=$build
export TESTS_FANOUT=${TESTS_FANOUT:-yes}
. "$src/tests/fixtures/taplib.sh"
cd "$build" || exit 1

# What the kernel lacks, as libpspawn probes it (the Slurm plugin logs
# the same lines as slurmd starts): each gap must be named exactly where
# this kernel is older than the release that brought the feature.
gaps=$("$build/tests/fixtures/kernel-gaps")
diag "Linux $kernel lacks: $(echo "$gaps" | sed -E 's/^no ([^:]*):.*/\1;/' | xargs)"
for feature in "pidfd_open (Linux 5.3)" "waitid P_PIDFD (Linux 5.4)" "close_range (Linux 5.9)" \
               "clone3 CLONE_INTO_CGROUP (Linux 5.7)" "PIDFD_INFO_EXIT (Linux 6.15)"; do
    since=${feature##*Linux }; since=${since%)}
    said=no; echo "$gaps" | grep -qF "no $feature" && said=yes
    want=no; ver_lt "$release" "$since" && want=yes
    [ $said = $want ]
    ok $? "Linux $release: the kernel probe says 'no $feature' exactly when the kernel is older ($said)"
done

# The core subset: parity, fan-out, zygote kill, sessions, stand-ins, warm
# Python, interception.
tests=(parity.sh parity-api-calls parity-api-attrs parity-api-state fanout parity-fanout.sh
       zygote-kill session standin.sh python-warm.sh intercept.sh)
for t in ${KERNEL_VM_TESTS:-${tests[@]}}; do
    start=$(date +%s)
    case $t in
        *.sh) timeout -k 10 "${KERNEL_VM_TEST_TIMEOUT:-1200}" bash "$src/tests/integration/$t" >"$tmp/$t.out" 2>&1 ;;
        *) timeout -k 10 "${KERNEL_VM_TEST_TIMEOUT:-1200}" "$build/tests/integration/$t" >"$tmp/$t.out" 2>&1 ;;
    esac
    rc=$?
    passed=$(grep '^ok ' "$tmp/$t.out" | grep -vc '# SKIP')
    skipped=$(grep '^ok ' "$tmp/$t.out" | grep -c '# SKIP')
    failed=$(grep -cE '^not ok |^Bail out' "$tmp/$t.out")
    planned=$(grep -m1 -oE '^1\.\.[0-9]+' "$tmp/$t.out" | cut -c4-)
    verdict=0
    [ "$failed" = 0 ] && [ $rc = 0 ] && [ -n "$planned" ] && [ $((passed + skipped)) = "$planned" ] || verdict=1
    why=""
    [ $rc = 124 ] && why=", timed out"
    ok $verdict "Linux $release: $t: $passed passed, $skipped skipped, $failed failed of ${planned:-no plan} (exit $rc$why, $(( $(date +%s) - start )) s)"
    if [ $verdict != 0 ]; then
        grep -E '^not ok |^Bail out' "$tmp/$t.out" | head -n 20 | sed 's/^/#   | /'
        grep -A6 -m3 '^not ok ' "$tmp/$t.out" | grep '^#' | head -n 30 | sed 's/^/#   | /'
        [ "$failed" = 0 ] && tail -n 15 "$tmp/$t.out" | sed 's/^/#   | /'
    fi
    # What was skipped, and why (a feature this kernel lacks, say).
    grep '# SKIP' "$tmp/$t.out" | sed -E 's/^ok [0-9]+ - /#   skipped: /' | sort | uniq -c | head -n 5 |
        sed -E 's/^ *([0-9]+) #/# (x\1)/'
done
echo "1..$tap_n"
