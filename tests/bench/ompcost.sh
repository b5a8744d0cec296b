#!/bin/bash
# ompcost.sh - the OpenMP shim's own cost per outermost region, without an
# OpenMP runtime's noise (BENCHMARKS.md section 12a): a do-nothing runtime
# (GOMP_parallel calls the region's function once, omp_get_level and
# omp_get_max_threads answer from a variable) stands in for libgomp, and a
# loop of N regions runs with no shim, the shim without a page and the shim
# with a page (generation never moving).  From the build tree, on a quiet
# machine, pinned to the last CPU; prints the median of REPEATS runs of each
# and the shim's difference:
#
#   bash tests/bench/ompcost.sh [REPEATS [N]]          default 5 10000000
#
# What ompregion.sh measures beside libgomp (~250 ns per region of one
# thread here) varies by +-5 ns from run to run; this measures the shim's
# code alone to a tenth of a ns, but not what it costs the runtime's caches.
set -eu
top=$(pwd)
shim=$top/launcher/omp/libcosched-omp.so
[ -f "$shim" ] && [ -f "$top/launcher/shared/omppage.h" ] || { echo "ompcost.sh: run it from the build tree after make" >&2; exit 2; }
reps=${1:-5}
n=${2:-10000000}
cpu=$(($(nproc) - 1))
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat > "$d/rt.c" <<'C'
typedef void (*gomp_fn)(void *);
static __thread int level;
static int nthreads = 1;
void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    (void)num_threads, (void)flags;
    level++;
    fn(data);
    level--;
}
int omp_get_level(void) { return level; }
int omp_get_max_threads(void) { return nthreads; }
int omp_get_proc_bind(void) { return 0; }
C
cat > "$d/loop.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "omppage.h"
typedef void (*gomp_fn)(void *);
void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags);
static void body(void *d) { (*(volatile long *)d)++; }
int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    if (argc > 2) {   /* a page, as cosched's engine makes it, before the shim's first region */
        int fd = memfd_create(CS_OMPPAGE_NAME, MFD_ALLOW_SEALING);
        struct cs_omppage *pg;
        char v[16];
        if (fd < 0 || ftruncate(fd, CS_OMPPAGE_SIZE) < 0 ||
            (pg = mmap(NULL, CS_OMPPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
            return 2;
        pg->magic = CS_OMPPAGE_MAGIC;
        pg->version = CS_OMPPAGE_VERSION;
        pg->gen = 1;
        snprintf(v, sizeof v, "%d", fd);
        setenv(CS_OMPPAGE_ENV, v, 1);
    }
    volatile long c = 0;
    struct timespec a, b;
    for (long i = 0; i < 1000; i++)
        GOMP_parallel(body, (void *)&c, 0, 0);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        GOMP_parallel(body, (void *)&c, 0, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
    return 0;
}
C
cc -O2 -fPIC -shared -o "$d/libgomp.so.1" "$d/rt.c"
cc -O2 -I"$top/launcher/shared" -o "$d/loop" "$d/loop.c" -L"$d" -l:libgomp.so.1 -Wl,-rpath,"$d"
med() { sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
run() {  # run PRELOAD [page]
    local i
    for ((i = 0; i < reps; i++)); do LD_PRELOAD="$1" taskset -c "$cpu" "$d/loop" "$n" ${2:+page}; done | med
}
echo "ompcost.sh: $(date -u '+%F %T') UTC, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $reps x $n regions, cpu $cpu"
none=$(run "")
nopage=$(run "$shim")
page=$(run "$shim" page)
echo "| none | no page | page | no page - none | page - none |"
echo "|---|---|---|---|---|"
awk -v a="$none" -v b="$nopage" -v c="$page" 'BEGIN { printf "| %.1f | %.1f | %.1f | %.1f | %.1f |\n", a, b, c, b - a, c - a }'
