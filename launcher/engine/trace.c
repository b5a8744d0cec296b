/*
 * trace.c - the trace format (trace.h): the engine's record writers and the
 * reader of `cosched report`, so that what is written and what is read back
 * are one file apart from nothing.
 *
 * Writing: one JSON object per line through cs_json_put() (core/json.c),
 * numbers fixed to the digits that matter (times to the microsecond, CPU
 * time to 6 places, metrics to 6 significant digits), names as text that
 * cannot break a line; keys in the order written below (jansson keeps
 * insertion order), which share/trace-schema.json and cosched(1) TRACE
 * name (tests/24-trace-schema.bats holds every trace to the schema).
 *
 * Reading: bad input is reported as FILE:LINE: what was expected: not JSON,
 * a truncated line, a record without its fields, no step at all.  Records of
 * an unknown type are skipped (a newer trace).  Cpu lists are strict (N or
 * N-M, cpus 0 to CS_TRACE_MAXCPU), unlike hwloc's reader.
 *
 * May use: core/ (util, json, job, engine_state) and counters/profile.h (a
 * header only: the metric names); nothing that `cosched report` or its fuzz
 * target would have to link beyond core/util.c and core/json.c.
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "engine/trace.h"
#include "core/log.h"
#include "core/util.h"
#include "counters/profile.h"

/* ------------------------------------------------------------ writing */

void cs_trace_job(struct cs_engine *e, const struct cs_job *j, const char *ev, int status)
{
    json_t *o;

    if (e->trace == NULL)
        return;
    o = json_pack("{s:s, s:s, s:o, s:i, s:o, s:i, s:i}", "type", "job", "event", ev, "time",
                  cs_json_fixed(cs_now() - e->t0, 6), "id", j->id, "name", cs_json_text(j->name), "instance",
                  j->runs_started, "threads", j->threads);
    if (o && j->pid > 0)
        json_object_set_new(o, "pid", json_integer(j->pid));
    if (o && strcmp(ev, "end") == 0) {
        if (WIFEXITED(status))
            json_object_set_new(o, "exit", json_integer(WEXITSTATUS(status)));
        else if (WIFSIGNALED(status))
            json_object_set_new(o, "signal", json_integer(WTERMSIG(status)));
    }
    cs_json_put(e->trace, o, 0);
}

/* The trace's first line (trace version 2): what ran, so that a reader
 * (`cosched report`) can draw every managed cpu and tell folded from running. */
void cs_trace_run(struct cs_engine *e, const char *command, const char *policy, const char *control)
{
    if (e->trace == NULL)
        return;
    char *c = cs_bitmap_list(e->managed);
    cs_json_put(e->trace,
                json_pack("{s:s, s:i, s:s, s:o, s:o, s:o, s:s, s:o}", "type", "run", "version", 2, "command",
                          command, "policy", cs_json_text(policy), "quantum", cs_json_fixed(e->quantum, 6), "window",
                          cs_json_fixed(e->window, 6), "cpus", c, "control", cs_json_text(control)),
                0);
    free(c);
}

void cs_trace_characterized(struct cs_engine *e, const struct cs_job *j, const struct cs_stored *r)
{
    if (e->trace == NULL)
        return;
    char cls[2] = { r->cls ? r->cls : '?', 0 };
    cs_json_put(e->trace,
                json_pack("{s:s, s:o, s:i, s:o, s:s, s:b, s:i}", "type", "characterized", "time",
                          cs_json_fixed(cs_now() - e->t0, 6), "id", j->id, "name", cs_json_text(j->name), "class",
                          cls, "degraded", r->degraded, "count", j->characterized),
                0);
}

json_t *cs_trace_step(const struct cs_engine *e, double start, double end, double plan_end, double switch_us,
                      int fallback)
{
    if (e->trace == NULL)
        return NULL;
    return json_pack("{s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:b, s:o}", "type", "step", "seq",
                     (json_int_t)e->step_seq, "epoch", (json_int_t)e->epoch, "start",
                     cs_json_fixed(start - e->t0, 6), "end", cs_json_fixed(end - e->t0, 6), "planned",
                     cs_json_fixed(plan_end - start, 6), "switch_us", cs_json_fixed(switch_us, 1),
                     "fallback", fallback, "jobs", json_array());
}

/* The job's metrics of the step (none without a profile). */
static void step_metrics(const struct cs_engine *e, const struct cs_job *j, json_t *o)
{
    json_t *m;

    if (e->profile == NULL || j->metric == NULL)
        return;
    json_object_set_new(o, "counts_flags", json_integer(j->metric_flags));
    json_object_set_new(o, "metrics", m = json_object());
    for (int k = 0; k < e->profile->nmetrics && j->metric_flags; k++)
        if (e->profile->metrics[k].available)
            json_object_set_new(m, e->profile->metrics[k].name, cs_json_sig(j->metric[k], 6));
}

void cs_trace_step_job(json_t *line, const struct cs_engine *e, const struct cs_job *j, const char *state,
                       const char *cpus, double cpu_s)
{
    json_t *jobs = json_object_get(line, "jobs");
    if (line == NULL || jobs == NULL)
        return;
    json_t *o = json_pack("{s:i, s:o, s:s, s:s, s:o}", "id", j->id, "name", cs_json_text(j->name), "state", state,
                          "cpus", cpus, "cpu_s", cs_json_fixed(cpu_s, 6));
    if (o == NULL)
        return;
    step_metrics(e, j, o);
    if (j->omp) {   /* the step's reverse channel from its OpenMP page (engine/omppage.c) */
        json_object_set_new(o, "omp_team", json_integer(j->omp_team));
        json_object_set_new(o, "omp_regions", json_integer(j->omp_regions));
    }
    if (j->policy_info)   /* plan()'s third value for this epoch (an object) */
        json_object_set(o, "policy", j->policy_info);
    json_array_append_new(jobs, o);
}

/* The step's idle time per managed cpu: [[cpu, seconds], ...], the cpus that
 * sat idle at least 1 ms (what `cosched report` draws). */
void cs_trace_step_cpu_idle(json_t *line, hwloc_const_bitmap_t cpus, const double *idle)
{
    if (line == NULL)
        return;
    json_t *a = json_array();
    int k = 0;

    for (int c = hwloc_bitmap_first(cpus); a && c >= 0; c = hwloc_bitmap_next(cpus, c), k++) {
        double d = idle[k];
        if (d >= 0.001)
            json_array_append_new(a, json_pack("[i, o]", c, cs_json_fixed(d, 3)));
    }
    json_object_set_new(line, "cpu_idle", a);
}

void cs_trace_step_idle_frozen(json_t *line, double nobody, double held)
{
    if (line)
        json_object_set_new(line, "idle_frozen", json_pack("{s:o, s:o}", "nobody", cs_json_fixed(nobody, 6),
                                                            "held", cs_json_fixed(held, 6)));
}

void cs_trace_step_put(struct cs_engine *e, json_t *line)
{
    if (e->trace)
        cs_json_put(e->trace, line, 0);
}

/* ------------------------------------------------------------ reading */

static int rerr(const struct cs_trace *m, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rerr(const struct cs_trace *m, long line, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (line > 0)
        cs_err("%s: %s:%ld: %s", m->who, m->file, line, buf);
    else
        cs_err("%s: %s: %s", m->who, m->file, buf);
    return -1;
}

static struct cs_trace_job *job_of(struct cs_trace *m, int id, const char *name)
{
    for (int i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id) {
            if (name && !m->jobs[i].name)
                m->jobs[i].name = strdup(name);
            return &m->jobs[i];
        }
    m->jobs = realloc(m->jobs, (size_t)(m->njobs + 1) * sizeof *m->jobs);
    struct cs_trace_job *j = &m->jobs[m->njobs++];
    memset(j, 0, sizeof *j);
    j->id = id;
    j->name = name ? strdup(name) : NULL;
    return j;
}

int cs_trace_job_index(const struct cs_trace *m, int id)
{
    for (int i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id)
            return i;
    return -1;
}

/* A number field; 0 and *out set, -1 (message) when absent or not a number. */
static int num_field(const struct cs_trace *m, long line, const json_t *o, const char *what, const char *key,
                     double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return rerr(m, line, "%s: expected \"%s\" to be a number (%s)", what, key, v ? "it is not" : "it is missing");
    *out = json_number_value(v);
    return 0;
}

static int int_field(const struct cs_trace *m, long line, const json_t *o, const char *what, const char *key,
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

/* A cpu list of cpus 0..CS_TRACE_MAXCPU (one row each in the picture). */
#define CS_TRACE_MAXCPU 4095
/* Strictly N or N-M (N <= M) items separated by commas, or nothing: hwloc's
 * own list reader takes "-5" and "5-" as open ranges (infinite sets). */
static long cpu_num(const char **p)
{
    long v = 0;
    if (**p < '0' || **p > '9')
        return -1;
    while (**p >= '0' && **p <= '9') {
        v = v * 10 + (**p - '0');
        if (v > CS_TRACE_MAXCPU)
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

static int read_run(struct cs_trace *m, long line, const json_t *o)
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

static int read_job_event(struct cs_trace *m, long line, const json_t *o)
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
    struct cs_trace_job *j = job_of(m, id, str_field(o, "name"));
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

static int read_step(struct cs_trace *m, long line, const json_t *o)
{
    struct cs_trace_step s = { 0 };
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
        struct cs_trace_sj *e = &s.jobs[s.n];
        e->cpus = hwloc_bitmap_alloc();
        s.n++;
        if (!cpus || cpu_list(cpus, e->cpus) < 0) {
            rerr(m, line, "%s: expected \"cpus\" to be a cpu list like \"0-3,8\" (cpus 0 to 4095)", what);
            goto bad;
        }
        struct cs_trace_job *j = job_of(m, id, str_field(x, "name"));
        const json_t *cpu_s = json_object_get(x, "cpu_s"), *pol = json_object_get(x, "policy");
        if (json_is_number(cpu_s) && json_number_value(cpu_s) > 0)
            j->cpu_s += json_number_value(cpu_s);
        const json_t *ch = json_object_get(pol, "characterizing");
        e->characterizing = json_is_true(ch);
        e->job = id;
        e->ncpus = hwloc_bitmap_weight(e->cpus);
        e->state = !strcmp(state, "stuck") ? CS_TRACE_STUCK : !strcmp(state, "frozen") ? CS_TRACE_FROZEN : CS_TRACE_RUN;
        if (e->state == CS_TRACE_RUN) {
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

static int read_trace(struct cs_trace *m)
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
static void classify(struct cs_trace *m)
{
    unsigned long long last_epoch = ~0ULL;
    for (int i = 0; i < m->nsteps; i++) {
        struct cs_trace_step *s = &m->steps[i];
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
            struct cs_trace_sj *e = &s->jobs[k];
            struct cs_trace_job *j = &m->jobs[cs_trace_job_index(m, e->job)];
            if (e->state == CS_TRACE_RUN) {
                int want = j->threads ? j->threads : j->maxcpus;
                if (e->characterizing)
                    e->state = CS_TRACE_CHAR;
                else if (e->ncpus < want)
                    e->state = CS_TRACE_FOLDED;
            }
            j->sec[e->state] += dur;
            j->steps[e->state]++;
        }
    }
}

static int by_id(const void *a, const void *b)
{
    const struct cs_trace_job *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

int cs_trace_read(struct cs_trace *t, const char *file, const char *who)
{
    memset(t, 0, sizeof *t);
    t->file = file;
    t->who = who;
    t->cpus = hwloc_bitmap_alloc();
    if (read_trace(t) < 0)
        return -1;
    if (t->njobs > 1)
        qsort(t->jobs, (size_t)t->njobs, sizeof *t->jobs, by_id);
    classify(t);
    return 0;
}

void cs_trace_free(struct cs_trace *t)
{
    for (int i = 0; i < t->nsteps; i++) {
        for (int k = 0; k < t->steps[i].n; k++)
            hwloc_bitmap_free(t->steps[i].jobs[k].cpus);
        free(t->steps[i].jobs);
        free(t->steps[i].idle);
    }
    for (int i = 0; i < t->njobs; i++)
        free(t->jobs[i].name);
    free(t->steps);
    free(t->jobs);
    free(t->policy);
    hwloc_bitmap_free(t->cpus);
    memset(t, 0, sizeof *t);
}
