#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# spdx.sh: every file this project wrote says, in its first three lines,
# that it is under the project's license (SPDX-License-Identifier:
# BSD-3-Clause), and LICENSE holds that license's text.  A site or a
# distribution that takes one file out of the tree must still be able to
# tell its license.
#
#   spdx.sh                 the TAP test (make check)
#   spdx.sh --list TOP      the files under TOP that lack the line, one a
#                           line; exits 1 if there is any (make distcheck
#                           runs it on the tarball's tree)
#
# The files checked: what git tracks where TOP is a git work tree, and
# otherwise (an unpacked tarball) every file under TOP but the build's
# own folders.  Left out, and only these: what autoreconf generates, and
# data that has no room for a comment (LICENSE itself, measured results,
# images, fuzzing inputs, hwloc topologies, whose reader refuses a comment
# before the root element, debian/changelog, debian/copyright, which is
# the license statement, and debian/source/format).
ID='SPDX-License-Identifier: BSD-3-Clause'

# Of the paths on stdin (relative to $1), those a build in the tree did
# not make: objects, libraries, programs, logs, configure's and the
# Debian build's outputs (a copy of the tree that is neither a git work
# tree nor an unpacked tarball).
built_here() {
    grep -vE '(\.(o|lo|la|a|so|log|trs|dirstamp)|\.so\.[0-9.]+)$|^(Makefile|config\.(status|h|log)|stamp-h1|libtool|libpspawn/libpspawn\.pc)$|/Makefile$|^debian/(files|debhelper-build-stamp|autoreconf\.(before|after)|.*\.substvars|.*\.debhelper\.log)$|^libpspawn/zygote/warm\.inc$|^debian/(libpspawn0|libpspawn-dev|pspawn|slurm-spank-pspawn|openmpi-pspawn)/' |
        while IFS= read -r f; do
            [ "$(head -c 4 "$1/$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] ||
                head -n 3 "$1/$f" 2>/dev/null | grep -q 'temporary wrapper script' || printf '%s\n' "$f"
        done
}

# Paths relative to the top, one a line, of the files to check.
spdx_files() {
    if git -C "$1" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$(cd "$1" && pwd -P)"; then
        git -C "$1" ls-files
    elif [ -f "$1/.dist-files" ]; then
        # An unpacked tarball: its own list (make dist's dist-hook), so
        # that what a build made in the tree (a package build builds in
        # it) is not taken for the project's.
        grep -vxF .dist-files "$1/.dist-files"
    else
        (cd "$1" && find . \( -name .git -o -name '_build*' -o -name _inst -o -name autom4te.cache \
            -o -name .libs -o -name .deps -o -path ./debian/tmp -o -path ./debian/.debhelper \) -prune \
            -o -type f -print | sed 's|^\./||' | built_here "$1")
    fi | grep -vE '^(configure|aclocal\.m4|config\.h\.in|build-aux/.*|config/(libtool|lt[^/]*)\.m4)$|(^|/)Makefile\.in$' |
        grep -vE '^(LICENSE|debian/changelog|debian/copyright|debian/source/format)$|^(bench/results|tests/fuzz/corpus)/|\.(png|csv|xml)$'
}

# The files under $1 without the line near their top, or with another
# license's identifier there.
spdx_missing() {
    spdx_files "$1" | while IFS= read -r f; do
        head -n 3 "$1/$f" | grep -qF "$ID" && ! head -n 3 "$1/$f" | grep -v "$ID" | grep -q 'SPDX-License-Identifier' ||
            printf '%s\n' "$f"
    done
}

if [ "${1:-}" = --list ]; then
    [ -d "${2:-}" ] || { echo "spdx.sh --list: ${2:-(none)}: no such folder" >&2; exit 2; }
    out=$(spdx_missing "$2")
    [ -z "$out" ] && exit 0
    printf '%s\n' "$out"
    exit 1
fi

. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"
top=$(cd "$TESTS_SRCDIR/../.." && pwd)

count=$(spdx_files "$top" | wc -l)
missing=$(spdx_missing "$top")
if [ "$count" -gt 100 ] && [ -z "$missing" ]; then
    ok 0 "all $count files the project wrote carry '$ID' in their first 3 lines"
else
    diag "files checked: $count; without the line:"
    diag "$missing"
    ok 1 "every file the project wrote carries '$ID' in its first 3 lines"
fi

grep -q '^BSD 3-Clause License$' "$top/LICENSE" && grep -q '^Copyright (c) 2026, the libpspawn authors$' "$top/LICENSE" &&
    grep -q 'Neither the name of the copyright holder' "$top/LICENSE"
ok $? "LICENSE is the BSD-3-Clause text with the project's copyright line"

# The check itself, on a small tree of its own (no git there): it names a
# file without the line, a file whose line comes too late, and a file
# under another license, and passes what autoreconf made or a data file.
t=$tmp/tree
mkdir -p "$t/src" "$t/config" "$t/bench/results" "$t/_build/normal"
printf '/* %s */\nint x;\n' "$ID" >"$t/src/good.c"
printf '#!/bin/sh\n# %s\necho hi\n' "$ID" >"$t/src/good.sh"
printf 'int y;\n' >"$t/src/bare.c"
printf '#!/bin/sh\n#\n#\n# %s\n' "$ID" >"$t/src/late.sh"
printf '# SPDX-License-Identifier: MIT\n# %s\n' "$ID" >"$t/src/other.mk"
printf 'generated\n' >"$t/configure"
printf 'generated\n' >"$t/src/Makefile.in"
printf 'generated\n' >"$t/config/ltoptions.m4"
printf 'a,b\n' >"$t/bench/results/x.txt"
printf 'built\n' >"$t/_build/normal/Makefile"
found=$(sh "$0" --list "$t" | sort | paste -sd' ')
rc=$(sh "$0" --list "$t" >/dev/null; echo $?)
[ "$found" = "src/bare.c src/late.sh src/other.mk" ] && [ "$rc" = 1 ]
ok $? "the check names exactly the files without the line, late or under another license (got: $found, rc $rc)"
rm "$t/src/bare.c" "$t/src/late.sh" "$t/src/other.mk"
sh "$0" --list "$t" >/dev/null
ok $? "the check passes that tree once they are gone"

tap_done
