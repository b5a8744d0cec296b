/*
 * demo.h - what the three demo workloads share: argument checking with one
 * message per bad argument (exit 2) and a monotonic clock.  Include it after
 * defining PROG (the program's name) and USAGE (its usage line).
 */
#ifndef COSCHED_DEMO_H
#define COSCHED_DEMO_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
