/*
 * barrier: a synchronisation-bound workload (class N of the SCN
 * classification: it touches almost no memory), the kind of code - stencils,
 * CG solvers, most of NPB - that runs many short parallel regions.
 *
 * Each iteration is one parallel region in which every thread does WORK
 * dependent multiply-adds in registers and then meets the others at the
 * region's closing barrier.  The time is spent as much in the OpenMP runtime
 * (fork, barrier, wait policy) as in the work: a job of this kind is what
 * suffers most when its threads time-share cores (folding, co-location) and
 * when waiting is passive (cosched(1), --omp-env).
 *
 *   barrier [-s SECONDS | -n ITERATIONS] [-q]
 *
 * The default (DEFAULT_ITERATIONS iterations) takes about 2 s with 2 threads on
 * the 2-core development VM at libgomp's default wait policy.  -s runs whole
 * iterations until SECONDS have passed.
 *
 * Output (stdout, one line, unless -q):
 *   barrier: 200000 iterations, 2 threads, 1.95 s, 9.8 us/iteration, checksum 4.000000e+05
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

#define PROG "barrier"
#define USAGE "usage: " PROG " [-s SECONDS | -n ITERATIONS] [-q]"
#define DEFAULT_ITERATIONS 200000L
#define WORK 2000

#include "demo.h"

int main(int argc, char **argv)
{
	struct demo_args o = demo_parse(argc, argv, DEFAULT_ITERATIONS, 0);
	long iterations = o.iterations;
	double seconds = o.seconds;
	int quiet = o.quiet;

	int threads = demo_threads();

	long done = 0;
	double checksum = 0.0, t0 = now(), elapsed;
	for (;;) {
		double sum = 0.0;
		int team = 1;
#pragma omp parallel reduction(+ : sum)
		{
			/* dependent chain: cannot be vectorised away or hoisted */
			double x = 1.0 + (double)(done % 7) * 1e-9;
			for (int s = 0; s < WORK; s++)
				x = x * 0.999999999 + 1e-9;
			sum += x > 0.5 ? 1.0 : 0.0;
#ifdef _OPENMP
			if (omp_get_thread_num() == 0)
				team = omp_get_num_threads();
#endif
		}
		/* every thread of this region's team did its work (the team may
		 * differ from region to region: cosched's OpenMP shim sizes each
		 * to the cores the job holds) */
		checksum += sum / team * 2.0;
		done++;
		if (iterations ? done >= iterations : (done % 256 == 0 && now() - t0 >= seconds))
			break;
	}
	elapsed = now() - t0;

	if (!quiet)
		printf(PROG ": %ld iterations, %d thread%s, %.2f s, %.1f us/iteration, checksum %.6e\n",
		       done, threads, threads == 1 ? "" : "s", elapsed, elapsed / done * 1e6, checksum);
	return isfinite(checksum) && checksum == 2.0 * done ? 0 : 1;
}
