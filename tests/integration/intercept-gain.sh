#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Interception does no harm (libpspawn/intercept/gain.h): pspawn
# --intercept routes a program only once its exec'd starts are measured
# to cost more than a routed start, and starts a program that launches
# nothing (a leaf) without the interception library once three of its
# runs have ended.  Each rule is checked before it has learned and after,
# and again once the program was replaced by another.
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
launcher=$TESTS_BUILDDIR/intercept-launcher
for f in "$launcher" "$TESTS_BUILDDIR/intercept-task" "$TESTS_BUILDDIR/slowstart"; do
    [ -x "$f" ] || bail "no $f"
done
printenv=$(command -v printenv) || bail "no printenv"
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_TABLE PSPAWN_INTERCEPT_AFTER \
    PSPAWN_INTERCEPT_ROUTE PSPAWN_INTERCEPT_SKIP LD_PRELOAD
export PSPAWN_DEBUG=1
# Copies of our own: the slow one is replaced by the small one below, and
# other tests' leftover counts (pgrep) must not see them.
mkdir -p "$tmp/bin" && cp "$TESTS_BUILDDIR/intercept-task" "$tmp/bin/small" &&
    cp "$TESTS_BUILDDIR/slowstart" "$tmp/bin/slow" || bail "cannot copy the test programs"
small=$tmp/bin/small slow=$tmp/bin/slow

# run NAME ARGS...: pspawn --intercept ARGS; stdout in NAME.out, stderr
# (the debug lines) in NAME.err.
run() {
    _n=$1
    shift
    (cd "$tmp" && "$pspawn" --intercept --idle 2 "$@") >"$tmp/$_n.out" 2>"$tmp/$_n.err"
}
# forked NAME PROG: the starts of PROG that a zygote forked.
forked() { grep -c "($2) forked by the zygote" "$tmp/$1.err"; }
# exits NAME N: the launcher's children that exited N.
exits() { grep -c "^launch [0-9]*: exit $2\$" "$tmp/$1.out"; }
# said NAME TEXT PROG: the debug lines saying TEXT about PROG.
said() { grep -F "$2" "$tmp/$1.err" | grep -c -F ": $3"; }

# 1. A small program: its exec costs about what a routed start would.
run small -- "$launcher" fork 8 "$small" exit 3
n=$(exits small 3)
[ "$n" -eq 8 ]
ok $? "a small program, 8 starts: each exits 3 as asked ($n)" || diag_file "$tmp/small.out"
n=$(forked small "$small")
[ "$n" -eq 0 ]
ok $? "a small program: no start routed ($n forked)" || diag_stderr "$tmp/small.err"
n=$(said small "a fork does not beat its exec: an exec'd start" "$small")
[ "$n" -ge 6 ]
ok $? "... and PSPAWN_DEBUG says why, with both costs ($n starts)" || diag_stderr "$tmp/small.err"
! grep -q "starting the launcher's zygote" "$tmp/small.err"
ok $? "... and no zygote was started for it" || diag_stderr "$tmp/small.err"

# 2. Leaves: the first three runs carry the library (they are measured and
# could launch something), later ones do not; the user's own LD_PRELOAD
# entries stay.  (ld.so says on stderr that it cannot load the missing
# one, and goes on.)
user=/nonexistent-pspawn-test/libuser.so
LD_PRELOAD=$user run leaf -- "$launcher" fork 6 "$printenv" LD_PRELOAD
grep -v -e '^launch' -e 'other child' "$tmp/leaf.out" >"$tmp/leaf.env"
n_lib=$(grep -c "libpspawn-intercept.so:$user\$" "$tmp/leaf.env")
n_bare=$(grep -c "^$user\$" "$tmp/leaf.env")
[ "$n_lib" -eq 3 ] && [ "$n_bare" -eq 3 ] && [ "$(wc -l <"$tmp/leaf.env")" -eq 6 ]
ok $? "a leaf: 3 starts with the interception library, then 3 without it, the user's entry kept ($n_lib, $n_bare)" ||
    diag_file "$tmp/leaf.env"
n=$(said leaf "a leaf, started without the interception library" "$printenv")
[ "$n" -eq 3 ]
ok $? "... and PSPAWN_DEBUG says so for those 3 ($n)" || diag_stderr "$tmp/leaf.err"
run leaf-alone -- "$launcher" fork 5 "$printenv" LD_PRELOAD
n=$(exits leaf-alone 1)
[ "$(grep -c 'libpspawn-intercept.so$' "$tmp/leaf-alone.out")" -eq 3 ] && [ "$n" -eq 2 ]
ok $? "a leaf whose LD_PRELOAD held only the library: the variable is gone (printenv exits 1: $n)" ||
    diag_file "$tmp/leaf-alone.out"

# 3. Shells, make, env and interpreters are never taken for leaves: a run
# that launched nothing says nothing of the next (env alone prints the
# environment; env with a command execs it).
run env -- "$launcher" fork 6 /usr/bin/env
n=$(grep -c '^LD_PRELOAD=.*libpspawn-intercept.so$' "$tmp/env.out")
[ "$n" -eq 6 ]
ok $? "env, which launched nothing in 6 runs: each still started with the library ($n of 6)" ||
    diag_file "$tmp/env.out"

# 4. A program whose exec costs much more (1,000,000 relocations): routed
# from its third start, once two were measured.
run slow -- "$launcher" fork 6 "$slow" exit 4
n=$(exits slow 4)
[ "$n" -eq 6 ]
ok $? "a program slow to start, 6 starts: each exits 4 ($n)" || diag_file "$tmp/slow.out"
n=$(forked slow "$slow")
[ "$n" -ge 4 ]
ok $? "... its starts from the third on forked by a zygote ($n of 6)" || diag_stderr "$tmp/slow.err"
n=$(grep -c "not routed (start 1 of 2 before routing): $slow" "$tmp/slow.err")
n2=$(grep -c "not routed (what its exec costs is not measured yet): $slow" "$tmp/slow.err")
[ "$n" -eq 1 ] && [ "$n2" -eq 1 ]
ok $? "... its first two starts exec'd and measured ($n, $n2)" || diag_stderr "$tmp/slow.err"

# 5. Learned, then the program changes under the same name: the slow one
# is routed, the small one copied over it is a new program (another
# identity) and is measured again: not routed.  (cp lifts the zygote's
# ETXTBSY: it is never a leaf.)
run changed -- sh -c "'$launcher' fork 4 '$slow' exit 0 && cp '$small' '$slow' &&
    '$launcher' fork 4 '$slow' exit 5"
n0=$(exits changed 0) n5=$(exits changed 5)
[ "$n0" -eq 4 ] && [ "$n5" -eq 4 ]
ok $? "the program replaced between two launches: 4 exit 0, then 4 exit 5 ($n0, $n5)" ||
    { diag_file "$tmp/changed.out"; diag_stderr "$tmp/changed.err"; }
# The small one is a new program: measured afresh, its first two starts
# exec'd, as the slow one's were.  (Its later starts are routed or not as
# its measured cost says: on a busy machine its exec'd starts can cost
# more than the slow one's routed ones; 1 run in 10 did.)
# before_cp / after_cp PATTERN: the debug lines matching it before and
# after cp's start.
before_cp() { awk -v p="$1" '/: \/usr\/bin\/cp$/ { exit } index($0, p) { n++ } END { print n + 0 }' "$tmp/changed.err"; }
after_cp() { awk -v p="$1" '/: \/usr\/bin\/cp$/ { cp = 1 } cp && index($0, p) { n++ } END { print n + 0 }' "$tmp/changed.err"; }
n_slow=$(before_cp "($slow) forked by the zygote") n_small=$(after_cp "($slow) forked by the zygote")
m1=$(after_cp "not routed (start 1 of 2 before routing): $slow")
m2=$(after_cp "not routed (what its exec costs is not measured yet): $slow")
[ "$n_slow" -eq 2 ] && [ "$m1" -eq 1 ] && [ "$m2" -eq 1 ] && [ "$n_small" -le 2 ]
ok $? "... the slow one's last 2 starts forked ($n_slow); the small one measured afresh, its first two starts exec'd ($m1, $m2; forked later: $n_small)" ||
    diag_stderr "$tmp/changed.err"
cp "$TESTS_BUILDDIR/slowstart" "$slow" || bail "cp"

# 6. --route all: the routing itself, whatever the cost.
run all --route all -- "$launcher" fork 6 "$small" exit 0
n=$(forked all "$small")
[ "$n" -ge 5 ] && [ "$(exits all 0)" -eq 6 ]
ok $? "--route all: the small program forked from its second start ($n of 6)" ||
    diag_stderr "$tmp/all.err"
PSPAWN_INTERCEPT_ROUTE=all run all-env -- "$launcher" fork 4 "$small" exit 0
n=$(forked all-env "$small")
[ "$n" -ge 3 ]
ok $? "PSPAWN_INTERCEPT_ROUTE=all does the same ($n of 4)" || diag_stderr "$tmp/all-env.err"
"$pspawn" --intercept --route some -- /bin/true 2>"$tmp/bad.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "invalid --route 'some' (gain or all)" "$tmp/bad.err"
ok $? "--route some: refused, naming the value and what it may be (exit $rc)" ||
    diag_file "$tmp/bad.err"

# 7. A Python interpreter is routed before anything is measured: its
# warm zygote keeps the start-up that runs after main.
py=/usr/bin/python3
if [ -x "$py" ]; then
    run python -- "$launcher" fork 3 "$py" -c 'import sys; sys.exit(6)'
    n=$(forked python "$py")
    [ "$n" -ge 2 ] && [ "$(exits python 6)" -eq 3 ]
    ok $? "python3: routed from its second start, each exits 6 ($n of 3 forked)" ||
        diag_stderr "$tmp/python.err"
else
    skip "no $py" "python3: routed from its second start"
fi

tap_done
