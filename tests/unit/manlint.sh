#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# manlint.sh: every man page passes `mandoc -Tlint` with no warning or
# error (style notes aside: the pages' titles are their lower-case
# names), and each has the sections a reader looks for.
top=${srcdir:-.}
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
if ! command -v mandoc >/dev/null 2>&1; then
    echo "1..0 # SKIP mandoc is not installed (config/install-deps installs it)"
    exit 0
fi
for page in "$top"/man/pspawn.1.in "$top"/man/pspawn.3.in "$top"/man/pspawn-odls.7 "$top"/man/pspawn-spank.8.in; do
    name=$(basename "$page")
    out=$(mandoc -Tlint -W warning "$page" 2>&1)
    [ -z "$out" ]
    ok $? "$name: mandoc -Tlint finds no warning or error"
    [ -n "$out" ] && echo "$out" | head -10 | sed 's/^/# /'
    missing=
    for sec in NAME SYNOPSIS DESCRIPTION "SEE ALSO" FILES EXAMPLES; do
        grep -q "^\.SH \"*$sec\"*\$" "$page" || missing="$missing $sec"
    done
    [ -z "$missing" ]
    ok $? "$name: has NAME, SYNOPSIS, DESCRIPTION, FILES, EXAMPLES and SEE ALSO${missing:+ (missing:$missing)}"
done
echo "1..$n"
[ $failed = 0 ]
