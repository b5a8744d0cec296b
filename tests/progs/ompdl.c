/* ompdl LIB - a program that is not OpenMP loads an OpenMP library (LIB,
 * tests/progs/libompdl.so) with dlopen(RTLD_LOCAL) and runs one region in
 * it; prints "team=T sum=ok" or "team=T sum=BAD ...", exit 1 if the sum is
 * wrong, 2 if the library cannot be loaded. */
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
    int team = region(n, &sum);
    if (sum != n * (n - 1) / 2) {
        printf("team=%d sum=BAD %ld, want %ld\n", team, sum, n * (n - 1) / 2);
        return 1;
    }
    printf("team=%d sum=ok\n", team);
    return 0;
}
