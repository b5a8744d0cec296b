/*
 * counters_replay.c - the replay backend (--counters replay:FILE): serves the
 * counts of a recording made with --record-counters (counters.c), so that
 * policies can be developed and tested on a machine without the hardware,
 * and a run can be repeated with the measurements of another.
 *
 * The k-th step in which job NAME is live (j->steps_live == k when the
 * engine reads it; 0 for its first) gets the record {"job":NAME,"step":k}.
 * What the job does in the replaying run does not matter: the counts are the
 * recorded ones.  A job that is live in more steps than were recorded for it
 * gets no measurements from then on (flags 0); cosched says so once per run,
 * for the first such job.
 *
 * init() reads and checks the whole file before any job starts; the first
 * problem stops the run as "FILE:LINE: what was expected".  Checked: the
 * header (format name, version 1, the profile's name and its slots, in
 * order), then each line: the JSON subset below, every key present once and
 * no other, job a job of this run, steps of a job numbered 0, 1, 2 ... in
 * file order, flags 0..7, seconds >= 0, exactly one count per slot, each a
 * number >= 0 or null.
 *
 * Accepted JSON (a strict subset, enough for this flat format; no JSON
 * library is in the stack): one object per line, the line ending in "\n";
 * blanks (space, tab) between tokens; members "key": value where value is a
 * string, a number, null, or an array of strings, numbers and nulls - no
 * nested objects or arrays, no true/false.  Strings: UTF-8 without raw
 * control characters, escapes \" \\ \/ \b \f \n \r \t \uXXXX (no surrogate
 * pairs: \uD800-\uDFFF are refused).  Numbers: JSON's grammar
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as doubles; integers
 * (step, seq, flags, version) are written without fraction or exponent.
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "counters/counters.h"

#define RP_VERSION 1
#define RP_MAXARR CS_COUNTS_MAX

struct rrec {
    int flags;
    double seconds;
    double v[CS_COUNTS_MAX];
};

struct rjob {
    struct cs_job *job;
    struct rrec *r;
    size_t n, cap;
};

static struct {
    char *file;
    struct rjob *jobs;
    int njobs, nslots;
    int warned;
} R;

/* ------------------------------------------------------------ reader */

enum vtype { V_STR, V_NUM, V_INT, V_NULL, V_ARR };

struct val {
    enum vtype t;
    char *s;                       /* V_STR */
    double d;                      /* V_NUM, V_INT */
    int n;                         /* V_ARR: items */
    struct val *items;
};

struct member {
    char *key;
    struct val v;
    int col;
};

struct cur {
    const char *file;
    int line;
    const char *start, *p, *end;   /* the line, without its "\n" */
    int failed;
};

static int perr(struct cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct cur *c, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    if (c->failed++)
        return -1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cs_err("%s:%d: %s", c->file, c->line, msg);
    return -1;
}

/* What is at the cursor, for "got ..." */
static const char *got(struct cur *c, char *b, size_t len)
{
    if (c->p >= c->end)
        return "the end of the line";
    int n = (int)(c->end - c->p) < 12 ? (int)(c->end - c->p) : 12;
    snprintf(b, len, "'%.*s'%s (column %d)", n, c->p, c->end - c->p > 12 ? "..." : "", (int)(c->p - c->start) + 1);
    return b;
}

static void skip_ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int expect_char(struct cur *c, char ch, const char *what)
{
    char b[64];
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 0;
    }
    return perr(c, "expected %s, got %s", what, got(c, b, sizeof b));
}

static int hexval(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

static int parse_string(struct cur *c, char **out)
{
    size_t cap = 32, n = 0;
    char *s, b[64];

    skip_ws(c);
    if (c->p >= c->end || *c->p != '"')
        return perr(c, "expected a string, got %s", got(c, b, sizeof b));
    c->p++;
    s = malloc(cap);
    for (;;) {
        unsigned char ch;
        if (n + 5 > cap)
            s = realloc(s, cap *= 2);
        if (c->p >= c->end) {
            free(s);
            return perr(c, "expected the closing '\"' of a string, got the end of the line");
        }
        ch = (unsigned char)*c->p++;
        if (ch == '"')
            break;
        if (ch < 0x20) {
            free(s);
            c->p--;
            return perr(c, "expected a character of a string, got control character 0x%02x (column %d): escape it",
                        ch, (int)(c->p - c->start) + 1);
        }
        if (ch != '\\') {
            s[n++] = (char)ch;
            continue;
        }
        if (c->p >= c->end) {
            free(s);
            return perr(c, "expected an escape after '\\', got the end of the line");
        }
        ch = (unsigned char)*c->p++;
        switch (ch) {
        case '"': case '\\': case '/': s[n++] = (char)ch; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u': {
            unsigned u = 0;
            for (int k = 0; k < 4; k++) {
                int h = c->p + k < c->end ? hexval(c->p[k]) : -1;
                if (h < 0) {
                    free(s);
                    return perr(c, "expected four hex digits after \\u (column %d)", (int)(c->p - c->start) + 1);
                }
                u = u * 16 + (unsigned)h;
            }
            if (u == 0 || (u >= 0xd800 && u <= 0xdfff)) {
                free(s);
                return perr(c, "expected a \\u escape of a character other than NUL or a surrogate, got \\u%04x "
                               "(column %d)", u, (int)(c->p - c->start) - 1);
            }
            c->p += 4;
            if (u < 0x80)
                s[n++] = (char)u;
            else if (u < 0x800) {
                s[n++] = (char)(0xc0 | (u >> 6));
                s[n++] = (char)(0x80 | (u & 0x3f));
            } else {
                s[n++] = (char)(0xe0 | (u >> 12));
                s[n++] = (char)(0x80 | ((u >> 6) & 0x3f));
                s[n++] = (char)(0x80 | (u & 0x3f));
            }
            break;
        }
        default:
            free(s);
            c->p--;
            return perr(c, "expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX, got '\\%c' (column %d)", ch,
                        (int)(c->p - c->start));
        }
    }
    s[n] = '\0';
    *out = s;
    return 0;
}

/* JSON number grammar, checked before strtod (which accepts more). */
static int parse_number(struct cur *c, struct val *v)
{
    const char *q = c->p, *s = c->p;
    char buf[64], b[64];
    int integer = 1;

    if (q < c->end && *q == '-')
        q++;
    if (q < c->end && *q == '0')
        q++;
    else if (q < c->end && *q >= '1' && *q <= '9')
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    else
        return perr(c, "expected a number, got %s", got(c, b, sizeof b));
    if (q < c->end && *q == '.') {
        integer = 0;
        if (++q >= c->end || *q < '0' || *q > '9') {
            c->p = q;
            return perr(c, "expected a digit after the decimal point, got %s", got(c, b, sizeof b));
        }
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        integer = 0;
        q++;
        if (q < c->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= c->end || *q < '0' || *q > '9') {
            c->p = q;
            return perr(c, "expected the digits of an exponent, got %s", got(c, b, sizeof b));
        }
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    }
    if ((size_t)(q - s) >= sizeof buf)
        return perr(c, "expected a number of at most %zu characters (column %d)", sizeof buf - 1,
                    (int)(s - c->start) + 1);
    memcpy(buf, s, q - s);
    buf[q - s] = '\0';
    errno = 0;
    v->d = strtod(buf, NULL);
    if (!isfinite(v->d))
        return perr(c, "expected a finite number, got %s (column %d)", buf, (int)(s - c->start) + 1);
    v->t = integer ? V_INT : V_NUM;
    c->p = q;
    return 0;
}

static void free_val(struct val *v)
{
    if (v->t == V_STR)
        free(v->s);
    for (int i = 0; v->t == V_ARR && i < v->n; i++)
        free_val(&v->items[i]);
    if (v->t == V_ARR)
        free(v->items);
    memset(v, 0, sizeof *v);
    v->t = V_NULL;
}

static int parse_value(struct cur *c, struct val *v, int in_array)
{
    char b[64];

    memset(v, 0, sizeof *v);
    v->t = V_NULL;
    skip_ws(c);
    if (c->p >= c->end)
        return perr(c, "expected a value, got the end of the line");
    if (*c->p == '"') {
        if (parse_string(c, &v->s) < 0)
            return -1;
        v->t = V_STR;
        return 0;
    }
    if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))
        return parse_number(c, v);
    if (c->end - c->p >= 4 && strncmp(c->p, "null", 4) == 0) {
        c->p += 4;
        return 0;
    }
    if (*c->p == '[' && !in_array) {
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            v->t = V_ARR;
            return 0;
        }
        v->t = V_ARR;
        v->items = calloc(RP_MAXARR, sizeof *v->items);
        for (;;) {
            if (v->n == RP_MAXARR)
                return perr(c, "expected at most %d array items (column %d)", RP_MAXARR, (int)(c->p - c->start) + 1);
            if (parse_value(c, &v->items[v->n], 1) < 0)
                return -1;
            v->n++;
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            return expect_char(c, ']', "',' or ']' in an array");
        }
    }
    return perr(c, "expected %s, got %s", in_array ? "a string, a number or null" : "a string, a number, null or [",
                got(c, b, sizeof b));
}

/* One line: {"key": value, ...}.  *m gets the members. */
static int parse_object(struct cur *c, struct member *m, int max, int *n)
{
    char b[64];

    *n = 0;
    if (expect_char(c, '{', "'{' (each line is one JSON object)") < 0)
        return -1;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}')
        c->p++;
    else
        for (;;) {
            if (*n == max)
                return perr(c, "expected at most %d members (column %d)", max, (int)(c->p - c->start) + 1);
            skip_ws(c);
            m[*n].col = (int)(c->p - c->start) + 1;
            if (parse_string(c, &m[*n].key) < 0)
                return -1;
            (*n)++;
            m[*n - 1].v.t = V_NULL;
            if (expect_char(c, ':', "':' after a key") < 0)
                return -1;
            if (parse_value(c, &m[*n - 1].v, 0) < 0)
                return -1;
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            if (expect_char(c, '}', "',' or '}' after a member") < 0)
                return -1;
            break;
        }
    skip_ws(c);
    if (c->p < c->end)
        return perr(c, "expected the end of the line after the object, got %s", got(c, b, sizeof b));
    return 0;
}

static void free_members(struct member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].key);
        free_val(&m[i].v);
    }
}

static const char *tname(enum vtype t)
{
    return t == V_STR ? "a string" : t == V_NUM ? "a number with a fraction or exponent" : t == V_INT ? "a number"
         : t == V_NULL ? "null" : "an array";
}

/* The members named in keys[] (each exactly once, no other); found[i] -> m index */
static int members_exactly(struct cur *c, struct member *m, int n, const char *const *keys, int nkeys, int *found,
                           const char *what)
{
    for (int k = 0; k < nkeys; k++)
        found[k] = -1;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < nkeys && strcmp(m[i].key, keys[k]) != 0; k++)
            ;
        if (k == nkeys) {
            char list[200] = "";
            for (int q = 0; q < nkeys; q++)
                strcat(strcat(list, q ? ", " : ""), keys[q]);
            return perr(c, "expected only the keys %s in %s, got \"%s\" (column %d)", list, what, m[i].key, m[i].col);
        }
        if (found[k] >= 0)
            return perr(c, "expected \"%s\" once, got it twice (column %d)", keys[k], m[i].col);
        found[k] = i;
    }
    for (int k = 0; k < nkeys; k++)
        if (found[k] < 0)
            return perr(c, "expected \"%s\" in %s; it is missing", keys[k], what);
    return 0;
}

static int want_type(struct cur *c, const struct member *m, enum vtype t, const char *what)
{
    if (m->v.t == t || (t == V_NUM && m->v.t == V_INT))
        return 0;
    return perr(c, "expected %s as \"%s\", got %s (column %d)", what, m->key, tname(m->v.t), m->col);
}

static int want_uint(struct cur *c, const struct member *m, double max, const char *what)
{
    if (m->v.t != V_INT)
        return perr(c, "expected %s as \"%s\", got %s (column %d)", what, m->key, tname(m->v.t), m->col);
    if (m->v.d < 0 || m->v.d > max)
        return perr(c, "expected %s as \"%s\", got %.0f (column %d)", what, m->key, m->v.d, m->col);
    return 0;
}

/* ------------------------------------------------------------ the file */

static void free_all(void)
{
    for (int i = 0; i < R.njobs; i++)
        free(R.jobs[i].r);
    free(R.jobs);
    free(R.file);
    memset(&R, 0, sizeof R);
}

static int check_header(struct cur *c, const struct cs_profile *p)
{
    static const char *const keys[] = { "format", "version", "profile", "slots" };
    struct member m[8];
    int n, f[4], r = -1;

    if (parse_object(c, m, 8, &n) < 0)
        goto out;
    if (members_exactly(c, m, n, keys, 4, f, "the header line") < 0)
        goto out;
    if (m[f[0]].v.t != V_STR || strcmp(m[f[0]].v.s, "cosched-counters") != 0) {
        perr(c, "expected \"format\":\"cosched-counters\" (a recording of cosched run --record-counters)");
        goto out;
    }
    if (want_uint(c, &m[f[1]], 1e9, "the format version (an integer)") < 0)
        goto out;
    if (m[f[1]].v.d != RP_VERSION) {
        perr(c, "expected format version %d, got version %.0f (written by another cosched version)", RP_VERSION,
             m[f[1]].v.d);
        goto out;
    }
    if (want_type(c, &m[f[2]], V_STR, "the profile name") < 0)
        goto out;
    if (strcmp(m[f[2]].v.s, p->name) != 0) {
        perr(c, "expected profile %s (the one this run uses), got a recording made with profile %s: give "
                "--profile %s",
             p->name, m[f[2]].v.s, m[f[2]].v.s);
        goto out;
    }
    if (want_type(c, &m[f[3]], V_ARR, "the list of event slots") < 0)
        goto out;
    {
        const struct val *s = &m[f[3]].v;
        int same = s->n == p->nevents;
        char want[400] = "", have[400] = "";
        for (int i = 0; i < s->n; i++)
            if (s->items[i].t != V_STR) {
                perr(c, "expected the slots as strings, got %s as slot %d", tname(s->items[i].t), i);
                goto out;
            }
        for (int i = 0; same && i < s->n; i++)
            same = strcmp(s->items[i].s, p->events[i].slot) == 0;
        if (!same) {
            for (int i = 0; i < p->nevents; i++)
                if (strlen(want) + strlen(p->events[i].slot) + 3 < sizeof want)
                    strcat(strcat(want, i ? " " : ""), p->events[i].slot);
            for (int i = 0; i < s->n; i++)
                if (strlen(have) + strlen(s->items[i].s) + 3 < sizeof have)
                    strcat(strcat(have, i ? " " : ""), s->items[i].s);
            perr(c, "expected the event slots of profile %s (%s), got (%s): the profile changed since the recording",
                 p->name, want, have);
            goto out;
        }
    }
    r = 0;
out:
    free_members(m, n);
    return r;
}

static int add_record(struct cur *c, struct cs_engine *e)
{
    static const char *const keys[] = { "job", "step", "seq", "flags", "seconds", "counts" };
    struct member m[12];
    int n = 0, f[6], r = -1, ji;
    struct rjob *rj;
    struct rrec rec;

    if (parse_object(c, m, 12, &n) < 0)
        goto out;
    if (members_exactly(c, m, n, keys, 6, f, "a record") < 0)
        goto out;
    if (want_type(c, &m[f[0]], V_STR, "the job name") < 0 || want_uint(c, &m[f[1]], 9e15, "a step number >= 0") < 0 ||
        want_uint(c, &m[f[2]], 9e15, "a step sequence number >= 0") < 0 ||
        want_uint(c, &m[f[3]], 7, "flags from 0 to 7 (CS_COUNTS_*)") < 0 ||
        want_type(c, &m[f[4]], V_NUM, "the seconds the counts cover") < 0 ||
        want_type(c, &m[f[5]], V_ARR, "the list of counts") < 0)
        goto out;
    for (ji = 0; ji < R.njobs && strcmp(R.jobs[ji].job->name, m[f[0]].v.s) != 0; ji++)
        ;
    if (ji == R.njobs) {
        char list[300] = "";
        for (int i = 0; i < R.njobs; i++)
            if (strlen(list) + strlen(R.jobs[i].job->name) + 3 < sizeof list)
                strcat(strcat(list, i ? ", " : ""), R.jobs[i].job->name);
        perr(c, "expected the name of a job of this run (%s), got job \"%s\"", list, m[f[0]].v.s);
        goto out;
    }
    rj = &R.jobs[ji];
    if (m[f[1]].v.d != (double)rj->n) {
        perr(c, "expected step %zu of job \"%s\" (a job's steps are numbered 0, 1, 2 ... in file order), got step %.0f",
             rj->n, rj->job->name, m[f[1]].v.d);
        goto out;
    }
    rec.flags = (int)m[f[3]].v.d;
    rec.seconds = m[f[4]].v.d;
    if (rec.seconds < 0) {
        perr(c, "expected seconds >= 0, got %g (column %d)", rec.seconds, m[f[4]].col);
        goto out;
    }
    if (m[f[5]].v.n != R.nslots) {
        perr(c, "expected %d counts (one per slot of the header), got %d (column %d)", R.nslots, m[f[5]].v.n,
             m[f[5]].col);
        goto out;
    }
    for (int i = 0; i < R.nslots; i++) {
        const struct val *v = &m[f[5]].v.items[i];
        if (v->t == V_NULL)
            rec.v[i] = NAN;
        else if (v->t == V_STR) {
            perr(c, "expected a count (a number >= 0) or null as counts[%d], got the string \"%s\"", i, v->s);
            goto out;
        } else if (v->d < 0) {
            perr(c, "expected a count >= 0 or null as counts[%d], got %g", i, v->d);
            goto out;
        } else
            rec.v[i] = v->d;
    }
    if (rj->n == rj->cap)
        rj->r = realloc(rj->r, (rj->cap = rj->cap ? 2 * rj->cap : 64) * sizeof *rj->r);
    rj->r[rj->n++] = rec;
    r = 0;
out:
    free_members(m, n);
    return r;
}

static int load(struct cs_engine *e, const char *file, const struct cs_profile *p)
{
    FILE *f = fopen(file, "re");
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    int r = -1;

    if (f == NULL) {
        cs_err("--counters replay:%s: cannot open the recording: %s", file, strerror(errno));
        return -1;
    }
    do {
        if (len + 65536 > cap)
            buf = realloc(buf, cap = 2 * cap + 65536);
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    if (ferror(f)) {
        cs_err("--counters replay:%s: cannot read the recording: %s", file, strerror(errno));
        goto out;
    }
    struct cur c = { .file = file, .line = 0 };
    const char *s = buf, *end = buf + len;
    if (len == 0) {
        c.line = 1;
        perr(&c, "expected the header line {\"format\":\"cosched-counters\",...}, got an empty file");
        goto out;
    }
    while (s < end) {
        const char *nl = memchr(s, '\n', end - s);
        c.line++;
        c.start = c.p = s;
        c.end = nl ? nl : end;
        if (memchr(s, '\0', c.end - s)) {
            perr(&c, "expected text, got a NUL byte: not a recording, or a damaged one");
            goto out;
        }
        if (nl == NULL) {
            perr(&c, "truncated line: expected it to end with a newline (the recording was cut short?)");
            goto out;
        }
        if (c.end == s) {
            perr(&c, "expected a JSON object, got an empty line");
            goto out;
        }
        if (c.line == 1 ? check_header(&c, p) < 0 : add_record(&c, e) < 0)
            goto out;
        s = nl + 1;
    }
    r = 0;
out:
    free(buf);
    fclose(f);
    return r;
}

/* ------------------------------------------------------------ ops */

static int replay_probe(const char *arg, char *why, size_t len)
{
    if (arg == NULL || *arg == '\0') {
        snprintf(why, len, "no recording given (replay:FILE)");
        return -1;
    }
    if (access(arg, R_OK) < 0) {
        snprintf(why, len, "cannot read the recording %s: %s", arg, strerror(errno));
        return -1;
    }
    return 0;
}

static int replay_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    free_all();
    if (p == NULL) {
        cs_err("--counters replay:%s: no counter profile (give --profile NAME, the one recorded)", arg ? arg : "");
        return -1;
    }
    if (p->nevents > CS_COUNTS_MAX) {
        cs_err("--counters replay:%s: profile %s has %d events; at most %d are supported", arg, p->name, p->nevents,
               CS_COUNTS_MAX);
        return -1;
    }
    R.file = strdup(arg ? arg : "");
    R.nslots = p->nevents;
    R.njobs = e->njobs;
    R.jobs = calloc(e->njobs ? e->njobs : 1, sizeof *R.jobs);
    for (int i = 0; i < e->njobs; i++)
        R.jobs[i].job = e->jobs[i];
    if (load(e, R.file, p) < 0) {
        free_all();
        return -1;
    }
    for (int i = 0; i < e->njobs; i++)
        e->jobs[i]->cnt = &R.jobs[i];
    return 0;
}

static int replay_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return 0;
}

static int replay_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    return 0;
}

static int replay_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    struct rjob *rj = j->cnt;
    uint64_t k = j->steps_live;

    out->n = R.nslots;
    out->flags = 0;
    out->seconds = 0;
    for (int i = 0; i < R.nslots; i++)
        out->v[i] = NAN;
    if (rj == NULL)
        return 0;
    if (k >= rj->n) {
        if (!R.warned++)
            cs_warn("counters: replay %s: job %d (%s) is live in more steps than were recorded for it (%zu); "
                    "from here on it gets no measurements (nor will any other job past its recording)",
                    R.file, j->id, j->name, rj->n);
        else if (k == rj->n)
            cs_debug("counters: replay %s: job %d (%s) ran past its %zu recorded steps", R.file, j->id, j->name,
                     rj->n);
        return 0;
    }
    out->flags = rj->r[k].flags;
    out->seconds = rj->r[k].seconds;
    memcpy(out->v, rj->r[k].v, R.nslots * sizeof *out->v);
    return 0;
}

static void replay_job(struct cs_engine *e, struct cs_job *j)
{
}

static void replay_job_release(struct cs_engine *e, struct cs_job *j)
{
    j->cnt = NULL;
}

static void replay_fini(struct cs_engine *e)
{
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->cnt && R.jobs && (struct rjob *)e->jobs[i]->cnt >= R.jobs &&
            (struct rjob *)e->jobs[i]->cnt < R.jobs + R.njobs)
            e->jobs[i]->cnt = NULL;
    free_all();
}

const struct cs_counter_ops cs_counters_replay = {
    .name = "replay",
    .probe = replay_probe,
    .init = replay_init,
    .job_attach = replay_attach,
    .step_begin = replay_step_begin,
    .read = replay_read,
    .instance_ended = replay_job,
    .job_release = replay_job_release,
    .fini = replay_fini,
};
