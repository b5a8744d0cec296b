/*
 * demo.h - what the demo workloads share: argument checking with one
 * message per bad argument (exit 2), a monotonic clock, the thread count and
 * the end of the timed loop.  Include it after defining PROG (the program's
 * name) and USAGE (its usage line), and after <omp.h> when _OPENMP.
 */
#ifndef COSCHED_DEMO_H
#define COSCHED_DEMO_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Noreturn void bad_usage(const char *what, const char *arg)
{
	if (arg)
		fprintf(stderr, PROG ": %s '%s'; " USAGE "\n", what, arg);
	else
		fprintf(stderr, PROG ": %s; " USAGE "\n", what);
	exit(2);
}

static double parse_seconds(const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 1e6)
		bad_usage("-s wants a number of seconds > 0, got", s);
	return v;
}

static long parse_count(const char *opt, const char *s, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max) {
		char what[80];
		snprintf(what, sizeof what, "%s wants an integer from 1 to %ld, got", opt, max);
		bad_usage(what, s);
	}
	return v;
}

/* The options every demo takes: -s SECONDS | -n ITERATIONS (default:
 * default_iterations), -q, -h, and -m MIB (default default_mib) when
 * default_mib > 0; -r (o.region = 1) when the program defines
 * DEMO_REGION_OPTION before including this file.  -h prints USAGE and exits 0; a bad option, value or
 * argument prints one line and exits 2 (bad_usage). */
struct demo_args { long iterations; double seconds; int quiet; long mib; int region; };

static struct demo_args demo_parse(int argc, char **argv, long default_iterations, long default_mib)
{
	struct demo_args o = { 0, 0, 0, default_mib, 0 };
	int c;
#ifdef DEMO_REGION_OPTION
	const char *opts = default_mib > 0 ? ":s:n:m:qrh" : ":s:n:qrh";
#else
	const char *opts = default_mib > 0 ? ":s:n:m:qh" : ":s:n:qh";
#endif

	opterr = 0;
	while ((c = getopt(argc, argv, opts)) != -1) {
		char opt[3] = { '-', (char)optopt, 0 };
		switch (c) {
		case 's': o.seconds = parse_seconds(optarg); break;
		case 'n': o.iterations = parse_count("-n", optarg, 1000000000L); break;
		case 'm': o.mib = parse_count("-m", optarg, 1L << 20); break;
		case 'q': o.quiet = 1; break;
#ifdef DEMO_REGION_OPTION
		case 'r': o.region = 1; break;
#endif
		case 'h': printf(USAGE "\n"); exit(0);
		case ':': bad_usage("option needs a value:", opt);
		default: bad_usage("unknown option", opt);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument", argv[optind]);
	if (o.seconds > 0 && o.iterations > 0)
		bad_usage("-s and -n exclude each other", NULL);
	if (o.seconds == 0 && o.iterations == 0)
		o.iterations = default_iterations;
	return o;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The threads an OpenMP parallel region gets (1 without OpenMP). */
static inline int demo_threads(void)
{
#ifdef _OPENMP
	return omp_get_max_threads();
#else
	return 1;
#endif
}

/* After each iteration of the timed loop: counts it in *done, sets *elapsed
 * (seconds since t0) and says whether the run is over (-n ITERATIONS done,
 * or -s SECONDS passed). */
static inline int demo_over(const struct demo_args *o, long *done, double t0, double *elapsed)
{
	++*done;
	*elapsed = now() - t0;
	return o->iterations ? *done >= o->iterations : *elapsed >= o->seconds;
}

#endif
