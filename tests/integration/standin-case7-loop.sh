#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# standin-case7-loop.sh [N [DELAY [LATE]]]: standin.sh's case 7 alone, N
# times in a row (default 500; DELAY default 0: the zygote killed as soon
# as it parked; LATE: a rank that starts after the others), stopping at
# the first failure.  Run it as make check runs the tests:
#   make check TESTS=tests/integration/standin-case7-loop.sh   (N=500, delay 0)
# or by hand, from a build directory, with check's environment:
#   TESTS_SRCDIR=$srcdir/tests/fixtures TESTS_BUILDDIR=$PWD/tests/fixtures top_builddir=$PWD \
#   PSPAWN_BIN=$PWD/cli/pspawn PSPAWN_PROXY=$PWD/libpspawn/.libs/libpspawn-proxy.so \
#   PSPAWN_TOPOLOGY=$PWD/libpspawn/pspawn-topology sh $srcdir/tests/integration/standin-case7-loop.sh 500
. "$TESTS_SRCDIR/taplib.sh"
. "$TESTS_SRCDIR/../integration/standin-case7.sh"

runs=${1:-${STANDIN_LOOP_RUNS:-500}} delay=${2:-0} late=${3:-}
shim=$top_builddir/spank/pspawn-shim
task=$TESTS_BUILDDIR/task
[ -x "$shim" ] || bail "no $shim"
uid=$(id -u)
export PSPAWN_SHIM_TOKEN="tok$$" PSPAWN_SHIM_DEBUG=1

# The runs print nothing but a failure, then one line.
t0=$(date +%s)
i=0
while [ $i -lt "$runs" ]; do
    i=$((i + 1))
    out=$(tap_n=0 tap_failed=0; kill_batch "$delay" $late; echo "rc=$?")
    case $out in
        *"rc=0") ;;
        *) printf '%s\n' "$out" | sed 's/^/# /'; break ;;
    esac
done
status=1
[ "$i" = "$runs" ] && case $out in *"rc=0") status=0 ;; esac
ok $status "case 7 (delay $delay${late:+, rank $late late}): $i of $runs runs in a row, each without a hang or a lost or twice-run task ($(($(date +%s) - t0)) s)"
tap_done
