#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# older.sh BUILDDIR: the warm Python tests again, on an older CPython than
# this host's: Debian 11's python3.9 and its numpy, taken from Debian's
# archive with numpy and scipy (apt-get download; unpacked, not installed, under
# BUILDDIR/python3.9) and run with PYTHONHOME.  3.8 and 3.9 lack what 3.10
# added (sys.orig_argv, the stable str() of signal handlers), which the
# bootstrap must not need.  Prints TAP: each test's points, their
# descriptions prefixed with the script's name; one skipped point when the
# archive cannot be reached.
build=$(cd "${1:?usage: older.sh BUILDDIR}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
root=$build/python3.9
py=$root/usr/bin/python3.9
tests="python-warm python-state python-resolve python-frames"

fetch() {
    [ -x "$py" ] && [ -d "$root/usr/lib/python3/dist-packages/scipy" ] && return 0
    apt=$build/python3.9.apt
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$root" || return 1
    echo "deb http://deb.debian.org/debian bullseye main" >"$apt/sources.list"
    : >"$apt/status"    # nothing installed: every package is bullseye's
    set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State="$apt" -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt" \
        -o Dir::State::status="$apt/status" \
        -o Debug::NoLocking=1 -o APT::Sandbox::User=root
    apt-get "$@" update >"$apt/log" 2>&1 &&
        (cd "$apt" && apt-get "$@" download python3.9-minimal libpython3.9-minimal \
            libpython3.9-stdlib libffi7 libmpdec3 python3-numpy python3-scipy python3-decorator python3-threadpoolctl >>"$apt/log" 2>&1) ||
        return 1
    for d in "$apt"/*.deb; do
        dpkg -x "$d" "$root" || return 1
    done
    [ -x "$py" ]
}

if ! fetch; then
    echo "ok 1 - warm Python on Debian 11's python3.9 # SKIP Debian's archive cannot be reached"
    echo "1..1"
    exit 0
fi

fanout=$(sed -n 's/^tests_fanout = //p' "$build/Makefile")
n=0
for t in $tests; do
    out=$(env PSPAWN_PROXY="$build/libpspawn/.libs/libpspawn-proxy.so" \
        PSPAWN_BIN="$build/cli/pspawn" PSPAWN_TOPOLOGY="$build/libpspawn/pspawn-topology" \
        PSPAWN_INTERCEPT_LIB="$build/libpspawn/.libs/libpspawn-intercept.so" \
        PSPAWN_INTERCEPT_STANDIN="$build/libpspawn/pspawn-standin" \
        TESTS_BUILDDIR="$build/tests/fixtures" TESTS_SRCDIR="$top/tests/fixtures" \
        top_builddir="$build" TESTS_FANOUT="$fanout" \
        TESTS_PYTHON="$py" PYTHONHOME="$root/usr" LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu" \
        sh "$top/tests/integration/$t.sh" 2>&1)
    echo "$out" | grep -q '^1\.\.[1-9]' || out="$out
not ok - $t.sh ended without its plan"
    echo "$out" | while IFS= read -r line; do
        case $line in
        "ok "* | "not ok "*) printf '%s\n' "$line" | sed -E "s/^(not ok|ok) [0-9]* ?-? ?/\1 - [3.9 $t] /" ;;
        "#"*) printf '%s\n' "$line" ;;
        esac
    done
done | awk '/^(ok|not ok)/ { n++; sub(/^ok -/, "ok " n " -"); sub(/^not ok -/, "not ok " n " -") } { print } END { print "1.." n }'
