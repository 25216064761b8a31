#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/easybuild.sh BUILD_DIR - libpspawn as an HPC site installs it with
# EasyBuild: `eb` on packaging/easybuild/libpspawn-0.1.0.eb, from the
# tarball `make dist` makes in BUILD_DIR, with Lmod; then the module it
# made is loaded and its pspawn runs 4 tasks.  EasyBuild comes from PyPI
# into a virtual environment under BUILD_DIR/easybuild, Lmod from Debian's
# archive.  Prints TAP.
set -u
unset PSPAWN_PROXY PSPAWN_OPTIONS PSPAWN_FORCE_EXEC
build=$(cd "${1:?usage: tests/easybuild.sh BUILD_DIR}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
work=$build/easybuild
n=0 failed=0
ok() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
bail() { echo "not ok $((n + 1)) - $1"; echo "1..$((n + 1))"; exit 1; }
diag_file() { sed 's/^/#   | /' "$1" | tail -n "${2:-15}"; }

if ! [ -f /usr/share/lmod/lmod/init/bash ] || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lmod python3-venv \
        >/dev/null 2>&1 || bail "could not install Lmod and python3-venv"
fi
mkdir -p "$work"
if ! [ -x "$work/venv/bin/eb" ]; then
    python3 -m venv "$work/venv" >"$work/venv.log" 2>&1 &&
        "$work/venv/bin/pip" install -q easybuild >>"$work/venv.log" 2>&1 ||
        { diag_file "$work/venv.log"; bail "could not install EasyBuild from PyPI"; }
fi
# eb finds its interpreter on PATH: the environment's own, first.
export PATH="$work/venv/bin:$PATH"
version=$(eb --version 2>/dev/null | head -n 1)

# The tarball, as a site downloads it.
(cd "$build" && make dist-gzip >"$work/dist.log" 2>&1) && [ -f "$build/libpspawn-0.1.0.tar.gz" ]
ok $? "make dist made libpspawn-0.1.0.tar.gz" || diag_file "$work/dist.log"
mkdir -p "$work/sources/l/libpspawn"
cp "$build/libpspawn-0.1.0.tar.gz" "$work/sources/l/libpspawn/"

# A fresh install each run: what eb made last time must not answer for it.
rm -rf "$work/install" "$work/build"
. /usr/share/lmod/lmod/init/bash
export EASYBUILD_PREFIX=$work EASYBUILD_INSTALLPATH=$work/install EASYBUILD_BUILDPATH=$work/build
export EASYBUILD_SOURCEPATH=$work/sources EASYBUILD_MODULES_TOOL=Lmod EASYBUILD_MODULE_SYNTAX=Lua
eb --allow-use-as-root-and-accept-consequences \
    "$top/packaging/easybuild/libpspawn-0.1.0.eb" >"$work/eb.log" 2>&1
rc=$?
grep -q 'COMPLETED: Installation ended successfully' "$work/eb.log"
ok $? "eb builds and installs libpspawn-0.1.0.eb with $version, its sanity check (pspawn -n 4 /bin/true) included (rc $rc)" ||
    { diag_file "$work/eb.log" 20; ls "$work/build" 2>/dev/null | sed 's/^/# build: /'; }

module use "$work/install/modules/all"
module load libpspawn/0.1.0 2>"$work/module.log"
[ "$(command -v pspawn)" = "$work/install/software/libpspawn/0.1.0/bin/pspawn" ]
ok $? "module load libpspawn/0.1.0 puts the module's pspawn first on PATH ($(command -v pspawn))" ||
    diag_file "$work/module.log"
out=$(pspawn -v -n 4 sh -c 'echo rank $PSPAWN_RANK' 2>&1)
[ "$(echo "$out" | grep -c '^rank [0-3]$')" = 4 ] &&
    echo "$out" | grep -q '^pspawn: node=[^ ]* tasks=4 forked=4 exec=0 '
ok $? "the module's pspawn -n 4 forks 4 tasks from its zygote, the proxy found in the module's tree" ||
    echo "$out" | sed 's/^/#   | /' | tail -n 8
# (Where this build found Slurm's headers, eb's found them too.)
[ -f "$work/install/software/libpspawn/0.1.0/lib/slurm/spank_pspawn.so" ] ||
    ! [ -f "$build/spank/.libs/spank_pspawn.so" ]
ok $? "the Slurm plugin is in the module's tree where Slurm's headers were found (lib/slurm/spank_pspawn.so)"
echo "1..$n"
[ $failed = 0 ]
