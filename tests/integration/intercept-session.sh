#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A routed task keeps what an exec'd program would have of its session
# and of job control: a session leader keeps its controlling terminal
# (script(1) and Python's pty.spawn start one, twice so that the second
# start is routed through the zygote the first one made), and a SIGSTOP
# that the launcher sends its child stops the task, which SIGCONT goes on
# with.  Each case runs plain and under pspawn --intercept and compares.
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
command -v script >/dev/null || bail "no script(1)"
command -v python3 >/dev/null || bail "no python3"
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_TABLE PSPAWN_INTERCEPT_AFTER LD_PRELOAD
export PSPAWN_DEBUG=1 SHELL=/bin/sh
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all

# both NAME CMD...: CMD's output plain, then under pspawn --intercept
# --after 1 (every start routed) with PSPAWN_DEBUG's lines apart.
both() {
    _name=$1
    shift
    (cd "$tmp" && PSPAWN_DEBUG=0 "$@") >"$tmp/$_name.plain" 2>&1
    (cd "$tmp" && "$pspawn" --intercept --after 1 --idle 5 -- "$@") >"$tmp/$_name.all" 2>&1
    grep -a '^pspawn' "$tmp/$_name.all" >"$tmp/$_name.err"
    grep -av '^pspawn' "$tmp/$_name.all" >"$tmp/$_name.icpt"
}
# same NAME: the outputs agree.  NUL bytes are left out of both: script(1)
# now and then passes one on from the terminal's master side ahead of the
# text (seen once, in the plain run of a fresh clone's tests/run on
# 2026-11-27), which is the pty's, not the commands'.
same() {
    tr -d '\000' <"$tmp/$1.plain" >"$tmp/$1.plain.t" && tr -d '\000' <"$tmp/$1.icpt" >"$tmp/$1.icpt.t"
    cmp -s "$tmp/$1.plain.t" "$tmp/$1.icpt.t" && [ -s "$tmp/$1.plain.t" ] && return 0
    diag "plain:"; diag_file "$tmp/$1.plain"; diag "intercepted:"; diag_file "$tmp/$1.icpt"
    diag_stderr "$tmp/$1.err" 12
    return 1
}

# 1-3. script(1)'s child leads a session on a new terminal, then execs
#      the shell: the shell, and what it starts, write to /dev/tty.
both script sh -c 'for i in 1 2; do
    script -qec "echo leader \$0 >/dev/tty && sh -c \"echo child >/dev/tty\"" /dev/null
done'
n=$(grep -c '(/bin/sh) forked by the zygote' "$tmp/script.err")
[ "$n" -ge 2 ]
ok $? "script(1)'s session leader and its child routed ($n tasks of /bin/sh)" ||
    diag_stderr "$tmp/script.err"
same script
ok $? "a routed session leader keeps its controlling terminal: /dev/tty opens, as without interception"
! grep -q 'controlling terminal' "$tmp/script.err"
ok $? "no start exec'd for want of the terminal" || diag "$(grep 'controlling terminal' "$tmp/script.err")"

# 4-5. Python's pty.spawn, twice: the second child is a routed session
#      leader too.
cat >"$tmp/ptyspawn.py" <<'EOF'
import os, pty, sys
for i in range(2):
    st = pty.spawn(["sh", "-c", "echo spawn%s >/dev/tty && test -t 0 && echo tty-in" % i])
    sys.stdout.write("status %d\n" % os.waitstatus_to_exitcode(st))
EOF
both ptyspawn python3 "$tmp/ptyspawn.py"
n=$(grep -c '(/usr/bin/sh) forked by the zygote\|(/bin/sh) forked by the zygote' "$tmp/ptyspawn.err")
[ "$n" -ge 1 ]
ok $? "pty.spawn's children routed ($n)" || diag_stderr "$tmp/ptyspawn.err"
same ptyspawn
ok $? "pty.spawn twice: each child opens /dev/tty and exits 0, as without interception"

# 6-8. SIGSTOP and SIGCONT from the launcher to its child, which writes
#      all the time: stopped, it writes nothing; continued, it writes again.
cat >"$tmp/stop.py" <<'EOF'
import os, signal, subprocess, sys, time
out = sys.argv[1]

def grows(since, limit):
    """Whether the file grows past SINCE within LIMIT s (polled: a routed
    first start also starts its zygote, which a busy machine slows)."""
    end = time.time() + limit
    while time.time() < end:
        if os.path.getsize(out) > since:
            return True
        time.sleep(0.02)
    return False

with open(out, "w") as f:
    for run in range(2):
        # A process group of its own, whose parent is in another: never an
        # orphaned group, to which the kernel sends SIGHUP and SIGCONT when
        # any exit orphans it while a member is stopped (make check, run
        # by a session leader, puts every test in one orphaned group).
        p = subprocess.Popen(["sh", "-c", "while :; do echo 0123456789abcdef; done"], stdout=f,
                             preexec_fn=os.setpgrp)
        writing = grows(os.path.getsize(out), 30)
        time.sleep(0.3)
        os.kill(p.pid, signal.SIGSTOP)
        _, st = os.waitpid(p.pid, os.WUNTRACED)
        time.sleep(0.2)
        a = os.path.getsize(out); time.sleep(0.5); b = os.path.getsize(out)
        os.kill(p.pid, signal.SIGCONT)
        c = grows(b, 30)
        os.kill(p.pid, signal.SIGTERM)
        _, end = os.waitpid(p.pid, 0)
        print("run %d: writing %s, stopped by %s, wrote while stopped %s, wrote once continued %s, "
              "ended by %s" % (run, writing, os.WSTOPSIG(st) if os.WIFSTOPPED(st) else "-", b > a,
                               c, os.WTERMSIG(end) if os.WIFSIGNALED(end) else "exit"))
EOF
both stop python3 "$tmp/stop.py" "$tmp/stop.data"
n=$(grep -c '(/usr/bin/sh) forked by the zygote\|(/bin/sh) forked by the zygote' "$tmp/stop.err")
[ "$n" -ge 2 ]
ok $? "the writing children routed ($n)" || diag_stderr "$tmp/stop.err"
grep -q 'run 1: writing True, stopped by 19, wrote while stopped False, wrote once continued True, ended by 15' \
    "$tmp/stop.plain"
ok $? "plain: SIGSTOP stops the child, SIGCONT continues it" || diag_file "$tmp/stop.plain"
same stop
ok $? "routed: the task stops with its stand-in and goes on with it, as without interception"

tap_done
