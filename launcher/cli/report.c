/*
 * report.c - `cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]`:
 * a picture of a run from its trace (cosched(1) REPORT, TRACE).
 *
 * The trace (engine.c) holds per step its epoch, start and end, and per job
 * live in it the state the mechanism reports (run, frozen, stuck), its cpus
 * and CPU time, and what the policy said of it (plan()'s third value, e.g.
 * "characterizing"); the job events give instances, exit status and, since
 * trace version 2, each job's thread count; version 2's first line names the
 * policy, quantum and managed cpus.  The picture, left to right:
 *
 *   title, legend, epoch marks (dashed lines, numbers where there is room)
 *   one row per job:  its state step by step          | its summary beside it
 *   one row per cpu:  which job ran there (job colour)
 *   time axis (seconds since the start of the run)
 *
 * The state of a job in a step, as drawn and summed:
 *   running         ran on as many cpus as it has threads (or more)
 *   folded          ran on fewer cpus than threads (thread folding);
 *                   a trace without thread counts (version 1): on fewer cpus
 *                   than the most it ever had in the trace
 *   frozen/waiting  live, but not run in the step (frozen, or started and
 *                   waiting for its first quantum)
 *   characterizing  ran while the policy said it was being characterized
 *                   (policies that measure jobs: fop, flca and their kin with
 *                   counters; others never say so)
 *   stuck           the mechanism disagreed with the plan (cosched(1) TRACE)
 * Consecutive steps in the same state are one rectangle.  Every rectangle
 * carries data-* attributes (job, cpu, state, t0, t1, steps) for tools and
 * tests, and a <title> that a browser shows on hover.
 *
 * Throughput is completed instances (job end events with exit status 0) per
 * second of the traced run (first step's start to the last record's time):
 * under --window, the paper's measure.
 *
 * Bad input is reported as FILE:LINE: what was expected (exit 2): not JSON,
 * a truncated line, a record without its fields, no step at all.  Records of
 * an unknown type are skipped (a newer trace).  The SVG uses no script, font
 * file or link: the HTML page is the same SVG inline, a table and a style.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/log.h"
#include "core/util.h"
#include "core/json.h"

enum { ST_RUN, ST_FOLDED, ST_FROZEN, ST_CHAR, ST_STUCK, NSTATES };
static const char *const st_name[NSTATES] = { "running", "folded", "frozen", "characterizing", "stuck" };
static const char *const st_label[NSTATES] = { "running", "folded", "frozen / waiting", "characterizing", "stuck" };
static const char *const st_color[NSTATES] = { "#2e7d32", "#1e88e5", "#c8c8c8", "#fb8c00", "#d32f2f" };
/* job colours (cpu rows), then again: none of them near a state's colour
 * (green, blue, grey, orange, red), so the two panels cannot be confused */
static const char *const job_color[] = { "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22",
                                         "#393b79", "#637939", "#7b4173", "#5254a3", "#8ca252" };
#define NJOBCOLORS (int)(sizeof job_color / sizeof job_color[0])

struct rjob {
    int id;
    char *name;
    int threads;                 /* 0: unknown (trace version 1) */
    int maxcpus;                 /* most cpus it had in a running step */
    int instances, completed, other_ends;
    double cpu_s, sec[NSTATES];
    int steps[NSTATES];
    int characterized;
};

struct rsj { int job; int state; int ncpus; hwloc_bitmap_t cpus; int characterizing; };
struct rstep {
    unsigned long long seq, epoch;
    double start, end;
    int fallback;
    int n;
    struct rsj *jobs;
    int idle_known;              /* the step says idle_frozen */
    double idle_nobody, idle_held;
    int nidle;                   /* the step's cpu_idle: cpus that sat idle, and the share of the step */
    struct ridle { int cpu; double share; } *idle;
};

struct model {
    const char *file;
    char *policy;
    double quantum;              /* 0: unknown */
    int version;
    hwloc_bitmap_t cpus;         /* managed (header) and every cpu seen */
    struct rjob *jobs;
    int njobs;
    struct rstep *steps;
    int nsteps;
    double t0, t1;
    unsigned long long nepochs;
    int nfallback;
    int idle_steps;              /* steps that say idle_frozen; the totals are theirs */
    double idle_nobody, idle_held;
};

/* ------------------------------------------------------------ reading */

static int rerr(const struct model *m, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rerr(const struct model *m, long line, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (line > 0)
        cs_err("report: %s:%ld: %s", m->file, line, buf);
    else
        cs_err("report: %s: %s", m->file, buf);
    return -1;
}

static struct rjob *job_of(struct model *m, int id, const char *name)
{
    for (int i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id) {
            if (name && !m->jobs[i].name)
                m->jobs[i].name = strdup(name);
            return &m->jobs[i];
        }
    m->jobs = realloc(m->jobs, (size_t)(m->njobs + 1) * sizeof *m->jobs);
    struct rjob *j = &m->jobs[m->njobs++];
    memset(j, 0, sizeof *j);
    j->id = id;
    j->name = name ? strdup(name) : NULL;
    return j;
}

static int job_index(const struct model *m, int id)
{
    for (int i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id)
            return i;
    return -1;
}

/* A number field; 0 and *out set, -1 (message) when absent or not a number. */
static int num_field(const struct model *m, long line, const json_t *o, const char *what, const char *key,
                     double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return rerr(m, line, "%s: expected \"%s\" to be a number (%s)", what, key, v ? "it is not" : "it is missing");
    *out = json_number_value(v);
    return 0;
}

static int int_field(const struct model *m, long line, const json_t *o, const char *what, const char *key,
                     int *out)
{
    double d = 0;
    if (num_field(m, line, o, what, key, &d) < 0)
        return -1;
    if (d != floor(d) || d < 0 || d > 1e9)
        return rerr(m, line, "%s: expected \"%s\" to be a whole number >= 0 (it is %g)", what, key, d);
    *out = (int)d;
    return 0;
}

static const char *str_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_string_value(v);     /* NULL unless a string */
}

/* A cpu list of cpus 0..CS_REPORT_MAXCPU (one row each in the picture). */
#define CS_REPORT_MAXCPU 4095
/* Strictly N or N-M (N <= M) items separated by commas, or nothing: hwloc's
 * own list reader takes "-5" and "5-" as open ranges (infinite sets). */
static long cpu_num(const char **p)
{
    long v = 0;
    if (**p < '0' || **p > '9')
        return -1;
    while (**p >= '0' && **p <= '9') {
        v = v * 10 + (**p - '0');
        if (v > CS_REPORT_MAXCPU)
            return -1;
        (*p)++;
    }
    return v;
}

static int cpu_list(const char *s, hwloc_bitmap_t b)
{
    hwloc_bitmap_zero(b);
    while (*s) {
        long lo = cpu_num(&s), hi = lo;
        if (lo < 0)
            return -1;
        if (*s == '-') {
            s++;
            if ((hi = cpu_num(&s)) < lo)
                return -1;
        }
        hwloc_bitmap_set_range(b, (unsigned)lo, (int)hi);
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            return -1;
    }
    return 0;
}

static int read_run(struct model *m, long line, const json_t *o)
{
    const char *p = str_field(o, "policy"), *c = str_field(o, "cpus");
    const json_t *v = json_object_get(o, "version");
    free(m->policy);
    m->policy = p ? strdup(p) : NULL;
    m->version = json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 1000000 ? (int)json_integer_value(v) : 2;
    v = json_object_get(o, "quantum");
    m->quantum = json_is_number(v) ? json_number_value(v) : 0;
    if (c) {
        hwloc_bitmap_t b = hwloc_bitmap_alloc();
        if (cpu_list(c, b) < 0) {
            hwloc_bitmap_free(b);
            return rerr(m, line, "run: expected \"cpus\" to be a cpu list like \"0-3,8\" (cpus 0 to 4095; it is \"%.64s\")", c);
        }
        hwloc_bitmap_or(m->cpus, m->cpus, b);
        hwloc_bitmap_free(b);
    }
    return 0;
}

static int read_job_event(struct model *m, long line, const json_t *o)
{
    const char *ev = str_field(o, "event");
    double t = 0;
    int id;
    if (!ev || (strcmp(ev, "start") && strcmp(ev, "end")))
        return rerr(m, line, "job: expected \"event\" to be \"start\" or \"end\"");
    if (num_field(m, line, o, "job", "time", &t) < 0 || int_field(m, line, o, "job", "id", &id) < 0)
        return -1;
    if (fabs(t) > 1e9)
        return rerr(m, line, "job: expected \"time\" in seconds since the run's start (at most 1e9)");
    struct rjob *j = job_of(m, id, str_field(o, "name"));
    const json_t *th = json_object_get(o, "threads");
    if (json_is_number(th) && json_number_value(th) >= 1 && json_number_value(th) <= 1e6)
        j->threads = (int)json_number_value(th);
    if (!strcmp(ev, "start")) {
        j->instances++;
    } else {
        const json_t *x = json_object_get(o, "exit");
        if (json_is_number(x) && json_number_value(x) == 0)
            j->completed++;
        else
            j->other_ends++;
    }
    if (t > m->t1)
        m->t1 = t;
    return 0;
}

static int read_step(struct model *m, long line, const json_t *o)
{
    struct rstep s = { 0 };
    double d = 0;
    const json_t *jobs = json_object_get(o, "jobs"), *fb = json_object_get(o, "fallback");

    if (num_field(m, line, o, "step", "seq", &d) < 0)
        return -1;
    if (d < 0 || d > 9007199254740992.0 || d != floor(d))
        return rerr(m, line, "step: expected \"seq\" to be a whole number >= 0 (it is %g)", d);
    s.seq = (unsigned long long)d;
    if (num_field(m, line, o, "step", "epoch", &d) < 0)
        return -1;
    if (d < 0 || d > 9007199254740992.0 || d != floor(d))
        return rerr(m, line, "step %llu: expected \"epoch\" to be a whole number >= 0 (it is %g)", s.seq, d);
    s.epoch = (unsigned long long)d;
    if (num_field(m, line, o, "step", "start", &s.start) < 0 || num_field(m, line, o, "step", "end", &s.end) < 0)
        return -1;
    if (fabs(s.start) > 1e9 || fabs(s.end) > 1e9)
        return rerr(m, line, "step %llu: expected \"start\" and \"end\" in seconds since the run's start (at most 1e9)",
                    s.seq);
    if (s.end < s.start)
        return rerr(m, line, "step %llu: expected \"end\" (%g) not before \"start\" (%g)", s.seq, s.end, s.start);
    if (!json_is_array(jobs))
        return rerr(m, line, "step %llu: expected \"jobs\" to be a list of {\"id\", \"state\", \"cpus\", ...}", s.seq);
    s.fallback = json_is_true(fb);
    const json_t *idle = json_object_get(o, "idle_frozen");
    if (idle) {
        const json_t *nb = json_object_get(idle, "nobody"), *hd = json_object_get(idle, "held");
        if (!json_is_number(nb) || !json_is_number(hd) || !(json_number_value(nb) >= 0) ||
            !(json_number_value(hd) >= 0) || json_number_value(nb) > 1e12 || json_number_value(hd) > 1e12)
            return rerr(m, line, "step %llu: expected \"idle_frozen\" to be {\"nobody\": CPU-s, \"held\": CPU-s} "
                        "(numbers >= 0)", s.seq);
        s.idle_known = 1;
        s.idle_nobody = json_number_value(nb);
        s.idle_held = json_number_value(hd);
    }
    const json_t *ci = json_object_get(o, "cpu_idle");
    if (ci) {
        size_t n = json_array_size(ci);
        if (!json_is_array(ci) || n > 4096)
            return rerr(m, line, "step %llu: expected \"cpu_idle\" to be a list of at most 4096 [cpu, seconds] pairs",
                        s.seq);
        s.idle = calloc(n + 1, sizeof *s.idle);
        for (size_t k = 0; k < n; k++) {
            const json_t *p = json_array_get(ci, k), *c = json_array_get(p, 0), *t = json_array_get(p, 1);
            double cv = json_number_value(c), tv = json_number_value(t);
            if (json_array_size(p) != 2 || !json_is_integer(c) || !json_is_number(t) || cv < 0 || cv > 4095 ||
                !(tv >= 0) || tv > 1e9) {
                free(s.idle);
                return rerr(m, line, "step %llu: cpu_idle[%zu]: expected [cpu, seconds] (cpu 0 to 4095, seconds >= 0)",
                            s.seq, k);
            }
            s.idle[s.nidle].cpu = (int)cv;
            s.idle[s.nidle++].share = s.end > s.start ? fmin(1, tv / (s.end - s.start)) : 0;
        }
    }
    s.jobs = calloc(json_array_size(jobs) + 1, sizeof *s.jobs);
    for (int k = 0; k < (int)json_array_size(jobs); k++) {
        const json_t *x = json_array_get(jobs, (size_t)k);
        char what[64];
        int id;
        snprintf(what, sizeof what, "step %llu: jobs[%d]", s.seq, k);
        if (!json_is_object(x)) {
            rerr(m, line, "%s: expected an object {\"id\", \"state\", \"cpus\", ...}", what);
            goto bad;
        }
        if (int_field(m, line, x, what, "id", &id) < 0)
            goto bad;
        const char *state = str_field(x, "state"), *cpus = str_field(x, "cpus");
        if (!state || (strcmp(state, "run") && strcmp(state, "frozen") && strcmp(state, "stuck"))) {
            rerr(m, line, "%s: expected \"state\" to be \"run\", \"frozen\" or \"stuck\"", what);
            goto bad;
        }
        struct rsj *e = &s.jobs[s.n];
        e->cpus = hwloc_bitmap_alloc();
        s.n++;
        if (!cpus || cpu_list(cpus, e->cpus) < 0) {
            rerr(m, line, "%s: expected \"cpus\" to be a cpu list like \"0-3,8\" (cpus 0 to 4095)", what);
            goto bad;
        }
        struct rjob *j = job_of(m, id, str_field(x, "name"));
        const json_t *cpu_s = json_object_get(x, "cpu_s"), *pol = json_object_get(x, "policy");
        if (json_is_number(cpu_s) && json_number_value(cpu_s) > 0)
            j->cpu_s += json_number_value(cpu_s);
        const json_t *ch = json_object_get(pol, "characterizing");
        e->characterizing = json_is_true(ch);
        e->job = id;
        e->ncpus = hwloc_bitmap_weight(e->cpus);
        e->state = !strcmp(state, "stuck") ? ST_STUCK : !strcmp(state, "frozen") ? ST_FROZEN : ST_RUN;
        if (e->state == ST_RUN) {
            hwloc_bitmap_or(m->cpus, m->cpus, e->cpus);
            if (e->ncpus > j->maxcpus)
                j->maxcpus = e->ncpus;
        }
    }
    if (m->nsteps == 0 || s.start < m->t0)
        m->t0 = s.start;
    if (s.end > m->t1)
        m->t1 = s.end;
    m->steps = realloc(m->steps, (size_t)(m->nsteps + 1) * sizeof *m->steps);
    m->steps[m->nsteps++] = s;
    return 0;
bad:
    for (int k = 0; k < s.n; k++)
        hwloc_bitmap_free(s.jobs[k].cpus);
    free(s.jobs);
    free(s.idle);
    return -1;
}

static int read_trace(struct model *m)
{
    FILE *f = fopen(m->file, "r");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    long line = 0;
    int rc = 0;

    if (!f)
        return rerr(m, 0, "cannot read it: %s", strerror(errno));
    while (rc == 0 && (len = getline(&buf, &cap, f)) >= 0) {
        line++;
        int complete = len > 0 && buf[len - 1] == '\n';
        if ((size_t)len != strlen(buf)) {
            rc = rerr(m, line, "not a cosched trace: a NUL byte in the line (expected JSON lines from --trace)");
            break;
        }
        if (strspn(buf, " \t\r\n") == (size_t)len)
            continue;
        json_error_t jerr;
        json_t *o = cs_json_parse(buf, (size_t)len, &jerr);
        if (!o) {
            if (!complete)
                rc = rerr(m, line, "truncated line (%s at column %d; the file ends inside a record: was the run "
                                   "still writing it?)", jerr.text, jerr.column);
            else if (line == 1)
                rc = rerr(m, line, "not a cosched trace: expected a JSON object per line (%s at column %d)",
                          jerr.text, jerr.column);
            else
                rc = rerr(m, line, "expected a JSON object (a --trace record): %s at column %d", jerr.text,
                          jerr.column);
            break;
        }
        const char *type = str_field(o, "type");
        if (!json_is_object(o) || !type)
            rc = rerr(m, line, "%sexpected an object with \"type\" (run, step, job or characterized)",
                      line == 1 ? "not a cosched trace: " : "");
        else if (!strcmp(type, "run"))
            rc = read_run(m, line, o);
        else if (!strcmp(type, "step"))
            rc = read_step(m, line, o);
        else if (!strcmp(type, "job"))
            rc = read_job_event(m, line, o);
        else if (!strcmp(type, "characterized")) {
            int id;
            if ((rc = int_field(m, line, o, "characterized", "id", &id)) == 0)
                job_of(m, id, str_field(o, "name"))->characterized++;
        }
        /* another type: a newer trace's record, skipped */
        json_decref(o);
    }
    if (rc == 0 && ferror(f))
        rc = rerr(m, 0, "read error: %s", strerror(errno));
    free(buf);
    fclose(f);
    if (rc == 0 && m->nsteps == 0)
        rc = rerr(m, 0, line == 0 ? "empty: expected the JSON lines of cosched run --trace"
                                  : "no steps: expected lines {\"type\":\"step\", ...} of cosched run --trace");
    return rc;
}

/* Each step's job state as drawn, and the per-job sums. */
static void classify(struct model *m)
{
    unsigned long long last_epoch = ~0ULL;
    for (int i = 0; i < m->nsteps; i++) {
        struct rstep *s = &m->steps[i];
        double dur = s->end - s->start;
        if (s->epoch != last_epoch)
            m->nepochs++;
        last_epoch = s->epoch;
        m->nfallback += s->fallback;
        if (s->idle_known) {
            m->idle_steps++;
            m->idle_nobody += s->idle_nobody;
            m->idle_held += s->idle_held;
        }
        for (int k = 0; k < s->n; k++) {
            struct rsj *e = &s->jobs[k];
            struct rjob *j = &m->jobs[job_index(m, e->job)];
            if (e->state == ST_RUN) {
                int want = j->threads ? j->threads : j->maxcpus;
                if (e->characterizing)
                    e->state = ST_CHAR;
                else if (e->ncpus < want)
                    e->state = ST_FOLDED;
            }
            j->sec[e->state] += dur;
            j->steps[e->state]++;
        }
    }
}

static int by_id(const void *a, const void *b)
{
    const struct rjob *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* ------------------------------------------------------------ writing */

/* s for XML text and attributes: escaped, invalid UTF-8 and control characters as '?' */
static void xml(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        int ok = n > 0 && !(n == 2 && *p < 0xc2);
        for (int i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (!ok) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*p < 0x20 ? '?' : *p, f);
        }
        p++;
    }
}

static const char *jname(const struct rjob *j, char *buf, size_t len)
{
    if (j->name)
        return j->name;
    snprintf(buf, len, "job %d", j->id);
    return buf;
}

static double duration(const struct model *m)
{
    return m->t1 > m->t0 ? m->t1 - m->t0 : 0;
}

static double throughput(const struct model *m, const struct rjob *j)
{
    return duration(m) > 0 ? j->completed / duration(m) : 0;
}

/* layout */
#define LEFT 150.0
#define PLOTW 900.0
#define ROWH 20.0
#define BARH 16.0
#define SUMW 430.0

struct geom { double top_jobs, top_cpus, axis_y, height, width; int ncpus; int *cpu; };

static double xof(const struct model *m, double t)
{
    double d = duration(m);
    return LEFT + (d > 0 ? (t - m->t0) / d * PLOTW : 0);
}

static void rect(FILE *f, const struct model *m, double t0, double t1, double y, double h, const char *fill,
                 const char *cls, int job, int cpu, const char *state, int nsteps, const char *title)
{
    double x0 = xof(m, t0), x1 = xof(m, t1);
    if (x1 - x0 < 0.5)
        x1 = x0 + 0.5;   /* a step too short to see still shows */
    fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
               "data-job=\"%d\"", cls, x0, y, x1 - x0, h, fill, job);
    if (cpu >= 0)
        fprintf(f, " data-cpu=\"%d\"", cpu);
    fprintf(f, " data-state=\"%s\" data-t0=\"%.6f\" data-t1=\"%.6f\" data-steps=\"%d\"><title>", state, t0, t1,
            nsteps);
    xml(f, title);
    fprintf(f, "</title></rect>\n");
}

/* Job rows: consecutive steps with the job in one state, one rectangle. */
static void job_rows(FILE *f, const struct model *m, const struct geom *g)
{
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        char nb[32];
        double y = g->top_jobs + r * ROWH;
        int open = -1, n = 0, last = -2;
        double t0 = 0, t1 = 0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">", LEFT - 8, y + 13);
        xml(f, jname(j, nb, sizeof nb));
        fprintf(f, "</text>\n");
        for (int i = 0; i <= m->nsteps; i++) {
            int st = -1;
            if (i < m->nsteps)
                for (int k = 0; k < m->steps[i].n; k++)
                    if (m->steps[i].jobs[k].job == j->id)
                        st = m->steps[i].jobs[k].state;
            if (open >= 0 && (st != open || last != i - 1)) {
                char title[512];
                snprintf(title, sizeof title, "%s (job %d): %s, %.3f-%.3f s, %d step%s", jname(j, nb, sizeof nb),
                         j->id, st_label[open], t0, t1, n, n == 1 ? "" : "s");
                rect(f, m, t0, t1, y + (ROWH - BARH) / 2, BARH, st_color[open], "js", j->id, -1, st_name[open], n,
                     title);
                open = -1;
            }
            if (st < 0)
                continue;
            if (open < 0) {
                open = st;
                t0 = m->steps[i].start;
                n = 0;
            }
            t1 = m->steps[i].end;
            n++;
            last = i;
        }
    }
}

static double luminance(const char *hex);

/* What ran on cpu c in step i: the running jobs on it, as "id:state,..." */
static void cell(const struct model *m, int i, int c, char *sig, size_t len, int *ids, int *states, int *n)
{
    size_t k = 0;
    *n = 0;
    sig[0] = 0;
    if (i >= m->nsteps)
        return;
    const struct rstep *s = &m->steps[i];
    for (int x = 0; x < s->n; x++) {
        const struct rsj *e = &s->jobs[x];
        if (e->state == ST_FROZEN || e->state == ST_STUCK || !hwloc_bitmap_isset(e->cpus, (unsigned)c))
            continue;
        if (*n < 64) {
            ids[*n] = e->job;
            states[*n] = e->state;
            (*n)++;
        }
        if (k < len)
            k += (size_t)snprintf(sig + k, len - k, "%d:%d,", e->job, e->state);
    }
}

/* Cpu rows: per cpu, the jobs running there (job colour); a cpu several
 * jobs share in a step (the linux policy) is split between them. */
/* Over cpu c's row (top y): per step, the share of the step the cpu sat idle
 * (cpu_idle), hatched from the bottom up over the bar but its top 4 px, which
 * keep the colour of the job whose cpu it was; shares under 5 % are not drawn. */
static void idle_marks(FILE *f, const struct model *m, int c, double y)
{
    for (int i = 0; i < m->nsteps; i++) {
        const struct rstep *s = &m->steps[i];
        for (int k = 0; k < s->nidle; k++) {
            if (s->idle[k].cpu != c || s->idle[k].share < 0.05)
                continue;
            double h = (BARH - 4) * s->idle[k].share, x0 = xof(m, s->start), x1 = fmax(xof(m, s->end), x0 + 0.5);
            fprintf(f, "<rect class=\"ci\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                       "fill=\"url(#idle)\" data-cpu=\"%d\" data-step=\"%llu\" data-idle=\"%.3f\"><title>cpu %d: "
                       "idle %.0f %% of step %llu (%.3f-%.3f s)</title></rect>\n",
                    x0, y + (ROWH - BARH) / 2 + BARH - h, x1 - x0, h, c, s->seq, s->idle[k].share, c,
                    100 * s->idle[k].share, s->seq, s->start, s->end);
        }
    }
}

static void cpu_rows(FILE *f, const struct model *m, const struct geom *g)
{
    for (int r = 0; r < g->ncpus; r++) {
        int c = g->cpu[r];
        double y = g->top_cpus + r * ROWH;
        char open[512] = "", sig[512];
        int ids[64], states[64], n = 0, oids[64], ostates[64], on = 0, nsteps = 0;
        double t0 = 0, t1 = 0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">cpu %d</text>\n", LEFT - 8, y + 13,
                c);
        for (int i = 0; i <= m->nsteps; i++) {
            cell(m, i, c, sig, sizeof sig, ids, states, &n);
            if (on > 0 && strcmp(sig, open) != 0) {
                for (int k = 0; k < on; k++) {
                    int ji = job_index(m, oids[k]);
                    char nb[32], title[512];
                    snprintf(title, sizeof title, "cpu %d: %s (job %d), %s, %.3f-%.3f s, %d step%s", c,
                             jname(&m->jobs[ji], nb, sizeof nb), oids[k], st_label[ostates[k]], t0, t1, nsteps,
                             nsteps == 1 ? "" : "s");
                    const char *col = job_color[ji % NJOBCOLORS];
                    double ry = y + (ROWH - BARH) / 2 + k * BARH / on;
                    rect(f, m, t0, t1, ry, BARH / on, col, "cs", oids[k], c, st_name[ostates[k]], nsteps, title);
                    /* the job's name inside, where it fits (below the rectangle's top 4 px,
                     * which stay the plain colour) */
                    const char *name = jname(&m->jobs[ji], nb, sizeof nb);
                    if (on == 1 && xof(m, t1) - xof(m, t0) >= 6.5 * strlen(name) + 8) {
                        fprintf(f, "<text class=\"in\" x=\"%.2f\" y=\"%.1f\" fill=\"%s\">", xof(m, t0) + 4,
                                ry + 13, luminance(col) > 0.5 ? "#111111" : "#ffffff");
                        xml(f, name);
                        fprintf(f, "</text>\n");
                    }
                }
                on = 0;
            }
            if (n == 0) {
                open[0] = 0;
                continue;
            }
            if (on == 0) {
                memcpy(oids, ids, sizeof ids);
                memcpy(ostates, states, sizeof states);
                on = n;
                snprintf(open, sizeof open, "%s", sig);
                t0 = m->steps[i].start;
                nsteps = 0;
            }
            t1 = m->steps[i].end;
            nsteps++;
        }
        idle_marks(f, m, c, y);
    }
}

/* relative luminance of #rrggbb, 0..1 (for the label colour) */
static double luminance(const char *hex)
{
    unsigned r = 0, g = 0, b = 0;
    sscanf(hex, "#%2x%2x%2x", &r, &g, &b);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

static double nice_step(double range, int want)
{
    double raw = range / want, p = pow(10, floor(log10(raw)));
    double r = raw / p;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * p;
}

static void geom_make(const struct model *m, struct geom *g)
{
    g->ncpus = hwloc_bitmap_weight(m->cpus);
    g->cpu = calloc((size_t)g->ncpus + 1, sizeof *g->cpu);
    int c, k = 0;
    hwloc_bitmap_foreach_begin(c, m->cpus) g->cpu[k++] = c;
    hwloc_bitmap_foreach_end();
    g->top_jobs = 96;
    g->top_cpus = g->top_jobs + m->njobs * ROWH + 30;
    g->axis_y = g->top_cpus + g->ncpus * ROWH + 6;
    g->height = g->axis_y + 46;
    g->width = LEFT + PLOTW + 36 + SUMW;
}

static void svg(FILE *f, const struct model *m, int standalone)
{
    struct geom g;
    geom_make(m, &g);

    if (standalone)
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", g.width, g.height, g.width, g.height);
    fprintf(f, "<style>.lbl{fill:#222}.hd{font-weight:bold;fill:#222}.ax{stroke:#444}.ep{stroke:#888;"
               "stroke-dasharray:3,3}.sm{fill:#222;font-family:monospace;white-space:pre}.in{font-size:10px}</style>\n");
    fprintf(f, "<defs><pattern id=\"idle\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"5\" height=\"5\" fill=\"#ffffff\"/><line x1=\"0\" "
               "y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"#666666\" stroke-width=\"2\"/></pattern></defs>\n");
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", g.width, g.height);
    /* title and legend */
    fprintf(f, "<text x=\"10\" y=\"20\" class=\"hd\" font-size=\"14\">cosched report: ");
    xml(f, m->file);
    fprintf(f, "</text>\n<text x=\"10\" y=\"38\" class=\"lbl\">policy ");
    xml(f, m->policy ? m->policy : "(not in the trace)");
    if (m->quantum > 0)
        fprintf(f, ", quantum %g s", m->quantum);
    fprintf(f, ", %d cpu%s, %d job%s, %.2f s, %llu epoch%s, %d step%s", g.ncpus, g.ncpus == 1 ? "" : "s", m->njobs,
            m->njobs == 1 ? "" : "s", duration(m), m->nepochs, m->nepochs == 1 ? "" : "s", m->nsteps,
            m->nsteps == 1 ? "" : "s");
    if (m->nfallback)
        fprintf(f, ", %d fallback step%s (red marks)", m->nfallback, m->nfallback == 1 ? "" : "s");
    if (m->idle_steps)
        fprintf(f, ", idle while a job was frozen %.2f CPU-s (%.2f given to nobody, %.2f of running jobs)",
                m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held);
    fprintf(f, "</text>\n");
    double lx = 10;
    for (int s = 0; s < NSTATES; s++) {
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"48\" width=\"14\" height=\"14\" fill=\"%s\" "
                   "data-state=\"%s\"/><text x=\"%.1f\" y=\"59\" class=\"lbl\">%s</text>\n",
                lx, st_color[s], st_name[s], lx + 18, st_label[s]);
        lx += 18 + 7.5 * strlen(st_label[s]) + 16;
    }
    fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"48\" width=\"14\" height=\"14\" fill=\"url(#idle)\" "
               "stroke=\"#999999\" data-state=\"idle\"/><text x=\"%.1f\" y=\"59\" class=\"lbl\">idle cpu</text>\n",
            lx, lx + 18);
    lx += 18 + 7.5 * strlen("idle cpu") + 16;
    fprintf(f, "<text x=\"%.1f\" y=\"59\" class=\"lbl\">cpu rows: the colour of the job running there, hatched "
               "by the share of the step the cpu sat idle</text>\n", lx);
    /* epochs: a dashed line where one starts, its number where there is room */
    double lastlabel = -1e9;
    unsigned long long ep = ~0ULL;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">epoch</text>\n", LEFT - 8,
            g.top_jobs - 10);
    for (int i = 0; i < m->nsteps; i++) {
        const struct rstep *s = &m->steps[i];
        double x = xof(m, s->start);
        if (s->fallback)
            fprintf(f, "<rect class=\"fallback\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"4\" fill=\"#d32f2f\">"
                       "<title>step %llu: the policy failed, every job ran everywhere</title></rect>\n",
                    x, g.top_jobs - 6, fmax(xof(m, s->end) - x, 1), s->seq);
        if (s->epoch == ep)
            continue;
        ep = s->epoch;
        fprintf(f, "<line class=\"ep\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" data-epoch=\"%llu\"/>\n", x,
                g.top_jobs - 8, x, g.axis_y, ep);
        if (x - lastlabel >= 28) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" class=\"lbl\" font-size=\"10\">%llu</text>\n", x + 2,
                    g.top_jobs - 10, ep);
            lastlabel = x;
        }
    }
    fprintf(f, "<g class=\"jobs\">\n");
    job_rows(f, m, &g);
    fprintf(f, "</g>\n<text x=\"%.1f\" y=\"%.1f\" class=\"hd\">cpus</text>\n<g class=\"cpus\">\n", 10.0,
            g.top_cpus - 8);
    cpu_rows(f, m, &g);
    fprintf(f, "</g>\n");
    /* time axis */
    fprintf(f, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, g.axis_y,
            LEFT + PLOTW, g.axis_y);
    double d = duration(m);
    if (d > 0) {
        double st = nice_step(d, 10);
        for (long k = (long)ceil(m->t0 / st - 1e-9); k * st <= m->t1 + st * 1e-9; k++) {
            double x = xof(m, k * st);
            fprintf(f, "<line class=\"ax\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/><text x=\"%.2f\" "
                       "y=\"%.1f\" text-anchor=\"middle\" class=\"lbl\">%g</text>\n",
                    x, g.axis_y, x, g.axis_y + 5, x, g.axis_y + 18, k * st);
        }
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"lbl\">time since the start of the run "
               "(s)</text>\n", LEFT + PLOTW / 2, g.axis_y + 36);
    /* per-job summary beside the job rows */
    double sx = LEFT + PLOTW + 36;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"sm\" xml:space=\"preserve\" font-weight=\"bold\">%4s %8s %7s  "
               "%s</text>\n", sx, g.top_jobs - 10, "done", "runs/s", "CPU s", "run/fold/froz/char %");
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        double live = 0;
        for (int s = 0; s < NSTATES; s++)
            live += j->sec[s];
        fprintf(f, "<text class=\"sm\" xml:space=\"preserve\" x=\"%.1f\" y=\"%.1f\" data-job=\"%d\">%4d %8.3f %7.1f  "
                   "%3.0f/%3.0f/%3.0f/%3.0f</text>\n",
                sx, g.top_jobs + r * ROWH + 13, j->id, j->completed, throughput(m, j), j->cpu_s,
                live > 0 ? 100 * j->sec[ST_RUN] / live : 0, live > 0 ? 100 * j->sec[ST_FOLDED] / live : 0,
                live > 0 ? 100 * j->sec[ST_FROZEN] / live : 0, live > 0 ? 100 * j->sec[ST_CHAR] / live : 0);
    }
    fprintf(f, "</svg>\n");
    free(g.cpu);
}

static void html(FILE *f, const struct model *m)
{
    char nb[32];
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>cosched report: ");
    xml(f, m->file);
    /* the picture fits the window (scaled down, never up): a page wider
     * than the window would hide the per-job columns at its right; the
     * table scrolls on its own */
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:16px;color:#222}"
               "svg{display:block;max-width:100%%;height:auto}div.t{overflow-x:auto}"
               "table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ccc;padding:3px 8px;"
               "text-align:right}td.n,th.n{text-align:left}</style>\n</head>\n<body>\n");
    svg(f, m, 0);
    fprintf(f, "<div class=\"t\"><table>\n<tr><th>id</th><th class=\"n\">job</th><th>threads</th><th>instances</th>"
               "<th>completed</th><th>runs/s</th><th>CPU s</th>");
    for (int s = 0; s < NSTATES; s++)
        fprintf(f, "<th>%s s</th>", st_name[s]);
    fprintf(f, "<th>characterized</th></tr>\n");
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        fprintf(f, "<tr><td>%d</td><td class=\"n\">", j->id);
        xml(f, jname(j, nb, sizeof nb));
        fprintf(f, "</td><td>%s%d</td><td>%d</td><td>%d</td><td>%.4f</td><td>%.2f</td>", j->threads ? "" : "&#8805;",
                j->threads ? j->threads : j->maxcpus, j->instances, j->completed, throughput(m, j), j->cpu_s);
        for (int s = 0; s < NSTATES; s++)
            fprintf(f, "<td>%.2f</td>", j->sec[s]);
        fprintf(f, "<td>%d</td></tr>\n", j->characterized);
    }
    fprintf(f, "</table></div>\n<p>Throughput: completed instances per second of the traced run (%.2f s). ",
            duration(m));
    if (m->idle_steps)
        fprintf(f, "Idle while a job was frozen: <span class=\"idle\">%.2f</span> CPU-s, %.2f on cpus given to "
                   "nobody, %.2f on cpus of running jobs that left them idle. ",
                m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held);
    fprintf(f, "Made by cosched %s.</p>\n</body>\n</html>\n", PACKAGE_VERSION);
}

static void json_summary(FILE *f, const struct model *m)
{
    char nb[32];
    char *c = cs_bitmap_list(m->cpus);
    json_t *jobs = json_array();
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        json_t *sec = json_object(), *steps = json_object();
        for (int s = 0; s < NSTATES; s++) {
            json_object_set_new(sec, st_name[s], cs_json_fixed(j->sec[s], 6));
            json_object_set_new(steps, st_name[s], json_integer(j->steps[s]));
        }
        json_array_append_new(jobs, json_pack("{s:i, s:o, s:o, s:i, s:i, s:i, s:o, s:o, s:i, s:o, s:o}", "id",
                                              j->id, "name", cs_json_text(jname(j, nb, sizeof nb)), "threads",
                                              j->threads ? json_integer(j->threads) : json_null(), "instances",
                                              j->instances, "completed", j->completed, "not_completed",
                                              j->other_ends, "throughput", cs_json_sig(throughput(m, j), 6), "cpu_s",
                                              cs_json_fixed(j->cpu_s, 6), "characterized", j->characterized,
                                              "seconds", sec, "steps", steps));
    }
    json_t *idle = m->idle_steps ? json_pack("{s:o, s:o, s:i}", "nobody", cs_json_fixed(m->idle_nobody, 6), "held",
                                             cs_json_fixed(m->idle_held, 6), "steps", m->idle_steps)
                                 : json_null();
    cs_json_put(f,
                json_pack("{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:i, s:I, s:i, s:o, s:o}", "trace",
                          cs_json_text(m->file), "policy", cs_json_text(m->policy), "quantum",
                          m->quantum > 0 ? cs_json_sig(m->quantum, 6) : json_null(), "cpus", c, "start",
                          cs_json_fixed(m->t0, 6), "end", cs_json_fixed(m->t1, 6), "duration",
                          cs_json_fixed(duration(m), 6), "steps", m->nsteps, "epochs", (json_int_t)m->nepochs,
                          "fallback_steps", m->nfallback, "idle_frozen", idle, "jobs", jobs),
                0);
    free(c);
}

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_summary(FILE *f, const struct model *m)
{
    char nb[32];
    fprintf(f, "id,name,threads,instances,completed,not_completed,throughput_per_s,cpu_s,characterized");
    for (int s = 0; s < NSTATES; s++)
        fprintf(f, ",%s_s", st_name[s]);
    for (int s = 0; s < NSTATES; s++)
        fprintf(f, ",%s_steps", st_name[s]);
    /* the run's idle-while-frozen totals, the same on every row (empty: not in the trace) */
    fprintf(f, ",run_idle_frozen_nobody_s,run_idle_frozen_held_s\n");
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        fprintf(f, "%d,", j->id);
        csv_str(f, jname(j, nb, sizeof nb));
        j->threads ? fprintf(f, ",%d", j->threads) : fprintf(f, ",");
        fprintf(f, ",%d,%d,%d,%.6g,%.6f,%d", j->instances, j->completed, j->other_ends, throughput(m, j), j->cpu_s,
                j->characterized);
        for (int s = 0; s < NSTATES; s++)
            fprintf(f, ",%.6f", j->sec[s]);
        for (int s = 0; s < NSTATES; s++)
            fprintf(f, ",%d", j->steps[s]);
        if (m->idle_steps)
            fprintf(f, ",%.6f,%.6f\n", m->idle_nobody, m->idle_held);
        else
            fprintf(f, ",,\n");
    }
}

static void text_summary(FILE *f, const struct model *m)
{
    char nb[32];
    fprintf(f, "%s: policy %s, %.2f s, %llu epochs, %d steps%s\n", m->file, m->policy ? m->policy : "?",
            duration(m), m->nepochs, m->nsteps, m->nfallback ? " (some fallback)" : "");
    if (m->idle_steps)
        fprintf(f, "idle while a job was frozen: %.2f CPU-s (%.2f on cpus given to nobody, %.2f on cpus of a "
                   "running job)%s\n", m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held,
                m->idle_steps < m->nsteps ? ", in the steps that say it" : "");
    else
        fprintf(f, "idle while a job was frozen: not in the trace\n");
    fprintf(f, "%4s %-16s %7s %9s %8s %8s %8s %8s %8s %8s\n", "id", "job", "done", "runs/s", "CPU s", "running",
            "folded", "frozen", "charact.", "stuck");
    for (int r = 0; r < m->njobs; r++) {
        const struct rjob *j = &m->jobs[r];
        fprintf(f, "%4d %-16.16s %7d %9.4f %8.2f", j->id, jname(j, nb, sizeof nb), j->completed, throughput(m, j),
                j->cpu_s);
        for (int s = 0; s < NSTATES; s++)
            fprintf(f, " %7.2fs", j->sec[s]);
        fprintf(f, "\n");
    }
}

/* ------------------------------------------------------------ command */

static const char *suffix(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

static int write_out(const char *path, const struct model *m, void (*fn)(FILE *, const struct model *))
{
    FILE *f = cs_fopen_write(path);
    if (!f) {
        cs_err("report: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    fn(f, m);
    if (ferror(f) | (fclose(f) != 0)) {
        cs_err("report: writing %s failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void svg_file(FILE *f, const struct model *m)
{
    svg(f, m, 1);
}

enum { R_OUT = 256, R_SUMMARY, R_HELP };
static const struct cs_opt report_opts[] = {
    { 'o', "output", 1, R_OUT, "FILE", "the picture: FILE.svg (SVG) or FILE.html (a page with the SVG inline)" },
    { 0, "summary", 1, R_SUMMARY, "FILE", "the per-job summary: FILE.json or FILE.csv" },
    { 'h', "help", 0, R_HELP, NULL, "this text" },
    { 0 },
};

static void report_help(void)
{
    printf("usage: cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]\n\n"
           "A timeline of a run from its trace (cosched run --trace): jobs and cpus by time, coloured by state\n"
           "(running, folded, frozen/waiting, characterizing, stuck), epochs marked, per-job throughput beside it.\n"
           "Without -o or --summary the per-job summary is printed as text.\n\noptions:\n");
    cs_opt_help(stdout, report_opts, NULL);
    printf("\nSee cosched(1) REPORT.\n");
}

int cs_cmd_report(int argc, char **argv)
{
    const char *out = NULL, *sum = NULL;
    int c;
    struct cs_getopt g;

    cs_opt_start(&g, report_opts, 0);       /* options may follow TRACE */
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case R_OUT: out = optarg; break;
        case R_SUMMARY: sum = optarg; break;
        case R_HELP: report_help(); cs_opt_end(&g); return 0;
        case ':':
        default:
            cs_opt_refuse(&g, c, "report", "report");
            cs_opt_end(&g);
            return 2;
        }
    }
    cs_opt_end(&g);
    if (optind >= argc) {
        cs_err("report: which trace? usage: cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]");
        return 2;
    }
    if (argc - optind > 1) {
        cs_err("report: one trace at a time (got '%s' and '%s')", argv[optind], argv[optind + 1]);
        return 2;
    }
    if (out && strcmp(suffix(out), "svg") && strcmp(suffix(out), "html")) {
        cs_err("report: -o %s: unknown format '%s' (expected FILE.svg or FILE.html)", out, suffix(out));
        return 2;
    }
    if (sum && strcmp(suffix(sum), "json") && strcmp(suffix(sum), "csv")) {
        cs_err("report: --summary %s: unknown format '%s' (expected FILE.json or FILE.csv)", sum, suffix(sum));
        return 2;
    }
    struct model m = { .file = argv[optind], .cpus = hwloc_bitmap_alloc() };
    int status = 2;
    if (read_trace(&m) < 0)
        goto done;
    if (m.njobs > 1)
        qsort(m.jobs, (size_t)m.njobs, sizeof *m.jobs, by_id);
    classify(&m);
    status = 0;
    if (out && write_out(out, &m, !strcmp(suffix(out), "svg") ? svg_file : html) < 0)
        status = 1;
    if (sum && write_out(sum, &m, !strcmp(suffix(sum), "json") ? json_summary : csv_summary) < 0)
        status = 1;
    if (!out && !sum)
        text_summary(stdout, &m);
done:
    for (int i = 0; i < m.nsteps; i++) {
        for (int k = 0; k < m.steps[i].n; k++)
            hwloc_bitmap_free(m.steps[i].jobs[k].cpus);
        free(m.steps[i].jobs);
        free(m.steps[i].idle);
    }
    for (int i = 0; i < m.njobs; i++)
        free(m.jobs[i].name);
    free(m.steps);
    free(m.jobs);
    free(m.policy);
    hwloc_bitmap_free(m.cpus);
    return status;
}
