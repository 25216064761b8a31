dnl SPDX-License-Identifier: BSD-3-Clause
# PSPAWN_CHECK_NUMA: libnuma, optional, and for a test only: the NUMA guest
# test (tests/vm: numa-vm and numa-task) checks with it where a task's pages
# landed.  libpspawn links no libnuma: the zygote and the task setup set
# memory policy with set_mempolicy(2) and mbind(2) themselves (they run
# inside the user's program, before its main, and between fork and its
# main only async-signal-safe calls are allowed), and the fan-out's node
# masks come from hwloc (launcher/topology.c).
AC_DEFUN([PSPAWN_CHECK_NUMA], [
  AC_ARG_WITH([numa], [AS_HELP_STRING([--without-numa],
              [do not build the NUMA guest test (tests/vm), the only user of libnuma])],
              [], [with_numa=check])
  have_numa=no
  AS_IF([test "x$with_numa" != xno], [
    AC_CHECK_HEADER([numa.h], [
      AC_CHECK_LIB([numa], [numa_available], [have_numa=yes])])])
  AS_IF([test "x$with_numa" = xyes && test "x$have_numa" = xno],
        [AC_MSG_ERROR([--with-numa given but libnuma was not found])])
  AS_IF([test "x$have_numa" = xyes], [AC_SUBST([NUMA_LIBS], [-lnuma])])
  AM_CONDITIONAL([HAVE_NUMA], [test "x$have_numa" = xyes])
])
