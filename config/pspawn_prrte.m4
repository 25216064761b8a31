# PSPAWN_CHECK_PRRTE: PRRTE's internal headers, for the ODLS component.
AC_DEFUN([PSPAWN_CHECK_PRRTE], [
  AC_ARG_WITH([prrte], [AS_HELP_STRING([--with-prrte[=DIR]],
              [build the PRRTE ODLS component against PRRTE headers in DIR])],
              [], [with_prrte=check])
  have_prrte=no
  PRRTE_CPPFLAGS=
  AS_CASE([$with_prrte], [no], [],
    [yes|check], [for d in /usr/lib/$host_cpu-linux-gnu/openmpi/include/prte /usr/include/prte /usr/local/include/prte; do
                    AS_IF([test -f "$d/src/mca/odls/odls.h"], [PRRTE_CPPFLAGS="-I$d"; break])
                  done],
    [PRRTE_CPPFLAGS="-I$with_prrte"])
  AS_IF([test -n "$PRRTE_CPPFLAGS"], [
    prrte_dir=${PRRTE_CPPFLAGS#-I}
    AS_IF([test -f "$prrte_dir/src/mca/odls/odls.h"], [have_prrte=yes])])
  AS_IF([test "x$with_prrte" != xno && test "x$with_prrte" != xcheck && test "x$have_prrte" = xno],
        [AC_MSG_ERROR([--with-prrte given but PRRTE's src/mca/odls/odls.h was not found])])
  AC_SUBST([PRRTE_CPPFLAGS])
  AM_CONDITIONAL([HAVE_PRRTE], [test "x$have_prrte" = xyes])
])
