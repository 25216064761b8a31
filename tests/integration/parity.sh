#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# parity.sh - through the pspawn command, a task started from the zygote
# sees exactly what one started with --exec (plain exec, the reference)
# sees: the probe (tests/fixtures/probe.c) is run both ways and its reports are
# compared group by group, one TAP line per group and rank.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

probe=$TESTS_BUILDDIR/probe
groups="argv env progname cmdline exe fd sig sigmask cwd umask rlimit pgrp cpus threads globals parent sched misc"

# The lines of one group of a report ("env" for env.*, "cwd" for cwd=...);
# "other" is every group not listed (x.* and probe= are never compared).
group_lines() {
    awk -v g="$1" -v known="$groups x probe" '
        BEGIN { n = split(known, a, " "); for (i = 1; i <= n; i++) is_known[a[i]] = 1 }
        { k = $0; sub(/=.*/, "", k); sub(/\..*/, "", k)
          if (k == g || (g == "other" && !(k in is_known))) print }' "$2"
}

# This shell's process group and session, which pspawn shares.
set -- $(sed 's/.*) //' /proc/$$/stat)
my_pgid=$3
my_sid=$4
set --

# A task's group or session is its own ("self"), the launcher's, or
# another one: the pid of rank 0, which differs from run to run.
normalise_pgrp() {
    sed -e "s/^pgrp\.pgid=$my_pgid\$/pgrp.pgid=launcher's/" \
        -e "s/^pgrp\.sid=$my_sid\$/pgrp.sid=launcher's/" \
        -e 's/^\(pgrp\.[a-z]*\)=[0-9][0-9]*$/\1=another/'
}

# compare LABEL ZYGOTE_REPORT EXEC_REPORT
compare() {
    for g in $groups other; do
        group_lines "$g" "$2" | normalise_pgrp >"$tmp/g.zygote"
        group_lines "$g" "$3" | normalise_pgrp >"$tmp/g.exec"
        if [ ! -s "$tmp/g.exec" ] && [ "$g" != other ]; then
            ok 1 "$1: $g: the --exec report has it"
        elif cmp -s "$tmp/g.zygote" "$tmp/g.exec"; then
            ok 0 "$1: $g as with --exec"
        else
            ok 1 "$1: $g as with --exec"
            diff "$tmp/g.exec" "$tmp/g.zygote" | grep '^[<>]' | head -8 |
                sed 's/^</--exec: /; s/^>/zygote: /' | cut -c1-200 | sed 's/^/#   /'
        fi
    done
}

# The report of rank R from a file of several (split on probe=begin).
report_of_rank() {
    awk -v r="$1" '
        /^probe=begin$/ { n++; buf[n] = "" }
        { buf[n] = buf[n] $0 "\n" }
        $0 == "env.PSPAWN_RANK=" r { mine = n }
        END { if (mine) printf "%s", buf[mine] }' "$2"
}

x_value() {
    sed -n "s/^x\.$1=//p" "$2"
}

# run_both NAME PSPAWN_ARGS...: the same command line, default then
# --exec; each output lands at the same path, so fd 1 reads the same.
run_both() {
    name=$1
    shift
    rm -f "$tmp/out" "$tmp/err"
    "$PSPAWN_BIN" "$@" >>"$tmp/out" 2>>"$tmp/err" <"$tmp/in"
    rc_zygote=$?
    mv "$tmp/out" "$tmp/out.zygote"
    mv "$tmp/err" "$tmp/err.zygote"
    "$PSPAWN_BIN" --exec "$@" >>"$tmp/out" 2>>"$tmp/err" <"$tmp/in"
    rc_exec=$?
    mv "$tmp/out" "$tmp/out.exec"
    mv "$tmp/err" "$tmp/err.exec"
    if [ $rc_zygote -eq 0 ] && [ $rc_exec -eq 0 ]; then
        ok 0 "$name: both runs exit 0"
    else
        ok 1 "$name: both runs exit 0 (default $rc_zygote, --exec $rc_exec)"
        diag_file "$tmp/err.zygote" 5
        diag_file "$tmp/err.exec" 5
    fi
}

# check_ranks NAME N [labelled]: compare rank by rank.
check_ranks() {
    r=0
    while [ $r -lt "$2" ]; do
        for m in zygote exec; do
            if [ "${3:-}" = labelled ]; then
                sed -n "s/^$r: //p" "$tmp/out.$m" >"$tmp/rank.$m"
            else
                report_of_rank $r "$tmp/out.$m" >"$tmp/rank.$m"
            fi
        done
        if grep -qx 'probe=end' "$tmp/rank.zygote" && grep -qx 'probe=end' "$tmp/rank.exec"; then
            ok 0 "$1 rank $r: a complete report from each run"
        else
            ok 1 "$1 rank $r: a complete report from each run"
        fi
        # The fast path must really have been taken (the proxy is mapped
        # in a task forked from the zygote, never in an exec'd one).
        zm=$(x_value proxy_mapped "$tmp/rank.zygote")
        em=$(x_value proxy_mapped "$tmp/rank.exec")
        [ "$zm" = 1 ] && [ "$em" = 0 ]
        ok $? "$1 rank $r: default run forked from the zygote, --exec run exec'd (proxy mapped: $zm, $em)"
        compare "$1 rank $r" "$tmp/rank.zygote" "$tmp/rank.exec"
        r=$((r + 1))
    done
}

printf 'input line\n' >"$tmp/in"

run_both "one task" -n 1 "$probe" one "two words" "" "$(printf 'tab\there')"
check_ranks "one task" 1

run_both "--label, 2 tasks" -n 2 --label "$probe" labelled
check_ranks "--label, 2 tasks" 2 labelled

run_both "--bind core --env, 2 tasks" -n 2 --bind core --env FOO=bar --env "SP=a b" "$probe" bound
check_ranks "--bind core --env, 2 tasks" 2

# A program found in PATH, as execvp would find it.
PATH=$TESTS_BUILDDIR:$PATH run_both "PATH lookup" -n 1 probe from-path
check_ranks "PATH lookup" 1

# A #! script: the kernel's argv (interpreter, #! argument, script path as
# given, arguments).
printf '#!%s -x\n' "$probe" >"$tmp/script"
chmod 755 "$tmp/script"
run_both "#! script" -n 1 "$tmp/script" s1 "s 2"
check_ranks "#! script" 1
for m in zygote exec; do
    report_of_rank 0 "$tmp/out.$m" >"$tmp/rank.$m"
done
printf 'argv.count=5\nargv.0=%s\nargv.1=-x\nargv.2=%s\nargv.3=s1\nargv.4=s 2\n' \
    "$probe" "$tmp/script" >"$tmp/argv.want"
group_lines argv "$tmp/rank.zygote" | grep -v '^argv.terminator' >"$tmp/argv.got"
equal "#! script: argv is interpreter, #! argument, script path, arguments" \
    "$tmp/argv.want" "$tmp/argv.got"

tap_done
