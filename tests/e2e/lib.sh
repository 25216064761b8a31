# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - helpers of the end-to-end tests (sourced, bash): TAP output and
# commands run in the mini-cluster's controller as alice.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# taplib.sh wants the build's variables; the e2e tests use none of them.
PSPAWN_BIN=${PSPAWN_BIN:-unused} TESTS_BUILDDIR=${TESTS_BUILDDIR:-unused}
. "$repo/tests/fixtures/taplib.sh"
CTL=${PSPAWN_CTL:-pspawn-slurmctld}
E2E=/home/alice/e2e

# The flavour (tests/e2e/run, docker/cluster): trixie, or sid.  PRRTE's own
# ODLS component is "default" in PRRTE 3.0 (trixie) and "pdefault" since
# PRRTE 4.0 (sid's 5.0.0~rc1): the tests call it "default" (file names,
# messages) and give mpirun $(odls_name default).
PSPAWN_FLAVOUR=${PSPAWN_FLAVOUR:-trixie}
case $PSPAWN_FLAVOUR in
    sid) ODLS_DEFAULT=pdefault ;;
    *) ODLS_DEFAULT=default ;;
esac
odls_name() { if [ "$1" = default ]; then echo "$ODLS_DEFAULT"; else echo "$1"; fi; }

# What a flavour's packages lack, asked of the running cluster (cached):
# srun's mpi/pmix (Debian sid's Slurm 26.05.5 removed it: "Remove pmix
# (Closes: #1149781)"), and our ODLS component (not built where the image
# has no source of the installed PRRTE: sid, whose `apt-get source prrte`
# answers 404 on this project's mirror).  The tests that need one skip,
# saying why; never counted as passed.
NO_PMIX_WHY="this Slurm has no mpi/pmix (srun --mpi=list; Debian sid's 26.05.5 removed it)"
NO_ODLS_WHY="the pspawn ODLS component is not installed on the nodes (no source of the installed PRRTE when the image was built: docker/README.md)"
have_srun_pmix() {
    [ -n "${HAVE_SRUN_PMIX:-}" ] || HAVE_SRUN_PMIX=$(ax "srun --mpi=list" 2>&1 | grep -qw pmix && echo 1 || echo 0)
    [ "$HAVE_SRUN_PMIX" = 1 ]
}
have_odls_pspawn() {
    [ -n "${HAVE_ODLS_PSPAWN:-}" ] ||
        HAVE_ODLS_PSPAWN=$(on c1 "find /usr/lib /usr/local/lib -name prte_mca_odls_pspawn.so -print -quit 2>/dev/null" | grep -q . && echo 1 || echo 0)
    [ "$HAVE_ODLS_PSPAWN" = 1 ]
}

# ax CMD: run the bash command line CMD as alice in $E2E on the controller.
ax() { docker exec -i -u alice -w /home/alice "$CTL" bash -c "cd $E2E 2>/dev/null; $1"; }
# bx CMD: the same as bob.
bx() { docker exec -i -u bob -w /home/bob "$CTL" bash -c "$1"; }
# on NODE CMD: run CMD as root on a compute node.
on() { docker exec "pspawn-$1" bash -c "$2"; }

# settled: wait (at most 10 s) until no node is still completing a job (a
# job's extern step, PrologFlags=Contain, goes after its last step), so
# that the scheduler gives two runs compared side by side the same nodes.
settled() {
    local i
    for i in $(seq 50); do
        ax "sinfo -h -N -o %T" 2>/dev/null | grep -q completing || return 0
        sleep 0.2
    done
}

# both NAME SRUN_ARGS [PSPAWN]: run `srun SRUN_ARGS` plain and with --pspawn
# (or PSPAWN, e.g. --pspawn=on,modules=numpy); the
# outputs (stdout+stderr) land in $tmp/NAME.plain / NAME.pspawn, the exit
# codes in $rc_plain / $rc_pspawn.  srun's words about the job waiting
# for nodes (still held by the job before, seen once in CI) are about the
# scheduler, not the step: they are left out.
both() {
    settled
    ax "srun $2" >"$tmp/$1.plain" 2>&1
    rc_plain=$?
    settled
    ax "srun ${3:---pspawn} $2" >"$tmp/$1.pspawn" 2>&1
    rc_pspawn=$?
    drop_queue_words "$tmp/$1.plain" "$tmp/$1.pspawn"
}

# drop_queue_words FILE...: Slurm's words about its queue, which come when
# the last job's nodes were still completing, left out of each FILE.
drop_queue_words() {
    sed -i -E '/^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$/d' "$@"
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
