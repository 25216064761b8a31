#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Spawn-site priorities (pspawn --intercept --priority MODE): the
# interception library learns, per spawn site (the launcher's binary, the
# call's offset in it, the program, a shell's command), how long its
# children run, in a per-user table that outlives the run, and starts a
# child of a site whose mean is long with a lower priority (nice +N,
# SCHED_BATCH, or a long EEVDF slice).  Off by default; its wait wrappers
# change nothing the launcher sees.
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
launcher=$TESTS_BUILDDIR/intercept-launcher
[ -x "$launcher" ] && [ -x "$TESTS_BUILDDIR/intercept-task" ] || bail "no test programs"
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_AFTER PSPAWN_INTERCEPT_PRIORITY \
    PSPAWN_INTERCEPT_NICE LD_PRELOAD
export PSPAWN_DEBUG=1 PSPAWN_CACHE_DIR="$tmp/cache" PSPAWN_INTERCEPT_LONG=0.3
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all
# Two programs (two inodes) that one call of the launcher starts.
long=$tmp/long-task
short=$tmp/short-task
cp "$TESTS_BUILDDIR/intercept-task" "$long" && cp "$long" "$short" || bail "cp"
table=$tmp/cache/sites

# run NAME [PSPAWN OPTIONS] -- MODE N PROG ARGS...: the launcher under
# pspawn --intercept, with NAME.out and NAME.err.
run() {
    _name=$1
    shift
    _opts=
    while [ "$1" != -- ]; do
        _opts="$_opts $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    (cd "$tmp" && "$pspawn" --intercept $_opts -- "$launcher" "$@") >"$tmp/$_name.out" \
        2>"$tmp/$_name.err"
}
# nice_of NAME PROG: the nices PROG printed in run NAME (one a line).
nice_of() { sed -n "s|^task $2 nice=\\([0-9-]*\\) .*|\\1|p" "$tmp/$1.out" | sort -u | tr '\n' ' '; }
field_of() { sed -n "s|^task $2 .*$3=\\([0-9]*\\).*|\\1|p" "$tmp/$1.out" | sort -u | tr '\n' ' '; }
# site_of NAME PROG: the site of the exec of PROG in run NAME.
site_of() { sed -n "s|.* site \\([0-9a-f]*\\): exec of $2\$|\\1|p" "$tmp/$1.err" | sort -u; }
diag_err() { grep 'site' "$tmp/$1.err" | head -"${2:-6}" | sed 's/^/# /'; }

# 1. Off by default: nothing lowered, no table written.
run off --after 100 -- fork 2 "$long" sched 0
[ "$(nice_of off "$long")" = "0 " ] && [ ! -e "$tmp/cache" ] && ! grep -q ' site ' "$tmp/off.err"
ok $? "off by default: nice 0 ($(nice_of off "$long")), no table written, no site measured"

# 2-4. Learning: the table is made, the user's, 0600; a site's mean is
#      recorded once its child is reaped.
run learn --after 100 --priority nice -- fork 2 "$long" sched 500
run learn-short --after 100 --priority nice -- fork 2 "$short" sched 0
[ -f "$table" ] && [ ! -L "$table" ] && [ "$(stat -c '%a %u' "$table")" = "600 $(id -u)" ]
ok $? "the table $table is the user's, mode 0600 ($(stat -c '%a %u' "$table" 2>/dev/null))"
lsite=$(site_of learn "$long")
ssite=$(site_of learn-short "$short")
grep -q "site $lsite: child [0-9]* ran [0-9]* ms; mean [0-9]* ms over 2$" "$tmp/learn.err" &&
    mean=$(sed -n "s/.*site $lsite: child [0-9]* ran [0-9]* ms; mean \\([0-9]*\\) ms over 2$/\\1/p" \
        "$tmp/learn.err") && [ "$mean" -ge 480 ] && [ "$mean" -le 3000 ]
ok $? "a site's mean is recorded as its children are reaped (${mean:-none} ms over 2)" ||
    diag_err learn
[ -n "$lsite" ] && [ -n "$ssite" ] && [ "$lsite" != "$ssite" ]
ok $? "two programs from one call site of the launcher are two sites ($lsite, $ssite)"

# 5. A shell's command refines its site: its first word, not the rest.
run sh-a --after 100 --priority nice -- fork 1 /bin/sh -c "$long sched 0"
run sh-b --after 100 --priority nice -- fork 1 /bin/sh -c "$short sched 0"
run sh-c --after 100 --priority nice -- fork 1 /bin/sh -c "$long sched 1"
a=$(site_of sh-a /bin/sh) b=$(site_of sh-b /bin/sh) c=$(site_of sh-c /bin/sh)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && [ "$a" = "$c" ]
ok $? "sh -c CMD: a site per first word of CMD ($a, $b; $c)"

# 6-7. The table outlives the run: the next one predicts from it.  (A
#      long child always runs long: a short one would lower its mean.)
ino=$(stat -c %i "$table")
run nice --after 100 --priority nice -- fork 2 "$long" sched 500
run nice-short --after 100 --priority nice -- fork 2 "$short" sched 0
[ "$(nice_of nice "$long")" = "10 " ] && grep -q "site $lsite predicted long" "$tmp/nice.err" &&
    [ "$(stat -c %i "$table")" = "$ino" ]
ok $? "priority=nice: a child of a long site runs at nice +10 ($(nice_of nice "$long")), from the last run's table" ||
    diag_err nice
[ "$(nice_of nice-short "$short")" = "0 " ] && grep -q "site $ssite predicted short" "$tmp/nice-short.err"
ok $? "priority=nice: a child of a short site keeps nice 0 ($(nice_of nice-short "$short"))"

# 8. posix_spawn: the launcher lowers the child it spawned.
run sp-learn --after 100 --priority nice -- spawn 2 "$long" sched 500
run sp --after 100 --priority nice -- spawn 2 "$long" sched 500
run sp-short --after 100 --priority nice -- spawn 2 "$short" sched 0
[ "$(nice_of sp "$long")" = "10 " ] && [ "$(nice_of sp-short "$short")" = "0 " ]
ok $? "posix_spawn: long child at nice 10 ($(nice_of sp "$long")), short at 0 ($(nice_of sp-short "$short"))"

# 9-10. Routed through a zygote (every start): the task gets its stand-in's
#       priority, by exec and by posix_spawn, and a short one is not
#       forked by the lowered zygote of the long one.
run rt --after 1 --idle 2 --priority nice -- fork 2 "$long" sched 500
run rt-short --after 1 --idle 2 --priority nice -- fork 2 "$short" sched 0
run rt-sp --after 1 --idle 2 --priority nice -- spawn 2 "$long" sched 500
n=$(cat "$tmp/rt.err" "$tmp/rt-short.err" "$tmp/rt-sp.err" | grep -c 'forked by the zygote')
[ "$(nice_of rt "$long")" = "10 " ] && [ "$(nice_of rt-sp "$long")" = "10 " ] &&
    [ "$(nice_of rt-short "$short")" = "0 " ] && [ "$n" = 6 ]
ok $? "routed: long at 10 ($(nice_of rt "$long")/$(nice_of rt-sp "$long")), short at 0 ($(nice_of rt-short "$short")), all 6 forked by zygotes ($n)"
nest=$tmp/nest-task
cp "$long" "$nest"
run rt-sh --after 1 --idle 2 --priority nice -- fork 2 /bin/sh -c "$nest sched 500"
run rt-sh2 --after 1 --idle 2 --priority nice -- fork 1 /bin/sh -c "$nest sched 0"
[ "$(nice_of rt-sh2 "$nest")" = "10 " ] && [ "$(grep -c 'predicted long' "$tmp/rt-sh2.err")" -ge 2 ]
ok $? "a long child (sh) of a long site whose own child is long: nice 10, not 20 ($(nice_of rt-sh2 "$nest"))" ||
    diag_err rt-sh2 10

# 11. A program started from a long site and from a short one (sh, by its
#     command) has a zygote for each: one started lowered would give its
#     lowering to every task it forks, which an unprivileged task cannot
#     undo.  Two launchers in one scope (two programs: the one that runs
#     long is itself a long child of the script); sh alone is routed.
nest2=$tmp/nest2-task
cp "$long" "$nest2" && cp "$launcher" "$tmp/launcher2" || bail "cp"
cat >"$tmp/two-sites" <<EOF
"$launcher" fork 1 /bin/sh -c "$nest2 sched 500"
"$tmp/launcher2" fork 1 /bin/sh -c "$short sched 0"
EOF
for r in 1 2; do
    (cd "$tmp" && "$pspawn" --intercept --after 1 --idle 2 --priority nice \
        --skip intercept-launcher:launcher2:nest2-task:short-task -- /bin/sh "$tmp/two-sites") \
        >"$tmp/two.out" 2>"$tmp/two.err"
done
z=$(grep -c "starting the launcher's zygote" "$tmp/two.err")
[ "$z" = 2 ] && [ "$(nice_of two "$nest2")" = "10 " ] && [ "$(nice_of two "$short")" = "0 " ]
ok $? "sh from a long site and from a short one: a zygote each ($z), nice 10 and 0 ($(nice_of two "$nest2")/$(nice_of two "$short"))"

# 12-13. The other modes.
run batch --after 100 --priority batch -- fork 1 "$long" sched 500
run batch-short --after 100 --priority batch -- fork 1 "$short" sched 0
[ "$(field_of batch "$long" policy)" = "3 " ] && [ "$(field_of batch-short "$short" policy)" = "0 " ] &&
    [ "$(nice_of batch "$long")" = "0 " ]
ok $? "priority=batch: long child SCHED_BATCH ($(field_of batch "$long" policy)), short SCHED_OTHER"
run slice-probe -- fork 1 "$short" sched 0
if [ "$(field_of slice-probe "$short" slice_us)" = "0 " ]; then
    skip "no EEVDF slices (Linux before 6.12)" "priority=slice"
else
    run slice --after 100 --priority slice -- fork 1 "$long" sched 500
    run slice-short --after 100 --priority slice -- fork 1 "$short" sched 0
    [ "$(field_of slice "$long" slice_us)" = "20000 " ] &&
        [ "$(field_of slice-short "$short" slice_us)" = "500 " ]
    ok $? "priority=slice: long child 20 ms slice ($(field_of slice "$long" slice_us) us), short 0.5 ms ($(field_of slice-short "$short" slice_us) us)"
fi

# 14-17. A table that is not a good one of ours is ignored, left as is.
# untrusted NAME: the run ignored the table, which is unchanged.
untrusted() {
    cp "$table" "$tmp/table.before"
    run "$1" --after 100 --priority nice -- fork 1 "$long" sched 0
    [ "$(nice_of "$1" "$long")" = "0 " ] && grep -q 'spawn-site priorities off:' "$tmp/$1.err" &&
        ! grep -q ' site ' "$tmp/$1.err" && cmp -s "$table" "$tmp/table.before"
}
cp "$table" "$tmp/good"
size=$(stat -c %s "$table")
head -c "$size" /dev/urandom >"$table"
untrusted corrupt
ok $? "a corrupt table (random bytes, its size) is ignored and left as is" || diag_err corrupt
cp "$tmp/good" "$table" && chmod 644 "$table"
untrusted mode644
ok $? "a table readable by others (0644) is ignored"
chmod 600 "$table"
if [ "$(id -u)" = 0 ]; then
    chown 65534 "$table"
    untrusted foreign
    ok $? "a table another user owns is ignored"
    chown 0 "$table"
else
    skip "not root: cannot make a file another user's" "a table another user owns is ignored"
fi
mv "$table" "$tmp/good" && ln -s "$tmp/good" "$table"
untrusted symlink
ok $? "a table that is a symbolic link is ignored"
rm -f "$table" && mv "$tmp/good" "$table"

# 18. The wait family returns what it returns without the library.
(cd "$tmp" && "$launcher" waits "$short") >"$tmp/waits.plain" 2>/dev/null
run waits --after 1 --idle 2 --priority nice -- waits "$short"
ran=$(grep -c ': child [0-9]* ran' "$tmp/waits.err")
[ -s "$tmp/waits.plain" ] && cmp -s "$tmp/waits.plain" "$tmp/waits.out" && [ "$ran" = 4 ]
ok $? "wait, waitpid, wait3, wait4, waitid: same pids, statuses, errno (ECHILD) and rusage; 4 children measured ($ran)" ||
    diff "$tmp/waits.plain" "$tmp/waits.out" | head -10 | sed 's/^/# /'

# 19. Usage.
"$pspawn" --intercept --priority fast -- true 2>/dev/null
[ $? = 2 ]
ok $? "pspawn --intercept --priority fast: a usage error (status 2)"

tap_done
