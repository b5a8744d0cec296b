/*
 * ompwork: OpenMP kernels for measuring what the wait policy costs a folded
 * job (two threads of one team time-sharing one core).
 *
 *   ompwork [-k barrier|triad] [-n ITERATIONS] [-w WORK] [-m MIB] [-F CPULIST] [-v]
 *
 *   -k barrier  fine-grained synchronisation (default): each iteration every
 *               thread does WORK (-w, default 50) dependent multiply-adds in
 *               registers, then all meet at `#pragma omp barrier`
 *   -k triad    STREAM triad a = b + s*c over three arrays of MIB (-m, default
 *               32) MiB each, one `omp for` (and its implicit barrier) per
 *               iteration
 *   -n N        iterations (default: 1000000 barrier, 200 triad; each about
 *               0.4-0.6 s alone with 2 threads on the 2-core development VM)
 *   -F CPULIST  once the team is running, every thread binds itself to CPULIST
 *               ("0", "0,1", "0-1") before timing starts: the job is folded
 *               while running, as cosched does, after libgomp has chosen its
 *               spin strategy for the CPUs it saw at start (unlike taskset,
 *               which folds before start)
 *   -v          a line describing the run on stderr
 *
 * Prints the elapsed seconds of the timed part (all iterations) on stdout,
 * e.g. "0.571".  Bad usage: message and usage on stderr, exit 2.
 *
 * Compare, e.g.:
 *   OMP_NUM_THREADS=2 ompwork -k barrier -F 0
 *   OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ompwork -k barrier -F 0
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#else
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
static int omp_get_thread_num(void) { return 0; }
static int omp_get_max_threads(void) { return 1; }
#endif

#define USAGE "usage: ompwork [-k barrier|triad] [-n ITERATIONS] [-w WORK] [-m MIB] [-F CPULIST] [-v]\n"

#define PROG "ompwork"
#include "progargs.h"

/* "0", "0,2", "0-3,6": 0 or -1. */
static int parse_cpulist(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s) {
		char *end;
		errno = 0;
		long lo = strtol(s, &end, 10), hi = lo;
		if (errno || end == s || lo < 0 || lo >= CPU_SETSIZE)
			return -1;
		s = end;
		if (*s == '-') {
			hi = strtol(++s, &end, 10);
			if (errno || end == s || hi < lo || hi >= CPU_SETSIZE)
				return -1;
			s = end;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET((int)c, set);
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return CPU_COUNT(set) > 0 ? 0 : -1;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const cpu_set_t *fold_to;
static int fold_failed;

/* Called by every thread of the running team. */
static void fold_self(void)
{
	if (fold_to && sched_setaffinity(0, sizeof *fold_to, fold_to) < 0) {
#pragma omp atomic write
		fold_failed = errno;
	}
}

static double barrier_kernel(long iters, long work, double *check)
{
	double t0 = 0, sum = 0;
#pragma omp parallel reduction(+ : sum)
	{
		fold_self();
#pragma omp barrier
#pragma omp master
		t0 = now();
#pragma omp barrier
		double x = omp_get_thread_num() + 1.0;
		for (long it = 0; it < iters; it++) {
			for (long w = 0; w < work; w++)
				x = x * 0.999 + 0.001;
#pragma omp barrier
		}
		sum += x;
	}
	double t = now() - t0;
	*check = sum;
	return t;
}

static double triad_kernel(long iters, long mib, double *check)
{
	size_t n = (size_t)mib * 1024 * 1024 / sizeof(double);
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
	double t0 = 0, sum = 0;
	if (!a || !b || !c) {
		fprintf(stderr, "ompwork: cannot allocate 3 x %ld MiB\n", mib);
		exit(1);
	}
#pragma omp parallel
	{
#pragma omp for schedule(static)
		for (size_t i = 0; i < n; i++) {
			a[i] = 0.0;
			b[i] = 1.0;
			c[i] = 2.0;
		}
		fold_self();
#pragma omp barrier
#pragma omp master
		t0 = now();
#pragma omp barrier
		for (long it = 0; it < iters; it++) {
#pragma omp for schedule(static)
			for (size_t i = 0; i < n; i++)
				a[i] = b[i] + 3.0 * c[i];
		}
	}
	double t = now() - t0;
	for (size_t i = 0; i < n; i += 4096)
		sum += a[i];
	*check = sum;
	free(a);
	free(b);
	free(c);
	return t;
}

int main(int argc, char **argv)
{
	const char *kernel = "barrier";
	long iters = -1, work = 50, mib = 32;
	int verbose = 0, c;
	char o[3] = "-?";
	cpu_set_t fold;
	const char *fold_arg = NULL;

	opterr = 0;
	while ((c = getopt(argc, argv, ":k:n:w:m:F:vh")) != -1) {
		switch (c) {
		case 'k':
			if (strcmp(optarg, "barrier") && strcmp(optarg, "triad"))
				bad_usage("-k wants barrier or triad, got '%s'", optarg);
			kernel = optarg;
			break;
		case 'n': iters = parse_long('n', optarg, 1, 1000000000L); break;
		case 'w': work = parse_long('w', optarg, 0, 100000000L); break;
		case 'm': mib = parse_long('m', optarg, 1, 1L << 20); break;
		case 'F':
			if (parse_cpulist(optarg, &fold) < 0)
				bad_usage("-F wants a cpu list such as 0 or 0-1, got '%s'", optarg);
			fold_to = &fold;
			fold_arg = optarg;
			break;
		case 'v': verbose = 1; break;
		case 'h': fputs(USAGE, stdout); return 0;
		case ':': o[1] = (char)optopt; bad_usage("option '%s' needs a value", o);
		default: o[1] = (char)optopt; bad_usage("unknown option '%s'", o);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);

	int is_barrier = strcmp(kernel, "barrier") == 0;
	if (iters < 0)
		iters = is_barrier ? 1000000 : 200;
	double check, t = is_barrier ? barrier_kernel(iters, work, &check) : triad_kernel(iters, mib, &check);
	if (fold_failed) {
		fprintf(stderr, "ompwork: -F: sched_setaffinity: %s\n", strerror(fold_failed));
		return 1;
	}
	if (verbose) {
		const char *wp = getenv("OMP_WAIT_POLICY");
		fprintf(stderr, "ompwork: %s, %ld iterations, %d thread(s), OMP_WAIT_POLICY=%s%s%s, %.3f s, checksum %.6e\n",
			kernel, iters, omp_get_max_threads(), wp ? wp : "(unset)",
			fold_arg ? ", folded to cpus " : "", fold_arg ? fold_arg : "", t, check);
	}
	printf("%.3f\n", t);
	return 0;
}
