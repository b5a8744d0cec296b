/*
 * profile.c - counter profiles (profiles/<arch>.txt): parser, formula
 * compiler and evaluator, matching against the CPU, `cosched profiles`.
 *
 * File format (profiles/README.md has the long version).  Line oriented; '#'
 * at the start of a line (after blanks) makes a comment; blank lines are
 * ignored.  A line whose first word is a section keyword starts a section:
 *
 *   SHORT text                one-line description (once)
 *   ARCH vendor [family [models...]] [test]
 *                             vendor intel|amd|any; family and models are
 *                             numbers (0x.. or decimal), models also lo-hi
 *                             ranges; '*' or nothing means any, but an
 *                             intel/amd profile needs a family and a model.
 *                             "test" marks a test profile, never chosen for a
 *                             machine (once)
 *   SOURCE text               where the events and formulas come from (1 or more)
 *   CAVEAT text               what the numbers do not mean (0 or more)
 *   EVENTSET                  then one event per line, until the next section:
 *       SLOT EVENT_NAME perf=SPEC [scope=core|uncore|socket] [likwid=EVENT:COUNTER|-]
 *   METRICS                   then one metric per line, until the next section:
 *       name [unit] formula
 *       name [unit] - unavailable: reason
 *   LONG                      free text to the end of the file (ignored)
 *
 * perf=SPEC is one of
 *   hw:NAME     cycles instructions cache-references cache-misses branches
 *               branch-misses bus-cycles stalled-cycles-frontend
 *               stalled-cycles-backend ref-cycles
 *   sw:NAME     task-clock cpu-clock page-faults minor-faults major-faults
 *               context-switches cpu-migrations alignment-faults
 *               emulation-faults dummy cgroup-switches
 *   cache:NAME  perf's generalized cache events: L1-dcache|L1-icache|LLC|dTLB|
 *               iTLB|branch|node, then -load(s)|-store(s)|-prefetch(es), then
 *               optionally -misses (LLC-load-misses, node-loads)
 *   raw:0xCONFIG[,config1=0xN]
 *   raw:event=0xEE[,umask=0xUU][,cmask=N][,inv][,edge][,any][,config1=0xN]
 *   pmu:NAME:TERMS or pmu:NAME:0xCONFIG   a dynamic PMU; NAME_* = every NAME_<n>
 * Terms are encoded with the x86 layout (event bits 0-7 and 8-11 -> 32-35,
 * umask 8-15, edge 18, any 21, inv 23, cmask 24-31), which is also that of the
 * Intel IMC and AMD L3/DF uncore PMUs.
 *
 * Formulas: + - * / and parentheses over numbers (2, 0.5, 1.0E-09, 1.E-06),
 * slot names, the variables time (seconds), cores (cores the job used) and
 * clsize (64), and metrics defined above.  Recursive descent; errors name the
 * column.  Parse errors stop at the first one: "FILE:LINE: what was expected".
 */
#include "config.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/util.h"

#ifndef COSCHED_SYSCONFDIR
#define COSCHED_SYSCONFDIR "/etc/cosched"
#endif

#define CS_CLSIZE 64.0

const char *const cs_required_metrics[] = {
    "instructions", "cycles", "ipc", "bw_l1", "bw_l2", "bw_llc", "mem_bw",
    "llc_misses", "llc_refs", "mpki", "orb_full", "remote_accesses", "local_accesses",
    NULL,
};

/* required metrics that are bandwidths: their unit is fixed */
static const char *const gbs_metrics[] = { "bw_l1", "bw_l2", "bw_llc", "mem_bw", NULL };

static const char *const section_names = "SHORT, ARCH, SOURCE, CAVEAT, EVENTSET, METRICS, LONG";

/* ------------------------------------------------------------------ memory */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL)
        abort();  /* as cs_strdup_printf: nothing sensible left to do */
    return p;
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size ? size : 1);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    if (d == NULL)
        abort();
    return d;
}

static char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

static void expr_free(struct cs_expr *e)
{
    if (e == NULL)
        return;
    expr_free(e->l);
    expr_free(e->r);
    free(e);
}

void cs_profile_free(struct cs_profile *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->file);
    free(p->description);
    free(p->models);
    cs_strv_free(p->sources, p->nsources);
    cs_strv_free(p->caveats, p->ncaveats);
    for (int i = 0; i < p->nevents; i++) {
        struct cs_event *e = &p->events[i];
        free(e->slot);
        free(e->name);
        free(e->perf_spec);
        free(e->perf_pmu);
        free(e->perf_terms);
        free(e->likwid);
    }
    free(p->events);
    for (int i = 0; i < p->nmetrics; i++) {
        struct cs_metric *m = &p->metrics[i];
        free(m->name);
        free(m->unit);
        free(m->reason);
        free(m->formula);
        expr_free(m->expr);
    }
    free(p->metrics);
    free(p);
}

const char *cs_scope_name(enum cs_scope s)
{
    switch (s) {
    case CS_SCOPE_CORE: return "core";
    case CS_SCOPE_UNCORE: return "uncore";
    case CS_SCOPE_SOCKET: return "socket";
    }
    return "?";
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

static int fail(struct parse *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record the (first) error; at points into the current line or is NULL. */
static int fail(struct parse *ps, const char *at, const char *fmt, ...)
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

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Next blank-separated word of *s: returns its start and sets *len, advances
 * *s; NULL at the end of the line. */
static const char *next_word(const char **s, size_t *len)
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

static int word_is(const char *w, size_t len, const char *lit)
{
    return strlen(lit) == len && strncmp(w, lit, len) == 0;
}

/* Unsigned number: decimal or 0x hex, the whole of [s, s+len). */
static int parse_uint(const char *s, size_t len, unsigned long long max, unsigned long long *out)
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

/* --------------------------------------------------------------- perf= */

struct named { const char *name; unsigned long long config; };

static const struct named hw_events[] = {
    { "cycles", PERF_COUNT_HW_CPU_CYCLES }, { "cpu-cycles", PERF_COUNT_HW_CPU_CYCLES },
    { "instructions", PERF_COUNT_HW_INSTRUCTIONS },
    { "cache-references", PERF_COUNT_HW_CACHE_REFERENCES },
    { "cache-misses", PERF_COUNT_HW_CACHE_MISSES },
    { "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
    { "branch-instructions", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
    { "branch-misses", PERF_COUNT_HW_BRANCH_MISSES },
    { "bus-cycles", PERF_COUNT_HW_BUS_CYCLES },
    { "stalled-cycles-frontend", PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
    { "stalled-cycles-backend", PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
    { "ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES },
    { NULL, 0 },
};

static const struct named sw_events[] = {
    { "cpu-clock", PERF_COUNT_SW_CPU_CLOCK }, { "task-clock", PERF_COUNT_SW_TASK_CLOCK },
    { "page-faults", PERF_COUNT_SW_PAGE_FAULTS }, { "faults", PERF_COUNT_SW_PAGE_FAULTS },
    { "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES }, { "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
    { "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS }, { "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
    { "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN }, { "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
    { "alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS },
    { "emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS },
    { "dummy", PERF_COUNT_SW_DUMMY },
    { "cgroup-switches", 11 },  /* PERF_COUNT_SW_CGROUP_SWITCHES, Linux >= 5.13 */
    { NULL, 0 },
};

static const struct named cache_ids[] = {
    { "L1-dcache", PERF_COUNT_HW_CACHE_L1D }, { "L1-icache", PERF_COUNT_HW_CACHE_L1I },
    { "LLC", PERF_COUNT_HW_CACHE_LL }, { "dTLB", PERF_COUNT_HW_CACHE_DTLB },
    { "iTLB", PERF_COUNT_HW_CACHE_ITLB }, { "branch", PERF_COUNT_HW_CACHE_BPU },
    { "node", PERF_COUNT_HW_CACHE_NODE }, { NULL, 0 },
};

static const struct named cache_ops[] = {
    { "load", PERF_COUNT_HW_CACHE_OP_READ }, { "loads", PERF_COUNT_HW_CACHE_OP_READ },
    { "store", PERF_COUNT_HW_CACHE_OP_WRITE }, { "stores", PERF_COUNT_HW_CACHE_OP_WRITE },
    { "prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH },
    { "prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH }, { NULL, 0 },
};

static const struct named *find_named(const struct named *t, const char *s, size_t len)
{
    for (; t->name; t++)
        if (word_is(s, len, t->name))
            return t;
    return NULL;
}

static void list_names(const struct named *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (; t->name && k + 2 < len; t++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? ", " : "", t->name);
}

/* "L1-dcache-load-misses" -> config */
static int parse_cache_name(struct parse *ps, const char *s, uint64_t *config)
{
    const char *dash, *op, *res;
    const struct named *id = NULL, *o;
    char names[200];

    /* the cache id may itself contain a dash (L1-dcache): try every prefix */
    for (dash = strchr(s, '-'); dash; dash = strchr(dash + 1, '-'))
        if ((id = find_named(cache_ids, s, (size_t)(dash - s))) != NULL)
            break;
    if (id == NULL) {
        list_names(cache_ids, names, sizeof names);
        return fail(ps, NULL, "perf=cache:%s: expected a cache (%s) followed by -load, -store or -prefetch", s, names);
    }
    op = dash + 1;
    res = strchr(op, '-');
    o = find_named(cache_ops, op, res ? (size_t)(res - op) : strlen(op));
    if (o == NULL)
        return fail(ps, NULL, "perf=cache:%s: expected -load(s), -store(s) or -prefetch(es) after '%.*s'",
                    s, (int)(dash - s), s);
    if (res && strcmp(res, "-misses") != 0)
        return fail(ps, NULL, "perf=cache:%s: expected nothing or -misses after '%.*s', got '%s'",
                    s, (int)(res - s), s, res);
    *config = id->config | (o->config << 8) |
              ((uint64_t)(res ? PERF_COUNT_HW_CACHE_RESULT_MISS : PERF_COUNT_HW_CACHE_RESULT_ACCESS) << 16);
    return 0;
}

/* "event=0x51,umask=0x01,cmask=1,inv,config1=0x3f" or "0x01b7[,config1=..]" */
static int parse_terms(struct parse *ps, const char *spec, const char *terms, int need_event,
                       uint64_t *config, uint64_t *config1, int *as_terms)
{
    unsigned long long event = 0, umask = 0, cmask = 0, v;
    int have_event = 0, have_raw = 0, inv = 0, edge = 0, any = 0;
    const char *t = terms;

    *config1 = 0;
    *as_terms = 0;
    if (*t == '\0')
        return fail(ps, NULL, "perf=%s: expected event=0xNN[,umask=0xNN...] or 0xCONFIG after ':'", spec);
    while (*t) {
        const char *end = strchr(t, ','), *eq;
        size_t len = end ? (size_t)(end - t) : strlen(t), klen;

        eq = memchr(t, '=', len);
        klen = eq ? (size_t)(eq - t) : len;
        if (len == 0)
            return fail(ps, NULL, "perf=%s: empty term (two commas?)", spec);
        if (t == terms && eq == NULL && isdigit((unsigned char)*t)) {
            if (parse_uint(t, len, UINT64_MAX, &v) < 0)
                return fail(ps, NULL, "perf=%s: '%.*s' is not a number (0x hex or decimal)", spec, (int)len, t);
            *config = v;
            have_raw = 1;
        } else if (eq == NULL && (word_is(t, len, "inv") || word_is(t, len, "edge") || word_is(t, len, "any"))) {
            if (word_is(t, len, "inv"))
                inv = 1;
            else if (word_is(t, len, "edge"))
                edge = 1;
            else
                any = 1;
            *as_terms = 1;
        } else if (eq == NULL) {
            return fail(ps, NULL, "perf=%s: expected KEY=VALUE (event, umask, cmask, config1) or inv/edge/any, got '%.*s'",
                        spec, (int)len, t);
        } else {
            const char *val = eq + 1;
            size_t vlen = len - klen - 1;
            unsigned long long max = word_is(t, klen, "event") ? 0xfff
                                   : word_is(t, klen, "config1") ? UINT64_MAX : 0xff;
            if (!word_is(t, klen, "event") && !word_is(t, klen, "umask") && !word_is(t, klen, "cmask") &&
                !word_is(t, klen, "config1") && !word_is(t, klen, "inv") && !word_is(t, klen, "edge") &&
                !word_is(t, klen, "any"))
                return fail(ps, NULL, "perf=%s: unknown term '%.*s' (expected event, umask, cmask, inv, edge, any, config1)",
                            spec, (int)klen, t);
            if (parse_uint(val, vlen, max, &v) < 0)
                return fail(ps, NULL, "perf=%s: %.*s= expects a number from 0 to 0x%llx (0x hex or decimal), got '%.*s'",
                            spec, (int)klen, t, max, (int)vlen, val);
            if (word_is(t, klen, "event")) {
                event = v;
                have_event = 1;
            } else if (word_is(t, klen, "umask"))
                umask = v;
            else if (word_is(t, klen, "cmask"))
                cmask = v;
            else if (word_is(t, klen, "config1"))
                *config1 = v;
            else if (word_is(t, klen, "inv"))
                inv = v != 0;
            else if (word_is(t, klen, "edge"))
                edge = v != 0;
            else
                any = v != 0;
            if (!word_is(t, klen, "config1"))
                *as_terms = 1;
        }
        t = end ? end + 1 : t + len;
        if (end && *t == '\0')
            return fail(ps, NULL, "perf=%s: expected a term after the last ','", spec);
    }
    if (have_raw && *as_terms)
        return fail(ps, NULL, "perf=%s: give either a raw 0xCONFIG or event=/umask= terms, not both", spec);
    if (!have_raw && !have_event && (need_event || *as_terms))
        return fail(ps, NULL, "perf=%s: expected event=0xNN among the terms", spec);
    if (have_event)
        *config = (event & 0xff) | (((event >> 8) & 0xf) << 32) | (umask << 8) | ((uint64_t)edge << 18) |
                  ((uint64_t)any << 21) | ((uint64_t)inv << 23) | (cmask << 24);
    return 0;
}

static int parse_perf(struct parse *ps, struct cs_event *ev, const char *spec)
{
    const char *colon = strchr(spec, ':'), *arg;
    char names[400];
    int as_terms = 0;

    ev->perf_spec = xstrdup(spec);
    if (colon == NULL)
        return fail(ps, NULL, "perf=%s: expected hw:NAME, sw:NAME, cache:NAME, raw:... or pmu:NAME:...", spec);
    arg = colon + 1;
    if (word_is(spec, (size_t)(colon - spec), "hw") || word_is(spec, (size_t)(colon - spec), "sw")) {
        int hw = spec[0] == 'h';
        const struct named *n = find_named(hw ? hw_events : sw_events, arg, strlen(arg));
        if (n == NULL) {
            list_names(hw ? hw_events : sw_events, names, sizeof names);
            return fail(ps, NULL, "perf=%s: unknown %s event '%s' (known: %s)", spec,
                        hw ? "hardware" : "software", arg, names);
        }
        ev->perf_kind = hw ? CS_PERF_HW : CS_PERF_SW;
        ev->perf_type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
        ev->perf_config = n->config;
        return 0;
    }
    if (word_is(spec, (size_t)(colon - spec), "cache")) {
        ev->perf_kind = CS_PERF_CACHE;
        ev->perf_type = PERF_TYPE_HW_CACHE;
        return parse_cache_name(ps, arg, &ev->perf_config);
    }
    if (word_is(spec, (size_t)(colon - spec), "raw")) {
        ev->perf_kind = CS_PERF_RAW;
        ev->perf_type = PERF_TYPE_RAW;
        if (parse_terms(ps, spec, arg, 1, &ev->perf_config, &ev->perf_config1, &as_terms) < 0)
            return -1;
        if (as_terms)
            ev->perf_terms = xstrdup(arg);
        return 0;
    }
    if (word_is(spec, (size_t)(colon - spec), "pmu")) {
        const char *c2 = strchr(arg, ':');
        size_t nlen = c2 ? (size_t)(c2 - arg) : 0;
        if (c2 == NULL || nlen == 0)
            return fail(ps, NULL, "perf=%s: expected pmu:NAME:TERMS (e.g. pmu:uncore_imc_*:event=0x04,umask=0x03)", spec);
        for (size_t i = 0; i < nlen; i++)
            if (!(isalnum((unsigned char)arg[i]) || arg[i] == '_' || (arg[i] == '*' && i == nlen - 1)))
                return fail(ps, NULL, "perf=%s: PMU name '%.*s' may hold letters, digits and _ and end in _*",
                            spec, (int)nlen, arg);
        if (arg[nlen - 1] == '*') {
            if (nlen < 3 || arg[nlen - 2] != '_')
                return fail(ps, NULL, "perf=%s: a PMU wildcard is written NAME_* (every NAME_<number>)", spec);
            ev->perf_pmu = xstrndup(arg, nlen - 2);
            ev->perf_pmu_all = 1;
        } else
            ev->perf_pmu = xstrndup(arg, nlen);
        ev->perf_kind = CS_PERF_PMU;
        ev->perf_type = CS_PERF_TYPE_DYNAMIC;
        if (parse_terms(ps, spec, c2 + 1, 1, &ev->perf_config, &ev->perf_config1, &as_terms) < 0)
            return -1;
        if (as_terms)
            ev->perf_terms = xstrdup(c2 + 1);
        return 0;
    }
    return fail(ps, NULL, "perf=%s: unknown kind '%.*s' (expected hw, sw, cache, raw or pmu)", spec,
                (int)(colon - spec), spec);
}

/* ------------------------------------------------------------ formulas */

struct xp {
    struct parse *ps;
    const char *s;           /* cursor in the current line */
    unsigned uses;           /* bit per scope used (1 << enum cs_scope) */
    int depth;
    int nodes;               /* bounded: eval and free recurse over the tree */
};

#define CS_MAX_NODES 4096

/* Operators and metric references of e, the metrics it uses expanded (what
 * one evaluation walks); the count stops soon after it passes limit. */
static int expr_cost(const struct cs_profile *p, const struct cs_expr *e, int limit)
{
    int n;
    if (e == NULL || limit < 0)
        return 0;
    if (e->op == CS_EX_METRIC)
        return 1 + expr_cost(p, p->metrics[e->index].expr, limit - 1);
    n = e->l && e->r ? 1 : 0;
    if (n <= limit)
        n += expr_cost(p, e->l, limit - n);
    if (n <= limit)
        n += expr_cost(p, e->r, limit - n);
    return n;
}

static struct cs_expr *node(enum cs_expr_op op, struct cs_expr *l, struct cs_expr *r)
{
    struct cs_expr *e = xcalloc(1, sizeof *e);
    e->op = op;
    e->l = l;
    e->r = r;
    e->index = -1;
    return e;
}

static struct cs_expr *parse_sum(struct xp *x);

static void slot_list(const struct cs_profile *p, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nevents && k + 16 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? " " : "", p->events[i].slot);
}

static struct cs_expr *parse_primary(struct xp *x)
{
    struct parse *ps = x->ps;
    const char *s = skip_ws(x->s);
    struct cs_expr *e;

    x->s = s;
    if (*s == '(') {
        const char *open = s;
        if (++x->depth > 64) {
            fail(ps, s, "formula nested too deeply (more than 64 parentheses)");
            return NULL;
        }
        x->s = s + 1;
        if ((e = parse_sum(x)) == NULL)
            return NULL;
        x->s = skip_ws(x->s);
        if (*x->s != ')') {
            expr_free(e);
            if (*x->s == '\0')
                fail(ps, x->s, "expected ')' to close the '(' at column %d, but the formula ends",
                     (int)(open - ps->linebuf) + 1);
            else
                fail(ps, x->s, "expected ')' to close the '(' at column %d, got '%c'",
                     (int)(open - ps->linebuf) + 1, *x->s);
            return NULL;
        }
        x->s++;
        x->depth--;
        return e;
    }
    if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
        const char *p = s;
        char buf[64];
        int digits = 0;
        while (isdigit((unsigned char)*p))
            p++, digits++;
        if (*p == '.') {
            p++;
            while (isdigit((unsigned char)*p))
                p++, digits++;
        }
        if (*p == 'e' || *p == 'E') {
            const char *q = p + 1;
            if (*q == '+' || *q == '-')
                q++;
            if (!isdigit((unsigned char)*q)) {
                fail(ps, s, "malformed number '%.*s' (expected digits after the exponent)", (int)(q - s), s);
                return NULL;
            }
            while (isdigit((unsigned char)*q))
                q++;
            p = q;
        }
        if (isalpha((unsigned char)*p) || *p == '_' || (size_t)(p - s) >= sizeof buf || digits == 0) {
            fail(ps, s, "malformed number '%.*s'", (int)(p - s) + (isalnum((unsigned char)*p) ? 1 : 0), s);
            return NULL;
        }
        memcpy(buf, s, (size_t)(p - s));
        buf[p - s] = '\0';
        e = node(CS_EX_NUM, NULL, NULL);
        e->value = strtod(buf, NULL);
        x->s = p;
        return e;
    }
    if (isalpha((unsigned char)*s) || *s == '_') {
        const char *p = s;
        size_t len;
        struct cs_profile *pr = ps->p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        len = (size_t)(p - s);
        x->s = p;
        if (word_is(s, len, "time"))
            return node(CS_EX_TIME, NULL, NULL);
        if (word_is(s, len, "cores"))
            return node(CS_EX_CORES, NULL, NULL);
        if (word_is(s, len, "clsize"))
            return node(CS_EX_CLSIZE, NULL, NULL);
        for (int i = 0; i < pr->nevents; i++)
            if (word_is(s, len, pr->events[i].slot)) {
                e = node(CS_EX_SLOT, NULL, NULL);
                e->index = i;
                x->uses |= 1u << pr->events[i].scope;
                return e;
            }
        for (int i = 0; i < pr->nmetrics; i++)
            if (word_is(s, len, pr->metrics[i].name)) {
                struct cs_metric *m = &pr->metrics[i];
                if (i == ps->cur_metric) {
                    fail(ps, s, "metric '%.*s' refers to itself", (int)len, s);
                    return NULL;
                }
                if (!m->available) {
                    fail(ps, s, "metric '%.*s' is declared unavailable (line %d) and cannot be used in a formula",
                         (int)len, s, m->line);
                    return NULL;
                }
                /* cs_profile_eval() evaluates a metric where it is used:
                 * bound the whole walk, or m1 m0*m0, m2 m1*m1 ... doubles it
                 * at every line (and the engine evaluates every quantum) */
                x->nodes += expr_cost(pr, m->expr, CS_MAX_NODES - x->nodes) + 1;
                if (x->nodes > CS_MAX_NODES) {
                    fail(ps, s, "formula too long (more than %d operators and metric references, the "
                         "metrics it uses counted in full); '%.*s' alone is %d", CS_MAX_NODES, (int)len, s,
                         expr_cost(pr, m->expr, CS_MAX_NODES));
                    return NULL;
                }
                e = node(CS_EX_METRIC, NULL, NULL);
                e->index = i;
                x->uses |= 1u << m->scope;
                return e;
            }
        {
            char slots[300];
            slot_list(pr, slots, sizeof slots);
            fail(ps, s, "unknown slot or variable '%.*s' (slots: %s; variables: time cores clsize; "
                 "or a metric defined above)", (int)len, s, slots);
        }
        return NULL;
    }
    if (*s == '\0')
        fail(ps, s, "expected a number, slot, variable or '(' but the formula ends here");
    else if (*s == ')')
        fail(ps, s, "unexpected ')' (no '(' to close)");
    else
        fail(ps, s, "expected a number, slot, variable or '(', got '%c'", *s);
    return NULL;
}

static struct cs_expr *parse_unary(struct xp *x)
{
    const char *s = skip_ws(x->s);
    if (*s == '-' || *s == '+') {
        struct cs_expr *e;
        if (++x->depth > 64) {
            fail(x->ps, s, "formula nested too deeply (more than 64 signs)");
            return NULL;
        }
        x->s = s + 1;
        if ((e = parse_unary(x)) == NULL)
            return NULL;
        x->depth--;
        return *s == '-' ? node(CS_EX_NEG, e, NULL) : e;
    }
    return parse_primary(x);
}

/* One level of left-associative binary operators: operands from next,
 * joined by op[0] (kind[0]) or op[1] (kind[1]). */
static struct cs_expr *parse_binary(struct xp *x, struct cs_expr *(*next)(struct xp *),
                                    const char op[2], const enum cs_expr_op kind[2])
{
    struct cs_expr *l = next(x), *r;
    const char *s;

    while (l && (s = skip_ws(x->s), *s == op[0] || *s == op[1])) {
        if (++x->nodes > CS_MAX_NODES) {
            expr_free(l);
            fail(x->ps, s, "formula too long (more than %d operators)", CS_MAX_NODES);
            return NULL;
        }
        x->s = s + 1;
        if ((r = next(x)) == NULL) {
            expr_free(l);
            return NULL;
        }
        l = node(kind[*s == op[0] ? 0 : 1], l, r);
    }
    return l;
}

static struct cs_expr *parse_product(struct xp *x)
{
    static const enum cs_expr_op kind[2] = { CS_EX_MUL, CS_EX_DIV };
    return parse_binary(x, parse_unary, "*/", kind);
}

static struct cs_expr *parse_sum(struct xp *x)
{
    static const enum cs_expr_op kind[2] = { CS_EX_ADD, CS_EX_SUB };
    return parse_binary(x, parse_product, "+-", kind);
}

/* Compile the formula starting at s (inside ps->linebuf) into m. */
static int compile_formula(struct parse *ps, struct cs_metric *m, const char *s)
{
    struct xp x = { .ps = ps, .s = s, .uses = 0, .depth = 0, .nodes = 0 };
    struct cs_expr *e = parse_sum(&x);

    if (e == NULL)
        return -1;
    x.s = skip_ws(x.s);
    if (*x.s) {
        expr_free(e);
        if (*x.s == ')')
            return fail(ps, x.s, "unexpected ')' (no '(' to close)");
        return fail(ps, x.s, "expected an operator (+ - * /) or the end of the formula, got '%c'", *x.s);
    }
    m->expr = e;
    m->scope = (x.uses & (1u << CS_SCOPE_SOCKET)) ? CS_SCOPE_SOCKET
             : (x.uses & (1u << CS_SCOPE_UNCORE)) ? CS_SCOPE_UNCORE : CS_SCOPE_CORE;
    return 0;
}

/* ---------------------------------------------------------------- lines */

/* len characters of class cls (isupper, islower), the first one, then
 * also digits and '_' */
static int valid_name(const char *s, size_t len, int (*cls)(int))
{
    if (len == 0 || !cls((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!(cls((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

static int valid_slot(const char *s, size_t len)
{
    return valid_name(s, len, isupper);
}

static int valid_metric_name(const char *s, size_t len)
{
    return valid_name(s, len, islower);
}

static int parse_event_line(struct parse *ps, const char *line)
{
    struct cs_profile *p = ps->p;
    const char *s = line, *slot, *name, *w;
    size_t slen, nlen, wlen;
    struct cs_event *ev;
    int have_perf = 0, have_scope = 0, have_likwid = 0;

    slot = next_word(&s, &slen);
    name = next_word(&s, &nlen);
    if (!valid_slot(slot, slen))
        return fail(ps, slot, "slot name '%.*s' must be upper-case letters, digits and _ (e.g. PMC0, FIXC1, UNC0, SW2)",
                    (int)slen, slot);
    for (int i = 0; i < p->nevents; i++)
        if (word_is(slot, slen, p->events[i].slot))
            return fail(ps, slot, "duplicate slot '%.*s' (already defined at line %d)", (int)slen, slot,
                        p->events[i].line);
    if (name == NULL || memchr(name, '=', nlen))
        return fail(ps, name ? name : s, "expected SLOT EVENT_NAME perf=SPEC: the event name is missing after '%.*s'",
                    (int)slen, slot);
    p->events = xrealloc(p->events, (size_t)(p->nevents + 1) * sizeof *p->events);
    ev = &p->events[p->nevents++];
    memset(ev, 0, sizeof *ev);
    ev->slot = xstrndup(slot, slen);
    ev->name = xstrndup(name, nlen);
    ev->line = ps->line;
    ev->scope = CS_SCOPE_CORE;
    while ((w = next_word(&s, &wlen)) != NULL) {
        const char *eq = memchr(w, '=', wlen);
        size_t klen = eq ? (size_t)(eq - w) : wlen;
        char *val = eq ? xstrndup(eq + 1, wlen - klen - 1) : NULL;
        int r = 0;

        if (eq == NULL || *val == '\0')
            r = fail(ps, w, "expected KEY=VALUE (perf=, scope=, likwid=) after the event name, got '%.*s'", (int)wlen, w);
        else if (word_is(w, klen, "perf")) {
            if (have_perf++)
                r = fail(ps, w, "perf= given twice");
            else
                r = parse_perf(ps, ev, val);
        } else if (word_is(w, klen, "scope")) {
            if (have_scope++)
                r = fail(ps, w, "scope= given twice");
            else if (strcmp(val, "core") == 0)
                ev->scope = CS_SCOPE_CORE;
            else if (strcmp(val, "uncore") == 0)
                ev->scope = CS_SCOPE_UNCORE;
            else if (strcmp(val, "socket") == 0)
                ev->scope = CS_SCOPE_SOCKET;
            else
                r = fail(ps, w, "scope= expects core, uncore or socket, got '%s'", val);
        } else if (word_is(w, klen, "likwid")) {
            const char *c = strchr(val, ':');
            if (have_likwid++)
                r = fail(ps, w, "likwid= given twice");
            else if (strcmp(val, "-") == 0)
                ;
            else if (c == NULL || c == val || c[1] == '\0' || strchr(c + 1, ':'))
                r = fail(ps, w, "likwid= expects EVENT:COUNTER (e.g. L1D_REPLACEMENT:PMC0) or -, got '%s'", val);
            else
                ev->likwid = xstrdup(val);
        } else
            r = fail(ps, w, "unknown attribute '%.*s=' (expected perf=, scope=, likwid=)", (int)klen, w);
        free(val);
        if (r < 0)
            return -1;
    }
    if (!have_perf)
        return fail(ps, NULL, "expected perf=SPEC for slot %s (e.g. perf=raw:event=0x51,umask=0x01 or perf=hw:cycles)",
                    ev->slot);
    return 0;
}

static int parse_metric_line(struct parse *ps, const char *line)
{
    struct cs_profile *p = ps->p;
    const char *s = line, *name, *rest;
    size_t nlen;
    struct cs_metric *m;
    char *unit = NULL;

    name = next_word(&s, &nlen);
    if (!valid_metric_name(name, nlen))
        return fail(ps, name, "metric name '%.*s' must be lower-case letters, digits and _ (e.g. bw_l2)",
                    (int)nlen, name);
    for (int i = 0; i < p->nmetrics; i++)
        if (word_is(name, nlen, p->metrics[i].name))
            return fail(ps, name, "metric '%.*s' repeated (first defined at line %d)", (int)nlen, name,
                        p->metrics[i].line);
    rest = skip_ws(s);
    if (*rest == '[') {
        const char *close = strchr(rest, ']');
        if (close == NULL)
            return fail(ps, rest, "expected ']' to close the unit opened here");
        unit = xstrndup(rest + 1, (size_t)(close - rest - 1));
        rest = skip_ws(close + 1);
    }
    if (*rest == '\0') {
        free(unit);
        return fail(ps, rest, "expected a formula or '- unavailable: REASON' after '%.*s'", (int)nlen, name);
    }
    p->metrics = xrealloc(p->metrics, (size_t)(p->nmetrics + 1) * sizeof *p->metrics);
    m = &p->metrics[p->nmetrics];
    memset(m, 0, sizeof *m);
    m->name = xstrndup(name, nlen);
    m->unit = unit ? unit : xstrdup("");
    m->line = ps->line;
    ps->cur_metric = p->nmetrics++;
    if (rest[0] == '-' && strncmp(skip_ws(rest + 1), "unavailable", 11) == 0) {
        const char *u = skip_ws(rest + 1);
        if (u[11] != ':')
            return fail(ps, u, "expected 'unavailable: REASON' after '-'");
        u = skip_ws(u + 12);
        if (*u == '\0')
            return fail(ps, u, "expected a reason after 'unavailable:'");
        m->available = 0;
        m->reason = xstrdup(u);
        return 0;
    }
    m->available = 1;
    m->formula = xstrdup(rest);
    for (char *e = m->formula + strlen(m->formula); e > m->formula && (e[-1] == ' ' || e[-1] == '\t'); )
        *--e = '\0';
    return compile_formula(ps, m, rest);
}

static int parse_number_or_any(const char *w, size_t len, int *out)
{
    unsigned long long v;
    if (word_is(w, len, "*") || word_is(w, len, "any")) {
        *out = -1;
        return 0;
    }
    if (parse_uint(w, len, 0xfff, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_arch_line(struct parse *ps, const char *s)
{
    struct cs_profile *p = ps->p;
    const char *w;
    size_t len;
    int k = 0;

    while ((w = next_word(&s, &len)) != NULL) {
        if (word_is(w, len, "test")) {
            p->test = 1;
            continue;
        }
        if (k == 0) {
            if (strncasecmp(w, "intel", len) == 0 && len == 5)
                p->vendor = CS_VENDOR_INTEL;
            else if (strncasecmp(w, "amd", len) == 0 && len == 3)
                p->vendor = CS_VENDOR_AMD;
            else if (word_is(w, len, "any"))
                p->vendor = CS_VENDOR_ANY;
            else
                return fail(ps, w, "ARCH: expected the vendor intel, amd or any, got '%.*s'", (int)len, w);
        } else if (k == 1) {
            if (parse_number_or_any(w, len, &p->family) < 0)
                return fail(ps, w, "ARCH: expected a CPU family number (6, 0x19) or *, got '%.*s'", (int)len, w);
        } else {
            const char *dash = memchr(w, '-', len);
            struct cs_model_range r;
            if (word_is(w, len, "*") || word_is(w, len, "any")) {
                r.lo = 0;
                r.hi = 0xfff;
            } else if (dash) {
                if (parse_number_or_any(w, (size_t)(dash - w), &r.lo) < 0 || r.lo < 0 ||
                    parse_number_or_any(dash + 1, len - (size_t)(dash - w) - 1, &r.hi) < 0 || r.hi < r.lo)
                    return fail(ps, w, "ARCH: expected a model range LO-HI (0x30-0x3f), got '%.*s'", (int)len, w);
            } else {
                if (parse_number_or_any(w, len, &r.lo) < 0)
                    return fail(ps, w, "ARCH: expected a model number (0x55, 85), a range LO-HI or *, got '%.*s'",
                                (int)len, w);
                r.hi = r.lo;
            }
            p->models = xrealloc(p->models, (size_t)(p->nmodels + 1) * sizeof *p->models);
            p->models[p->nmodels++] = r;
        }
        k++;
    }
    if (k == 0)
        return fail(ps, s, "ARCH: expected 'intel|amd|any [FAMILY [MODEL|LO-HI ...]] [test]'");
    if (p->vendor != CS_VENDOR_ANY && !p->test && (p->family < 0 || p->nmodels == 0))
        return fail(ps, NULL, "ARCH: a %s profile needs a family and at least one model (or 'test')",
                    p->vendor == CS_VENDOR_INTEL ? "intel" : "amd");
    return 0;
}

static int is_section(const char *w, size_t len)
{
    static const char *const kw[] = { "SHORT", "ARCH", "SOURCE", "CAVEAT", "EVENTSET", "METRICS", "LONG", NULL };
    for (int i = 0; kw[i]; i++)
        if (word_is(w, len, kw[i]))
            return 1;
    return 0;
}

static const char *basename_noext(const char *path, size_t *len)
{
    const char *b = strrchr(path, '/');
    size_t l;
    b = b ? b + 1 : path;
    l = strlen(b);
    if (l > 4 && strcmp(b + l - 4, ".txt") == 0)
        l -= 4;
    *len = l;
    return b;
}

/* The checks that need the whole file. */
static int check_complete(struct parse *ps, int metrics_line, int last_line)
{
    struct cs_profile *p = ps->p;

    ps->line = last_line;
    ps->linebuf = NULL;
    if (p->description == NULL)
        return fail(ps, NULL, "missing SHORT section (expected 'SHORT one-line description')");
    if (p->family == -2)
        return fail(ps, NULL, "missing ARCH section (expected 'ARCH intel|amd|any FAMILY MODEL...')");
    if (p->nsources == 0)
        return fail(ps, NULL, "missing SOURCE line (expected 'SOURCE where the events and formulas come from')");
    if (p->nevents == 0)
        return fail(ps, NULL, "%s (expected 'EVENTSET' followed by 'SLOT EVENT_NAME perf=SPEC' lines)",
                    metrics_line ? "EVENTSET section has no events" : "missing EVENTSET section");
    if (metrics_line == 0)
        return fail(ps, NULL, "missing METRICS section (expected 'METRICS' followed by 'name [unit] formula' lines)");
    ps->line = metrics_line;
    for (int i = 0; cs_required_metrics[i]; i++)
        if (cs_profile_find_metric(p, cs_required_metrics[i]) < 0)
            return fail(ps, NULL, "METRICS lacks the required metric '%s' (define it, or declare "
                        "'%s - unavailable: REASON')", cs_required_metrics[i], cs_required_metrics[i]);
    for (int i = 0; gbs_metrics[i]; i++) {
        struct cs_metric *m = &p->metrics[cs_profile_find_metric(p, gbs_metrics[i])];
        if (m->available && strcmp(m->unit, "GB/s") != 0) {
            ps->line = m->line;
            return fail(ps, NULL, "%s is a bandwidth: expected the unit [GB/s], got [%s]", m->name, m->unit);
        }
    }
    return 0;
}

struct cs_profile *cs_profile_load(const char *path)
{
    FILE *f = fopen(path, "r");
    struct parse ps = { .file = path, .line = 0, .cur_metric = -1 };
    struct cs_profile *p;
    char *buf = NULL;
    size_t cap = 0, blen;
    ssize_t n;
    enum { TOP, EVENTS, METRICS, LONGTEXT } block = TOP;
    int eventset_line = 0, metrics_line = 0, rc = 0;

    if (f == NULL) {
        cs_err("%s: %s", path, strerror(errno));
        return NULL;
    }
    p = xcalloc(1, sizeof *p);
    ps.p = p;
    p->file = xstrdup(path);
    {
        const char *b = basename_noext(path, &blen);
        p->name = xstrndup(b, blen);
    }
    p->family = -2;  /* no ARCH yet */
    while (rc == 0 && (n = getline(&buf, &cap, f)) >= 0) {
        const char *s, *w;
        size_t wlen;

        ps.line++;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            buf[--n] = '\0';
        if (strlen(buf) != (size_t)n) {
            ps.linebuf = buf;
            rc = fail(&ps, NULL, "expected text, found a NUL byte (is this a profile?)");
            break;
        }
        ps.linebuf = buf;
        if (block == LONGTEXT)
            continue;
        s = buf;
        w = next_word(&s, &wlen);
        if (w == NULL || *w == '#')
            continue;
        if (is_section(w, wlen)) {
            const char *text = skip_ws(s);
            if (word_is(w, wlen, "EVENTSET") || word_is(w, wlen, "METRICS") || word_is(w, wlen, "LONG")) {
                if (*text && !word_is(w, wlen, "LONG")) {
                    rc = fail(&ps, text, "expected nothing after %.*s on its line (its entries follow on the next lines)",
                              (int)wlen, w);
                } else if (word_is(w, wlen, "EVENTSET")) {
                    if (eventset_line)
                        rc = fail(&ps, w, "second EVENTSET section (the first is at line %d)", eventset_line);
                    eventset_line = ps.line;
                    block = EVENTS;
                } else if (word_is(w, wlen, "METRICS")) {
                    if (metrics_line)
                        rc = fail(&ps, w, "second METRICS section (the first is at line %d)", metrics_line);
                    else if (!eventset_line)
                        rc = fail(&ps, w, "METRICS before EVENTSET: expected the EVENTSET section first");
                    metrics_line = ps.line;
                    block = METRICS;
                } else
                    block = LONGTEXT;
                continue;
            }
            block = TOP;
            if (*text == '\0')
                rc = fail(&ps, text, "expected text after %.*s", (int)wlen, w);
            else if (word_is(w, wlen, "SHORT")) {
                if (p->description)
                    rc = fail(&ps, w, "second SHORT line");
                else
                    p->description = xstrdup(text);
            } else if (word_is(w, wlen, "ARCH")) {
                if (p->family != -2)
                    rc = fail(&ps, w, "second ARCH line");
                else {
                    p->family = -1;
                    rc = parse_arch_line(&ps, text);
                }
            } else if (word_is(w, wlen, "SOURCE")) {
                p->sources = xrealloc(p->sources, (size_t)(p->nsources + 1) * sizeof *p->sources);
                p->sources[p->nsources++] = xstrdup(text);
            } else {
                p->caveats = xrealloc(p->caveats, (size_t)(p->ncaveats + 1) * sizeof *p->caveats);
                p->caveats[p->ncaveats++] = xstrdup(text);
            }
            continue;
        }
        if (*skip_ws(s) == '\0' && valid_slot(w, wlen)) {
            rc = fail(&ps, w, "unknown section '%.*s' (expected one of %s%s)", (int)wlen, w, section_names,
                      block == EVENTS ? "; an event line is SLOT EVENT_NAME perf=SPEC" : "");
            break;
        }
        if (block == EVENTS)
            rc = parse_event_line(&ps, buf);
        else if (block == METRICS)
            rc = parse_metric_line(&ps, buf);
        else
            rc = fail(&ps, w, "expected a section keyword (%s) at the start of the line, got '%.*s'",
                      section_names, (int)wlen, w);
    }
    if (rc == 0 && ferror(f))
        rc = fail(&ps, NULL, "read error: %s", strerror(errno));
    if (rc == 0)
        rc = check_complete(&ps, metrics_line, ps.line);
    free(buf);
    fclose(f);
    if (rc < 0) {
        if (ps.line == 0)
            ps.line = 1;  /* an empty file: point at its first line */
        if (ps.col > 0)
            cs_err("%s:%d:%d: %s", path, ps.line, ps.col, ps.err);
        else
            cs_err("%s:%d: %s", path, ps.line, ps.err);
        cs_profile_free(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------ evaluation */

int cs_profile_find_metric(const struct cs_profile *p, const char *name)
{
    if (p == NULL || name == NULL)
        return -1;
    for (int i = 0; i < p->nmetrics; i++)
        if (strcmp(p->metrics[i].name, name) == 0)
            return i;
    return -1;
}

static double eval_expr(const struct cs_profile *p, const struct cs_expr *e, const double *counts,
                        double seconds, int ncores)
{
    switch (e->op) {
    case CS_EX_NUM: return e->value;
    case CS_EX_SLOT: return counts[e->index];
    case CS_EX_METRIC: return eval_expr(p, p->metrics[e->index].expr, counts, seconds, ncores);
    case CS_EX_TIME: return seconds;
    case CS_EX_CORES: return (double)ncores;
    case CS_EX_CLSIZE: return CS_CLSIZE;
    case CS_EX_NEG: return -eval_expr(p, e->l, counts, seconds, ncores);
    case CS_EX_ADD: return eval_expr(p, e->l, counts, seconds, ncores) + eval_expr(p, e->r, counts, seconds, ncores);
    case CS_EX_SUB: return eval_expr(p, e->l, counts, seconds, ncores) - eval_expr(p, e->r, counts, seconds, ncores);
    case CS_EX_MUL: return eval_expr(p, e->l, counts, seconds, ncores) * eval_expr(p, e->r, counts, seconds, ncores);
    case CS_EX_DIV: return eval_expr(p, e->l, counts, seconds, ncores) / eval_expr(p, e->r, counts, seconds, ncores);
    }
    return NAN;
}

int cs_profile_eval(const struct cs_profile *p, int metric_index, const double *counts, double seconds,
                    int ncores, double *out)
{
    const struct cs_metric *m;

    *out = NAN;
    if (p == NULL || metric_index < 0 || metric_index >= p->nmetrics || counts == NULL)
        return -1;
    m = &p->metrics[metric_index];
    if (!m->available || m->expr == NULL)
        return -1;
    *out = eval_expr(p, m->expr, counts, seconds, ncores);
    return 0;
}

/* -------------------------------------------------------------- matching */

static enum cs_vendor vendor_of(const char *v)
{
    if (v == NULL)
        return CS_VENDOR_ANY;
    if (strcmp(v, "GenuineIntel") == 0 || strcasecmp(v, "intel") == 0)
        return CS_VENDOR_INTEL;
    if (strcmp(v, "AuthenticAMD") == 0 || strcasecmp(v, "amd") == 0)
        return CS_VENDOR_AMD;
    return CS_VENDOR_ANY;  /* unknown vendor: only "any" profiles could cover it */
}

int cs_profile_matches(const struct cs_profile *p, const char *vendor, int family, int model)
{
    enum cs_vendor v = vendor_of(vendor);
    int ok = 0;

    if (p == NULL || p->test)
        return 0;
    if (p->vendor != CS_VENDOR_ANY && p->vendor != v)
        return 0;
    if (p->family >= 0 && p->family != family)
        return 0;
    if (p->nmodels == 0)
        return 1;
    for (int i = 0; i < p->nmodels; i++)
        if (model >= p->models[i].lo && model <= p->models[i].hi)
            ok = 1;
    return ok;
}

static int txt_filter(const struct dirent *d)
{
    size_t l = strlen(d->d_name);
    return d->d_name[0] != '.' && l > 4 && strcmp(d->d_name + l - 4, ".txt") == 0;
}

/* Every profile file in dirs, loaded unless shadowed. */
int cs_profile_scan(const char *const *dirs, int ndirs, struct cs_profile_entry **out)
{
    struct cs_profile_entry *v = NULL;
    int n = 0;

    for (int d = 0; d < ndirs; d++) {
        struct dirent **names = NULL;
        int k = scandir(dirs[d], &names, txt_filter, alphasort);
        if (k < 0) {
            if (errno != ENOENT && errno != ENOTDIR)
                cs_warn("profile directory %s: %s", dirs[d], strerror(errno));
            continue;
        }
        for (int i = 0; i < k; i++) {
            struct cs_profile_entry *e;
            size_t l = strlen(names[i]->d_name) - 4;
            v = xrealloc(v, (size_t)(n + 1) * sizeof *v);
            e = &v[n];
            e->name = xstrndup(names[i]->d_name, l);
            e->path = cs_strdup_printf("%s/%s", dirs[d], names[i]->d_name);
            e->p = NULL;
            e->shadowed_by = -1;
            for (int j = 0; j < n; j++)
                if (strcmp(v[j].name, e->name) == 0 && v[j].shadowed_by < 0) {
                    e->shadowed_by = j;
                    break;
                }
            if (e->shadowed_by < 0)
                e->p = cs_profile_load(e->path);
            n++;
            free(names[i]);
        }
        free(names);
    }
    *out = v;
    return n;
}

void cs_profile_entries_free(struct cs_profile_entry *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].path);
        cs_profile_free(v[i].p);
    }
    free(v);
}

struct cs_profile *cs_profile_match(const char *const *dirs, int ndirs, const char *vendor, int family, int model)
{
    struct cs_profile_entry *v;
    int n = cs_profile_scan(dirs, ndirs, &v);
    struct cs_profile *found = NULL;

    for (int i = 0; i < n && found == NULL; i++)
        if (v[i].p && cs_profile_matches(v[i].p, vendor, family, model)) {
            found = v[i].p;
            v[i].p = NULL;
        }
    cs_profile_entries_free(v, n);
    return found;
}

char **cs_profile_search_path(char *const *extra, int nextra, int *n)
{
    char **v = xcalloc((size_t)nextra + 4, sizeof *v);
    const char *home = getenv("HOME");
    int k = 0;

    for (int i = 0; i < nextra; i++)
        v[k++] = xstrdup(extra[i]);
    if (home && *home)
        v[k++] = cs_strdup_printf("%s/.config/cosched/profiles", home);
    v[k++] = cs_strdup_printf("%s/profiles", COSCHED_SYSCONFDIR);
    v[k++] = cs_strdup_printf("%s/profiles", cs_datadir());
    *n = k;
    return v;
}

/* ------------------------------------------- what cosched profiles shows */

/* This machine's CPU, from hwloc's info attributes of the first package. */
void cs_cpuid_this(struct cs_cpuid *c)
{
    hwloc_topology_t t;
    hwloc_obj_t o;
    const char *v = NULL, *f = NULL, *m = NULL;
    long fam, mod;

    memset(c, 0, sizeof *c);
    if (hwloc_topology_init(&t) < 0 || hwloc_topology_load(t) < 0) {
        snprintf(c->why, sizeof c->why, "hwloc could not load this machine's topology");
        return;
    }
    o = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
    for (int pass = 0; pass < 2 && (v == NULL || f == NULL || m == NULL); pass++) {
        if (pass == 1)
            o = hwloc_get_root_obj(t);
        if (o == NULL)
            continue;
        v = hwloc_obj_get_info_by_name(o, "CPUVendor");
        f = hwloc_obj_get_info_by_name(o, "CPUFamilyNumber");
        m = hwloc_obj_get_info_by_name(o, "CPUModelNumber");
    }
    if (v == NULL || f == NULL || m == NULL || cs_parse_long(f, 0, 0xffff, &fam) < 0 ||
        cs_parse_long(m, 0, 0xffff, &mod) < 0) {
        snprintf(c->why, sizeof c->why, "hwloc reports no CPUVendor/CPUFamilyNumber/CPUModelNumber for this "
                 "machine's package (not x86, or hidden by the hypervisor)");
    } else {
        snprintf(c->vendor, sizeof c->vendor, "%s", v);
        c->family = (int)fam;
        c->model = (int)mod;
        c->known = 1;
    }
    hwloc_topology_destroy(t);
}

int cs_cpuid_parse(const char *s, struct cs_cpuid *c)
{
    const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    unsigned long long f, m;

    memset(c, 0, sizeof *c);
    if (c1 == NULL || c2 == NULL || c1 == s || (size_t)(c1 - s) >= sizeof c->vendor ||
        parse_uint(c1 + 1, (size_t)(c2 - c1 - 1), 0xffff, &f) < 0 || parse_uint(c2 + 1, strlen(c2 + 1), 0xffff, &m) < 0)
        return -1;
    memcpy(c->vendor, s, (size_t)(c1 - s));
    c->family = (int)f;
    c->model = (int)m;
    c->known = 1;
    return 0;
}

void cs_profile_num(char *buf, size_t len, int v)
{
    if (v < 10)
        snprintf(buf, len, "%d", v);
    else
        snprintf(buf, len, "0x%x", v);
}

const char *cs_profile_vendor_name(enum cs_vendor v)
{
    return v == CS_VENDOR_INTEL ? "intel" : v == CS_VENDOR_AMD ? "amd" : "any";
}

/* "intel 6 0x4f,0x56", "amd 0x19 0x00-0x0f,0x20-0x5f", "any (test)" */
void cs_profile_arch(const struct cs_profile *p, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "%s", cs_profile_vendor_name(p->vendor));
    char num[16];

    if (p->family >= 0 && k < len) {
        cs_profile_num(num, sizeof num, p->family);
        k += (size_t)snprintf(buf + k, len - k, " %s", num);
    }
    for (int i = 0; i < p->nmodels && k < len; i++) {
        if (p->models[i].lo == p->models[i].hi)
            k += (size_t)snprintf(buf + k, len - k, "%s0x%02x", i ? "," : " ", p->models[i].lo);
        else
            k += (size_t)snprintf(buf + k, len - k, "%s0x%02x-0x%02x", i ? "," : " ", p->models[i].lo, p->models[i].hi);
    }
    if (p->test && k < len)
        snprintf(buf + k, len - k, " (test)");
}

/* Why no profile matches cpu (cpu->known). */
void cs_profile_why_none(const struct cs_cpuid *cpu, const struct cs_profile_entry *v, int n, char *const *dirs, int ndirs,
                     char *buf, size_t len)
{
    enum cs_vendor want = vendor_of(cpu->vendor);
    size_t k = 0;
    char num[16];
    int nok = 0, ntest = 0, same_family = 0;

    for (int i = 0; i < n; i++)
        if (v[i].p) {
            if (v[i].p->test)
                ntest++;
            else
                nok++;
        }
    if (nok == 0) {
        k += (size_t)snprintf(buf + k, len - k, "no hardware profile was found in");
        for (int i = 0; i < ndirs && k < len; i++)
            k += (size_t)snprintf(buf + k, len - k, "%s %s", i ? "," : "", dirs[i]);
    } else if (want == CS_VENDOR_ANY) {
        snprintf(buf, len, "vendor '%s' is neither GenuineIntel nor AuthenticAMD and no profile is for any vendor",
                 cpu->vendor);
        return;
    } else {
        cs_profile_num(num, sizeof num, cpu->family);
        k += (size_t)snprintf(buf + k, len - k, "no profile covers %s family %s model 0x%02x", cs_profile_vendor_name(want),
                              num, cpu->model);
        for (int i = 0; i < n && k < len; i++) {
            const struct cs_profile *p = v[i].p;
            if (p && !p->test && p->vendor == want && p->family == cpu->family) {
                k += (size_t)snprintf(buf + k, len - k, "%s%s (", same_family++ ? ", " : "; this family has: ",
                                      p->name);
                for (int m = 0; m < p->nmodels && k < len; m++)
                    k += (size_t)snprintf(buf + k, len - k, p->models[m].lo == p->models[m].hi ? "%s0x%02x"
                                          : "%s0x%02x-0x%02x", m ? "," : "", p->models[m].lo, p->models[m].hi);
                if (k < len)
                    k += (size_t)snprintf(buf + k, len - k, ")");
            }
        }
        if (!same_family && k < len)
            k += (size_t)snprintf(buf + k, len - k, "; no profile is for that family");
    }
    if (ntest && k < len)
        k += (size_t)snprintf(buf + k, len - k, "; test profiles are never matched");
    if (k < len)
        snprintf(buf + k, len - k, " (write profiles/<arch>.txt for this CPU, or pass --profile-path DIR)");
}

static int expr_uses_slot(const struct cs_expr *e, int slot)
{
    return e && ((e->op == CS_EX_SLOT && e->index == slot) || expr_uses_slot(e->l, slot) ||
                 expr_uses_slot(e->r, slot));
}

int cs_profile_slot_used(const struct cs_profile *p, int slot)
{
    for (int m = 0; m < p->nmetrics; m++)
        if (expr_uses_slot(p->metrics[m].expr, slot))
            return 1;
    return 0;
}

/* ------------------------------------------------------- for the engine */

struct cs_profile *cs_profile_for_this_cpu(char *const *extra, int nextra, char *why, size_t len)
{
    struct cs_cpuid c;
    struct cs_profile *p = NULL;
    char **dirs;
    int n;

    cs_cpuid_this(&c);
    if (!c.known) {
        snprintf(why, len, "%s", c.why);
        return NULL;
    }
    dirs = cs_profile_search_path(extra, nextra, &n);
    p = cs_profile_match((const char *const *)dirs, n, c.vendor, c.family, c.model);
    if (p == NULL)
        snprintf(why, len, "no profile covers %s family %d model 0x%x (see cosched profiles)", c.vendor,
                 c.family, c.model);
    cs_strv_free(dirs, n);
    return p;
}

struct cs_profile *cs_profile_find(const char *spec, char *const *extra, int nextra)
{
    struct cs_profile *p = NULL;
    char **dirs;
    int n, found = 0;

    if (strchr(spec, '/'))
        return cs_profile_load(spec);
    dirs = cs_profile_search_path(extra, nextra, &n);
    for (int i = 0; i < n && !found; i++) {
        char *f = cs_strdup_printf("%s/%s.txt", dirs[i], spec);
        if (access(f, R_OK) == 0) {
            found = 1;
            p = cs_profile_load(f);      /* a parse error is reported there */
        }
        free(f);
    }
    if (!found) {
        /* the closest profile name in the path, for a typo (skylakex) */
        char **names = calloc(128, sizeof *names);   /* no memory: no hint */
        size_t nn = 0;
        for (int i = 0; names && i < n; i++) {
            DIR *d = opendir(dirs[i]);
            struct dirent *de;
            while (d && (de = readdir(d)) != NULL && nn < 128) {
                size_t l = strlen(de->d_name);
                if (l > 4 && strcmp(de->d_name + l - 4, ".txt") == 0)
                    names[nn++] = cs_strdup_printf("%.*s", (int)(l - 4), de->d_name);
            }
            if (d)
                closedir(d);
        }
        const char *near = cs_closest(spec, (const char *const *)names, nn);
        cs_err("--profile %s: no %s.txt in the profile search path (%s%s%scosched profiles lists them)", spec, spec,
               near ? "did you mean " : "", near ? near : "", near ? "? " : "");
        cs_strv_free(names, (int)nn);
    }
    cs_strv_free(dirs, n);
    return p;
}
