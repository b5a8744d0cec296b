/*
 * stream: a memory-streaming demo workload (class S of the SCN classification,
 * paper 001 Table 2).
 *
 * Repeats the STREAM triad a[i] = b[i] + s * c[i] over three arrays that are
 * far larger than the cache a job can count on, so that nearly every byte comes
 * from memory: the program is bound by the memory link, not by a core.  Once
 * its threads saturate the link, more cores do not help it, and it slows down
 * the jobs that share the link and the last-level cache.
 *
 *   stream [-s SECONDS | -n ITERATIONS] [-m MIB] [-q]
 *
 * The default is a fixed amount of work (DEFAULT_ITERATIONS triads over
 * 3 x 64 MiB) that takes 3-3.7 s with 2 threads on the 2-core development VM
 * (6.2-6.9 s with 1: one core does not saturate its memory link there).
 * -s runs whole triads until SECONDS have passed instead.  -m changes the size
 * of each array: on this VM 64 MiB arrays stream at the same rate as 1 GiB ones
 * although the (host) L3 reports 480 MiB; raise -m on a machine whose LLC really
 * holds 192 MiB.
 *
 * Output (stdout, one line, unless -q):
 *   stream: 400 iterations, 2 threads, 3.36 s, 24.0 GB/s, 192 MiB, checksum 5.872026e+07
 * Bytes counted per triad are 3 x array size, as in STREAM (no write-allocate).
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

#define PROG "stream"
#define USAGE "usage: " PROG " [-s SECONDS | -n ITERATIONS] [-m MIB] [-q]"
#define DEFAULT_ITERATIONS 400L
#define DEFAULT_MIB 64L

#include "demo.h"

int main(int argc, char **argv)
{
	struct demo_args o = demo_parse(argc, argv, DEFAULT_ITERATIONS, DEFAULT_MIB);
	long mib = o.mib;

	size_t n = (size_t)mib * 1024 * 1024 / sizeof(double);
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *cc = malloc(n * sizeof *cc);
	if (!a || !b || !cc) {
		fprintf(stderr, PROG ": cannot allocate 3 x %ld MiB: %s\n", mib, strerror(errno));
		return 1;
	}
	int threads = demo_threads();

	/* First touch by the threads that will stream the data (same static schedule). */
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = 0.0;
		b[i] = 1.0;
		cc[i] = 2.0;
	}

	const double scalar = 3.0;
	long done = 0;
	double t0 = now(), elapsed;
	for (;;) {
#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] + scalar * cc[i];
		/* The stores of every triad must happen: nothing reads a until the end. */
		__asm__ volatile("" ::: "memory");
		if (demo_over(&o, &done, t0, &elapsed))
			break;
	}

	double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	/* a[i] = 1 + 3 * 2 everywhere. */
	int ok = sum == 7.0 * (double)n;

	double gbs = 3.0 * (double)n * sizeof(double) * (double)done / elapsed / 1e9;
	if (!o.quiet)
		printf(PROG ": %ld iterations, %d thread%s, %.2f s, %.1f GB/s, %ld MiB, checksum %.6e\n",
		       done, threads, threads == 1 ? "" : "s", elapsed, gbs, 3 * mib, sum);
	free(a);
	free(b);
	free(cc);
	if (!ok) {
		fprintf(stderr, PROG ": wrong checksum %.6e (want %.6e)\n", sum, 7.0 * (double)n);
		return 1;
	}
	return 0;
}
