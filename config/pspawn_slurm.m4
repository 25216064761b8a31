dnl SPDX-License-Identifier: BSD-3-Clause
# PSPAWN_CHECK_SLURM: slurm/spank.h, for the SPANK plugin in spank/.
AC_DEFUN([PSPAWN_CHECK_SLURM], [
  AC_ARG_WITH([slurm], [AS_HELP_STRING([--with-slurm[=DIR]],
              [build the SPANK plugin against Slurm in DIR (default: check)])],
              [], [with_slurm=check])
  have_slurm=no
  SLURM_CPPFLAGS=
  AS_CASE([$with_slurm], [no], [], [yes|check], [], [SLURM_CPPFLAGS="-I$with_slurm/include"])
  AS_IF([test "x$with_slurm" != xno], [
    save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    AC_CHECK_HEADER([slurm/spank.h], [have_slurm=yes], [],
                    [#include <stdint.h>
#include <stddef.h>])
    CPPFLAGS=$save_CPPFLAGS])
  AS_IF([test "x$with_slurm" != xno && test "x$with_slurm" != xcheck && test "x$have_slurm" = xno],
        [AC_MSG_ERROR([--with-slurm given but slurm/spank.h was not found])])
  AC_SUBST([SLURM_CPPFLAGS])
  AM_CONDITIONAL([HAVE_SLURM], [test "x$have_slurm" = xyes])
])
