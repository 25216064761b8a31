# PSPAWN_CHECK_NUMA: libnuma (memory policy of zygotes and tasks); optional.
AC_DEFUN([PSPAWN_CHECK_NUMA], [
  AC_ARG_WITH([numa], [AS_HELP_STRING([--without-numa], [do not use libnuma])],
              [], [with_numa=check])
  have_numa=no
  AS_IF([test "x$with_numa" != xno], [
    AC_CHECK_HEADER([numa.h], [
      AC_CHECK_LIB([numa], [numa_available], [have_numa=yes])])])
  AS_IF([test "x$with_numa" = xyes && test "x$have_numa" = xno],
        [AC_MSG_ERROR([--with-numa given but libnuma was not found])])
  AS_IF([test "x$have_numa" = xyes], [
    AC_DEFINE([HAVE_NUMA], [1], [libnuma found])
    AC_SUBST([NUMA_LIBS], [-lnuma])])
  AM_CONDITIONAL([HAVE_NUMA], [test "x$have_numa" = xyes])
])
