/* ompdl LIB - a program that is not OpenMP loads an OpenMP library (LIB,
 * tests/progs/libompdl.so) with dlopen(RTLD_LOCAL) and runs its region
 * twice; prints "team=T1,T2 sum=ok" or "team=T1,T2 sum=BAD ...", exit 1 if a
 * sum is wrong, 2 if the library cannot be loaded. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const long n = 100000;
    long sum = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: ompdl LIBRARY\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*region)(long, long *) = h ? (int (*)(long, long *))dlsym(h, "ompdl_region") : NULL;
    if (region == NULL) {
        fprintf(stderr, "ompdl: %s: %s\n", argv[1], dlerror());
        return 2;
    }
    long sum2 = 0;
    int team = region(n, &sum), team2 = region(n, &sum2);
    if (sum != n * (n - 1) / 2 || sum2 != sum) {
        printf("team=%d,%d sum=BAD %ld %ld, want %ld\n", team, team2, sum, sum2, n * (n - 1) / 2);
        return 1;
    }
    printf("team=%d,%d sum=ok\n", team, team2);
    return 0;
}
