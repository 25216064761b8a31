#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# parity-fanout.sh - through sub-zygotes, a task still sees exactly what an
# exec'd one sees: the API parity suite (tests/integration/parity-api-state,
# -attrs and -calls: the launcher's state, every attribute, the calls and
# the vector form, the fallbacks) run again with the options
# fanout=core (a zygote per CPU, tasks spread over them or sent by their
# binding) and each kind of sub-zygote, and the pspawn command's (parity.sh)
# with --fanout core.  Its results are repeated here, prefixed.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

if [ "$(nproc)" -lt 2 ]; then
    skip "one CPU" "fan-out parity"
    tap_done
    exit 0
fi
# relay PREFIX: the TAP lines of stdin as ours.
relay() {
    _n=0
    while IFS= read -r line; do
        case $line in
            "ok "*) ok 0 "$1: ${line#* - }"; _n=$((_n + 1)) ;;
            "not ok "*) ok 1 "$1: ${line#* - }"; _n=$((_n + 1)) ;;
            "#"*) echo "$line" ;;
            "Bail out!"*) ok 1 "$1: $line"; _n=$((_n + 1)) ;;
        esac
    done
    [ "$_n" -gt 0 ] || ok 1 "$1: the suite ran"
}
for sub in exec fork replicate; do
    for part in state attrs calls; do
        PSPAWN_OPTIONS=fanout=core,subzygote=$sub "$TESTS_BUILDDIR/../integration/parity-api-$part" 2>&1 |
            relay "subzygote=$sub" >"$tmp/out"
        cat "$tmp/out"
        tap_n=$((tap_n + $(grep -c '^\(not \)\{0,1\}ok ' "$tmp/out")))
        tap_failed=$((tap_failed + $(grep -c '^not ok ' "$tmp/out")))
    done
done
PSPAWN_OPTIONS=fanout=core sh "$TESTS_SRCDIR/../integration/parity.sh" 2>&1 | relay "pspawn --fanout core" >"$tmp/out"
cat "$tmp/out"
tap_n=$((tap_n + $(grep -c '^\(not \)\{0,1\}ok ' "$tmp/out")))
tap_failed=$((tap_failed + $(grep -c '^not ok ' "$tmp/out")))
tap_done
