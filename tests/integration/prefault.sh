#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# prefault.sh - a task forked from a zygote finds the zygote's small text
# mappings (at most 64 KB, r-x, of a file) already mapped at main(), as an
# exec'd task finds those its loader ran: libpspawn maps them in each task
# with one madvise(MADV_POPULATE_READ) each instead of a fault each.
# PSPAWN_PREFAULT=0 turns that off, and the same task then finds the text of
# a library it has not run yet unmapped (the kernel does not copy page
# tables of file mappings at fork).
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

textmap=$TESTS_BUILDDIR/textmap

# lines FILE: the distinct "tiny_text ..." lines of FILE, one per line.
lines() { grep '^tiny_text ' "$1" | sort -u; }

"$PSPAWN_BIN" -n 2 "$textmap" >"$tmp/on" 2>"$tmp/err"
rc=$?
l=$(lines "$tmp/on")
n=$(grep -c '^tiny_text ' "$tmp/on")
case $l in
"tiny_text pages="*) p=${l#tiny_text pages=}; p=${p%% *} ;;
*) p=x ;;
esac
[ $rc -eq 0 ] && [ "$n" = 2 ] && [ "$l" = "tiny_text pages=$p present=$p" ] && [ "$p" -ge 1 ]
ok $? "forked tasks: libtiny's text is mapped at main ($l)" || diag_file "$tmp/err" 5

PSPAWN_PREFAULT=0 "$PSPAWN_BIN" -n 2 "$textmap" >"$tmp/off" 2>"$tmp/err"
rc=$?
l=$(lines "$tmp/off")
[ $rc -eq 0 ] && [ "$(grep -c '^tiny_text ' "$tmp/off")" = 2 ] && [ "$l" = "tiny_text pages=$p present=0" ]
ok $? "PSPAWN_PREFAULT=0: it is not (the task has not run it; $l)" || diag_file "$tmp/err" 5

"$PSPAWN_BIN" --exec -n 1 "$textmap" >"$tmp/exec" 2>"$tmp/err"
rc=$?
l=$(lines "$tmp/exec")
[ $rc -eq 0 ] && [ "$l" = "tiny_text pages=$p present=$p" ]
ok $? "--exec: the loader ran its constructor, so it is mapped too ($l)" || diag_file "$tmp/err" 5

tap_done
