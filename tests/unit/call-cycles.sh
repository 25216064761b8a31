#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# call-cycles.sh - the source files of each part (the launch engine, the
# zygote, interception, the SPANK plugin, the wire format) that call each
# other in a circle, found from their objects' symbols (call-cycles.py).
# A circle is where a change in one file reaches back into itself.  None
# is left (2026-11-29): a new one fails.  Should one have to be accepted
# for a while, it goes in its part's list below; one of them grown by a
# file fails, one that shrank or went passes and says so.
. "${TESTS_SRCDIR:-$(dirname "$0")/../fixtures}/taplib.sh"

b=${top_builddir:?top_builddir is not set}
py=${TESTS_PYTHON:-/usr/bin/python3}
[ -x "$py" ] && command -v nm >/dev/null ||
    { skip "no python3 or nm" "source files calling each other in a circle"; tap_done; }
finder=$TESTS_SRCDIR/../unit/call-cycles.py

# The circles accepted, one per line, files sorted (call-cycles.py's form).
known_launcher=""
known_zygote=""
known_intercept=""
known_spank=""
known_wire=""

# check PART KNOWN PREFIX OBJECTS...: every circle of PART's objects lies
# within one of KNOWN's.
check() {
    part=$1 known=$2 prefix=$3
    shift 3
    [ -e "$1" ] || { skip "$part was not built" "$part: no new circle of calls"; return; }
    "$py" "$finder" "$prefix" "$@" >"$tmp/$part" 2>"$tmp/$part.err" ||
        { diag_file "$tmp/$part.err"; ok 1 "$part: its files' calls found"; return; }
    bad=
    while read -r circle; do
        within=
        printf '%s\n' "$known" | while read -r k; do
            [ -n "$k" ] || continue
            all=1
            for f in $circle; do
                case " $k " in *" $f "*) ;; *) all=0 ;; esac
            done
            [ $all = 1 ] && echo yes
        done | grep -q yes && within=1
        [ -n "$within" ] || bad="$bad [$circle]"
    done <"$tmp/$part"
    [ -z "$bad" ]
    ok $? "$part: no new circle of calls between its files${bad:+ (new:$bad)}" ||
        "$py" "$finder" -v "$prefix" "$@" | sed 's/^/#   /'
    printf '%s\n' "$known" | while read -r k; do
        [ -n "$k" ] && ! grep -qx "$k" "$tmp/$part" && diag "$part: the circle [$k] is gone or smaller: shorten the list"
    done
    return 0
}

launcher_objs=$(ls "$b"/libpspawn/launcher/.libs/*.o 2>/dev/null | grep -v '/libpspawn_core_static_la-\|/libpspawn_la-')
# shellcheck disable=SC2086
check launcher "$known_launcher" "" $launcher_objs
check zygote "$known_zygote" libpspawn_proxy_la- "$b"/libpspawn/zygote/.libs/libpspawn_proxy_la-*.o
check intercept "$known_intercept" libpspawn_intercept_la- \
    "$b"/libpspawn/intercept/.libs/libpspawn_intercept_la-*.o
check spank "$known_spank" spank_pspawn_la- "$b"/spank/.libs/spank_pspawn_la-*.o
check wire "$known_wire" libpspawn_wire_la- "$b"/libpspawn/wire/.libs/libpspawn_wire_la-*.o

# The finder finds a circle: two objects made here that call each other.
cat >"$tmp/a.c" <<'C'
int b_fn(void);
int a_fn(void) { return b_fn() + 1; }
C
cat >"$tmp/b.c" <<'C'
int a_fn(void);
int b_fn(void) { return 0; }
int b_other(void) { return a_fn(); }
C
${CC:-cc} -c -o "$tmp/a.o" "$tmp/a.c" && ${CC:-cc} -c -o "$tmp/b.o" "$tmp/b.c" &&
    [ "$("$py" "$finder" "" "$tmp/a.o" "$tmp/b.o")" = "a b" ]
ok $? "the finder sees two objects that call each other as a circle"
tap_done
