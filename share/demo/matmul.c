/*
 * matmul: a cache-sensitive demo workload (class C of the SCN classification,
 * paper 001 Table 2).
 *
 * Repeats C = A * B for 1024 x 1024 doubles, blocked by columns of B: for each
 * block of JB = 512 columns, every row of C streams the whole 1024 x 512 block
 * of B (4 MiB) while its 4 KiB slice of C stays in L1.  The block is larger
 * than a core's L2 (2 MiB here, 0.25-2 MiB on common CPUs) and the whole
 * working set (3 x 8 MiB) fits in a typical server LLC, so B is reused from the
 * LLC: high inbound bandwidth into L2, little from memory.  A streaming
 * co-runner that evicts the block from the LLC sends those reads to memory and
 * slows this program down; that is what makes it "cache-sensitive".  (Not seen
 * on the development VM, whose host L3 of 480 MiB is not thrashed by stream.)
 *
 *   matmul [-s SECONDS | -n ITERATIONS] [-q]
 *
 * The default (DEFAULT_ITERATIONS multiplications) takes 3.3-3.6 s with
 * 2 threads on the 2-core development VM (6.2-6.9 s with 1).  -s runs whole multiplications until
 * SECONDS have passed.
 *
 * Output (stdout, one line, unless -q):
 *   matmul: 12 iterations, 2 threads, 3.20 s, 8.1 GFLOP/s, checksum 8.053044e+08
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

#define PROG "matmul"
#define USAGE "usage: " PROG " [-s SECONDS | -n ITERATIONS] [-q]"
#define DEFAULT_ITERATIONS 12L
#define N 1024
#define JB 512

#include "demo.h"

/* Small exact values: every product and partial sum is an exact double. */
static double a_val(int i, int k) { return (double)((i + 2 * k) % 7) * 0.25; }
static double b_val(int k, int j) { return (double)((3 * k + j) % 5) * 0.5; }

static void multiply(const double *restrict a, const double *restrict b, double *restrict c)
{
	for (int jj = 0; jj < N; jj += JB) {
#pragma omp parallel for schedule(static)
		for (int i = 0; i < N; i++) {
			double *restrict ci = c + (size_t)i * N + jj;
			for (int j = 0; j < JB; j++)
				ci[j] = 0.0;
			for (int k = 0; k < N; k++) {
				const double aik = a[(size_t)i * N + k];
				const double *restrict bk = b + (size_t)k * N + jj;
				for (int j = 0; j < JB; j++)
					ci[j] += aik * bk[j];
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct demo_args o = demo_parse(argc, argv, DEFAULT_ITERATIONS, 0);
	size_t bytes = (size_t)N * N * sizeof(double);
	double *a = malloc(bytes), *b = malloc(bytes), *cm = malloc(bytes);
	if (!a || !b || !cm) {
		fprintf(stderr, PROG ": cannot allocate 3 x %zu MiB: %s\n", bytes >> 20, strerror(errno));
		return 1;
	}
	int threads = demo_threads();

#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[(size_t)i * N + j] = a_val(i, j);
			b[(size_t)i * N + j] = b_val(i, j);
			cm[(size_t)i * N + j] = 0.0;
		}

	long done = 0;
	double t0 = now(), elapsed;
	for (;;) {
		multiply(a, b, cm);
		__asm__ volatile("" ::: "memory");
		if (demo_over(&o, &done, t0, &elapsed))
			break;
	}

	double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
	for (size_t i = 0; i < (size_t)N * N; i++)
		sum += cm[i];

	/* Spot-check two elements against a plain dot product. */
	int ok = 1;
	const int probe[2][2] = { { 0, 0 }, { N - 1, N / 2 + 3 } };
	for (int p = 0; p < 2; p++) {
		int i = probe[p][0], j = probe[p][1];
		double want = 0.0;
		for (int k = 0; k < N; k++)
			want += a_val(i, k) * b_val(k, j);
		if (cm[(size_t)i * N + j] != want) {
			fprintf(stderr, PROG ": C[%d][%d] = %g, want %g\n", i, j, cm[(size_t)i * N + j], want);
			ok = 0;
		}
	}

	if (!o.quiet)
		printf(PROG ": %ld iterations, %d thread%s, %.2f s, %.1f GFLOP/s, checksum %.6e\n",
		       done, threads, threads == 1 ? "" : "s", elapsed,
		       2.0 * N * N * N * done / elapsed / 1e9, sum);
	free(a);
	free(b);
	free(cm);
	return ok ? 0 : 1;
}
