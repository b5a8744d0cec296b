/*
 * core/util.h - small helpers every layer shares (util.c): the clock (real
 * or a simulated node's), number and duration parsing, small file I/O,
 * "did you mean", the data directory, trust of a path, cpu list strings.
 *
 * Used by any part of launcher/.  Uses libc and hwloc only.
 */
#ifndef COSCHED_CORE_UTIL_H
#define COSCHED_CORE_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <hwloc.h>

double cs_now(void);                                  /* CLOCK_MONOTONIC, s */
/* Make cs_now() return *clock from now on (a simulated node's virtual time,
 * sim.c), or CLOCK_MONOTONIC again with NULL. */
void cs_set_virtual_clock(const double *clock);
/* Parse a duration ("1s", "250ms", "2.5", "100us", "5m"/"5min", "2h", "30d";
 * plain number = seconds).
 * 0 and sets *out on success; -1 if malformed. */
int cs_parse_duration(const char *s, double *out);
/* Parse an integer in [lo, hi]; -1 if malformed or out of range. */
int cs_parse_long(const char *s, long lo, long hi, long *out);
/* Write/read a small control file; -1 with errno set on failure. */
int cs_write_file(const char *path, const char *s);
int cs_read_file(const char *path, char *buf, size_t len);
/* Did you mean: the candidate closest to word (a typo or two away), or NULL. */
const char *cs_closest(const char *word, const char *const *cands, size_t n);
/* "did you mean --NAME? " for an unknown --option close to one of opts, else "". */
struct option;
const char *cs_option_hint(const char *arg, const struct option *opts, char *buf, size_t len);

FILE *cs_fopen_write(const char *path);
char *cs_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Free the n strings of v, then v (NULL is fine). */
void cs_strv_free(char **v, int n);
/* Where the shipped data (lua/, profiles/) is: $COSCHED_DATADIR, else the
 * installed location, else - for a cosched run from its build tree - the
 * source tree. */
const char *cs_datadir(void);
/* 1 when this process is the cosched of the build tree
 * (COSCHED_BUILDDIR/cosched, run before installing), else 0. */
int cs_from_build_tree(void);
/* 0 when path (resolved) and every directory above it belong to root and
 * nobody else may write them (a root-owned sticky directory is fine); -1
 * with why.  The node engine loads only such files (policies, modules). */
int cs_path_trusted(const char *path, char *why, size_t len);
/* hwloc bitmap as a list string ("0-3,8"); caller frees. */
char *cs_bitmap_list(hwloc_const_bitmap_t b);

#endif
