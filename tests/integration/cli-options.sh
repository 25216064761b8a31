#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cli-options.sh - what the pspawn command gives its tasks: PSPAWN_RANK,
# PSPAWN_SIZE, PSPAWN_LOCAL_RANK, --env, stdin for rank 0 only, --label,
# one new process group for all tasks, --bind, -v, --help, option parsing
# that stops at the program, and --exec giving the same output.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

# run OUTFILE PSPAWN_ARGS...: stdout sorted into OUTFILE, stderr in
# $tmp/err, exit status in $rc.
run() {
    out=$1
    shift
    "$PSPAWN_BIN" "$@" >"$tmp/raw" 2>"$tmp/err" </dev/null
    rc=$?
    sort "$tmp/raw" >"$out"
    [ $rc -eq 0 ] || { diag "pspawn $* exited $rc"; diag_stderr "$tmp/err"; }
}

# ---- rank variables
run "$tmp/got" -n 4 sh -c 'echo "$PSPAWN_RANK $PSPAWN_SIZE $PSPAWN_LOCAL_RANK"'
printf '0 4 0\n1 4 1\n2 4 2\n3 4 3\n' >"$tmp/want"
equal "PSPAWN_RANK, PSPAWN_SIZE, PSPAWN_LOCAL_RANK of 4 tasks" "$tmp/want" "$tmp/got"

run "$tmp/got" sh -c 'echo "$PSPAWN_RANK $PSPAWN_SIZE $PSPAWN_LOCAL_RANK"'
printf '0 1 0\n' >"$tmp/want"
equal "without -n: one task, rank 0 of 1" "$tmp/want" "$tmp/got"

# ---- --env
FOO=inherited KEEP=kept run "$tmp/got" -n 2 --env FOO=bar --env "SP=a b" --env EMPTY= \
    sh -c 'echo "$PSPAWN_RANK|$FOO|$SP|${EMPTY-unset}|$KEEP"'
printf '0|bar|a b||kept\n1|bar|a b||kept\n' >"$tmp/want"
equal "--env sets and overrides variables, the rest is inherited" "$tmp/want" "$tmp/got"

# ---- stdin: pspawn's for rank 0, /dev/null for the others
printf 'line1\nline2\n' >"$tmp/in"
"$PSPAWN_BIN" -n 3 sh -c 'while read -r l; do echo "$PSPAWN_RANK got $l"; done' \
    <"$tmp/in" >"$tmp/raw" 2>"$tmp/err"
sort "$tmp/raw" >"$tmp/got"
printf '0 got line1\n0 got line2\n' >"$tmp/want"
equal "stdin is read by rank 0 only" "$tmp/want" "$tmp/got"

"$PSPAWN_BIN" -n 3 sh -c 'echo "$PSPAWN_RANK $(readlink /proc/$$/fd/0)"' \
    <"$tmp/in" >"$tmp/raw" 2>"$tmp/err"
sort "$tmp/raw" >"$tmp/got"
printf '0 %s\n1 /dev/null\n2 /dev/null\n' "$tmp/in" >"$tmp/want"
equal "rank 0's stdin is pspawn's, the others' /dev/null" "$tmp/want" "$tmp/got"

# ---- --label
"$PSPAWN_BIN" -n 3 --label sh -c 'echo hello; echo "second $PSPAWN_RANK"; echo "to stderr" >&2' \
    >"$tmp/raw" 2>"$tmp/rawerr" </dev/null
sort "$tmp/raw" >"$tmp/got"
printf '0: hello\n0: second 0\n1: hello\n1: second 1\n2: hello\n2: second 2\n' | sort >"$tmp/want"
equal "--label prefixes every stdout line with \"RANK: \"" "$tmp/want" "$tmp/got"
sort "$tmp/rawerr" >"$tmp/got"
printf '0: to stderr\n1: to stderr\n2: to stderr\n' >"$tmp/want"
equal "--label prefixes every stderr line too" "$tmp/want" "$tmp/got"
r=0 inorder=0
while [ $r -lt 3 ]; do
    first=$(grep -n "^$r: hello\$" "$tmp/raw" | cut -d: -f1)
    second=$(grep -n "^$r: second $r\$" "$tmp/raw" | cut -d: -f1)
    [ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] || inorder=1
    r=$((r + 1))
done
ok $inorder "--label keeps each task's lines in order"

# Long lines and many of them are not cut or mixed.
"$PSPAWN_BIN" -n 2 --label sh -c 'i=0; while [ $i -lt 200 ]; do
        echo "$PSPAWN_RANK-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        i=$((i + 1)); done' >"$tmp/raw" 2>"$tmp/err" </dev/null
rc=$?
bad=$(grep -cvE '^([01]): \1-[0-9]+-x{80}$' "$tmp/raw")
lines=$(wc -l <"$tmp/raw")
[ "$bad" -eq 0 ] && [ "$lines" -eq 400 ]
if ! ok $? "--label: 400 lines from 2 tasks, each whole and prefixed by its own rank ($lines lines, $bad bad)"; then
    diag "pspawn exited $rc"
    diag_stderr "$tmp/err"
fi

# ---- one new process group for all tasks, not pspawn's
set -- $(sed 's/.*) //' /proc/$$/stat)
my_pgid=$3
set --
run "$tmp/got" -n 3 sh -c 'set -- $(sed "s/.*) //" /proc/$$/stat); echo $3'
groups=$(uniq "$tmp/got" | wc -l)
group=$(head -n 1 "$tmp/got")
[ "$(wc -l <"$tmp/got")" -eq 3 ] && [ "$groups" -eq 1 ] && [ "$group" != "$my_pgid" ]
ok $? "all tasks in one process group ($group), not pspawn's ($my_pgid)"
if [ "$groups" -ne 1 ]; then diag_file "$tmp/got"; fi

# ---- --bind
allowed_cpus >"$tmp/cpus"
ncpus=$(wc -l <"$tmp/cpus")
cpu_at() { sed -n "$(($1 % ncpus + 1))p" "$tmp/cpus"; }
show_cpus='echo "$PSPAWN_RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/$$/status)"'

run "$tmp/got" -n 4 --bind core sh -c "$show_cpus"
: >"$tmp/want"
for r in 0 1 2 3; do echo "$r $(cpu_at $r)" >>"$tmp/want"; done
equal "--bind core: rank r on the r-th CPU of pspawn's affinity ($ncpus CPUs)" "$tmp/want" "$tmp/got"

if [ "$ncpus" -ge 2 ]; then
    c0=$(cpu_at 0) c1=$(cpu_at 1)
    run "$tmp/got" -n 3 --bind "$c1,$c0" sh -c "$show_cpus"
    printf '0 %s\n1 %s\n2 %s\n' "$c1" "$c0" "$c1" >"$tmp/want"
    equal "--bind $c1,$c0: rank r on list[r % 2]" "$tmp/want" "$tmp/got"

    taskset -c "$c1" "$PSPAWN_BIN" -n 2 --bind core sh -c "$show_cpus" >"$tmp/raw" 2>"$tmp/err"
    sort "$tmp/raw" >"$tmp/got"
    printf '0 %s\n1 %s\n' "$c1" "$c1" >"$tmp/want"
    equal "--bind core under taskset -c $c1: every rank on CPU $c1" "$tmp/want" "$tmp/got"
else
    skip "one CPU only" "--bind LIST with two CPUs"
    skip "one CPU only" "--bind core under taskset"
fi

all=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)
run "$tmp/got" -n 2 --bind none sh -c "$show_cpus"
printf '0 %s\n1 %s\n' "$all" "$all" >"$tmp/want"
equal "--bind none: affinity left as pspawn's" "$tmp/want" "$tmp/got"

# ---- -v
"$PSPAWN_BIN" -v -n 2 true >"$tmp/raw" 2>"$tmp/err" </dev/null
rc=$?
[ $rc -eq 0 ] && grep -qiE '[0-9]+(\.[0-9]+)? *(ns|us|µs|ms|s|sec|seconds)\b' "$tmp/err"
if ! ok $? "-v prints the launch time on stderr"; then diag_file "$tmp/err" 5; fi

# ---- --help
"$PSPAWN_BIN" --help >"$tmp/raw" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && grep -q -- '--bind' "$tmp/raw" && grep -q -- '--label' "$tmp/raw"
ok $? "--help prints the options on stdout and exits 0 (exit $rc)"

# ---- option parsing stops at the program; -- works too
run "$tmp/got" -n 1 sh -c 'echo "$*"' x -n 5 -v --label
printf '%s\n' '-n 5 -v --label' >"$tmp/want"
equal "options after the program are the program's" "$tmp/want" "$tmp/got"
run "$tmp/got" -n 1 -- sh -c 'echo "$*"' x --exec
printf '%s\n' '--exec' >"$tmp/want"
equal "-- ends pspawn's options" "$tmp/want" "$tmp/got"

# ---- PATH lookup as execvp
PATH=$TESTS_BUILDDIR:$PATH run "$tmp/got" -n 2 task print from-path
printf 'task version=1 rank=0 size=2 local=0 args=from-path\ntask version=1 rank=1 size=2 local=1 args=from-path\n' >"$tmp/want"
equal "PROG is looked up in PATH" "$tmp/want" "$tmp/got"

# ---- --exec gives the same output
cmd='echo "rank $PSPAWN_RANK of $PSPAWN_SIZE local $PSPAWN_LOCAL_RANK foo=$FOO"; echo "$0 $*"'
run "$tmp/default" -n 3 --label --env FOO=x sh -c "$cmd" arg0 a "b c"
run "$tmp/exec" --exec -n 3 --label --env FOO=x sh -c "$cmd" arg0 a "b c"
equal "--exec: the same output as the default" "$tmp/exec" "$tmp/default"
[ "$(wc -l <"$tmp/default")" -eq 6 ]
ok $? "--exec comparison: 6 lines of output"

tap_done
