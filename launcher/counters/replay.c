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
 * Each line is parsed by jansson (core/json.h); a syntax error stops the run
 * as "FILE:LINE:COL: not valid JSON: what".  Integers (step, seq, flags,
 * version) must be written without fraction or exponent; counts and seconds
 * may be either.
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
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "core/json.h"

#define RP_VERSION 1

struct rrec {
    int flags;
    double seconds;
    double v[CS_COUNTS_MAX];
};

struct rjob {
    struct cs_job *job;
    char *name;                    /* the job's name as a recording writes it (U+FFFD for non-UTF-8 bytes) */
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

struct cur {
    const char *file;
    int line;
    const char *start, *end;       /* the line, without its "\n" */
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

/* The line as one JSON object; NULL after the message. */
static json_t *parse_line(struct cur *c)
{
    json_error_t err;
    json_t *o = cs_json_parse(c->start, (size_t)(c->end - c->start), &err);

    if (o == NULL) {
        c->failed++;
        cs_err("%s:%d:%d: not valid JSON: %s", c->file, c->line, err.column, err.text);
        return NULL;
    }
    if (!json_is_object(o)) {
        perr(c, "expected a JSON object (each line is one), got %s", cs_json_type(o));
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The members named in keys[] (each exactly once: jansson refuses a
 * duplicate), no other; found[i] gets them. */
static int members_exactly(struct cur *c, json_t *o, const char *const *keys, int nkeys, json_t **found,
                           const char *what)
{
    const char *key;
    json_t *v;

    json_object_foreach(o, key, v) {
        int k;
        for (k = 0; k < nkeys && strcmp(key, keys[k]) != 0; k++)
            ;
        if (k == nkeys) {
            char list[200] = "";
            for (int q = 0; q < nkeys; q++)
                strcat(strcat(list, q ? ", " : ""), keys[q]);
            return perr(c, "expected only the keys %s in %s, got \"%s\"", list, what, key);
        }
    }
    for (int k = 0; k < nkeys; k++)
        if ((found[k] = json_object_get(o, keys[k])) == NULL)
            return perr(c, "expected \"%s\" in %s; it is missing", keys[k], what);
    return 0;
}

static int want_type(struct cur *c, const json_t *v, int ok, const char *key, const char *what)
{
    return ok ? 0 : perr(c, "expected %s as \"%s\", got %s", what, key, cs_json_type(v));
}

static int want_uint(struct cur *c, const json_t *v, json_int_t max, const char *key, const char *what)
{
    if (!json_is_integer(v))
        return perr(c, "expected %s as \"%s\", got %s", what, key, cs_json_type(v));
    if (json_integer_value(v) < 0 || json_integer_value(v) > max)
        return perr(c, "expected %s as \"%s\", got %lld", what, key, (long long)json_integer_value(v));
    return 0;
}

/* ------------------------------------------------------------ the file */

static void free_all(void)
{
    for (int i = 0; i < R.njobs; i++) {
        free(R.jobs[i].r);
        free(R.jobs[i].name);
    }
    free(R.jobs);
    free(R.file);
    memset(&R, 0, sizeof R);
}

static int check_header(struct cur *c, const struct cs_profile *p)
{
    static const char *const keys[] = { "format", "version", "profile", "slots" };
    json_t *o, *f[4];
    int r = -1;

    if ((o = parse_line(c)) == NULL)
        return -1;
    if (members_exactly(c, o, keys, 4, f, "the header line") < 0)
        goto out;
    if (!json_is_string(f[0]) || strcmp(json_string_value(f[0]), "cosched-counters") != 0) {
        perr(c, "expected \"format\":\"cosched-counters\" (a recording of cosched run --record-counters)");
        goto out;
    }
    if (want_uint(c, f[1], 1000000000, "version", "the format version (an integer)") < 0)
        goto out;
    if (json_integer_value(f[1]) != RP_VERSION) {
        perr(c, "expected format version %d, got version %lld (written by another cosched version)", RP_VERSION,
             (long long)json_integer_value(f[1]));
        goto out;
    }
    if (want_type(c, f[2], json_is_string(f[2]), "profile", "the profile name") < 0)
        goto out;
    const char *prof = json_string_value(f[2]);
    if (strcmp(prof, p->name) != 0) {
        perr(c, "expected profile %s (the one this run uses), got a recording made with profile %s: give "
                "--profile %s",
             p->name, prof, prof);
        goto out;
    }
    if (want_type(c, f[3], json_is_array(f[3]), "slots", "the list of event slots") < 0)
        goto out;
    {
        size_t n = json_array_size(f[3]);
        int same = n == (size_t)p->nevents;
        char want[400] = "", have[400] = "";
        for (size_t i = 0; i < n; i++)
            if (!json_is_string(json_array_get(f[3], i))) {
                perr(c, "expected the slots as strings, got %s as slot %zu", cs_json_type(json_array_get(f[3], i)),
                     i);
                goto out;
            }
        for (size_t i = 0; same && i < n; i++)
            same = strcmp(json_string_value(json_array_get(f[3], i)), p->events[i].slot) == 0;
        if (!same) {
            for (int i = 0; i < p->nevents; i++)
                if (strlen(want) + strlen(p->events[i].slot) + 3 < sizeof want)
                    strcat(strcat(want, i ? " " : ""), p->events[i].slot);
            for (size_t i = 0; i < n; i++) {
                const char *sl = json_string_value(json_array_get(f[3], i));
                if (strlen(have) + strlen(sl) + 3 < sizeof have)
                    strcat(strcat(have, i ? " " : ""), sl);
            }
            perr(c, "expected the event slots of profile %s (%s), got (%s): the profile changed since the recording",
                 p->name, want, have);
            goto out;
        }
    }
    r = 0;
out:
    json_decref(o);
    return r;
}

static int add_record(struct cur *c, struct cs_engine *e)
{
    static const char *const keys[] = { "job", "step", "seq", "flags", "seconds", "counts" };
    json_t *o, *f[6];
    int r = -1, ji;
    struct rjob *rj;
    struct rrec rec;

    if ((o = parse_line(c)) == NULL)
        return -1;
    if (members_exactly(c, o, keys, 6, f, "a record") < 0)
        goto out;
    if (want_type(c, f[0], json_is_string(f[0]), "job", "the job name") < 0 ||
        want_uint(c, f[1], (json_int_t)9e15, "step", "a step number >= 0") < 0 ||
        want_uint(c, f[2], (json_int_t)9e15, "seq", "a step sequence number >= 0") < 0 ||
        want_uint(c, f[3], 7, "flags", "flags from 0 to 7 (CS_COUNTS_*)") < 0 ||
        want_type(c, f[4], json_is_number(f[4]), "seconds", "the seconds the counts cover") < 0 ||
        want_type(c, f[5], json_is_array(f[5]), "counts", "the list of counts") < 0)
        goto out;
    const char *name = json_string_value(f[0]);
    for (ji = 0; ji < R.njobs && strcmp(R.jobs[ji].name, name) != 0; ji++)
        ;
    if (ji == R.njobs) {
        char list[300] = "";
        for (int i = 0; i < R.njobs; i++)
            if (strlen(list) + strlen(R.jobs[i].job->name) + 3 < sizeof list)
                strcat(strcat(list, i ? ", " : ""), R.jobs[i].job->name);
        perr(c, "expected the name of a job of this run (%s), got job \"%s\"", list, name);
        goto out;
    }
    rj = &R.jobs[ji];
    if (json_integer_value(f[1]) != (json_int_t)rj->n) {
        perr(c, "expected step %zu of job \"%s\" (a job's steps are numbered 0, 1, 2 ... in file order), got step "
                "%lld",
             rj->n, rj->job->name, (long long)json_integer_value(f[1]));
        goto out;
    }
    rec.flags = (int)json_integer_value(f[3]);
    rec.seconds = json_number_value(f[4]);
    if (rec.seconds < 0) {
        perr(c, "expected seconds >= 0, got %g", rec.seconds);
        goto out;
    }
    if (json_array_size(f[5]) != (size_t)R.nslots) {
        perr(c, "expected %d counts (one per slot of the header), got %zu", R.nslots, json_array_size(f[5]));
        goto out;
    }
    for (int i = 0; i < R.nslots; i++) {
        const json_t *v = json_array_get(f[5], (size_t)i);
        if (json_is_null(v))
            rec.v[i] = NAN;
        else if (json_is_string(v)) {
            perr(c, "expected a count (a number >= 0) or null as counts[%d], got the string \"%s\"", i,
                 json_string_value(v));
            goto out;
        } else if (!json_is_number(v)) {
            perr(c, "expected a count (a number >= 0) or null as counts[%d], got %s", i, cs_json_type(v));
            goto out;
        } else if (json_number_value(v) < 0) {
            perr(c, "expected a count >= 0 or null as counts[%d], got %g", i, json_number_value(v));
            goto out;
        } else
            rec.v[i] = json_number_value(v);
    }
    if (rj->n == rj->cap)
        rj->r = realloc(rj->r, (rj->cap = rj->cap ? 2 * rj->cap : 64) * sizeof *rj->r);
    rj->r[rj->n++] = rec;
    r = 0;
out:
    json_decref(o);
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
        c.start = s;
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
    for (int i = 0; i < e->njobs; i++) {
        json_t *n = cs_json_text(e->jobs[i]->name);
        R.jobs[i].job = e->jobs[i];
        R.jobs[i].name = strdup(json_is_string(n) ? json_string_value(n) : "");
        json_decref(n);
    }
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
