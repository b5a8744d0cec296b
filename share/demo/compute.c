/*
 * compute: a compute-bound demo workload (class N of the SCN classification,
 * paper 001 Table 2: no contention).
 *
 * Each iteration runs ITEMS independent work items spread over the threads;
 * an item advances CHAINS independent recurrences x = x * a + b for STEPS
 * steps.  Everything lives in registers: the program touches almost no memory,
 * neither suffers from nor causes cache or memory-link contention, and scales
 * with the number of cores it is given.
 *
 *   compute [-s SECONDS | -n ITERATIONS] [-r] [-q]
 *
 * The default (DEFAULT_ITERATIONS iterations) takes about 3 s with 2 threads on
 * the 2-core development VM (5.8 s with 1).  -s runs whole iterations until SECONDS have
 * passed.
 *
 * -r: the whole run is one parallel region (the iteration loop inside it, a
 * worksharing loop and a barrier per iteration), as in codes that open one
 * region around their time-step loop: the team is fixed when the run starts,
 * whatever cores the program gets later.  The line says "1 region".
 *
 * Output (stdout, one line, unless -q):
 *   compute: 140 iterations, 2 threads, 3.02 s, 9.5 GFLOP/s, checksum 9.892489e+07
 * Bad arguments: one line on stderr, exit 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#else
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#endif

#define PROG "compute"
#define USAGE "usage: " PROG " [-s SECONDS | -n ITERATIONS] [-r] [-q]"
#define DEMO_REGION_OPTION 1
#define DEFAULT_ITERATIONS 140L
#define ITEMS 256
#define CHAINS 8
#define STEPS 50000

#include "demo.h"

/* One work item; the result depends on the item and the iteration so that no
 * iteration can be skipped or merged with another. */
static double item(int it, long iter)
{
	double x[CHAINS];
	const double a = 0.999999;
	for (int c = 0; c < CHAINS; c++)
		x[c] = (double)(it + c) + (double)(iter % 3);
	for (int s = 0; s < STEPS; s++)
		for (int c = 0; c < CHAINS; c++)
			x[c] = x[c] * a + (double)(c + 1) * 1e-3;
	double sum = 0.0;
	for (int c = 0; c < CHAINS; c++)
		sum += x[c];
	return sum;
}

int main(int argc, char **argv)
{
	struct demo_args o = demo_parse(argc, argv, DEFAULT_ITERATIONS, 0);
	int threads = demo_threads();

	long done = 0;
	double checksum = 0.0, t0 = now(), elapsed;
	if (o.region) {
		int over = 0;
#pragma omp parallel
		{
#ifdef _OPENMP
#pragma omp master
			threads = omp_get_num_threads();
#endif
			while (!over) {
#pragma omp for schedule(static) reduction(+ : checksum)
				for (int it = 0; it < ITEMS; it++)
					checksum += item(it, done);
#pragma omp single
				over = demo_over(&o, &done, t0, &elapsed);
			}
		}
	} else {
		for (;;) {
			double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
			for (int it = 0; it < ITEMS; it++)
				sum += item(it, done);
			checksum += sum;
			if (demo_over(&o, &done, t0, &elapsed))
				break;
		}
	}

	if (!o.quiet)
		printf(PROG ": %ld iterations, %d thread%s%s, %.2f s, %.1f GFLOP/s, checksum %.6e\n",
		       done, threads, threads == 1 ? "" : "s", o.region ? ", 1 region" : "", elapsed,
		       2.0 * CHAINS * STEPS * ITEMS * done / elapsed / 1e9, checksum);
	return isfinite(checksum) ? 0 : 1;
}
