# X_AC_SLURM: optional Slurm SPANK headers. --with-slurm[=PREFIX],
# --with-slurm-plugindir=DIR. Auto-detected; explicit request that fails is an error.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm@<:@=PREFIX@:>@], [build the SPANK plugin against slurm/spank.h (default: auto)])],
    [], [with_slurm=check])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [where to install cosched.so (default: LIBDIR/slurm)])],
    [slurmplugindir=$withval], [slurmplugindir='${libdir}/slurm'])
  AC_SUBST([slurmplugindir])
  cs_have_slurm=no
  SLURM_CFLAGS=
  AS_IF([test "x$with_slurm" != xno], [
    AS_IF([test "x$with_slurm" != xyes && test "x$with_slurm" != xcheck],
      [SLURM_CFLAGS="-I$with_slurm/include"])
    cs_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $SLURM_CFLAGS"
    AC_CHECK_HEADER([slurm/spank.h], [cs_have_slurm=yes])
    CPPFLAGS=$cs_save_CPPFLAGS
    AS_IF([test "x$cs_have_slurm" = xno && test "x$with_slurm" != xcheck],
      [AC_MSG_ERROR([--with-slurm was given but slurm/spank.h was not found (install libslurm-dev)])])
  ])
  AC_SUBST([SLURM_CFLAGS])
  AM_CONDITIONAL([HAVE_SLURM], [test "x$cs_have_slurm" = xyes])
])
