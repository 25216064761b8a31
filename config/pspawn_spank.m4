dnl SPDX-License-Identifier: BSD-3-Clause
# PSPAWN_CHECK_SPANK: what spank/ needs beyond slurm/spank.h, which
# PSPAWN_CHECK_SLURM (called first) finds: Slurm's plugin directory,
# whether spank_prepend_task_argv exists (Slurm >= 23.11), and whether a
# plugin can say how a failed slurm_spank_init is taken
# (slurm_spank_init_failure_mode, Slurm >= 25.05).
#
# Sets SLURM_PLUGINDIR (substituted; may hold ${libdir}) and
# pspawn_spank_summary (for the configure report); defines
# HAVE_SPANK_PREPEND_TASK_ARGV and HAVE_SPANK_INIT_FAILURE_MODE.
AC_DEFUN([PSPAWN_CHECK_SPANK], [
  AS_IF([test "x$have_slurm" = x],
        [AC_MSG_ERROR([configure.ac: the Slurm header check (pspawn_slurm.m4) must come before the SPANK plugin check])])
  AC_ARG_WITH([slurm-plugindir], [AS_HELP_STRING([--with-slurm-plugindir=DIR],
              [install the SPANK plugin spank_pspawn.so into DIR, Slurm's PluginDir
               (default: the directory of Slurm's plugins found next to its library,
               e.g. /usr/lib/<multiarch>/slurm-wlm on Debian, or LIBDIR/slurm)])],
              [], [with_slurm_plugindir=check])
  SLURM_PLUGINDIR=
  pspawn_spank_summary=no
  AS_IF([test "x$have_slurm" = xyes], [
    AS_CASE([$with_slurm_plugindir],
      [yes|no|""], [AC_MSG_ERROR([--with-slurm-plugindir needs a directory])],
      [check], [
        AC_MSG_CHECKING([for Slurm's plugin directory])
        # Slurm's plugins live in LIBDIR/slurm (upstream) or LIBDIR/slurm-wlm
        # (Debian); LIBDIR from --with-slurm=DIR, pkg-config (upstream
        # installs slurm.pc; Debian's packages do not) or the usual places.
        pspawn_multiarch=`$CC -print-multiarch 2>/dev/null`
        pspawn_slurm_libdirs=
        AS_CASE([$with_slurm], [yes|no|check], [],
                [pspawn_slurm_libdirs="$with_slurm/lib64 $with_slurm/lib"
                 AS_IF([test -n "$pspawn_multiarch"],
                       [pspawn_slurm_libdirs="$with_slurm/lib/$pspawn_multiarch $pspawn_slurm_libdirs"])])
        AS_IF([test -n "$PKG_CONFIG"], [
          pspawn_d=`$PKG_CONFIG --variable=libdir slurm 2>/dev/null`
          AS_IF([test -n "$pspawn_d"], [pspawn_slurm_libdirs="$pspawn_slurm_libdirs $pspawn_d"])])
        AS_IF([test -n "$pspawn_multiarch"],
              [pspawn_slurm_libdirs="$pspawn_slurm_libdirs /usr/lib/$pspawn_multiarch"])
        pspawn_slurm_libdirs="$pspawn_slurm_libdirs /usr/lib64 /usr/lib /usr/local/lib64 /usr/local/lib"
        for pspawn_d in $pspawn_slurm_libdirs; do
          for pspawn_sub in slurm-wlm slurm; do
            AS_IF([test -z "$SLURM_PLUGINDIR" && ls "$pspawn_d/$pspawn_sub"/proctrack_*.so >/dev/null 2>&1],
                  [SLURM_PLUGINDIR=$pspawn_d/$pspawn_sub])
          done
        done
        pspawn_note=
        AS_IF([test -z "$SLURM_PLUGINDIR"], [
          # Slurm's headers without its plugins (a build host): Debian's
          # layout on Debian, upstream's under our own libdir elsewhere.
          AS_IF([test -f /etc/debian_version && test -n "$pspawn_multiarch"],
                [SLURM_PLUGINDIR=/usr/lib/$pspawn_multiarch/slurm-wlm],
                [SLURM_PLUGINDIR='${libdir}/slurm'])
          pspawn_note=" (no Slurm plugins found; --with-slurm-plugindir=DIR to choose)"])
        AC_MSG_RESULT([$SLURM_PLUGINDIR$pspawn_note])],
      [SLURM_PLUGINDIR=$with_slurm_plugindir])

    pspawn_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    # A declaration check, not a link check: the plugin links against no
    # Slurm library; spank_* calls resolve in the process that loads it
    # (slurmstepd's libslurmfull), and libslurm.so does not export them.
    AC_CHECK_DECL([spank_prepend_task_argv],
      [AC_DEFINE([HAVE_SPANK_PREPEND_TASK_ARGV], [1],
                 [Define to 1 if slurm/spank.h declares spank_prepend_task_argv.])
       pspawn_spank_argv="spank_prepend_task_argv"],
      [pspawn_spank_argv="argv[[0]] replaced in place"],
      [[#include <stdint.h>
#include <slurm/spank.h>]])
    AC_CHECK_DECL([slurm_spank_init_failure_mode],
      [AC_DEFINE([HAVE_SPANK_INIT_FAILURE_MODE], [1],
                 [Define to 1 if slurm/spank.h declares slurm_spank_init_failure_mode.])
       pspawn_spank_argv="$pspawn_spank_argv, init failure: job"],
      [],
      [[#include <stdint.h>
#include <slurm/spank.h>]])
    AC_COMPUTE_INT([pspawn_slurm_major], [SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)],
                   [[#include <slurm/slurm_version.h>]], [pspawn_slurm_major=unknown])
    AC_COMPUTE_INT([pspawn_slurm_minor], [SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER)],
                   [[#include <slurm/slurm_version.h>]], [pspawn_slurm_minor=unknown])
    CPPFLAGS=$pspawn_save_CPPFLAGS
    pspawn_slurm_version=`printf '%d.%02d' "$pspawn_slurm_major" "$pspawn_slurm_minor" 2>/dev/null` ||
      pspawn_slurm_version=unknown
    pspawn_spank_summary="yes (Slurm $pspawn_slurm_version, $pspawn_spank_argv), into $SLURM_PLUGINDIR"
  ])
  AC_SUBST([SLURM_PLUGINDIR])
])
