/* ompbench - what one outermost OpenMP region costs, for BENCHMARKS.md
 * section 12 and tests/57-omp-shim.bats (libcosched-omp.so).
 *
 *   ompbench [-P] [-a] [-k empty|barrier|long] [-n REGIONS] [-s SECONDS]
 *
 * -k empty (default): REGIONS regions whose body is empty;
 * -k barrier: REGIONS regions of share/demo/barrier's grain (a few hundred
 *   ns of work per thread, then the region's end barrier);
 * -k long: one region of SECONDS (default 4) in which every thread spins;
 *   prints the team it had.
 * Prints "regions=N team=T ns_per_region=X" (team: of the last region).
 *
 * -a: first 100 empty regions, then the main thread narrows its own
 *   affinity to its first CPU (sched_setaffinity) and runs one more: prints
 *   "own-move cpus=1 team=T" (the shim must see the program's own call at
 *   once), then the rest as above on that one CPU.
 * -P: first make a page as cosched's engine does (shared/omppage.h: a
 *   sealed memfd named in COSCHED_OMP_PAGE), then run as above: the shim's
 *   hot path with a page, without cosched.  After the run, prints the
 *   page's reverse channel: "page team=T regions=R slots=S" (S: the slots
 *   the job's threads claimed).
 * -F K: after one empty region, fork K processes that run REGIONS empty
 *   regions each beside this one's (the page's count must then be
 *   1 + (K + 1) x REGIONS: each process counts in a slot of its own, those
 *   beyond the page's slots in its shared count).  Run it with one thread:
 *   an OpenMP runtime with a pool of threads is not usable after fork. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../../launcher/shared/omppage.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile double sink;

/* one empty region (one call site for every caller); its team */
static int empty_region(void)
{
    int team = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            team = omp_get_num_threads();
    }
    return team;
}

int main(int argc, char **argv)
{
    const char *kind = "empty";
    long n = 1000000;
    double seconds = 4;
    int make_page = 0, own_move = 0, forks = 0, c;
    while ((c = getopt(argc, argv, "PaF:k:n:s:")) != -1) {
        switch (c) {
        case 'P': make_page = 1; break;
        case 'a': own_move = 1; break;
        case 'F': forks = atoi(optarg); break;
        case 'k': kind = optarg; break;
        case 'n': n = atol(optarg); break;
        case 's': seconds = atof(optarg); break;
        default:
            fprintf(stderr, "usage: ompbench [-P] [-a] [-F K] [-k empty|barrier|long] [-n REGIONS] [-s SECONDS]\n");
            return 2;
        }
    }
    struct cs_omppage *pg = NULL;
    if (make_page && getenv(CS_OMPPAGE_ENV) == NULL) {
        /* the page, then exec ourselves: the shim maps it before main() */
        int fd = memfd_create(CS_OMPPAGE_NAME, MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, CS_OMPPAGE_SIZE) < 0)
            return perror("ompbench: memfd"), 2;
        pg = mmap(NULL, CS_OMPPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (pg == MAP_FAILED)
            return perror("ompbench: mmap"), 2;
        pg->magic = CS_OMPPAGE_MAGIC;
        pg->version = CS_OMPPAGE_VERSION;
        pg->gen = 1;
        char b[16];
        snprintf(b, sizeof b, "%d", fd);
        setenv(CS_OMPPAGE_ENV, b, 1);
        pid_t pid = fork();
        if (pid == 0) {
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 2;
        printf("page team=%u regions=%llu slots=%u\n", pg->team, (unsigned long long)cs_omppage_regions(pg),
               pg->nslots);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    int team = 0;
    if (own_move) {
        for (int i = 0; i < 100; i++)
            team = empty_region();
        cpu_set_t set, one;
        CPU_ZERO(&one);
        if (sched_getaffinity(0, sizeof set, &set) != 0)
            return perror("ompbench: sched_getaffinity"), 2;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set)) {
                CPU_SET(cpu, &one);
                break;
            }
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            return perror("ompbench: sched_setaffinity"), 2;
        team = empty_region();
        printf("own-move cpus=1 team=%d\n", team);
    }
    if (forks > 0) {
        team = empty_region();   /* this thread counts in a slot before the forks */
        for (int k = 0; k < forks; k++) {
            pid_t pid = fork();
            if (pid < 0)
                return perror("ompbench: fork"), 2;
            if (pid == 0) {
                for (long i = 0; i < n; i++)
                    empty_region();
                _exit(0);
            }
        }
    }
    double t0 = now();
    if (strcmp(kind, "empty") == 0) {
        for (long i = 0; i < n; i++)
            team = empty_region();
    } else if (strcmp(kind, "barrier") == 0) {
        for (long i = 0; i < n; i++) {
#pragma omp parallel
            {
                double x = 1.0;
                for (int k = 0; k < 200; k++)
                    x = x * 1.0000001 + 1e-9;
                sink = x;
                if (omp_get_thread_num() == 0)
                    team = omp_get_num_threads();
            }
        }
    } else if (strcmp(kind, "long") == 0) {
        n = 1;
#pragma omp parallel
        {
            if (omp_get_thread_num() == 0)
                team = omp_get_num_threads();
            double x = 1.0, end = now() + seconds;
            while (now() < end)
                for (int k = 0; k < 1000; k++)
                    x = x * 1.0000001 + 1e-9;
            sink = x;
        }
    } else {
        fprintf(stderr, "ompbench: -k %s: want empty, barrier or long\n", kind);
        return 2;
    }
    double t = now() - t0;
    while (forks > 0 && wait(NULL) > 0)
        ;
    printf("regions=%ld team=%d ns_per_region=%.1f\n", n, team, t * 1e9 / (double)n);
    return 0;
}
