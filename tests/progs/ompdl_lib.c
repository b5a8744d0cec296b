/* libompdl.so - an OpenMP library that tests/progs/ompdl loads with
 * dlopen(RTLD_LOCAL): its libgomp is then outside the global scope, where
 * libcosched-omp.so's dlsym(RTLD_NEXT) cannot see it (tests/57-omp-shim.bats). */
#include <omp.h>

/* the team size of one region, or -1 if its threads disagree; *sum gets
 * 0 + 1 + ... + n-1 computed by the team */
int ompdl_region(long n, long *sum)
{
    int team = 0, bad = 0;
    long s = 0;
#pragma omp parallel reduction(+ : s)
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
#pragma omp critical
        {
            if (team == 0)
                team = nt;
            else if (team != nt)
                bad = 1;
        }
        for (long i = n * me / nt; i < n * (me + 1) / nt; i++)
            s += i;
    }
    *sum = s;
    return bad ? -1 : team;
}
