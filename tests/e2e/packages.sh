#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian packages the cluster runs on (docker/Dockerfile builds them
# with dpkg-buildpackage, checks them with lintian and installs them, in
# place of `make install`): lintian's verdict, that dpkg owns what Slurm,
# prted and users load where the tests expect it, and that every shared
# object exports its interface and nothing else (a stray export of a
# preloaded or plugged-in object can interpose on its host program's
# symbols).
. "$(dirname "$0")/lib.sh"

# Where the flavour's image was built without a PRRTE source (the
# pkg.libpspawn.noprrte profile, sid here) there is no openmpi-pspawn;
# trixie must always have it.
pkgs="libpspawn0 libpspawn-dev pspawn slurm-spank-pspawn"
if [ "$PSPAWN_FLAVOUR" = trixie ] || on slurmctld "ls /var/cache/pspawn-debs/openmpi-pspawn_*.deb" >/dev/null 2>&1; then
    pkgs="$pkgs openmpi-pspawn"
else
    diag "no openmpi-pspawn: $NO_ODLS_WHY"
fi

# lintian ran in the image build, which stopped at an error: here its
# warnings are shown, and a lintian.txt with an error fails.
lint=$(on slurmctld "cat /var/cache/pspawn-debs/lintian.txt")
rc=$?
e=$(grep -c '^E: ' <<<"$lint")
w=$(grep -c '^W: ' <<<"$lint")
[ "$rc" -eq 0 ] && [ "$e" -eq 0 ]
ok $? "the packages built, and lintian found no error ($w warnings)"
grep -E '^[EW]: ' <<<"$lint" | head -n 40 | sed 's/^/#   /'

# The license: lintian read the source package too (debian/copyright's
# DEP-5 checks are the source's), at every level, and tagged nothing about
# copyright or license; every installed package says BSD-3-clause for the
# project's files.
lic=$(grep -E '^[EWIPX]: [^:]+: [^ ]*(copyright|licen[cs]e|dep5)' <<<"$lint")
src=$(on slurmctld "grep -c '^ [0-9a-f]* [0-9]* libpspawn_[^ ]*\.dsc$' /var/cache/pspawn-debs/*.changes")
[ -z "$lic" ] && [ "${src:-0}" -ge 1 ]
ok $? "lintian on the source and binary packages: no copyright or license tag (.dsc in the .changes: ${src:-0})"
[ -z "$lic" ] || head -n 20 <<<"$lic" | sed 's/^/#   /'
copyright='
for p in '"$pkgs"'; do
    f=/usr/share/doc/$p/copyright
    awk "/^Files: \\*\$/ { s = 1; next } s && /^License:/ { print \$2; exit }" "$f" | grep -qx BSD-3-clause ||
        echo "$f: Files: * is not under License: BSD-3-clause"
    ! grep -q UNKNOWN "$f" || echo "$f: still says UNKNOWN"
done
'
out=$(on c1 "$copyright" 2>&1)
[ -z "$out" ]
ok $? "every installed package's copyright file gives the project's files as BSD-3-clause"
[ -z "$out" ] || sed 's/^/#   /' <<<"$out"

# Installed on every container, and dpkg owns the plugin, the shim the
# plugin execs, the component and the CLI at the paths Slurm, prted and
# the tests use.
owned='
ma=$(gcc -print-multiarch)
for p in '"$pkgs"'; do
    dpkg-query -W -f "\${Status}" $p 2>/dev/null | grep -q "install ok installed" || echo "$p: not installed"
done
own() {
    o=$(dpkg -S "$1" 2>/dev/null | sed "s/: .*//; s/:.*//")
    [ "$o" = "$2" ] || echo "$1: owned by ${o:-no package}, not $2"
}
own /usr/bin/pspawn pspawn
own /usr/lib/$ma/slurm-wlm/spank_pspawn.so slurm-spank-pspawn
own /usr/lib/$ma/libpspawn/pspawn-shim slurm-spank-pspawn
grep -q "/usr/lib/$ma/libpspawn/pspawn-shim" /usr/lib/$ma/slurm-wlm/spank_pspawn.so ||
    echo "spank_pspawn.so does not exec /usr/lib/$ma/libpspawn/pspawn-shim"
case " '"$pkgs"' " in *" openmpi-pspawn "*)
    c=$(find /usr/lib -name prte_mca_odls_pspawn.so | head -n 1)
    own "${c:-/usr/lib/.../prte_mca_odls_pspawn.so}" openmpi-pspawn ;;
esac
'
bad=
for c in slurmctld c1 c2 c3; do
    out=$(on "$c" "$owned" 2>&1)
    [ -z "$out" ] || bad="$bad$(sed "s/^/$c: /" <<<"$out")"$'\n'
done
[ -z "$bad" ]
what="the CLI, the plugin, the shim"
case " $pkgs " in *" openmpi-pspawn "*) what="$what and the component" ;; esac
ok $? "$pkgs installed on every container; dpkg -S owns $what"
[ -z "$bad" ] || printf '%s' "$bad" | head -n 20 | sed 's/^/#   /'

# nm -D --defined-only of every shared object the packages install: each
# only its own names (as tests/unit/exports.sh checks in the build tree;
# here, what dh_strip and the packaging left).  libpspawn.so.0: the calls
# the installed pspawn.h declares (preprocessed: its comments name calls
# too); the others: the -export-symbols-regex of their Makefile rules.
exports='
pub=$(gcc -E -P -D_GNU_SOURCE /usr/include/pspawn.h | grep -oE "\bpspawn(_[a-z0-9_]+)?[[:space:]]*\(" | tr -d " \t(" | sort -u | paste -sd"|")
[ -n "$pub" ] || echo "no call found in /usr/include/pspawn.h"
for f in $(dpkg -L '"$pkgs"' | grep -E "\.so(\.[0-9]+)*$"); do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    case ${f##*/} in
        libpspawn.so.*) re="^($pub)$" ;;
        libpspawn-proxy.so) re="^(__libc_start_main|pspawn_python_.*|pspawn_record_dlopen)$" ;;
        libpspawn-record.so) re="^(dlopen|dlmopen)$" ;;
        libpspawn-intercept.so) re="^(execve|execv|execvp|execvpe|execveat|fexecve|execl|execle|execlp|posix_spawn|posix_spawnp|kill|wait|waitpid|wait3|wait4|waitid|(__)?open(at)?(64)?(_2)?|creat(64)?|fopen(64)?|truncate)$" ;;
        spank_pspawn.so) re="^(slurm_spank_.*|plugin_.*|spank_plugin_version)$" ;;
        prte_mca_odls_pspawn.so) re="^prte_mca_odls_pspawn_component(_ptr)?$" ;;
        *) echo "$f: a shared object this test does not know"; continue ;;
    esac
    n=$(nm -D --defined-only "$f" | awk "\$2 != \"A\" { sub(/@.*/, \"\", \$3); print \$3 }" | sort -u)
    extra=$(grep -Ev "$re" <<<"$n" | sed "/^$/d")
    [ -z "$extra" ] || echo "$f exports $(wc -l <<<"$extra") more: $(head -n 8 <<<"$extra" | paste -sd" ")"
    [ -n "$n" ] || echo "$f exports nothing"
done
'
out=$(on c1 "$exports" 2>&1)
[ -z "$out" ]
ok $? "nm -D: each installed shared object exports only its public symbols"
[ -z "$out" ] || sed 's/^/#   /' <<<"$out"
tap_done
