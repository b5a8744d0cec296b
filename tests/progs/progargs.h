/* progargs.h - the argument checks shared by the test programs spin.c and
 * ompwork.c.  Define PROG (the program's name) and USAGE before including
 * it.  A bad argument prints "PROG: what", then the usage, and exits 2. */

static _Noreturn void bad_usage(const char *fmt, const char *arg)
{
	fputs(PROG ": ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n" USAGE, stderr);
	exit(2);
}

/* The argument s of option -o as an integer from min to max. */
static long parse_long(char o, const char *s, long min, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		char fmt[80];
		snprintf(fmt, sizeof fmt, "-%c wants an integer from %ld to %ld, got '%%s'", o, min, max);
		bad_usage(fmt, s);
	}
	return v;
}
