# AX_CC_STD_C11: compile as C11 (with GNU extensions off by default flags kept)
AC_DEFUN([AX_CC_STD_C11], [
  AC_MSG_CHECKING([whether $CC accepts -std=c11])
  cs_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -std=c11"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[_Static_assert(1, "c11");]], [[]])],
    [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); CFLAGS=$cs_save_CFLAGS])
])
