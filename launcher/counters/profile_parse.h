/*
 * counters/profile_parse.h - what the profile parser's files share
 * (profile.c: lines and sections; perfspec.c: perf=SPEC; formula.c: the
 * formula compiler and evaluator): the parser's state, its error recorder,
 * the word scanners and the aborting allocators, the compiled formula.
 *
 * Private to counters/profile*.c, perfspec.c and formula.c; everything else
 * uses counters/profile.h.  Uses libc only.
 */
#ifndef COSCHED_PROFILE_PARSE_H
#define COSCHED_PROFILE_PARSE_H

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters/profile.h"

#define CS_CLSIZE 64.0

/* A compiled formula. */
enum cs_expr_op {
    CS_EX_NUM, CS_EX_SLOT, CS_EX_METRIC, CS_EX_TIME, CS_EX_CORES, CS_EX_CLSIZE,
    CS_EX_NEG, CS_EX_ADD, CS_EX_SUB, CS_EX_MUL, CS_EX_DIV,
};
struct cs_expr {
    enum cs_expr_op op;
    double value;            /* CS_EX_NUM */
    int index;               /* CS_EX_SLOT: event index; CS_EX_METRIC: metric index */
    struct cs_expr *l, *r;   /* operands (CS_EX_NEG uses l) */
};

/* ------------------------------------------------------------------ memory */

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL)
        abort();  /* as cs_strdup_printf: nothing sensible left to do */
    return p;
}

static inline void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size ? size : 1);
    if (p == NULL)
        abort();
    return p;
}

static inline char *xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    if (d == NULL)
        abort();
    return d;
}

static inline char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

/* ----------------------------------------------------------- parser state */

struct parse {
    const char *file;
    int line;
    int col;                 /* 1-based column of the error, 0: none */
    char err[600];
    const char *linebuf;     /* the current line, for columns */
    struct cs_profile *p;
    int cur_metric;          /* index of the metric being compiled */
};

static inline int fail(struct parse *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record the (first) error; at points into the current line or is NULL. */
static inline int fail(struct parse *ps, const char *at, const char *fmt, ...)
{
    va_list ap;

    if (ps->err[0])
        return -1;
    va_start(ap, fmt);
    vsnprintf(ps->err, sizeof ps->err, fmt, ap);
    va_end(ap);
    ps->col = (at && ps->linebuf) ? (int)(at - ps->linebuf) + 1 : 0;
    return -1;
}

static inline const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Next blank-separated word of *s: returns its start and sets *len, advances
 * *s; NULL at the end of the line. */
static inline const char *next_word(const char **s, size_t *len)
{
    const char *b = skip_ws(*s), *e = b;
    if (*b == '\0') {
        *s = b;
        return NULL;
    }
    while (*e && *e != ' ' && *e != '\t')
        e++;
    *len = (size_t)(e - b);
    *s = e;
    return b;
}

static inline int word_is(const char *w, size_t len, const char *lit)
{
    return strlen(lit) == len && strncmp(w, lit, len) == 0;
}

/* Unsigned number: decimal or 0x hex, the whole of [s, s+len). */
static inline int parse_uint(const char *s, size_t len, unsigned long long max, unsigned long long *out)
{
    char buf[32], *end;
    unsigned long long v;

    if (len == 0 || len >= sizeof buf || !isdigit((unsigned char)s[0]))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtoull(buf, &end, 0);
    if (errno || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

/* perf=SPEC of one event line into ev (perfspec.c); -1 after fail(). */
int cs_profile_parse_perf(struct parse *ps, struct cs_event *ev, const char *spec);
/* Compile the formula starting at s (inside ps->linebuf) into m (formula.c);
 * -1 after fail(). */
int cs_profile_compile_formula(struct parse *ps, struct cs_metric *m, const char *s);
void cs_profile_expr_free(struct cs_expr *e);

#endif
