/*
 * formula.c - a counter profile's metric formulas: compiled by recursive
 * descent into a tree (struct cs_expr, errors naming the column, the tree's
 * size bounded), evaluated on one interval's counts (cs_profile_eval), and
 * asked which event slots they read.
 */
#include "config.h"
#include <math.h>
#include "counters/profile_parse.h"

void cs_profile_expr_free(struct cs_expr *e)
{
    if (e == NULL)
        return;
    cs_profile_expr_free(e->l);
    cs_profile_expr_free(e->r);
    free(e);
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
            cs_profile_expr_free(e);
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
            cs_profile_expr_free(l);
            fail(x->ps, s, "formula too long (more than %d operators)", CS_MAX_NODES);
            return NULL;
        }
        x->s = s + 1;
        if ((r = next(x)) == NULL) {
            cs_profile_expr_free(l);
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

int cs_profile_compile_formula(struct parse *ps, struct cs_metric *m, const char *s)
{
    struct xp x = { .ps = ps, .s = s, .uses = 0, .depth = 0, .nodes = 0 };
    struct cs_expr *e = parse_sum(&x);

    if (e == NULL)
        return -1;
    x.s = skip_ws(x.s);
    if (*x.s) {
        cs_profile_expr_free(e);
        if (*x.s == ')')
            return fail(ps, x.s, "unexpected ')' (no '(' to close)");
        return fail(ps, x.s, "expected an operator (+ - * /) or the end of the formula, got '%c'", *x.s);
    }
    m->expr = e;
    m->scope = (x.uses & (1u << CS_SCOPE_SOCKET)) ? CS_SCOPE_SOCKET
             : (x.uses & (1u << CS_SCOPE_UNCORE)) ? CS_SCOPE_UNCORE : CS_SCOPE_CORE;
    return 0;
}

/* ------------------------------------------------------------ evaluation */

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
