#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh: what each shared object built here exports, as a site would
# see it with nm -D: libpspawn.so only the calls declared in pspawn.h
# (all at version PSPAWN_0.1), and every preloaded or plugin object only
# the names its loader looks up.  An internal pspawn_* name leaking out
# would become ABI that nobody meant to keep.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

b=${top_builddir:?top_builddir is not set}
header=$TESTS_SRCDIR/../../libpspawn/pspawn.h

# Defined dynamic symbols of $1, without their version, sorted.
exported() {
    nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRWVi]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u
}

# Every name of $1 matches the extended regex $2, and there is at least one.
only_matching() {
    names=$(exported "$1") || return 1
    [ -n "$names" ] || { diag "$1 exports nothing"; return 1; }
    stray=$(printf '%s\n' "$names" | grep -vE "$2")
    [ -z "$stray" ] || { diag "$(basename "$1") also exports: $(echo $stray)"; return 1; }
}

# The calls pspawn.h declares: its functions, after the preprocessor has
# taken the comments out (prose there names calls too).
${CC:-cc} -E -P -D_GNU_SOURCE "$header" 2>"$tmp/cpp.err" |
    grep -oE '\bpspawn(_[a-z0-9_]+)?[[:space:]]*\(' | tr -d ' (' | sort -u >"$tmp/declared"
lib=$b/libpspawn/.libs/libpspawn.so
exported "$lib" >"$tmp/exported"
if [ -s "$tmp/declared" ] && cmp -s "$tmp/declared" "$tmp/exported"; then
    ok 0 "libpspawn.so exports exactly the $(wc -l <"$tmp/declared") calls of pspawn.h"
else
    diag "declared in pspawn.h, not exported: $(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')"
    diag "exported, not in pspawn.h: $(comm -13 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')"
    cat "$tmp/cpp.err" >&2
    ok 1 "libpspawn.so exports exactly the calls of pspawn.h"
fi

unversioned=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 !~ /@@PSPAWN_0\.[12]$/ { print $3 }')
[ -z "$unversioned" ]
ok $? "every call of libpspawn.so has the symbol version PSPAWN_0.1 or 0.2 ${unversioned:+(not: $unversioned)}"
# A call added after 0.1 is in a node of its own, so that a program built
# against it says what it needs (libpspawn.map).
late=$(nm -D --defined-only "$lib" | awk '$3 ~ /@@PSPAWN_0\.2$/ { sub(/@.*/, "", $3); print $3 }' | tr '\n' ' ')
[ "$late" = "pspawn_context_objects " ]
ok $? "PSPAWN_0.2 has pspawn_context_objects alone (it has: ${late:-nothing})"

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libpspawn.so.0 ]
ok $? "libpspawn.so's soname is libpspawn.so.0 (it is: ${soname:-none})"

only_matching "$b/libpspawn/.libs/libpspawn-proxy.so" '^(__libc_start_main|pspawn_python_[a-z_]+|pspawn_record_dlopen)$'
ok $? "the proxy exports __libc_start_main and its Python and recorder hooks only"

only_matching "$b/libpspawn/.libs/libpspawn-record.so" '^(dlopen|dlmopen)$'
ok $? "the recorder exports dlopen and dlmopen only"

only_matching "$b/libpspawn/.libs/libpspawn-intercept.so" \
    '^(execve|execv|execvp|execvpe|execveat|fexecve|execl|execle|execlp|posix_spawnp?|kill|wait|waitpid|wait3|wait4|waitid|(__)?open(at)?(64)?(_2)?|creat(64)?|fopen(64)?|truncate)$'
ok $? "the interception library exports the exec, spawn, kill, wait and file-opening calls only"

plugin=$b/spank/.libs/spank_pspawn.so
if [ -f "$plugin" ]; then
    only_matching "$plugin" '^(slurm_spank_[a-z_]+|plugin_(name|type|version)|spank_plugin_version)$'
    ok $? "the SPANK plugin exports slurm_spank_* and the plugin symbols only"
else
    skip "configure found no slurm/spank.h" "the SPANK plugin is not built here"
fi
tap_done
