#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/kernel-vm.sh BUILD_DIR [SUITE...] - the core subset of the
# integration tests (tests/vm/kernel-checks.sh: parity, fan-out, zygote
# kill, sessions, stand-ins, warm Python, interception) on Debian's
# packaged kernels, each booted in a QEMU guest: bullseye (5.10), bookworm
# (6.1) and trixie (6.12) by default.  Prints one TAP stream for all.
#
# Each guest boots the suite's cloud kernel (linux-image-cloud-amd64: what
# the tests need is built in, nothing is loaded from modules) with an
# initramfs as its root: a Debian userland of this machine's own release
# (debootstrap --variant=minbase, the runtime libraries of BUILD_DIR, bash,
# python3, strace, make, script), then BUILD_DIR and this tree at their own
# paths.  The userland is this machine's because BUILD_DIR was built here;
# only the kernel changes from guest to guest.  Kernels and userland are
# kept in $PSPAWN_VM_CACHE (default /var/cache/pspawn-vm).
#
# KVM first where it runs the guest, QEMU's emulator (TCG) otherwise.
# KERNEL_VM_TESTS="standin.sh session" runs only those tests.
# KERNEL_VM_TIMEOUT: seconds for each guest (default 3600).
set -u
build=$(cd "${1:?usage: kernel-vm.sh BUILD_DIR [SUITE...]}" && pwd)
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bullseye bookworm trixie)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${PSPAWN_VM_CACHE:-/var/cache/pspawn-vm}
mirror=${PSPAWN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
name="the core tests on Debian's kernels (${suites[*]}) in QEMU guests"
skip() { echo "1..1"; echo "ok 1 - $name # SKIP $1"; exit 0; }
fail() { echo "1..1"; echo "not ok 1 - $name: $1"; exit 1; }
say() { echo "# $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, the guest's root with its owners)"
[ -x "$build/tests/integration/session" ] && [ -x "$build/tests/fixtures/kernel-gaps" ] ||
    skip "$build has no built tests (make check TESTS= builds them)"
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
        >/dev/null 2>&1 || fail "could not install ${need[*]}"
fi
mkdir -p "$cache" || fail "cannot make $cache"

# 1. The userland: this machine's Debian release, what the tests run.
. /etc/os-release
packages=python3,procps,util-linux,bsdutils,strace,make,libhwloc15,libnuma1,libudev1,psmisc,bc,kmod,libcap2-bin
key=$(echo "$VERSION_CODENAME $packages" | sha256sum | cut -c1-12)
userland=$cache/kernel-root-$VERSION_CODENAME-$key.cpio
if [ ! -s "$userland" ]; then
    say "making the guests' userland (debootstrap $VERSION_CODENAME: ${packages//,/ })"
    rm -f "$cache"/kernel-root-*.cpio
    root=$(mktemp -d /var/tmp/pspawn-kernel-root.XXXXXX)
    debootstrap --variant=minbase --include="$packages" "$VERSION_CODENAME" "$root" "$mirror" \
        >"$root.log" 2>&1 || { tail -n 5 "$root.log" | sed 's/^/# /'; rm -rf "$root" "$root.log"; fail "debootstrap failed"; }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc \
        "$root"/usr/share/man "$root"/usr/share/locale
    (cd "$root" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$userland.tmp" ||
        { rm -rf "$root" "$root.log" "$userland.tmp"; fail "could not pack the userland"; }
    rm -rf "$root" "$root.log"
    mv "$userland.tmp" "$userland"
fi

# 2. Each suite's cloud kernel, from that suite's package lists.
kernel_of() {
    local suite=$1 dir=$cache/kernel-$suite a image version mods
    if [ ! -s "$dir/vmlinuz" ] || [ ! -s "$dir/modules.cpio" ]; then
        a=$(mktemp -d /var/tmp/pspawn-kernel-apt.XXXXXX)
        mkdir -p "$a/state/lists/partial" "$a/cache/archives/partial"
        echo "deb $mirror $suite main" >"$a/sources.list"
        local opts=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/nonexistent
                    -o Dir::State="$a/state" -o Dir::State::status=/var/lib/dpkg/status -o Dir::Cache="$a/cache"
                    -o Debug::NoLocking=1)
        apt-get "${opts[@]}" update -qq >/dev/null 2>&1 || { rm -rf "$a"; return 1; }
        image=$(apt-cache "${opts[@]}" depends linux-image-cloud-amd64 2>/dev/null |
                awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
        [ -n "$image" ] && (cd "$a" && apt-get "${opts[@]}" download "$image" >/dev/null 2>&1) &&
            dpkg -x "$a"/linux-image-*.deb "$a/k" && mkdir -p "$dir" &&
            # (/lib/modules before trixie, /usr/lib/modules from trixie on)
            mods=$(ls -d "$a"/k/lib/modules "$a"/k/usr/lib/modules 2>/dev/null | head -n 1) &&
            version=$(basename "$(ls -d "$mods"/* | head -n 1)") &&
            mkdir -p "$a/m/usr/lib" && mv "$mods" "$a/m/usr/lib/" &&
            depmod -b "$a/m/usr" "$version" &&
            (cd "$a/m" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$dir/modules.cpio" &&
            cp "$(ls "$a"/k/boot/vmlinuz-* | head -n 1)" "$dir/vmlinuz.tmp" && mv "$dir/vmlinuz.tmp" "$dir/vmlinuz" &&
            echo "$image" >"$dir/package"
        local st=$?
        rm -rf "$a"
        [ $st = 0 ] || return 1
    fi
    echo "$dir/vmlinuz"
}

# 3. What each guest runs: BUILD_DIR and this tree at their own paths, and
#    an /init that mounts what a booted machine has and runs the checks.
run=$(mktemp -d /var/tmp/pspawn-kernel-vm.XXXXXX)
trap 'rm -rf "$run"' EXIT
mkdir -p "$run/tree$build" "$run/tree$repo"
cp -a "$build/." "$run/tree$build/"
tar -C "$repo" --exclude=./.git --exclude=./_build -cf - . | tar -C "$run/tree$repo" -xf -
cat >"$run/tree/init" <<EOF
#!/bin/bash
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm && mount -t devpts -o ptmxmode=0666 devpts /dev/pts && mount -t tmpfs shm /dev/shm
# What udev makes on a node: without /dev/fd, Linux 5.10's execveat of a
# name under a directory fd (and fexecve) fails with ENOENT, exec'd or not.
ln -s /proc/self/fd /dev/fd && ln -s fd/0 /dev/stdin && ln -s fd/1 /dev/stdout && ln -s fd/2 /dev/stderr
mount -t cgroup2 cgroup2 /sys/fs/cgroup
chmod 1777 /tmp
hostname guest
echo "kernel-vm: begin"
# Under QEMU's emulator every instruction is emulated: the bounds that
# only catch a hang are stretched (tests/fixtures/tap.h, tap_time_scale).
scale=\$(sed -n 's/.*pspawn.time_scale=\([0-9]*\).*/\1/p' /proc/cmdline)
export TESTS_TIME_SCALE=\${scale:-1} KERNEL_VM_TESTS='${KERNEL_VM_TESTS:-}'
if [ -s /kernel-vm-cmd ]; then bash /kernel-vm-cmd; else bash $repo/tests/vm/kernel-checks.sh $build $repo; fi
echo "kernel-vm: end \$?"
echo o >/proc/sysrq-trigger
sleep 10
EOF
chmod 755 "$run/tree/init"
# KERNEL_VM_CMD: a command the guests run instead of the checks (to look
# at one thing by hand; its output is shown).
[ -n "${KERNEL_VM_CMD:-}" ] && printf '%s\n' "$KERNEL_VM_CMD" >"$run/tree/kernel-vm-cmd"
(cd "$run/tree" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$run/tree.cpio" || fail "could not pack the tests"

# boot KERNEL START SCALE ACCEL...: one guest into $run/log, its bounds
# against a hang stretched SCALE times; 3 when KVM stopped with an internal
# error or the checks had not begun after START s (tests/vm/qemu-boot.sh).
. "$repo/tests/vm/qemu-boot.sh"
boot() {
    local kernel=$1 start=$2 scale=$3; shift 3
    qemu_boot "$run/log" '^kernel-vm: begin' "$start" "${KERNEL_VM_TIMEOUT:-3600}" \
        qemu-system-x86_64 "$@" -m 3072 -smp 2 -kernel "$kernel" -initrd "$run/initrd" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init pspawn.time_scale=$scale" \
        -display none -serial stdio -monitor none -no-reboot
}

n=0 failed=0
for suite in "${suites[@]}"; do
    kernel=$(kernel_of "$suite") || { n=$((n + 1)); failed=$((failed + 1))
        echo "not ok $n - $suite: could not download its linux-image-cloud-amd64 from $mirror"; continue; }
    say "$suite: $(cat "$(dirname "$kernel")/package")"
    # The kernel's modules too (unix_diag, which tells who owns a socket's
    # name, is one): a node loads them on demand, so does the guest.
    cat "$userland" "$(dirname "$kernel")/modules.cpio" "$run/tree.cpio" >"$run/initrd"
    t0=$(date +%s) accel=KVM why=""
    if [ -e /dev/kvm ]; then boot "$kernel" 60 1 -enable-kvm -cpu host; rc=$?; else rc=3 why="no /dev/kvm"; fi
    if [ $rc = 3 ] || ! grep -q '^kernel-vm: begin' "$run/log"; then
        say "$suite: KVM did not run the guest ($why); using QEMU's emulator (TCG)"
        accel=TCG t0=$(date +%s)
        boot "$kernel" 300 10 -accel tcg,thread=multi -cpu max; rc=$?
        # A kernel that patches its own text as it boots can oops under
        # QEMU's multi-threaded emulator (tests/vm/slurm-vm.sh): once more.
        if ! grep -q '^kernel-vm: begin' "$run/log" && grep -q 'Kernel panic' "$run/log"; then
            say "$suite: the guest's kernel panicked as it booted; booting it again"
            boot "$kernel" 300 10 -accel tcg,thread=multi -cpu max; rc=$?
        fi
    fi
    out=$(sed -n '/^kernel-vm: begin/,/^kernel-vm: end/p' "$run/log" | tr -d '\r' | grep -vE '^kernel-vm: (begin|end)|^1\.\.')
    if [ -n "${KERNEL_VM_CMD:-}" ]; then echo "$out"; continue; fi
    say "$suite: guest under $accel, $(( $(date +%s) - t0 )) s boot to power-off"
    if ! grep -q '^kernel-vm: end' "$run/log"; then
        n=$((n + 1)); failed=$((failed + 1))
        echo "$out" | tail -n 40
        grep -v 'warning: host' "$run/log" | tail -n 20 | sed 's/^/# /'
        echo "not ok $n - $suite: the guest did not finish its checks (qemu status $rc${why:+: $why})"
        continue
    fi
    if ! echo "$out" | grep -qE '^(not )?ok '; then
        n=$((n + 1)); failed=$((failed + 1))
        echo "$out" | tail -n 20 | sed 's/^/# /'
        echo "not ok $n - $suite: the guest's checks printed no result"
        continue
    fi
    # Renumber the guest's points into this stream.
    while IFS= read -r line; do
        case $line in
            "ok "*|"not ok "*)
                n=$((n + 1))
                case $line in "not ok "*) failed=$((failed + 1)) ;; esac
                echo "$line" | sed -E "s/^(not ok|ok) [0-9]+ - /\1 $n - $suite: /" ;;
            *) echo "$line" ;;
        esac
    done <<<"$out"
done
echo "1..$n"
[ $failed = 0 ]
