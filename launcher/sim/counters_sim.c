/*
 * counters_sim.c - the "sim" counter backend: a simulated node's events
 * (sim.c) under the names of a profile.  Each event of the profile whose
 * name is one of the model's (SIM.INSTRUCTIONS, SIM.CYCLES, ...: sim.h,
 * profiles/sim.txt) gets the model's count for the job in the step; any
 * other event reads NaN (not counted), like an event a real backend cannot
 * program.  Counts are per job and exact (plus --noise); the model never
 * mixes jobs, so every read is flagged CS_COUNTS_SOCKET_OWNED: the memory
 * traffic it reports is the job's own.
 */
#include "config.h"
#include <math.h>
#include <string.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "sim/sim.h"

static int map[CS_COUNTS_MAX];   /* profile event -> model event, -1 none */
static int nmapped;

static int simc_probe(const char *arg, char *why, size_t len)
{
    snprintf(why, len, "the sim backend counts on a simulated node (cosched simulate) only");
    return -1;
}

static int simc_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    if (!cs_sim_of(e)) {
        cs_err("counters sim: no simulated node");
        return -1;
    }
    nmapped = 0;
    for (int i = 0; p && i < p->nevents && i < CS_COUNTS_MAX; i++) {
        map[i] = -1;
        for (int k = 0; k < CS_SIM_NEVENTS; k++)
            if (strcmp(p->events[i].name, cs_sim_event_names[k]) == 0)
                map[i] = k;
        nmapped += map[i] >= 0;
    }
    if (p && nmapped == 0) {
        cs_err("counters sim: profile %s has no event of the model (SIM.INSTRUCTIONS, SIM.CYCLES, ...; use "
               "--profile sim)", p->name);
        return -1;
    }
    return 0;
}

static int simc_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return 0;
}

static int simc_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    return 0;
}

static int simc_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    double v[CS_SIM_NEVENTS], secs;

    out->flags = 0;
    out->n = e->profile ? e->profile->nevents : 0;
    if (cs_sim_read(cs_sim_of(e), j, v, &secs) < 0)
        return -1;
    for (int i = 0; i < out->n && i < CS_COUNTS_MAX; i++)
        out->v[i] = map[i] >= 0 ? v[map[i]] : NAN;
    out->seconds = secs;
    /* a step in which the job did not run counted nothing: no valid counts */
    if (v[CS_SIM_CYCLES] > 0)
        out->flags = CS_COUNTS_VALID | CS_COUNTS_SOCKET_OWNED;
    return 0;
}

static void simc_job(struct cs_engine *e, struct cs_job *j)
{
}

static void simc_fini(struct cs_engine *e)
{
}

const struct cs_counter_ops cs_counters_sim = {
    .name = "sim",
    .probe = simc_probe,
    .init = simc_init,
    .job_attach = simc_attach,
    .step_begin = simc_step_begin,
    .read = simc_read,
    .instance_ended = simc_job,
    .job_release = simc_job,
    .fini = simc_fini,
};
