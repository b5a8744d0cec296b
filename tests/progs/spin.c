/*
 * spin: a controllable CPU-burning job for the tests.
 *
 *   spin [-t THREADS] [-c CPU_SECONDS] [-w WALL_SECONDS] [-L SECONDS] [-f N]
 *        [-x CODE] [-p FILE] [-T FILE] [-i] [-v]
 *
 *   -t THREADS  spinning threads in all, the main thread being one of them, so
 *               /proc/PID/task lists exactly THREADS tasks (default 1)
 *   -c SECONDS  stop once the process has used this much CPU time (all its
 *               threads, CLOCK_PROCESS_CPUTIME_ID)
 *   -w SECONDS  stop after this much wall time; with -c, whichever comes first.
 *               Neither: spin until killed
 *   -L SECONDS  start one more spinning thread this long (wall time) after start
 *   -f N        fork N child processes first; each spins like this one (same
 *               -t -c -w -L -x -i -v) but writes no files and forks no more.
 *               The parent waits for them before it exits
 *   -x CODE     exit with CODE (0..255) when done (default 0)
 *   -p FILE     write "PID\n" to FILE once every thread, and every child's, is
 *               spinning
 *   -T FILE     write the TIDs of this process, one per line, at the same time
 *               (before FILE of -p); rewritten when the late thread runs
 *   -d USEC     after every short burst of work, sleep USEC microseconds: a
 *               light load whose threads are sometimes on a CPU and mostly
 *               asleep (the emulated VM of tests/vm, where busy spinners
 *               starve the test itself).  Default 0: spin without pause
 *   -m MIB      first, allocate MIB MiB and write every page of it (anonymous
 *               memory, placed by the kernel's first-touch policy), keep it
 *               to the end: pages for the NUMA tests to find and follow
 *   -i          ignore SIGTERM (children too), for kill-timeout tests
 *   -v          report progress on stderr; otherwise print nothing on success
 *
 * Files are written atomically (FILE.tmp.PID then rename), so a reader never
 * sees a partial file: wait for -p FILE, then read -T FILE.
 * Bad usage: a message and the usage on stderr, exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define USAGE "usage: spin [-t THREADS] [-c CPU_SECONDS] [-w WALL_SECONDS] [-L SECONDS] [-f N]\n" \
	      "            [-d USEC] [-m MIB] [-x CODE] [-p FILE] [-T FILE] [-i] [-v]\n"
#define MAX_THREADS 1024
#define MAX_CHILDREN 256

static struct {
	long threads, children, code, nap_us, mem_mib;
	double cpu_limit, wall_limit, late_after; /* < 0: not given */
	const char *pid_file, *tid_file;
	int ignore_term, verbose;
} opt = { .threads = 1, .cpu_limit = -1, .wall_limit = -1, .late_after = -1 };

static atomic_int stop_flag;
static atomic_int started;           /* threads that have published their TID */
static pid_t tids[MAX_THREADS + 1];  /* [0] main; [threads] the late thread */
static pid_t me;

#define PROG "spin"
#include "progargs.h"

static double parse_seconds(char o, const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e7) {
		char fmt[64];
		snprintf(fmt, sizeof fmt, "-%c wants a number of seconds >= 0, got '%%s'", o);
		bad_usage(fmt, s);
	}
	return v;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Busy work the compiler cannot remove: the empty asm claims to use x. */
static void burn(unsigned n)
{
	unsigned x = 0;
	for (unsigned i = 0; i < n; i++) {
		x += i;
		__asm__ volatile("" : "+r"(x));
	}
}

/* -d: sleep between bursts */
static void nap(void)
{
	if (opt.nap_us > 0) {
		struct timespec ts = { opt.nap_us / 1000000, (opt.nap_us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
}

static void *spinner(void *arg)
{
	long slot = (long)arg;
	tids[slot] = (pid_t)syscall(SYS_gettid);
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		burn(1000);
		nap();
	}
	return NULL;
}

/* Write text to path atomically; exit 1 on failure (a test cannot go on). */
static void write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;
	if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)me) >= (int)sizeof tmp)
		errno = ENAMETOOLONG, f = NULL;
	else
		f = fopen(tmp, "w");
	if (f == NULL || fputs(text, f) == EOF || fclose(f) == EOF || rename(tmp, path) < 0) {
		fprintf(stderr, "spin: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void write_tids(int n)
{
	char buf[(MAX_THREADS + 1) * 12], *p = buf;
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%d\n", (int)tids[i]);
	write_file(opt.tid_file, buf);
}

static void wait_started(int n)
{
	while (atomic_load(&started) < n)
		sched_yield();
}

/* Spin in this process until a limit is hit.  ready_fd >= 0 (a child): write
 * one byte there once all threads run.  Returns after joining the threads. */
static void run(int is_parent, int ready_fd, int ready_rd, int nchildren)
{
	pthread_t th[MAX_THREADS + 1];
	int n = (int)opt.threads, late = 0;
	double t0 = clock_s(CLOCK_MONOTONIC);

	me = getpid();
	tids[0] = (pid_t)syscall(SYS_gettid);
	if (opt.mem_mib > 0) {
		size_t len = (size_t)opt.mem_mib << 20;
		char *mem = malloc(len);
		if (!mem) {
			fprintf(stderr, "spin: cannot allocate %ld MiB\n", opt.mem_mib);
			exit(1);
		}
		memset(mem, 1, len);    /* kept until exit */
	}
	atomic_store(&started, 1);
	for (int i = 1; i < n; i++) {
		int e = pthread_create(&th[i], NULL, spinner, (void *)(long)i);
		if (e) {
			fprintf(stderr, "spin: pthread_create: %s\n", strerror(e));
			exit(1);
		}
	}
	wait_started(n);
	if (ready_fd >= 0) {
		if (write(ready_fd, "r", 1) != 1)
			exit(1);
		close(ready_fd);
	}
	if (is_parent) {
		/* Children first, so that -p means "the whole tree spins". */
		char c;
		for (int i = 0; i < nchildren; i++)
			if (read(ready_rd, &c, 1) != 1) {
				fprintf(stderr, "spin: a child died before it was ready\n");
				break;
			}
		if (ready_rd >= 0)
			close(ready_rd);
		if (opt.tid_file)
			write_tids(n);
		if (opt.pid_file) {
			char buf[32];
			snprintf(buf, sizeof buf, "%d\n", (int)me);
			write_file(opt.pid_file, buf);
		}
	}
	if (opt.verbose)
		fprintf(stderr, "spin %d: %d thread%s spinning\n", (int)me, n, n == 1 ? "" : "s");

	for (;;) {
		burn(20000);
		nap();
		double wall = clock_s(CLOCK_MONOTONIC) - t0;
		if (opt.wall_limit >= 0 && wall >= opt.wall_limit)
			break;
		if (opt.cpu_limit >= 0 && clock_s(CLOCK_PROCESS_CPUTIME_ID) >= opt.cpu_limit)
			break;
		if (!late && opt.late_after >= 0 && wall >= opt.late_after) {
			late = 1;
			int e = pthread_create(&th[n], NULL, spinner, (void *)(long)n);
			if (e) {
				fprintf(stderr, "spin: pthread_create (late thread): %s\n", strerror(e));
				exit(1);
			}
			wait_started(n + 1);
			if (is_parent && opt.tid_file)
				write_tids(n + 1);
			if (opt.verbose)
				fprintf(stderr, "spin %d: late thread %d started\n", (int)me, (int)tids[n]);
		}
	}
	atomic_store(&stop_flag, 1);
	for (int i = 1; i < n + late; i++)
		pthread_join(th[i], NULL);
	if (opt.verbose)
		fprintf(stderr, "spin %d: done after %.2f s CPU, %.2f s wall\n", (int)me,
			clock_s(CLOCK_PROCESS_CPUTIME_ID), clock_s(CLOCK_MONOTONIC) - t0);
}

int main(int argc, char **argv)
{
	int c;
	char o[3] = "-?";

	opterr = 0;
	while ((c = getopt(argc, argv, ":t:c:w:L:f:d:m:x:p:T:ivh")) != -1) {
		switch (c) {
		case 't': opt.threads = parse_long('t', optarg, 1, MAX_THREADS); break;
		case 'c': opt.cpu_limit = parse_seconds('c', optarg); break;
		case 'w': opt.wall_limit = parse_seconds('w', optarg); break;
		case 'L': opt.late_after = parse_seconds('L', optarg); break;
		case 'f': opt.children = parse_long('f', optarg, 0, MAX_CHILDREN); break;
		case 'm': opt.mem_mib = parse_long('m', optarg, 0, 65536); break;
		case 'd': opt.nap_us = parse_long('d', optarg, 0, 10000000); break;
		case 'x': opt.code = parse_long('x', optarg, 0, 255); break;
		case 'p': opt.pid_file = optarg; break;
		case 'T': opt.tid_file = optarg; break;
		case 'i': opt.ignore_term = 1; break;
		case 'v': opt.verbose = 1; break;
		case 'h': fputs(USAGE, stdout); return 0;
		case ':': o[1] = (char)optopt; bad_usage("option '%s' needs a value", o);
		default: o[1] = (char)optopt; bad_usage("unknown option '%s'", o);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	if (opt.ignore_term)
		signal(SIGTERM, SIG_IGN);

	pid_t kids[MAX_CHILDREN];
	int ready[2] = { -1, -1 };
	if (opt.children > 0 && pipe(ready) < 0) {
		perror("spin: pipe");
		return 1;
	}
	fflush(stderr);
	for (int i = 0; i < opt.children; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("spin: fork");
			return 1;
		}
		if (kids[i] == 0) {
			close(ready[0]);
			run(0, ready[1], -1, 0);
			_exit((int)opt.code);
		}
	}
	if (ready[1] >= 0)
		close(ready[1]);
	run(1, -1, ready[0], (int)opt.children);

	for (int i = 0; i < opt.children; i++) {
		int st;
		while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (opt.verbose)
			fprintf(stderr, "spin %d: child %d %s %d\n", (int)me, (int)kids[i],
				WIFSIGNALED(st) ? "killed by signal" : "exited",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	return (int)opt.code;
}
