#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/numa-vm.sh BUILD_DIR - fan-out on real NUMA nodes: boots a KVM
# guest with 4 NUMA nodes of 2 CPUs each (QEMU -numa; Debian's cloud
# kernel, an initramfs of busybox and the build's library, proxy and test
# programs), runs tests/vm/numa-vm there, and prints its TAP.  Where KVM
# cannot run it, QEMU's emulator does; where QEMU cannot be had, one test
# reports itself skipped (not passed).
#
# NUMA_VM_REPEAT=N runs the subzygote=fork case N more times in the same
# guest (a timing hunt); NUMA_VM_VERBOSE=1 shows every zygote's mappings.
#
# Installs qemu-system-x86 where missing; the kernel and busybox packages
# are downloaded once into $PSPAWN_VM_CACHE (default /var/cache/pspawn-vm).
set -u
build=$(cd "${1:?usage: numa-vm.sh BUILD_DIR}" && pwd)
cache=${PSPAWN_VM_CACHE:-/var/cache/pspawn-vm}

skip() { echo "1..1"; echo "ok 1 - fan-out on real NUMA nodes in a KVM guest # SKIP $1"; exit 0; }
fail() { echo "1..1"; echo "not ok 1 - fan-out on real NUMA nodes in a KVM guest: $1"; exit 1; }

for f in tests/vm/numa-vm tests/vm/numa-task libpspawn/.libs/libpspawn-proxy.so; do
    [ -e "$build/$f" ] || skip "no $f in $build (built without libnuma?)"
done
if ! command -v qemu-system-x86_64 >/dev/null; then
    [ "$(id -u)" = 0 ] || skip "qemu-system-x86 is not installed (and we are not root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 \
        >/dev/null 2>&1 || fail "could not install qemu-system-x86"
fi

# Debian's cloud kernel (NUMA, cgroups and cpusets built in, nothing to
# load from modules: the initramfs is the root) and busybox.
mkdir -p "$cache" || fail "cannot make $cache"
kernel=$(ls "$cache"/k/boot/vmlinuz-* 2>/dev/null | head -n 1)
if [ -z "$kernel" ] || [ ! -x "$cache/b/bin/busybox" ]; then
    image=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$image" ] || { apt-get update -qq >/dev/null 2>&1; image=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'); }
    [ -n "$image" ] || fail "no linux-image-cloud-amd64 in the package lists"
    (cd "$cache" && rm -f ./*.deb && apt-get download "$image" busybox-static >/dev/null 2>&1 &&
        dpkg -x linux-image-*.deb k && dpkg -x busybox-static_*.deb b) ||
        fail "could not download $image and busybox-static"
    kernel=$(ls "$cache"/k/boot/vmlinuz-* | head -n 1)
fi

root=$(mktemp -d /tmp/pspawn-vm.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,proc,sys,dev,run} "$root/tmp" || fail "initramfs"
cp "$cache/b/bin/busybox" "$root/bin/"
for cmd in sh mount mkdir cat echo poweroff sleep ls; do ln -s busybox "$root/bin/$cmd"; done
# What the guest runs, and every library it needs, at the same paths.
progs=("$build/tests/vm/numa-vm" "$build/tests/vm/numa-task" "$build/libpspawn/.libs/libpspawn-proxy.so")
copy() { mkdir -p "$root$(dirname "$1")" && cp -L "$1" "$root$1"; }
for p in "${progs[@]}"; do
    copy "$p"
    ldd "$p" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' | while read -r lib; do
        [ -e "$root$lib" ] || copy "$lib"
    done
done
cat >"$root/init" <<EOF
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# /tmp stays the initramfs's own (writable): the build may be under /tmp.
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
export PSPAWN_PROXY=$build/libpspawn/.libs/libpspawn-proxy.so NUMA_TASK=$build/tests/vm/numa-task
export NUMA_VM_REPEAT=${NUMA_VM_REPEAT:-0} ${NUMA_VM_VERBOSE:+NUMA_VM_VERBOSE=1}
echo "numa-vm: begin"
$build/tests/vm/numa-vm
echo "numa-vm: end \$?"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | "$cache/b/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$root.cpio.gz" ||
    fail "could not pack the initramfs"
trap 'rm -rf "$root" "$root.cpio.gz" "$root.log"' EXIT

numa=()
for n in 0 1 2 3; do
    numa+=(-object "memory-backend-ram,id=m$n,size=384M"
           -numa "node,nodeid=$n,cpus=$((2 * n))-$((2 * n + 1)),memdev=m$n")
done
# boot START ACCEL...: the guest into $root.log; 3 when KVM stopped it
# with an internal error or the test had not begun after START seconds (a
# guest that boots in one or two seconds on working KVM or in a few under
# QEMU's emulator), 124 after 600 s (tests/vm/qemu-boot.sh).
. "$(dirname "${BASH_SOURCE[0]}")/qemu-boot.sh"
boot() {
    local start=$1; shift
    qemu_boot "$root.log" '^numa-vm: begin' "$start" 600 \
        qemu-system-x86_64 "$@" -m 1536 -smp 8,sockets=4,cores=2,threads=1 "${numa[@]}" \
        -kernel "$kernel" -initrd "$root.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet" \
        -display none -serial stdio -monitor none -no-reboot
}
accel="KVM"
boot 30 -enable-kvm -cpu host
rc=$?
if [ $rc = 3 ] || ! grep -q '^numa-vm: begin' "$root.log"; then
    # KVM that is there but does not run this kernel (seen under nested
    # virtualisation): the same guest under QEMU's own emulator.  It boots
    # in seconds and its NUMA nodes are the same to the guest's kernel.
    echo "# KVM did not run the guest ($why); using QEMU's emulator (TCG)"
    accel="TCG"
    boot 120 -accel tcg,thread=multi -cpu max
    rc=$?
fi
out=$(sed -n '/^numa-vm: begin/,/^numa-vm: end/p' "$root.log" | tr -d '\r')
if [ -z "$out" ]; then
    grep -v 'warning: host' "$root.log" | tail -n 30 | sed 's/^/# /'
    rm -f "$root.log"
    fail "the guest did not run the test ($accel, qemu status $rc)"
fi
rm -f "$root.log"
echo "# guest: 4 NUMA nodes x 2 CPUs under $accel"
echo "$out" | grep -vE '^numa-vm: (begin|end)'
echo "$out" | grep -q '^numa-vm: end 0$'
