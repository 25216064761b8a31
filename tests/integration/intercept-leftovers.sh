#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What pspawn --intercept leaves behind, however it ends: no table of its
# scope (a sealed memfd it holds, not a file), even when it is killed
# with SIGKILL, and no zygote left unreaped to an init that does not reap
# (a container's): it reaps the zygotes it stops.  Nor does a parked
# zygote hold what an exec'd task holds only while it runs: its program
# (a launcher may write it again at once: no ETXTBSY, and the new version
# runs) and its first task's working directory (a umount of it is not
# "busy").
. "$TESTS_SRCDIR/taplib.sh"

pspawn=$PSPAWN_BIN
launcher=$TESTS_BUILDDIR/intercept-launcher
task=$TESTS_BUILDDIR/intercept-task
[ -x "$launcher" ] && [ -x "$task" ] || bail "no $launcher or $task"
command -v python3 >/dev/null || bail "no python3"
# A copy of our own, so that the counts below see no other test's tasks.
mkdir -p "$tmp/bin" && cp "$task" "$tmp/bin/leftover-task" || bail "cannot copy $task"
task=$tmp/bin/leftover-task
unset PSPAWN_INTERCEPT_SCOPE PSPAWN_INTERCEPT_TABLE PSPAWN_INTERCEPT_AFTER LD_PRELOAD
export PSPAWN_DEBUG=1
# This tests the routing itself: every program a zygote can serve is
# routed, whether or not a fork beats its exec (intercept-gain.sh tests that).
export PSPAWN_INTERCEPT_ROUTE=all
uid=$(id -u)

# shm_files SCOPE: the files in /dev/shm that name SCOPE.
shm_files() { ls /dev/shm 2>/dev/null | grep -c "$1"; }

# 1-4. pspawn killed with SIGKILL while its launcher runs on.  The
#      launcher (sh) starts the task twice (routed), kills pspawn, waits
#      for the zygote's idle end, and starts the task again.
rm -f "$tmp/k.out"
(cd "$tmp" && "$pspawn" --intercept --after 1 --idle 1 -- sh -c '
    "$1" exit 0 && "$1" exit 0
    echo "scope $PSPAWN_INTERCEPT_SCOPE"
    kill -KILL $PPID
    sleep 2.5
    "$1" exit 0
    echo done' sh "$task") >"$tmp/k.out" 2>"$tmp/k.err"
st=$?
wait_until 20 grep -qx done "$tmp/k.out"
scope=$(sed -n 's/^scope //p' "$tmp/k.out")
[ "$st" = 137 ] && [ -n "$scope" ]
ok $? "pspawn --intercept killed by SIGKILL (status $st), its launcher going on"
n=$(grep -c 'leftover-task) forked by the zygote' "$tmp/k.err")
[ "$n" = 2 ]
ok $? "before: both starts routed through a zygote ($n)"
[ "$(grep -c '^task ' "$tmp/k.out")" = 3 ] &&
    grep -q 'no scope table; nothing is routed' "$tmp/k.err"
ok $? "after: the launcher's next start is exec'd, as without interception" ||
    diag_stderr "$tmp/k.err" 10
left=$(shm_files "$scope")
no_zygote() { ! pgrep -u "$uid" -f "$task" >/dev/null; }
wait_until 10 no_zygote
zyg=$(pgrep -u "$uid" -f "$task" | wc -l)
[ "$left" = 0 ] && [ "$zyg" = 0 ]
ok $? "nothing of the killed scope is left: no table in /dev/shm ($left), no zygote after its idle time ($zyg)"

# 5-6. Under a subreaper that never reaps (a container's init): once
#      pspawn has ended, none of its zygotes is left as a zombie, nor alive.
cat >"$tmp/noreap.py" <<'EOF'
import ctypes, os, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
os.waitpid(pid, 0)      # pspawn only: what it leaves is ours now
time.sleep(1.5)         # a stopped zygote ends within this
zombies = alive = 0
for p in os.listdir("/proc"):
    try:
        with open(f"/proc/{p}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        continue
    if int(st[1]) == os.getpid():
        if st[0] == "Z":
            zombies += 1
        else:
            alive += 1
print(f"zombies {zombies} alive {alive}")
EOF
(cd "$tmp" && python3 "$tmp/noreap.py" "$pspawn" --intercept --after 1 --idle 30 -- \
    "$launcher" fork 4 "$task" exit 0) >"$tmp/z.out" 2>"$tmp/z.err"
n=$(grep -c 'leftover-task) forked by the zygote' "$tmp/z.err")
[ "$n" = 4 ] && [ "$(grep -c '^task ' "$tmp/z.out")" = 4 ]
ok $? "under a subreaper that does not reap: the launcher's 4 starts routed ($n)"
grep -qx 'zombies 0 alive 0' "$tmp/z.out"
ok $? "no zygote left to it, neither a zombie nor alive ($(grep zombies "$tmp/z.out"))"

# 7-9. A program rewritten right after its routed starts, in place (cp
#      opens it O_TRUNC; the shell's > too), as a build relinks and reruns
#      a test program: the same as without interception.
mkdir -p "$tmp/w"
cat >"$tmp/rewrite.sh" <<'EOF'
cp "$1" t && ./t exit 0 && ./t exit 0
cp "$2" ./t && echo "cp: $?" && ./t v2 && ./t v2
cat "$1" >t && echo "cat: $?" && ./t exit 0
EOF
(cd "$tmp/w" && rm -f t && sh "$tmp/rewrite.sh" "$task" /bin/echo) >"$tmp/rw.plain" 2>&1
(cd "$tmp/w" && rm -f t && "$pspawn" --intercept --after 1 --idle 30 -- \
    sh "$tmp/rewrite.sh" "$task" /bin/echo) >"$tmp/rw.out" 2>"$tmp/rw.err"
grep -v '^pspawn' "$tmp/rw.err" >>"$tmp/rw.out"
n=$(grep -c '(./t) forked by the zygote' "$tmp/rw.err")
[ "$n" -ge 4 ]
ok $? "a program's starts before and after each rewrite routed ($n)" || diag_stderr "$tmp/rw.err"
cmp -s "$tmp/rw.plain" "$tmp/rw.out"
ok $? "rewritten in place by cp and by the shell's > after routed starts: no 'Text file busy', the new version runs, as without interception" ||
    { diag_file "$tmp/rw.plain"; diag_file "$tmp/rw.out"; }
grep -c 'holds a program being written: told to end' "$tmp/rw.err" | grep -qx 2
ok $? "PSPAWN_DEBUG names each parked zygote told to end for a write of its program"

# 10-11. The working directory of the first task: a parked zygote holds
#        none.  Its tasks still run in theirs.
mkdir -p "$tmp/cwd1" "$tmp/cwd2"
(cd "$tmp/cwd1" && "$pspawn" --intercept --after 1 --idle 30 -- sh -c '
    "$1" exit 0 && "$1" exit 0 && cd "$2" && "$1" exit 0
    for p in $(pgrep -u "$(id -u)" -f "$1"); do
        [ "$(readlink /proc/$p/exe)" = "$1" ] && echo "zygote cwd $(readlink /proc/$p/cwd)"
    done
    ' sh "$task" "$tmp/cwd2") >"$tmp/cwd.out" 2>"$tmp/cwd.err"
grep -q "cwd=$tmp/cwd1 " "$tmp/cwd.out" && grep -q "cwd=$tmp/cwd2 " "$tmp/cwd.out" &&
    [ "$(grep -c '(.*leftover-task) forked by the zygote' "$tmp/cwd.err")" -ge 2 ]
ok $? "routed tasks run in their launcher's working directory, the first one's and another" ||
    diag_file "$tmp/cwd.out"
grep -qx 'zygote cwd /' "$tmp/cwd.out" && ! grep 'zygote cwd' "$tmp/cwd.out" | grep -qvx 'zygote cwd /'
ok $? "the parked zygote holds no directory of its tasks (its cwd is /)" || diag_file "$tmp/cwd.out"

# 12. What a user sees of it: the file system the first task ran in can
#     be unmounted once the tasks are done, as without interception.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    mkdir -p "$tmp/mnt"
    umount_after() {
        unshare -m sh -c 'mount -t tmpfs none "$1" &&
            $2 sh -c "cd \"\$2\" && \"\$1\" exit 0 >/dev/null && \"\$1\" exit 0 >/dev/null; cd /; umount \"\$2\" && echo unmounted" sh "$3" "$1"' \
            sh "$tmp/mnt" "$1" "$task" 2>&1 | grep -v '^pspawn'
    }
    plain=$(umount_after "")
    routed=$(umount_after "$pspawn --intercept --after 1 --idle 30 --")
    [ "$plain" = unmounted ] && [ "$routed" = "$plain" ]
    ok $? "the first task's file system unmounts after its routed tasks end (plain: '$plain', routed: '$routed')"
else
    skip "needs root and mount namespaces" "the first task's file system unmounts after its routed tasks end"
fi

tap_done
