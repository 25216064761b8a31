#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cli-errors.sh - a program that cannot be launched makes pspawn print
# "pspawn: PROG: <strerror>" and exit 127 (not found) or 126 (any other
# error), with and without --exec, and no task runs.
#
# E2BIG: no single argument over MAX_ARG_STRLEN can reach pspawn (its own
# exec would fail), but a total size can: a task's exec adds PSPAWN_RANK,
# PSPAWN_SIZE and PSPAWN_LOCAL_RANK and a long program path, so the largest
# argument list with which pspawn itself still starts is too large for its
# task.  That size is found by bisection.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

mkdir "$tmp/bin" "$tmp/dir"
cp "$TESTS_BUILDDIR/task" "$tmp/bin/not-executable"
chmod 644 "$tmp/bin/not-executable"
printf 'this is not a program\n' >"$tmp/bin/garbage"
chmod 755 "$tmp/bin/garbage"
printf '#!/nonexistent/interpreter\n' >"$tmp/bin/no-interpreter"
chmod 755 "$tmp/bin/no-interpreter"

# launch_fails NAME PROG CODE MESSAGE [PSPAWN_OPTION...]
launch_fails() {
    name=$1 prog=$2 code=$3 msg=$4
    shift 4
    "$PSPAWN_BIN" "$@" -n 2 "$prog" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq "$code" ]
    ok $? "$name: exit $code (got $rc)"
    grep -qF "pspawn: $prog: $msg" "$tmp/err"
    if ! ok $? "$name: prints \"pspawn: $prog: $msg\""; then
        diag_file "$tmp/err" 5
    fi
    [ ! -s "$tmp/out" ]
    ok $? "$name: nothing ran"
}

for mode in "" --exec; do
    opt=${mode:+ $mode}
    launch_fails "missing program$opt" "$tmp/bin/missing" 127 "No such file or directory" $mode
    PATH=$tmp/bin:/usr/bin:/bin launch_fails "missing in PATH$opt" no-such-program-$$ 127 \
        "No such file or directory" $mode
    launch_fails "mode 0644$opt" "$tmp/bin/not-executable" 126 "Permission denied" $mode
    PATH=$tmp/bin:/usr/bin:/bin launch_fails "mode 0644 found in PATH$opt" not-executable 126 \
        "Permission denied" $mode
    launch_fails "a directory$opt" "$tmp/dir" 126 "Permission denied" $mode
    launch_fails "not a program$opt" "$tmp/bin/garbage" 126 "Exec format error" $mode
    launch_fails "#! missing interpreter$opt" "$tmp/bin/no-interpreter" 127 \
        "No such file or directory" $mode
done

# ---- E2BIG
longdir=$tmp/$(printf '%0200d' 0 | tr 0 d)
mkdir "$longdir"
cp "$TESTS_BUILDDIR/task" "$longdir/prog"
chunk=$(head -c 60000 /dev/zero | tr '\0' a)

# launch_with_padding BYTES [PSPAWN_OPTION]: pspawn PROG with BYTES more of
# arguments, under a 2 MiB stack limit (so a 512 KiB argument limit);
# prints "ran", "e2big" (pspawn reported it) or "no-pspawn" (pspawn
# itself could not be exec'd).
launch_with_padding() {
    (
        ulimit -s 2048 || exit 99
        rem=$1
        set --
        while [ "$rem" -gt 60000 ]; do
            set -- "$@" "$chunk"
            rem=$((rem - 60000))
        done
        set -- "$@" "$(head -c "$rem" /dev/zero | tr '\0' b)"
        exec "$PSPAWN_BIN" $mode "$longdir/prog" append /dev/null "$@"
    ) >/dev/null 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ]; then
        echo ran
    elif [ $rc -eq 126 ] && grep -qF "pspawn: $longdir/prog: Argument list too long" "$tmp/err"; then
        echo e2big
    else
        echo no-pspawn
    fi
}

for mode in "" --exec; do
    opt=${mode:+ $mode}
    lo=1000 hi=1000000 found=""
    if [ "$(launch_with_padding $lo)" != ran ]; then
        diag "pspawn$opt does not run a task with 1000 bytes of arguments:"
        diag_file "$tmp/err" 5
        hi=$lo
    elif [ "$(launch_with_padding $hi)" != no-pspawn ]; then
        diag "1 MB of arguments under a 2 MiB stack limit did not stop pspawn$opt itself"
        hi=$lo
    fi
    while [ $((hi - lo)) -gt 16 ]; do
        mid=$(((lo + hi) / 2))
        case $(launch_with_padding $mid) in
        ran) lo=$mid ;;
        e2big) found=$mid; break ;;
        *) hi=$mid ;;
        esac
    done
    [ -n "$found" ]
    if ok $? "arguments too large for the task, not for pspawn$opt: exit 126, \"Argument list too long\""; then
        diag "at $found bytes of arguments"
    else
        diag "pspawn ran its task up to $lo bytes and could not start at $hi"
    fi
done

# Usage errors are not launch errors.
"$PSPAWN_BIN" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 126 ] && [ $rc -ne 127 ] && [ -s "$tmp/err" ]
ok $? "no program: a usage error on stderr (exit $rc)"
"$PSPAWN_BIN" --no-such-option true >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ -s "$tmp/err" ]
ok $? "unknown option: an error on stderr (exit $rc)"

tap_done
