#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/intercept.sh BUILD PROG N REPEATS CSV: a launcher nobody here
# wrote, `xargs -P2 -n1`, running PROG N times, plain and intercepted,
# with posix_spawn and the zygote-fork floor of the same program
# (bench/spawnbench) beside them: REPEATS rounds, the order of the four
# turned each round, medians reported.  The target:
#   plain / intercepted >= 0.7 x posix_spawn / floor.
# Intercepted is xargs with libpspawn-intercept.so preloaded, which is what
# `pspawn --intercept` does (a build tree's pspawn is a libtool wrapper
# that would give xargs and every task its LD_LIBRARY_PATH, which plain
# xargs has not); PSPAWN_INTERCEPT_IDLE=1 ends each run's zygote.
# bench/run --intercept runs it on its 500-library program; it writes CSV
# rows "scheme,n,repeat,ms_per_task" to CSV and prints the table.
set -euo pipefail
build=$1 prog=$2 n=$3 repeats=$4 csv=$5
spawnbench=$build/bench/spawnbench
export PSPAWN_PROXY=${PSPAWN_PROXY:-$build/libpspawn/.libs/libpspawn-proxy.so}
export PSPAWN_INTERCEPT_LIB=${PSPAWN_INTERCEPT_LIB:-$build/libpspawn/.libs/libpspawn-intercept.so}
export PSPAWN_INTERCEPT_STANDIN=${PSPAWN_INTERCEPT_STANDIN:-$build/libpspawn/pspawn-standin}
export PSPAWN_TOPOLOGY=${PSPAWN_TOPOLOGY:-$build/libpspawn/pspawn-topology}
for f in "$spawnbench" "$PSPAWN_INTERCEPT_LIB" "$PSPAWN_INTERCEPT_STANDIN" "$prog"; do
    [[ -e $f ]] || { echo "bench/intercept.sh: no $f" >&2; exit 1; }
done

# ms per task of one xargs run (the command's arguments after N).
xargs_run() {
    local t0 t1
    t0=$EPOCHREALTIME
    seq "$n" | "$@" xargs -P2 -n1 "$prog" >/dev/null
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.4f", (b - a) * 1000 / n }'
}

echo "scheme,n,repeat,ms_per_task" >"$csv"
for ((r = 1; r <= repeats; r++)); do
    # One order per round, turned: no scheme always runs after another.
    for ((k = 0; k < 3; k++)); do
        case $(((r + k) % 3)) in
        0)
            out=$("$spawnbench" -n "$n" -r 1 -s posix_spawn,floor -- "$prog" 2>/dev/null)
            for s in posix_spawn floor; do
                ms=$(awk -F, -v s="$s" '$1 == s { print $4 }' <<<"$out")
                echo "$s,$n,$r,$ms" >>"$csv"
                printf '  [%d/%d] %-20s %9s ms/task\n' "$r" "$repeats" "$s" "$ms" >&2
            done ;;
        1)
            ms=$(xargs_run env)
            echo "xargs,$n,$r,$ms" >>"$csv"
            printf '  [%d/%d] %-20s %9s ms/task\n' "$r" "$repeats" "xargs" "$ms" >&2 ;;
        2)
            ms=$(xargs_run env LD_PRELOAD="$PSPAWN_INTERCEPT_LIB" PSPAWN_INTERCEPT_IDLE=1)
            echo "xargs-intercepted,$n,$r,$ms" >>"$csv"
            printf '  [%d/%d] %-20s %9s ms/task\n' "$r" "$repeats" "xargs-intercepted" "$ms" >&2 ;;
        esac
    done
done

awk -F, 'NR > 1 { v[$1] = v[$1] " " $4 }
    function median(s,   a, k, i, j, t) {
        k = split(s, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        split("xargs xargs-intercepted posix_spawn floor", order, " ")
        printf "  %-22s %10s\n", "scheme", "ms/task"
        for (i = 1; i <= 4; i++) { m[order[i]] = median(v[order[i]]); printf "  %-22s %10.4f\n", order[i], m[order[i]] }
        gain = m["xargs"] / m["xargs-intercepted"]
        ceiling = m["posix_spawn"] / m["floor"]
        printf "  %-22s %9.2fx\n", "xargs / intercepted", gain
        printf "  %-22s %9.2fx\n", "posix_spawn / floor", ceiling
        share = gain / ceiling
        verdict = "NOT met"
        if (share >= 0.7) verdict = "met"
        printf "  %-22s %9.2f  (target >= 0.70: %s)\n", "share of the ceiling", share, verdict
    }' "$csv"
