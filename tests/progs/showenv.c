/* showenv NAME... - print NAME=VALUE (or NAME unset) for each NAME, one per
 * line.  Built twice: showenv (dynamically linked) and showenv_static (no
 * dynamic linker, so LD_PRELOAD cannot apply), for the OpenMP shim's
 * injection tests (tests/57-omp-shim.bats). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = getenv(argv[i]);
        if (v)
            printf("%s=%s\n", argv[i], v);
        else
            printf("%s unset\n", argv[i]);
    }
    return 0;
}
