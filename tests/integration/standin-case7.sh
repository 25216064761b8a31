# SPDX-License-Identifier: BSD-3-Clause
# standin-case7.sh - case 7 of standin.sh, sourced by it and by
# standin-case7-loop.sh (which runs it alone, many times).
#
# kill_batch DELAY [LATE]: a batch of 8 stand-ins of one step; the zygote
# killed DELAY ms after it parked.  Every task runs exactly once (forked,
# or exec'd by its stand-in when the zygote went before it had the task's
# pid), every stand-in exits 0, and none hangs.  LATE: that rank starts
# only once the others are done, so that it finds no zygote and starts
# one, for itself alone: it must not wait for that zygote as for one that
# serves the node's 8 tasks (a stand-in slow to start did that, 60 s, and
# hung the case once).  Needs $shim, $task, $uid, $tmp and
# taplib's ok, diag and diag_file.
kill_batch() {
    _delay=$1 _late=${2:-}
    export PSPAWN_SHIM_KEY="$uid.$$.7.$_delay${_late:+.late}" PSPAWN_SHIM_LOCAL_TASKS=8
    : >"$tmp/runs7"
    rm -f "$tmp"/err7.* "$tmp"/rc7.*
    for i in 0 1 2 3 4 5 6 7; do
        [ "$i" = "$_late" ] && continue
        ( PSPAWN_RANK=$i timeout 60 "$shim" "$task" append "$tmp/runs7" 2>"$tmp/err7.$i" >/dev/null
          echo $? >"$tmp/rc7.$i" ) &
    done
    _zpid=
    for _ in $(seq 400); do
        _zpid=$(sed -n 's/.*zygote \([0-9]*\) parked$/\1/p' "$tmp"/err7.* 2>/dev/null | head -n 1)
        [ -n "$_zpid" ] && break
        sleep 0.005
    done
    [ "$_delay" = 0 ] || sleep "0.0$(printf %02d "$_delay")"
    [ -n "$_zpid" ] && kill -KILL "$_zpid"
    wait
    _late_s=
    if [ -n "$_late" ]; then
        _t0=$(date +%s.%N)
        PSPAWN_RANK=$_late timeout 60 "$shim" "$task" append "$tmp/runs7" 2>"$tmp/err7.$_late" >/dev/null
        echo $? >"$tmp/rc7.$_late"
        _late_s=$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    fi
    _bad=0
    for i in 0 1 2 3 4 5 6 7; do
        _n=$(grep -c "^$i " "$tmp/runs7")
        _rc=$(cat "$tmp/rc7.$i")
        if [ "$_n" != 1 ] || [ "$_rc" != 0 ]; then
            _bad=1; diag "rank $i ran $_n times, its stand-in exited $_rc"; diag_file "$tmp/err7.$i" 6
        fi
    done
    _forked=$(cat "$tmp"/err7.* | grep -c 'forked by the zygote')
    if [ -n "$_late" ]; then
        [ -n "$_zpid" ] && [ $_bad = 0 ] && awk -v t="$_late_s" 'BEGIN { exit !(t < 10) }'
        ok $? "zygote killed $_delay ms after it parked, 8 stand-ins, rank $_late starting after the others: it starts a zygote for itself and does not wait for the node's other tasks (${_late_s}s); every task ran once"
    else
        [ $_bad = 0 ]
        ok $? "zygote killed $_delay ms after it parked, 8 stand-ins: every task ran exactly once, every stand-in exited 0, none hung ($_forked forked, $((8 - _forked)) exec'd)"
    fi
}
