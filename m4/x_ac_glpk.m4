# X_AC_GLPK: optional GLPK (the LP solver of `cosched simulate --bound`).
# --with-glpk[=PREFIX]; pkg-config first (Debian's libglpk-dev ships no .pc
# file, other distributions may), then glpk.h + -lglpk.  Auto-detected when
# not asked for: a node that only runs the engine does not need an LP solver,
# so without GLPK cosched builds and `simulate --bound` says it is unavailable.
# An explicit --with-glpk that cannot be satisfied is an error.
AC_DEFUN([X_AC_GLPK], [
  AC_ARG_WITH([glpk],
    [AS_HELP_STRING([--with-glpk@<:@=PREFIX@:>@], [use GLPK for cosched simulate --bound (default: auto)])],
    [], [with_glpk=check])
  cs_have_glpk=no
  GLPK_CFLAGS= ; GLPK_LIBS=
  AS_IF([test "x$with_glpk" != xno], [
    AS_IF([test "x$with_glpk" = xyes || test "x$with_glpk" = xcheck],
      [PKG_CHECK_MODULES([GLPK], [glpk], [cs_have_glpk=yes], [GLPK_CFLAGS= ; GLPK_LIBS=])],
      [GLPK_CFLAGS="-I$with_glpk/include"; GLPK_LIBS="-L$with_glpk/lib"])
    AS_IF([test "x$cs_have_glpk" = xno], [
      cs_save_CPPFLAGS=$CPPFLAGS; cs_save_LDFLAGS=$LDFLAGS
      CPPFLAGS="$CPPFLAGS $GLPK_CFLAGS"; LDFLAGS="$LDFLAGS $GLPK_LIBS"
      AC_CHECK_HEADER([glpk.h],
        [AC_CHECK_LIB([glpk], [glp_simplex], [cs_have_glpk=yes; GLPK_LIBS="$GLPK_LIBS -lglpk"])])
      CPPFLAGS=$cs_save_CPPFLAGS; LDFLAGS=$cs_save_LDFLAGS])
    AS_IF([test "x$cs_have_glpk" = xno && test "x$with_glpk" != xcheck],
      [AC_MSG_ERROR([--with-glpk was given but glpk.h/libglpk were not found (Debian: libglpk-dev)])])
  ])
  AS_IF([test "x$cs_have_glpk" = xyes], [AC_DEFINE([HAVE_GLPK], [1], [GLPK available (simulate --bound)])],
    [test "x$with_glpk" = xcheck],
    [AC_MSG_WARN([GLPK not found: cosched simulate --bound will be unavailable (Debian: libglpk-dev)])])
  AC_SUBST([GLPK_CFLAGS]) AC_SUBST([GLPK_LIBS])
  AM_CONDITIONAL([HAVE_GLPK], [test "x$cs_have_glpk" = xyes])
])
