/*
 * json.h - JSON in cosched: every writer and reader of launcher/ goes through
 * jansson (https://github.com/akheron/jansson, libjansson-dev / jansson-devel)
 * and the few helpers below.  launcher/shared/, launcher/omp/ and the SPANK
 * plugin stay libc only and speak no JSON.
 *
 * Why jansson (and not json-c, also in Debian 12; README.md, Dependencies):
 *   - json_error_t gives the line, column and byte offset of a syntax error,
 *     so a reader says "FILE:LINE:COL: what" (cosched's message convention);
 *   - json_unpack_ex() checks a record's keys and types in one call;
 *   - objects keep their insertion order when dumped (since 2.8), so a trace
 *     line keeps the key order documented in cosched(1) TRACE;
 *   - JSON_REAL_PRECISION() chooses how many digits a real gets;
 *   - it is in Debian/Ubuntu main and RHEL/Rocky BaseOS, and Slurm sites
 *     with auth/jwt already have it (libjwt depends on libjansson).
 *
 * Output conventions (what a user sees, chosen here):
 *   - one record is one line: compact ("a":1,"b":2 without blanks), ended
 *     by "\n" and flushed, so a file cut short by a crash holds whole lines;
 *   - non-ASCII text is written as UTF-8, not \u escapes; bytes that are not
 *     valid UTF-8 (a job name is whatever the user typed) become U+FFFD;
 *   - reals: measured values are rounded where they are made (cs_json_fixed:
 *     times to the microsecond, as "%.6f" did; cs_json_sig: 6 significant
 *     digits, as "%.6g" did) and written with 15 significant digits, which
 *     prints such a rounded value exactly ("1.5", "0.000123"); a whole real
 *     keeps a ".0" ("2.0"), jansson's way of keeping its type.  Values that
 *     must read back bit-identical (counter recordings, the profile store)
 *     use cs_json_exact() and are written with 17 digits (CS_JSON_EXACT).
 *     cs_json_sig() and cs_json_exact() write a whole value below 2^53 as
 *     an integer ("3", not "3.0"), as the "%g" formats before them did;
 *     cs_json_fixed() always writes a real, as "%.6f" did.  NaN and
 *     infinities are written as null.
 *
 *   json_error_t err;
 *   json_t *v = cs_json_parse(text, len, &err);   // NULL: err.line, .column, .text
 *   cs_json_put(f, json_pack("{s:s, s:o}", "type", "run", "name", cs_json_text(n)), 0);
 */
#ifndef COSCHED_JSON_H
#define COSCHED_JSON_H
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#define CS_JSON_EXACT 1            /* cs_json_put(): reals with 17 digits */
#define CS_JSON_PRETTY 2           /* cs_json_put(): indented by 2, one member a line */

/* Parse one JSON text of len bytes (white space around it allowed, nothing
 * else; duplicate keys refused).  NULL on error, err filled by jansson. */
json_t *cs_json_parse(const char *text, size_t len, json_error_t *err);

/* Write v compactly as one line (CS_JSON_PRETTY: indented) plus "\n" and flush f.  Takes the reference
 * (v may be NULL: a failed json_pack; nothing is written, -1).  0 or -1
 * (errno set). */
int cs_json_put(FILE *f, json_t *v, int flags);

/* A string, or null for NULL; invalid UTF-8 bytes become U+FFFD. */
json_t *cs_json_text(const char *s);
/* A real rounded to `decimals` places, null if not finite. */
json_t *cs_json_fixed(double v, int decimals);
/* A real rounded to `digits` significant digits, null if not finite. */
json_t *cs_json_sig(double v, int digits);
/* A real as it is (write with CS_JSON_EXACT), null if not finite. */
json_t *cs_json_exact(double v);

/* The name of v's type for messages: "a string", "a number", "an object"... */
const char *cs_json_type(const json_t *v);
#endif
