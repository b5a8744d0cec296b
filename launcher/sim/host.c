/*
 * host.c - the simulated node as the engine's host (engine/engine.h, struct
 * cs_host_ops): instances start, advance and are killed in the model's
 * virtual time (sim.c).  `cosched simulate` sets e->host = &cs_sim_host and
 * e->host_arg = its struct cs_sim.
 */
#include "config.h"
#include "engine/engine.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "sim/sim.h"

static int host_start(struct cs_engine *e, struct cs_job *j)
{
    return cs_sim_start(e->host_arg, j);
}

static int host_advance(struct cs_engine *e, double until, struct cs_job **ended)
{
    return cs_sim_advance(e->host_arg, until, ended);
}

static void host_kill(struct cs_engine *e, struct cs_job *j)
{
    cs_sim_kill(e->host_arg, j);
}

const struct cs_host_ops cs_sim_host = {
    .name = "simulated node",
    .start = host_start,
    .advance = host_advance,
    .kill = host_kill,
};

struct cs_sim *cs_sim_of(const struct cs_engine *e)
{
    return e->host == &cs_sim_host ? e->host_arg : NULL;
}
