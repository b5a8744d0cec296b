# X_AC_OMPTESTS: the extra compilers of tests/57-omp-shim.bats (issue 14).
# libcosched-omp.so itself needs only the C compiler; its tests also build
# tests/progs/ompshim.f90 with gfortran (libgomp's Fortran binding) and
# tests/progs/ompshim.c with clang against LLVM's libomp (Debian:
# libomp-14-dev).  Each is used only if it builds and links an OpenMP
# program here; otherwise the tests that need it are skipped, saying why.
# GFORTRAN and OMP_CLANG may be given to pick other compilers.
AC_DEFUN([X_AC_OMPTESTS], [
  AC_ARG_VAR([GFORTRAN], [Fortran compiler for the OpenMP shim's tests (default: gfortran)])
  AC_ARG_VAR([OMP_CLANG], [C compiler with LLVM libomp for the OpenMP shim's tests (default: clang)])
  AC_CHECK_PROGS([GFORTRAN], [gfortran], [no])
  AC_CHECK_PROGS([OMP_CLANG], [clang], [no])
  cs_omp_dir=conftest.omp.dir
  rm -rf $cs_omp_dir && mkdir $cs_omp_dir
  cs_have_gfortran_omp=no
  AS_IF([test "x$GFORTRAN" != xno], [
    AC_MSG_CHECKING([whether $GFORTRAN -fopenmp links an OpenMP program])
    printf 'program t\n  use omp_lib\n  print *, omp_get_max_threads()\nend program t\n' > $cs_omp_dir/t.f90
    AS_IF([(cd $cs_omp_dir && $GFORTRAN -fopenmp -o t t.f90) >&AS_MESSAGE_LOG_FD 2>&1],
      [cs_have_gfortran_omp=yes])
    AC_MSG_RESULT([$cs_have_gfortran_omp])])
  cs_have_libomp_cc=no
  AS_IF([test "x$OMP_CLANG" != xno], [
    AC_MSG_CHECKING([whether $OMP_CLANG -fopenmp=libomp links an OpenMP program])
    printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' > $cs_omp_dir/t.c
    AS_IF([(cd $cs_omp_dir && $OMP_CLANG -fopenmp=libomp -o t t.c) >&AS_MESSAGE_LOG_FD 2>&1],
      [cs_have_libomp_cc=yes])
    AC_MSG_RESULT([$cs_have_libomp_cc])])
  rm -rf $cs_omp_dir
  AM_CONDITIONAL([HAVE_GFORTRAN_OMP], [test "x$cs_have_gfortran_omp" = xyes])
  AM_CONDITIONAL([HAVE_LIBOMP_CC], [test "x$cs_have_libomp_cc" = xyes])
])
