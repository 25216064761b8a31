dnl SPDX-License-Identifier: BSD-3-Clause
# PSPAWN_CHECK_HWLOC: hwloc, optional.  Where found, HAVE_HWLOC makes
# libpspawn/launcher/topology.c split the CPUs the launcher may use into the
# groups of a fan-out (NUMA node, L3 cache, package, core, N cores), for
# libpspawn.so and for the dynamic helper pspawn-topology that the static
# stand-ins (pspawn-shim, pspawn-standin) ask; the PRRTE component builds
# against it too.  Without it, every task is forked by one zygote and the
# fanout= option is ignored (with a reason in pspawn_context_topology's text).
AC_DEFUN([PSPAWN_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc], [AS_HELP_STRING([--without-hwloc],
              [do not use hwloc (no fan-out: one zygote forks every task)])],
              [], [with_hwloc=check])
  have_hwloc=no
  hwloc_why="--without-hwloc given"
  AS_IF([test "x$with_hwloc" != xno], [
    hwloc_why="hwloc >= 2.0 not found by pkg-config (libhwloc-dev)"
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [have_hwloc=yes], [have_hwloc=no])])
  dnl What topology.c calls, so that an hwloc without it is "no" here
  dnl rather than a failed build.
  AS_IF([test "x$have_hwloc" = xyes], [
    AC_MSG_CHECKING([whether hwloc has what the fan-out's topology needs])
    hwloc_save_CPPFLAGS=$CPPFLAGS
    hwloc_save_LIBS=$LIBS
    CPPFLAGS="$HWLOC_CFLAGS $CPPFLAGS"
    LIBS="$HWLOC_LIBS $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hwloc.h>]], [[
      hwloc_topology_t t;
      hwloc_topology_init(&t);
      hwloc_topology_restrict(t, hwloc_topology_get_allowed_cpuset(t),
                              HWLOC_RESTRICT_FLAG_REMOVE_CPULESS);
      return hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE) +
             hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       have_hwloc=no
       hwloc_why="hwloc's API lacks what launcher/topology.c calls (see config.log)"])
    CPPFLAGS=$hwloc_save_CPPFLAGS
    LIBS=$hwloc_save_LIBS])
  AS_IF([test "x$with_hwloc" = xyes && test "x$have_hwloc" = xno],
        [AC_MSG_ERROR([--with-hwloc given, but: $hwloc_why])])
  AS_IF([test "x$have_hwloc" = xyes],
        [AC_DEFINE([HAVE_HWLOC], [1],
                   [hwloc found: launcher/topology.c makes the fan-out's groups of CPUs])],
        [HWLOC_CFLAGS= HWLOC_LIBS=])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$have_hwloc" = xyes])
])
