/*
 * results.c - a characterization result a policy handed back: counted on
 * its job and written to the trace as a "characterized" record.
 */
#include "config.h"
#include "engine/results.h"
#include "core/util.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"
#include "core/json.h"

void cs_job_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r)
{
    if (!r->degraded)           /* a degraded result measured nothing */
        j->characterized++;
    if (e->trace == NULL)
        return;
    char cls[2] = { r->cls ? r->cls : '?', 0 };
    cs_json_put(e->trace,
                json_pack("{s:s, s:o, s:i, s:o, s:s, s:b, s:i}", "type", "characterized", "time",
                          cs_json_fixed(cs_now() - e->t0, 6), "id", j->id, "name", cs_json_text(j->name), "class",
                          cls, "degraded", r->degraded, "count", j->characterized),
                0);
}
