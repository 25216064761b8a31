#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/slurm-vm.sh [--flavour trixie|sid] [--shell] - srun --pspawn on
# Slurm's cgroup v2 as sites run it, in a QEMU guest: systemd as PID 1,
# munge, slurmctld and slurmd as units (slurmd.service with Delegate=yes),
# cgroup/v2 with ConstrainCores, ConstrainRAMSpace and ConstrainDevices,
# PrologFlags=Contain, proctrack/cgroup, task/cgroup,task/affinity and
# jobacct_gather/cgroup.  Two nodes: c1 under systemd (slurmstepd's scope
# made over D-Bus), c2 in namespaces of its own with IgnoreSystemd=yes
# (tests/vm/slurm/node-c2); slurmdbd and MariaDB on c1, for sacct.  Prints
# the TAP of tests/vm/slurm-checks.sh, which runs in the guest.
#
# The guest's root is the mini-cluster's image (docker/cluster build: Slurm,
# Open MPI, the project's .debs as a site installs them) plus systemd, D-Bus
# and Debian's cloud kernel (tests/vm/slurm/Dockerfile), exported to an
# ext4 disk.  Kernel and initramfs are that image's own.  The disk is kept
# in $PSPAWN_VM_CACHE (default /var/cache/pspawn-vm) under a key of the
# image, and each boot writes to a throw-away overlay (qemu -snapshot), so
# every run starts from the same disk.  The checks come on a second disk
# made for each run from the working tree.
#
# KVM first where /dev/kvm is there and runs the guest; QEMU's emulator
# (TCG) otherwise (nested KVM on the project's machines: FACTS.md).
#
# --shell: no checks; the guest's serial console is this terminal (root,
# no password), to look around by hand.
# SLURM_VM_TIMEOUT: seconds for the whole guest run (default 1500).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${PSPAWN_VM_CACHE:-/var/cache/pspawn-vm}
flavour=${PSPAWN_FLAVOUR:-trixie}
shell=0
while [ $# -gt 0 ]; do
    case $1 in
        --flavour|--flavor) flavour=${2:?--flavour needs trixie or sid}; shift 2 ;;
        --flavour=*|--flavor=*) flavour=${1#*=}; shift ;;
        --shell) shell=1; shift ;;
        *) echo "usage: slurm-vm.sh [--flavour trixie|sid] [--shell]" >&2; exit 2 ;;
    esac
done
name="Slurm on cgroup v2 under systemd in a QEMU guest ($flavour)"
skip() { echo "1..1"; echo "ok 1 - $name # SKIP $1"; exit 0; }
fail() { echo "1..1"; echo "not ok 1 - $name: $1"; exit 1; }
say() { echo "# $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (docker, the guest's disk with its owners)"
command -v docker >/dev/null && docker info >/dev/null 2>&1 || skip "no Docker engine to build the guest's root"
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v mke2fs >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 e2fsprogs \
        >/dev/null 2>&1 || fail "could not install qemu-system-x86"
fi

# 1. The mini-cluster's image of this flavour, then the guest's layer on it.
case $flavour in
    trixie) cluster=pspawn-cluster:latest ;;
    sid) cluster=pspawn-cluster:sid ;;
    *) fail "unknown flavour $flavour (trixie or sid)" ;;
esac
if [ "${SLURM_VM_NO_BUILD:-0}" != 1 ] || ! docker image inspect "$cluster" >/dev/null 2>&1; then
    say "building the mini-cluster's image ($flavour)"
    out=$("$repo/docker/cluster" --flavour "$flavour" build 2>&1) ||
        { echo "$out" | tail -n 20 | sed 's/^/# /'; fail "docker/cluster build failed"; }
fi
cid=$(docker image inspect -f '{{.Id}}' "$cluster") || fail "no image $cluster"
key=$( { echo "$cid"; cd "$here/slurm" && find . -type f | LC_ALL=C sort | xargs sha256sum; } |
       sha256sum | cut -c1-12)
image=pspawn-vm:$flavour-$key
if ! docker image inspect "$image" >/dev/null 2>&1; then
    # One guest image per flavour is kept: the earlier ones go.
    docker images --format '{{.Repository}}:{{.Tag}}' "pspawn-vm" | grep "^pspawn-vm:$flavour-" |
        xargs -r docker rmi >/dev/null 2>&1
    say "building the guest's root $image (systemd, D-Bus, Debian's cloud kernel)"
    out=$(docker build -q --build-arg CLUSTER_IMAGE="$cluster" -t "$image" "$here/slurm" 2>&1) ||
        { echo "$out" | tail -n 20 | sed 's/^/# /'; fail "docker build of the guest's root failed"; }
fi

# 2. Its disk (and kernel, initramfs), once per image.
disk=$cache/slurm-$flavour-$key.img
mkdir -p "$cache" || fail "cannot make $cache"
if [ ! -s "$disk" ] || [ ! -s "$disk.vmlinuz" ] || [ ! -s "$disk.initrd" ]; then
    say "making the guest's disk $disk"
    rm -f "$cache"/slurm-"$flavour"-*.img*
    tree=$(mktemp -d /var/tmp/pspawn-slurm-vm.XXXXXX)
    c=$(docker create "$image" /bin/true) || fail "docker create $image"
    # --numeric-owner: the image's uids, not this host's for the same
    # names (munge, slurm differ; munged then cannot read its key).
    docker export "$c" | tar --numeric-owner -x -C "$tree" -f - ; st=$?
    docker rm "$c" >/dev/null
    [ $st = 0 ] || { rm -rf "$tree"; fail "docker export of $image failed"; }
    # Docker mounts these three over every container's; its export has
    # them empty, so the guest's own are written here.
    printf '127.0.0.1 localhost\n10.9.0.1 c1\n10.9.0.2 c2\n' >"$tree/etc/hosts"
    echo c1 >"$tree/etc/hostname"
    : >"$tree/etc/resolv.conf"
    rm -f "$tree/.dockerenv"
    kernel=$(ls "$tree"/boot/vmlinuz-* | head -n 1)
    initrd=$(ls "$tree"/boot/initrd.img-* | head -n 1)
    [ -n "$kernel" ] && [ -n "$initrd" ] || { rm -rf "$tree"; fail "no kernel or initramfs in $image"; }
    cp "$kernel" "$disk.vmlinuz" && cp "$initrd" "$disk.initrd"
    size=$(( $(du -sm "$tree" | cut -f1) + 2048 ))
    mke2fs -q -t ext4 -L pspawn-root -d "$tree" "$disk.tmp" "${size}M" >/dev/null ||
        { rm -rf "$tree" "$disk.tmp"; fail "mke2fs -d of the guest's root failed"; }
    rm -rf "$tree"
    mv "$disk.tmp" "$disk"
fi

# 3. The checks, on a disk of their own.
run=$(mktemp -d /tmp/pspawn-slurm-vm-run.XXXXXX)
trap 'rm -rf "$run"' EXIT
# SLURM_VM_BENCH=DIR: a program built for the guest (bench/vm-srun), timed
# there after the checks.
mkdir -p "$run/check"
cp "$here/slurm-checks.sh" "$run/check/run"
cp "$repo/tests/fixtures/taplib.sh" "$here/slurm-bench.sh" "$run/check/"
if [ -n "${SLURM_VM_BENCH:-}" ]; then
    cp -a "$SLURM_VM_BENCH" "$run/check/bench" || fail "cannot copy $SLURM_VM_BENCH"
fi
size=$(( $(du -sm "$run/check" | cut -f1) * 2 + 64 ))
mke2fs -q -t ext4 -L pspawn-check -d "$run/check" "$run/check.img" "${size}M" >/dev/null ||
    fail "mke2fs of the checks' disk"

append="root=/dev/vda rw console=ttyS0 panic=-1 quiet systemd.show_status=0 loglevel=3 net.ifnames=0"
qemu=(qemu-system-x86_64 -m 3072 -smp 4 -display none -no-reboot
      -kernel "$disk.vmlinuz" -initrd "$disk.initrd"
      -drive "file=$disk,if=virtio,format=raw,snapshot=on,cache=unsafe"
      -drive "file=$run/check.img,if=virtio,format=raw,cache=unsafe")
if [ $shell = 1 ]; then
    accel=(-accel tcg,thread=multi -cpu max)
    [ "${SLURM_VM_KVM:-0}" = 1 ] && accel=(-enable-kvm -cpu host)
    # SLURM_VM_SERIAL=unix:PATH,server,nowait: the console on a socket
    # instead (for a script to drive).
    exec "${qemu[@]}" "${accel[@]}" -append "$append systemd.mask=pspawn-vm-check.service systemd.debug_shell=ttyS0" \
        -serial "${SLURM_VM_SERIAL:-mon:stdio}"
fi

# boot START ACCEL...: runs the guest into $run/log; returns 3 when KVM
# stopped with an internal error or the checks had not begun after START
# seconds, 124 after SLURM_VM_TIMEOUT (tests/vm/qemu-boot.sh).
. "$here/qemu-boot.sh"
boot() {
    local start=$1; shift
    qemu_boot "$run/log" 'slurm-vm: begin' "$start" "${SLURM_VM_TIMEOUT:-1500}" \
        "${qemu[@]}" "$@" -append "$append" -serial stdio -monitor none
}
t0=$(date +%s)
accel=TCG rc=3 why=
if [ -e /dev/kvm ]; then
    accel=KVM
    boot 90 -enable-kvm -cpu host; rc=$?
    # qemu that cannot start the guest under KVM at all exits at once (on
    # some of these machines: "failed to set MSR 0x10a", status 134).
    if [ $rc != 0 ] && [ $rc != 3 ] && ! grep -q 'slurm-vm: begin' "$run/log"; then
        rc=3
    fi
fi
if [ $rc = 3 ]; then
    [ $accel = KVM ] && say "KVM did not run the guest ($why); using QEMU's emulator (TCG)"
    accel=TCG
    boot 600 -accel tcg,thread=multi -cpu max; rc=$?
    # The guest's kernel patches its own text as it boots (static keys,
    # through int3); under QEMU's multi-threaded emulator that has failed
    # once in 5 boots here ("Oops: int3" in an idle vCPU, then a panic).
    # Such a boot is the emulator's, not the checks': boot once more.
    if ! grep -q 'slurm-vm: begin' "$run/log" && grep -q 'Kernel panic' "$run/log"; then
        say "the guest's kernel panicked as it booted ($(grep -a -m1 -o 'Oops: [^[]*' "$run/log" | tr -d '\r')); booting it again"
        boot 600 -accel tcg,thread=multi -cpu max; rc=$?
    fi
fi
out=$(tr -d '\r' <"$run/log" | sed -n '/slurm-vm: begin/,/^slurm-vm: end/p')
if [ -z "$out" ] || ! echo "$out" | grep -q '^slurm-vm: end'; then
    tr -d '\r' <"$run/log" | tail -n 40 | sed 's/^/# /'
    fail "the guest did not finish the checks ($accel, qemu status $rc${why:+: $why})"
fi
say "guest: $flavour, 4 vCPUs under $accel, $(( $(date +%s) - t0 )) s from boot to power-off"
echo "$out" | grep -vE '^slurm-vm: (begin|end)'
echo "$out" | grep -q '^slurm-vm: end 0$'
