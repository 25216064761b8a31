dnl SPDX-License-Identifier: BSD-3-Clause
# PSPAWN_CHECK_PRRTE: what the PRRTE ODLS component (prte-plugin/) needs:
# PRRTE's internal headers, the installed PRRTE's version and component
# directory, PMIx's internal headers, and prte_config.h, which no package
# installs and which config/prte-config-h makes from the matching PRRTE
# source.  Sets have_prrte (yes/no), prrte_why (why not), PRRTE_VERSION,
# PRRTE_CPPFLAGS, PRRTE_LIBS, prtecomponentdir.
AC_DEFUN([PSPAWN_CHECK_PRRTE], [
  AC_ARG_WITH([prrte], [AS_HELP_STRING([--with-prrte[=DIR]],
      [build the PRRTE ODLS component against PRRTE's internal headers in DIR
       (the directory holding src/mca/odls/odls.h; default: look in the usual
       places, and skip the component if they are absent)])],
      [], [with_prrte=check])
  AC_ARG_WITH([prrte-libdir], [AS_HELP_STRING([--with-prrte-libdir=DIR],
      [where the installed libprrte.so is (default: next to the headers)])],
      [], [with_prrte_libdir=])
  AC_ARG_WITH([prrte-componentdir], [AS_HELP_STRING([--with-prrte-componentdir=DIR],
      [install prte_mca_odls_pspawn.so into DIR (default: PRRTE's component
       directory, PRRTE-LIBDIR/prte)])],
      [], [with_prrte_componentdir=])
  AC_ARG_WITH([prrte-source], [AS_HELP_STRING([--with-prrte-source=SRC],
      [the source of the installed PRRTE version, to make prte_config.h: a
       PRRTE or Open MPI source tree or tarball, or "apt" for `apt-get source
       openmpi` (default: /usr/src/pspawn/prrte if there, else apt)])],
      [], [with_prrte_source=])
  AC_ARG_WITH([pmix], [AS_HELP_STRING([--with-pmix=DIR],
      [PMIx installation prefix, with its internal headers (include/pmix/src)])],
      [], [with_pmix=])

  have_prrte=no
  prrte_why=
  PRRTE_VERSION=
  PRRTE_CPPFLAGS=
  PRRTE_LIBS=
  prrte_inc=
  AS_CASE([$with_prrte],
    [no], [prrte_why="disabled (--without-prrte)"],
    [yes|check], [for d in /usr/lib/$host_cpu-linux-gnu/openmpi/include/prte /usr/include/prte \
                            /usr/local/include/prte /opt/openmpi/include/prte \
                            /usr/src/pspawn/prrte; do
                    AS_IF([test -f "$d/src/mca/odls/odls.h"], [prrte_inc=$d; break])
                  done],
    [AS_IF([test -f "$with_prrte/src/mca/odls/odls.h"], [prrte_inc=$with_prrte])])
  AS_IF([test "x$with_prrte" != xno && test -z "$prrte_inc"],
        [prrte_why="PRRTE's internal headers (src/mca/odls/odls.h) not found; on Debian 13 they are in libopenmpi-dev; where no package has them (Debian sid's PRRTE 5), give the installed release's source tree: --with-prrte=SRC"])

  # The installed PRRTE: its library, version and component directory.
  AS_IF([test -n "$prrte_inc"], [
    AC_MSG_CHECKING([for the installed PRRTE library])
    prrte_libdir=$with_prrte_libdir
    AS_IF([test -z "$prrte_libdir"], [
      for d in "$prrte_inc/../../lib" "$prrte_inc/../../lib64" "$prrte_inc/../lib" \
               /usr/lib/$host_cpu-linux-gnu /usr/lib64 /usr/lib; do
        AS_IF([ls "$d"/libprrte.so.*.*.* >/dev/null 2>&1], [prrte_libdir=$(cd "$d" && pwd); break])
      done])
    prrte_lib=$(ls "$prrte_libdir"/libprrte.so.*.*.* 2>/dev/null | head -n 1)
    PRRTE_VERSION=${prrte_lib##*/libprrte.so.}
    AS_IF([test -n "$prrte_lib"], [AC_MSG_RESULT([$prrte_lib (PRRTE $PRRTE_VERSION)])],
          [AC_MSG_RESULT([no]); prrte_why="libprrte.so.X.Y.Z not found next to $prrte_inc (use --with-prrte-libdir)"])])

  # PMIx's internal headers.
  AS_IF([test -z "$prrte_why" && test -n "$prrte_inc"], [
    AC_MSG_CHECKING([for PMIx's internal headers])
    pmix_prefix=
    for d in $with_pmix /usr/lib/$host_cpu-linux-gnu/pmix2 /usr/lib/$host_cpu-linux-gnu/pmix /usr /usr/local; do
      AS_IF([test -f "$d/include/pmix/src/include/pmix_config.h"], [pmix_prefix=$d; break])
    done
    AS_IF([test -n "$pmix_prefix"], [AC_MSG_RESULT([$pmix_prefix])],
          [AC_MSG_RESULT([no]); prrte_why="PMIx's internal headers (include/pmix/src/include/pmix_config.h) not found; on Debian 13 they are in libpmix-dev (use --with-pmix=DIR)"])])

  # prte_config.h: installed, or made from the matching PRRTE source.
  AS_IF([test -z "$prrte_why" && test -n "$prrte_inc"], [
    prrte_gen=
    AS_IF([test -f "$prrte_inc/src/include/prte_config.h"], [],
          [test -f "$prrte_inc/prte_config.h"], [],
      [prrte_gen=$ac_pwd/prte-plugin/gen
       prrte_src=$with_prrte_source
       AS_IF([test -z "$prrte_src"], [
         AS_IF([test -d /usr/src/pspawn/prrte], [prrte_src=/usr/src/pspawn/prrte], [prrte_src=apt])])
       AC_MSG_CHECKING([for prte_config.h])
       AS_IF([test -f "$prrte_gen/prte_config.h" && test -f "$prrte_gen/version" &&
              test "$(cat "$prrte_gen/version")" = "$PRRTE_VERSION"],
         [AC_MSG_RESULT([$prrte_gen/prte_config.h (made by an earlier configure)])],
         [AC_MSG_RESULT([not installed: making it from $prrte_src with PRRTE's configure])
          AS_IF([prrte_made=$($SHELL "$srcdir/config/prte-config-h" "$prrte_gen" "$PRRTE_VERSION" \
                              "$prrte_src" "$pmix_prefix" 2>&1)],
            [echo "$PRRTE_VERSION" > "$prrte_gen/version"
             AC_MSG_NOTICE([made $prrte_made])],
            [AC_MSG_WARN([$prrte_made])
             prrte_why="no prte_config.h, and it could not be made: $prrte_made"])])])])

  AS_IF([test -z "$prrte_why" && test -n "$prrte_inc" && test "x$have_hwloc" != xyes],
        [prrte_why="it needs hwloc, and hwloc is not used: $hwloc_why"])
  AS_IF([test -z "$prrte_why" && test -n "$prrte_inc"], [
    AS_IF([test -n "$prrte_gen"], [PRRTE_CPPFLAGS="-I$prrte_gen"])
    PRRTE_CPPFLAGS="$PRRTE_CPPFLAGS -isystem $prrte_inc -isystem $prrte_inc/src/include -isystem $pmix_prefix/include -isystem $pmix_prefix/include/pmix -isystem $pmix_prefix/include/pmix/src/include"
    PRRTE_LIBS="-L$prrte_libdir -lprrte -L$pmix_prefix/lib -lpmix"
    # Debian sid's libprrte-dev: libprrte.so points at a libprrte.so.4 that
    # is not there, and -lprrte would link its libprrte.a into the
    # component (a second PRRTE, with globals of its own): name the
    # library itself (past libtool, which drops a versioned .so name).
    AS_IF([test ! -e "$prrte_libdir/libprrte.so"],
          [PRRTE_LIBS="-Wl,$prrte_lib -L$pmix_prefix/lib -lpmix"])
    AC_MSG_CHECKING([whether an ODLS component compiles against PRRTE $PRRTE_VERSION])
    prrte_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$PRRTE_CPPFLAGS $HWLOC_CFLAGS $CPPFLAGS"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "prte_config.h"
#include "src/mca/odls/odls.h"
#include "src/mca/odls/base/base.h"
]], [[prte_odls_spawn_caddy_t *cd = 0; (void)cd; return PRTE_MAJOR_VERSION;]])],
      [AC_MSG_RESULT([yes]); have_prrte=yes],
      [AC_MSG_RESULT([no]); prrte_why="PRRTE's headers do not compile (see config.log)"])
    CPPFLAGS=$prrte_save_CPPFLAGS])

  prtecomponentdir=$with_prrte_componentdir
  AS_IF([test -z "$prtecomponentdir" && test "x$have_prrte" = xyes], [prtecomponentdir=$prrte_libdir/prte])
  AS_IF([test "x$with_prrte" != xno && test "x$with_prrte" != xcheck && test "x$have_prrte" = xno],
        [AC_MSG_ERROR([--with-prrte given, but the ODLS component cannot be built: $prrte_why])])
  AC_SUBST([PRRTE_VERSION])
  AC_SUBST([PRRTE_CPPFLAGS])
  AC_SUBST([PRRTE_LIBS])
  AC_SUBST([prtecomponentdir])
  AM_CONDITIONAL([HAVE_PRRTE], [test "x$have_prrte" = xyes])
])
