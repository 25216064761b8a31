# lib.sh - helpers of the end-to-end tests (sourced, bash): TAP output and
# commands run in the mini-cluster's controller as alice.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# taplib.sh wants the build's variables; the e2e tests use none of them.
PSPAWN_BIN=${PSPAWN_BIN:-unused} TESTS_BUILDDIR=${TESTS_BUILDDIR:-unused}
. "$repo/tests/taplib.sh"
CTL=${PSPAWN_CTL:-pspawn-slurmctld}
E2E=/home/alice/e2e

# ax CMD: run the bash command line CMD as alice in $E2E on the controller.
ax() { docker exec -i -u alice -w /home/alice "$CTL" bash -c "cd $E2E 2>/dev/null; $1"; }
# bx CMD: the same as bob.
bx() { docker exec -i -u bob -w /home/bob "$CTL" bash -c "$1"; }
# on NODE CMD: run CMD as root on a compute node.
on() { docker exec "pspawn-$1" bash -c "$2"; }

# both NAME SRUN_ARGS [PSPAWN]: run `srun SRUN_ARGS` plain and with --pspawn
# (or PSPAWN, e.g. --pspawn=on,modules=numpy); the
# outputs (stdout+stderr) land in $tmp/NAME.plain / NAME.pspawn, the exit
# codes in $rc_plain / $rc_pspawn.  srun's words about the job waiting
# for nodes (still held by the job before, seen once in CI) are about the
# scheduler, not the step: they are left out.
both() {
    ax "srun $2" >"$tmp/$1.plain" 2>&1
    rc_plain=$?
    ax "srun ${3:---pspawn} $2" >"$tmp/$1.pspawn" 2>&1
    rc_pspawn=$?
    sed -i -E '/^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$/d' \
        "$tmp/$1.plain" "$tmp/$1.pspawn"
}

# same NAME DESCRIPTION [FILTER]: the two outputs agree (through FILTER,
# default: sorted).
same() {
    local f=${3:-sort}
    if diff <(eval "$f" <"$tmp/$1.plain") <(eval "$f" <"$tmp/$1.pspawn") >"$tmp/$1.diff"; then
        ok 0 "$2"
    else
        ok 1 "$2"
        diag_file "$tmp/$1.diff" 20
    fi
}
