#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# child-flags.sh: the code a task runs before its main() or execve()
# (libpspawn/child/child.c) has no stack protector whatever flags a
# distribution adds after ours (dpkg-buildflags gives
# -fstack-protector-strong, which on the command line comes after
# Makefile.am's -fno-stack-protector and would win): compiled here with
# -fstack-protector-all last, it must call no __stack_chk_fail.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

b=${top_builddir:?top_builddir is not set}
src=$TESTS_SRCDIR/../..
cc=${CC:-cc}
for flags in "-O2 -fstack-protector-all" "-O0 -fstack-protector-strong"; do
    # shellcheck disable=SC2086
    $cc -std=c11 -D_GNU_SOURCE -I"$b" -I"$src/libpspawn/wire" -I"$src/libpspawn/child" \
        -c "$src/libpspawn/child/child.c" -o "$tmp/child.o" $flags 2>"$tmp/cc.err"
    rc=$?
    [ $rc = 0 ] && ! nm "$tmp/child.o" | grep -q '__stack_chk'
    ok $? "child.c built with $flags last: no stack protector ($cc rc $rc, $(nm "$tmp/child.o" 2>/dev/null | grep -c __stack_chk) __stack_chk references)" ||
        diag_file "$tmp/cc.err" 4
done
tap_done
