#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Transparent interception (pspawn --intercept, libpspawn-intercept.so):
# a launcher's repeated starts of a program go through a zygote, and the
# launcher sees what it saw without: the same output, exit codes, signal
# deaths, exec errors, fds, and no child it did not start.  Each case runs
# tests/fixtures/intercept-launcher plain and intercepted and compares.
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
launcher=$TESTS_BUILDDIR/intercept-launcher
task=$TESTS_BUILDDIR/intercept-task
probe=$TESTS_BUILDDIR/probe
[ -x "$launcher" ] && [ -x "$task" ] || bail "no $launcher or $task"
# A copy of our own: the leftover counts (pgrep -f) must not see the
# tasks of intercept-launchers.sh or intercept-priority.sh, which make
# check runs at the same time.
mkdir -p "$tmp/bin" && cp "$task" "$tmp/bin/intercept-task" || bail "cannot copy $task"
task=$tmp/bin/intercept-task
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_AFTER LD_PRELOAD
export PSPAWN_DEBUG=1
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all

# compare NAME CMD...: CMD's stdout plain and under pspawn --intercept
# --after 1 (every start routed), sorted; stderr of the intercepted run
# in $tmp/NAME.err.
compare() {
    _name=$1
    shift
    (cd "$tmp" && "$@") >"$tmp/$_name.plain" 2>/dev/null
    (cd "$tmp" && "$pspawn" --intercept --after 1 --idle 2 -- "$@") >"$tmp/$_name.icpt" \
        2>"$tmp/$_name.err"
    sort "$tmp/$_name.plain" >"$tmp/$_name.plain.s"
    sort "$tmp/$_name.icpt" >"$tmp/$_name.icpt.s"
    if [ -s "$tmp/$_name.plain" ] && cmp -s "$tmp/$_name.plain.s" "$tmp/$_name.icpt.s"; then
        return 0
    fi
    diff "$tmp/$_name.plain.s" "$tmp/$_name.icpt.s" | head -10 | sed 's/^/# /'
    diag_stderr "$tmp/$_name.err" 10
    return 1
}

# routed NAME: how many starts the interception library routed.
routed() { grep -cE ']: routed[ :].*intercept-task' "$tmp/$1.err"; }
forked() { grep -c 'intercept-task) forked by the zygote' "$tmp/$1.err"; }

# 1-7. Every way a launcher starts a program.
for mode in fork vfork execveat fexecve spawn threads forked system popen; do
    compare "$mode" "$launcher" "$mode" 8 "$task" exit 3
    ok $? "$mode: output, exit codes and fds as without interception"
done
for mode in fork vfork execveat fexecve spawn threads system popen; do
    n=$(forked "$mode")
    [ "$n" = 8 ]
    ok $? "$mode: all 8 starts forked by a zygote ($n)"
done
[ "$(forked forked)" = 16 ]
ok $? "a launcher's own fork without exec keeps launching through it ($(forked forked) of 16)"
grep -qx 'no other child' "$tmp/fork.icpt" && grep -qx 'no other child' "$tmp/vfork.icpt" &&
    grep -qx 'no other child' "$tmp/spawn.icpt"
ok $? "the launcher's waitpid(-1) finds no child it did not start (no zygote)"
# has_fds FILE: every task's fds list has 5 and not 6.
has_fds() {
    awk '/^task / { for (i = 1; i <= NF; i++) if ($i ~ /^fds=/) {
             n = split(substr($i, 5), f, ","); five = six = 0
             for (k = 1; k <= n; k++) { five += f[k] == 5; six += f[k] == 6 }
             if (!five || six) bad = 1; seen = 1 } }
         END { exit !(seen && !bad) }' "$1"
}
has_fds "$tmp/fork.icpt" && has_fds "$tmp/spawn.icpt" && has_fds "$tmp/vfork.icpt"
ok $? "tasks have the inherited fd 5 and not the close-on-exec fd 6"

# 8-9. posix_spawnp searches PATH as exec would.
taskdir=$(dirname "$task")
compare spawnp env PATH="$taskdir:$PATH" "$launcher" spawnp 4 intercept-task exit 0
ok $? "posix_spawnp: the program found in PATH, output as without"
[ "$(forked spawnp)" = 4 ]
ok $? "posix_spawnp: routed ($(forked spawnp) of 4)"

# 10-11. Exit by a signal, and exec errors: errno as exec gives it.
compare raise "$launcher" fork 3 "$task" raise 15
ok $? "a task killed by SIGTERM: the launcher sees SIGTERM"
printf '#!/bin/nonexistent\n' >"$tmp/badinterp"
chmod +x "$tmp/badinterp"
: >"$tmp/notexec"
ok=0
for mode in fork vfork execveat spawn; do
    for prog in "$tmp/missing" "$tmp/notexec" "$tmp/badinterp"; do
        compare "err-$mode" "$launcher" "$mode" 2 "$prog" || ok=1
        grep -q 'error' "$tmp/err-$mode.icpt" || ok=1
    done
done
ok $ok "exec errors (ENOENT, EACCES, a missing interpreter): the same errno with and without"

# 12. What the task sees equals what exec gives (probe: argv, env, fds,
#     cwd, umask, limits, signals, CPUs...), but its parent and pids.  The
#     plain run has the interception library switched off (the same
#     environment, pspawn's included).
probe_view() {
    (cd "$tmp" && umask 027 && "$@" 2>"$tmp/probe.err") |
        grep -vE '^(x\.|parent\.|pgrp\.pgid|exe\.path|probe=|launch |no other|env\.PSPAWN_INTERCEPT)'
}
probe_view env PSPAWN_INTERCEPT=off "$pspawn" --intercept -- "$launcher" fork 1 "$probe" a "b c" \
    >"$tmp/probe.plain"
probe_view "$pspawn" --intercept --after 1 --idle 2 -- "$launcher" fork 1 "$probe" a "b c" \
    >"$tmp/probe.icpt"
n=$(grep -c 'probe) forked by the zygote' "$tmp/probe.err")
[ "$n" = 1 ] && [ -s "$tmp/probe.plain" ] && cmp -s "$tmp/probe.plain" "$tmp/probe.icpt"
ok $? "a routed task's view (argv, env, fds, cwd, umask, limits, signals...) equals exec's" ||
    diff "$tmp/probe.plain" "$tmp/probe.icpt" | head -10 | sed 's/^/# /'

# 13-15. Signals: a kill() of the launcher's child reaches the task once,
#        a kill() of its process group once too, and a SIGKILL of the
#        child kills the task.
compare sigpid "$launcher" sigpid "$task"
ok $? "kill(child, SIGTERM) reaches the task (its handler's exit code)"
compare siggroup "$launcher" siggroup "$task"
ok $? "kill(-group, SIGUSR1) reaches the task exactly once"
compare kill9 "$launcher" kill9 "$task"
grep -qx 'task gone' "$tmp/kill9.icpt"
ok $? "SIGKILL of the launcher's child ends the task too"

# 16-17. What is never routed: a static program, a #! script.
printf '#!/bin/sh\necho script "$1"\n' >"$tmp/script"
chmod +x "$tmp/script"
compare static "$launcher" fork 3 "$TESTS_BUILDDIR/task-static" exit 4
[ $? = 0 ] && [ "$(forked static)" = 0 ]
ok $? "a static program: exec'd, output as without"
compare script "$launcher" fork 3 "$tmp/script" x
[ $? = 0 ] && [ "$(forked script)" = 0 ]
ok $? "a #! script: exec'd as is, output as without"

# PSPAWN_DEBUG says why each of them was not routed.
grep -q "not routed (static: .*task-static" "$tmp/static.err" &&
    grep -q "not routed (a #! script: .*$tmp/script" "$tmp/script.err"
ok $? "PSPAWN_DEBUG: why a static program and a script are not routed" ||
    diag_stderr "$tmp/script.err" 5

# A set-user-ID program, and one with file capabilities (as root, with
# setcap), are exec'd: exec raises their ids or capabilities, a fork of a
# zygote would not.
cp "$task" "$tmp/bin/suid-task" && chmod u+s "$tmp/bin/suid-task"
compare suid "$launcher" fork 2 "$tmp/bin/suid-task" exit 0
[ $? = 0 ] && [ "$(grep -c 'suid-task) forked' "$tmp/suid.err")" = 0 ] &&
    grep -q "not routed (set-user-ID or set-group-ID: .*suid-task" "$tmp/suid.err"
ok $? "a set-user-ID program: exec'd, and PSPAWN_DEBUG says why" || diag_stderr "$tmp/suid.err" 5
if [ "$(id -u)" = 0 ] && command -v setcap >/dev/null &&
    cp "$task" "$tmp/bin/caps-task" && setcap cap_net_raw+ep "$tmp/bin/caps-task" 2>/dev/null; then
    compare caps "$launcher" fork 2 "$tmp/bin/caps-task" exit 0
    [ $? = 0 ] && [ "$(grep -c 'caps-task) forked' "$tmp/caps.err")" = 0 ] &&
        grep -q "not routed (file capabilities: .*caps-task" "$tmp/caps.err"
    ok $? "a program with file capabilities: exec'd, and PSPAWN_DEBUG says why" ||
        diag_stderr "$tmp/caps.err" 5
else
    skip "needs root and setcap" "a program with file capabilities: exec'd"
fi

# stdbuf: its library sets stdout's buffering in a constructor from
# _STDBUF_O; a zygote started with one value must not serve another.
compare stdbuf sh -c 'for m in L 4096 L 0 4096; do stdbuf -o$m "$1" bufmode $m; done' sh "$task"
[ $? = 0 ] && [ "$(grep -c 'intercept-task) forked' "$tmp/stdbuf.err")" -ge 2 ]
ok $? "stdbuf -oL, -o4096, -o0 in turn: each task buffered as told, as without interception"

# A variable a constructor reads: the zygote's value, unless
# PSPAWN_CTOR_VARS names it (then each value gets a zygote of its own).
ctorvars='for v in a b a c; do INTERCEPT_CTOR_VAR=$v "$1" ctorvar; done'
compare ctor-listed env PSPAWN_CTOR_VARS="OTHER:INTERCEPT_CTOR_*" sh -c "$ctorvars" sh "$task"
[ $? = 0 ] && [ "$(grep -c 'intercept-task) forked' "$tmp/ctor-listed.err")" = 4 ]
ok $? "PSPAWN_CTOR_VARS names a variable a constructor reads: each task sees its own value"
(cd "$tmp" && "$pspawn" --intercept --after 1 --idle 2 -- sh -c "$ctorvars" sh "$task") \
    >"$tmp/ctor-unlisted.out" 2>/dev/null
[ "$(sort -u "$tmp/ctor-unlisted.out")" = "ctorvar a" ]
ok $? "without it, a routed task sees the value its zygote's constructor read (documented)"

# A task's rank, which a launcher gives each task: not in the zygote that
# the first task's start made, so no routed task's constructor reads the
# first one's (documented: they read none); main reads its own.
ranks='for r in 0 1 2; do PMI_RANK=$r SLURM_PROCID=$r "$1" rank; done'
(cd "$tmp" && "$pspawn" --intercept --after 1 --idle 2 -- sh -c "$ranks" sh "$task") \
    >"$tmp/rank.out" 2>"$tmp/rank.err"
[ "$(grep -c 'intercept-task) forked' "$tmp/rank.err")" = 3 ] &&
    [ "$(grep -c '^rank at load PMI_RANK=(unset) SLURM_PROCID=(unset), in main PMI_RANK=[012]$' "$tmp/rank.out")" = 3 ] &&
    [ "$(sed 's/.* //' "$tmp/rank.out" | sort -u | wc -l)" = 3 ]
ok $? "routed tasks' constructors read no rank (not the first task's), main its own: $(tr '\n' ';' <"$tmp/rank.out")"
compare rank-listed env PSPAWN_CTOR_VARS=PMI_RANK:SLURM_PROCID sh -c "$ranks" sh "$task"
ok $? "rank variables PSPAWN_CTOR_VARS lists: each task's constructor reads its own, as exec'd"

# 18. By default a program is routed from its second start on.
(cd "$tmp" && "$pspawn" --intercept --idle 2 -- "$launcher" fork 5 "$task" exit 0) \
    >/dev/null 2>"$tmp/default.err"
[ "$(forked default)" = 4 ] &&
    [ "$(grep -c 'not routed (start 1 of 2 before routing).*intercept-task' "$tmp/default.err")" = 1 ]
ok $? "default: the first start exec'd (PSPAWN_DEBUG says so), the next four forked ($(forked default))"

# 19. --skip keeps a program out.
(cd "$tmp" && "$pspawn" --intercept --after 1 --skip intercept-task -- "$launcher" fork 3 \
    "$task" exit 0) >/dev/null 2>"$tmp/skip.err"
[ "$(routed skip)" = 0 ] && grep -q 'not routed (--skip).*intercept-task' "$tmp/skip.err"
ok $? "--skip NAME: never routed, and PSPAWN_DEBUG says why"

# 20. Nothing is left behind: no zygote, no table.
# tables NAME: how many of the tables the run NAME made are left.
tables() {
    for _s in $(sed -n 's/.*interception scope \([0-9a-f]*\).*/\1/p' "$tmp/$1.err"); do
        ls "/dev/shm/pspawn-intercept.$(id -u).$_s" 2>/dev/null
    done | wc -l
}
sleep 0.3
left=$(pgrep -u "$(id -u)" -f "$task" | wc -l)
t=0
for run in fork vfork execveat fexecve spawn threads system popen spawnp raise sigpid siggroup kill9 default skip; do
    t=$((t + $(tables "$run")))
done
[ "$left" = 0 ] && [ "$t" = 0 ] && [ -n "$(sed -n 's/.*interception scope //p' "$tmp/fork.err")" ]
ok $? "after pspawn --intercept: no zygote ($left) and no table ($t) left"

# 21. A bare LD_PRELOAD makes its own scope, ends it at its end, and the
#     zygote ends after its idle time.
(cd "$tmp" && LD_PRELOAD="$PSPAWN_INTERCEPT_LIB" PSPAWN_INTERCEPT_AFTER=1 \
    PSPAWN_INTERCEPT_IDLE=0.5 "$launcher" fork 4 "$task" exit 0) >"$tmp/bare.out" \
    2>"$tmp/bare.err"
n=$(forked bare)
sleep 1.5
left=$(pgrep -u "$(id -u)" -f "$task" | wc -l)
t=$(tables bare)
[ "$n" = 4 ] && [ "$left" = 0 ] && [ "$t" = 0 ] && grep -qx 'no other child' "$tmp/bare.out" &&
    grep -q 'made the interception scope' "$tmp/bare.err"
ok $? "bare LD_PRELOAD: routed ($n of 4), no zygote ($left) nor table ($t) after it"

# 22. A program with setenv of its own (bash binds shell variables with
#     it): neither its zygote's variables nor its channels reach a task.
"$pspawn" -n 2 /bin/bash -c 'env' >"$tmp/bash.env" 2>/dev/null
! grep -q PSPAWN_ZYGOTE "$tmp/bash.env" && grep -q '^PATH=' "$tmp/bash.env"
ok $? "bash forked from a zygote exports none of the zygote's variables"

# pspawn --help names the interception and its options.
"$pspawn" --help >"$tmp/help" 2>&1
ok=0
for opt in --intercept --after --idle --skip --priority; do
    grep -q -- "$opt" "$tmp/help" || { ok=1; echo "# pspawn --help lacks $opt"; }
done
ok $ok "pspawn --help lists --intercept and its options"

# 23. Usage errors.
"$pspawn" --intercept --after 0 -- true 2>/dev/null
[ $? = 2 ]
ok $? "pspawn --intercept --after 0: a usage error (status 2)"

tap_done
