# PSPAWN_CHECK_HWLOC: hwloc (topology, for NUMA-aware launch); optional.
AC_DEFUN([PSPAWN_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc], [AS_HELP_STRING([--without-hwloc], [do not use hwloc])],
              [], [with_hwloc=check])
  have_hwloc=no
  AS_IF([test "x$with_hwloc" != xno], [
    PKG_CHECK_MODULES([HWLOC], [hwloc], [have_hwloc=yes], [have_hwloc=no])])
  AS_IF([test "x$with_hwloc" = xyes && test "x$have_hwloc" = xno],
        [AC_MSG_ERROR([--with-hwloc given but hwloc was not found])])
  AS_IF([test "x$have_hwloc" = xyes], [AC_DEFINE([HAVE_HWLOC], [1], [hwloc found])])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$have_hwloc" = xyes])
])
