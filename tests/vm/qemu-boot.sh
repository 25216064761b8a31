# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/qemu-boot.sh - sourced by the guest scripts of tests/vm/.
#
# qemu_boot LOG MARKER START LIMIT QEMU_ARGV...: runs one guest, its
# console into LOG, and returns qemu's status once it exits.  Returns 3
# when KVM stopped with an internal error (nested KVM that cannot run the
# guest's kernel: qemu then pauses the guest instead of exiting) or when
# MARKER (the guest's checks beginning) was not in LOG after START seconds;
# 124 after LIMIT seconds.  $why says what happened, for the caller to
# print (qemu's own error line where it exited).
qemu_boot() {
    local log=$1 marker=$2 start=$3 limit=$4 pid waited=0 st
    shift 4
    : >"$log"
    # In a shell of its own, which reaps qemu: what bash says of a qemu
    # that aborts ("failed to set MSR" under nested KVM) goes to LOG, and a
    # TERM to that shell stops qemu.
    ( trap 'kill "$q" 2>/dev/null' TERM
      "$@" &
      q=$!
      wait "$q"; st=$?
      wait "$q" 2>/dev/null
      exit $st ) </dev/null >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if grep -q 'KVM internal error' "$log"; then
            why=$(grep -m1 'KVM internal error' "$log" | tr -d '\r')
            kill "$pid"; wait "$pid"; return 3
        fi
        if [ $waited -ge "$start" ] && ! grep -q "$marker" "$log"; then
            why="the checks had not begun after $start s"
            kill "$pid"; wait "$pid"; return 3
        fi
        if [ $waited -ge "$limit" ]; then
            why="still running after $limit s"
            kill "$pid"; wait "$pid"; return 124
        fi
        sleep 1; waited=$((waited + 1))
    done
    wait "$pid"; st=$?
    why="qemu exited with status $st: $(grep -m1 -v -e 'warning' -e "$marker" "$log" | tr -d '\r')"
    return $st
}
