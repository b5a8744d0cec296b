/*
 * counters.c - the counter facade: backend selection (--counters), the no-op
 * backend, and the recorder (--record-counters) whose output the replay
 * backend (counters_replay.c) reads back.
 *
 * Selection.  "auto" asks likwid, then perf, how many events of the profile
 * they can count here; the first that counts all of them wins, else the first
 * that counts some (the others read NaN: a partial backend is announced by
 * its init), else no backend: one line says why and the run goes on with
 * cs_counters_none.  A backend named explicitly that cannot count a single
 * event of the profile is an error that says what is missing and what to
 * change.
 *
 * Recording format (cosched-counters(5) has the long version): JSON lines.
 *
 *   {"format":"cosched-counters","version":1,"profile":"NAME","slots":["SW0",...]}
 *   {"job":"NAME","step":K,"seq":S,"flags":F,"seconds":T,"counts":[C0,...]}
 *
 * one header line, then one line per job per step in which the job was live:
 * K is the job's live-step number (0, 1, 2 ... : j->steps_live when it was
 * read), S the engine's step sequence number (for people), F the CS_COUNTS_*
 * flags, T the seconds the counts cover, Ci the count of slot i or null (not
 * counted).  Numbers are written with %.17g, so a replay gives bit-identical
 * doubles and therefore identical metrics.
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "core/json.h"


/* ------------------------------------------------------------ none */

static int none_probe(const char *arg, char *why, size_t len)
{
    return 0;
}

static int none_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    return 0;
}

static int none_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return 0;
}

static int none_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    return 0;
}

static int none_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    out->flags = 0;
    out->n = e->profile ? e->profile->nevents : 0;
    for (int i = 0; i < out->n && i < CS_COUNTS_MAX; i++)
        out->v[i] = NAN;
    out->seconds = 0;
    return 0;
}

static void none_job(struct cs_engine *e, struct cs_job *j)
{
}

static void none_fini(struct cs_engine *e)
{
}

const struct cs_counter_ops cs_counters_none = {
    .name = "none",
    .probe = none_probe,
    .init = none_init,
    .job_attach = none_attach,
    .step_begin = none_step_begin,
    .read = none_read,
    .instance_ended = none_job,
    .job_release = none_job,
    .fini = none_fini,
};

/* ------------------------------------------------------------ select */

/* Events of p that backend b counts here (see the check functions above);
 * -1 when it counts nothing at all.  why: the reason for what it cannot. */
static int backend_check(const struct cs_counter_ops *b, const struct cs_profile *p, char *why, size_t len)
{
    char pwhy[512] = "";

    if (b->probe(NULL, pwhy, sizeof pwhy) < 0) {
        snprintf(why, len, "%s", pwhy);
        return -1;
    }
    if (b == &cs_counters_perf)
        return cs_counters_perf_check(p, NULL, why, len);
    return cs_counters_likwid_check(p, NULL, why, len);
}

/* Why "auto" found no backend (for results that outlive the log line). */
static char none_why[320];

const char *cs_counters_none_why(void)
{
    return none_why[0] ? none_why : "no counter backend works here";
}

const struct cs_counter_ops *cs_counters_select(const char *spec, const struct cs_profile *p, const char **arg)
{
    const struct cs_counter_ops *b = NULL;
    char why[512] = "";
    int n;

    *arg = NULL;
    if (strcmp(spec, "none") == 0)
        return &cs_counters_none;
    if (strncmp(spec, "replay:", 7) == 0) {
        if (spec[7] == '\0') {
            cs_err("--counters replay:FILE: the file name is missing");
            return NULL;
        }
        if (cs_counters_replay.probe(spec + 7, why, sizeof why) < 0) {
            cs_err("--counters %s: %s", spec, why);
            return NULL;
        }
        *arg = spec + 7;
        return &cs_counters_replay;
    }
    if (strcmp(spec, "perf") == 0)
        b = &cs_counters_perf;
    else if (strcmp(spec, "likwid") == 0)
        b = &cs_counters_likwid;
    else if (strcmp(spec, "auto") != 0) {
        cs_err("--counters %s: unknown backend (expected auto, likwid, perf, replay:FILE or none)", spec);
        return NULL;
    }
    if (p == NULL) {
        /* run.c gives every backend but none a profile; defensive */
        if (b == NULL)
            return &cs_counters_none;
        cs_err("--counters %s needs a counter profile (--profile NAME|FILE)", spec);
        return NULL;
    }

    if (b) {
        n = backend_check(b, p, why, sizeof why);
        if (n > 0)
            return b;
        if (n == 0)
            cs_err("--counters %s: cannot count any event of profile %s here: %s", spec, p->name, why);
        else
            cs_err("--counters %s: %s", spec, why);
        return NULL;
    }

    /* auto: full coverage first, likwid before perf; then partial */
    {
        const struct cs_counter_ops *order[2] = { &cs_counters_likwid, &cs_counters_perf };
        char whys[2][512];
        int got[2];
        for (int i = 0; i < 2; i++) {
            whys[i][0] = '\0';
            got[i] = backend_check(order[i], p, whys[i], sizeof whys[i]);
            if (got[i] == p->nevents) {
                cs_info("counters: %s (profile %s)", order[i]->name, p->name);
                return order[i];
            }
        }
        for (int i = 0; i < 2; i++)
            if (got[i] > 0) {
                cs_info("counters: %s (profile %s; %d of its %d events)", order[i]->name, p->name, got[i],
                        p->nevents);
                return order[i];
            }
        /* one short line by default (most VMs and laptops land here on every
         * run); what each backend said with -v */
        snprintf(none_why, sizeof none_why, "profile %s cannot be counted here (%s)", p->name,
                 strstr(whys[1], "no hardware PMU") || strstr(whys[0], "no PMU") ? "no hardware PMU"
                                                                                  : "neither perf nor likwid counts its events");
        cs_info("counters: none: %s; policies get no measurements%s", none_why,
                cs_verbosity >= CS_LOG_DEBUG ? "" : " (-v says why)");
        cs_debug("counters: perf: %s; likwid: %s", whys[1], whys[0]);
        return &cs_counters_none;
    }
}

/* ------------------------------------------------------------ recording */

static struct {
    FILE *f;
    char *path;
    int nslots;
    int failed;
} rec;

int cs_counters_record_open(const char *path, const struct cs_profile *p)
{
    if (rec.f) {
        cs_err("--record-counters %s: already recording to %s", path, rec.path);
        return -1;
    }
    if ((rec.f = cs_fopen_write(path)) == NULL) {
        cs_err("--record-counters %s: cannot create the file: %s", path, strerror(errno));
        return -1;
    }
    rec.path = strdup(path);
    rec.nslots = p->nevents;
    rec.failed = 0;
    json_t *slots = json_array();
    for (int i = 0; i < p->nevents; i++)
        json_array_append_new(slots, cs_json_text(p->events[i].slot));
    if (cs_json_put(rec.f,
                    json_pack("{s:s, s:i, s:o, s:o}", "format", "cosched-counters", "version", 1, "profile",
                              cs_json_text(p->name), "slots", slots),
                    CS_JSON_EXACT) < 0) {
        cs_err("--record-counters %s: cannot write: %s", path, strerror(errno));
        cs_counters_record_close();
        return -1;
    }
    return 0;
}

void cs_counters_record(const struct cs_engine *e, const struct cs_job *j, uint64_t step, const struct cs_counts *c)
{
    int valid = c->flags & CS_COUNTS_VALID;

    if (rec.f == NULL || rec.failed)
        return;
    json_t *counts = json_array();
    /* a failed read may leave n short: those slots were not counted */
    for (int i = 0; i < rec.nslots; i++)
        json_array_append_new(counts, cs_json_exact(valid && i < c->n && i < CS_COUNTS_MAX ? c->v[i] : NAN));
    /* one line per write: a recording cut short by a crash ends with whole lines */
    if (cs_json_put(rec.f,
                    json_pack("{s:o, s:I, s:I, s:i, s:o, s:o}", "job", cs_json_text(j->name), "step",
                              (json_int_t)step, "seq", (json_int_t)e->step_seq, "flags", c->flags, "seconds",
                              cs_json_exact(valid ? c->seconds : 0.0), "counts", counts),
                    CS_JSON_EXACT) < 0) {
        cs_warn("--record-counters %s: cannot write (%s); recording stops here", rec.path, strerror(errno));
        rec.failed = 1;
    }
}

void cs_counters_record_close(void)
{
    if (rec.f == NULL)
        return;
    if (fclose(rec.f) != 0 && !rec.failed)
        cs_warn("--record-counters %s: cannot write (%s); the recording may be incomplete", rec.path,
                strerror(errno));
    rec.f = NULL;
    free(rec.path);
    rec.path = NULL;
}
