# taplib.sh - TAP helpers for the test scripts (sourced, POSIX sh).
#
# Results are numbered as they are printed; tap_done prints the plan last.
# Every script gets a scratch directory $tmp, removed on exit.

tap_n=0
tap_failed=0

# ok COND_STATUS DESCRIPTION: COND_STATUS is 0 for a pass.
ok() {
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $tap_n - $2"
    else
        echo "not ok $tap_n - $2"
        tap_failed=$((tap_failed + 1))
    fi
    return "$1"
}

# check DESCRIPTION CMD...: a pass when CMD succeeds.
check() {
    _desc=$1
    shift
    "$@"
    ok $? "$_desc"
}

# Only for a feature that cannot exist on this machine.
skip() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $2 # SKIP $1"
}

diag() {
    printf '%s\n' "$*" | sed 's/^/# /'
}

# diag_file FILE [LINES]: show a file's beginning as diagnostics.
# unlabel FILE: srun -l output without its "N: " labels, in place.  (A
# probe's report, ~4.5 KB under srun, is over PIPE_BUF: it can reach srun
# in two reads, and unlabelled output of several tasks may then interleave
# in the middle of a line; -l makes srun print whole lines.)
unlabel() { sed -E 's/^ *[0-9]+: //' "$1" >"$1.u" && mv "$1.u" "$1"; }

diag_file() {
    if [ -s "$1" ]; then
        head -n "${2:-20}" "$1" | sed 's/^/#   | /'
    else
        echo "#   (empty: $1)"
    fi
}

# diag_stderr FILE: a command's stderr, without a sanitizer's leak report
# (which would hide everything else) or shadow byte dumps.
diag_stderr() {
    awk '/LeakSanitizer/ { exit } /^Shadow byte|^  0x|^=>/ { skip = 1 } !skip && NF' "$1" >"$1.short"
    diag_file "$1.short" "${2:-20}"
}

bail() {
    echo "Bail out! $*"
    exit 99
}

tap_done() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ] || echo "# $tap_failed of $tap_n failed"
    exit 0
}

# equal DESCRIPTION EXPECTED_FILE ACTUAL_FILE: a pass when identical.
equal() {
    if cmp -s "$2" "$3"; then
        ok 0 "$1"
    else
        ok 1 "$1"
        echo "# expected:"
        diag_file "$2"
        echo "# actual:"
        diag_file "$3"
    fi
}

# wait_until SECONDS CMD...: poll CMD every 50 ms; fails after SECONDS.
wait_until() {
    _left=$(($1 * 20))
    shift
    while ! "$@"; do
        _left=$((_left - 1))
        [ "$_left" -gt 0 ] || return 1
        sleep 0.05
    done
}

# The CPUs this shell may run on, one per line (expands "0-2,5").
allowed_cpus() {
    sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/${1:-self}/status" |
        tr ',' '\n' |
        while IFS=- read -r lo hi; do
            [ -n "$hi" ] || hi=$lo
            i=$lo
            while [ "$i" -le "$hi" ]; do
                echo "$i"
                i=$((i + 1))
            done
        done
}

: "${PSPAWN_BIN:?PSPAWN_BIN is not set (run through make check)}"
: "${TESTS_BUILDDIR:?TESTS_BUILDDIR is not set (run through make check)}"
tmp=$(mktemp -d /tmp/pspawn-test.XXXXXX) || bail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 98' HUP INT TERM
ulimit -c 0 2>/dev/null
