# X_AC_LIKWID: optional likwid (hardware counters). --with-likwid[=PREFIX]
# Auto-detected when not asked for; an explicit --with-likwid that cannot be
# satisfied is an error.
AC_DEFUN([X_AC_LIKWID], [
  AC_ARG_WITH([likwid],
    [AS_HELP_STRING([--with-likwid@<:@=PREFIX@:>@], [use liblikwid for hardware counters (default: auto)])],
    [], [with_likwid=check])
  cs_have_likwid=no
  LIKWID_CFLAGS= ; LIKWID_LIBS=
  AS_IF([test "x$with_likwid" != xno], [
    cs_save_CPPFLAGS=$CPPFLAGS; cs_save_LDFLAGS=$LDFLAGS
    AS_IF([test "x$with_likwid" != xyes && test "x$with_likwid" != xcheck], [
      LIKWID_CFLAGS="-I$with_likwid/include"; LIKWID_LIBS="-L$with_likwid/lib"])
    CPPFLAGS="$CPPFLAGS $LIKWID_CFLAGS"; LDFLAGS="$LDFLAGS $LIKWID_LIBS"
    AC_CHECK_HEADER([likwid.h],
      [AC_CHECK_LIB([likwid], [perfmon_init], [cs_have_likwid=yes; LIKWID_LIBS="$LIKWID_LIBS -llikwid"])])
    CPPFLAGS=$cs_save_CPPFLAGS; LDFLAGS=$cs_save_LDFLAGS
    AS_IF([test "x$cs_have_likwid" = xno && test "x$with_likwid" != xcheck],
      [AC_MSG_ERROR([--with-likwid was given but likwid.h/liblikwid were not found])])
  ])
  AS_IF([test "x$cs_have_likwid" = xyes], [AC_DEFINE([HAVE_LIKWID], [1], [liblikwid available])])
  AC_SUBST([LIKWID_CFLAGS]) AC_SUBST([LIKWID_LIBS])
  AM_CONDITIONAL([HAVE_LIKWID], [test "x$cs_have_likwid" = xyes])
])
