/*
 * host.c - the simulated node as the engine's host (engine/engine.h, struct
 * cs_host_ops): instances start, advance and are killed in the model's
 * virtual time (sim.c).  `cosched simulate` sets e->host = &cs_sim_host and
 * e->host_arg = its struct cs_sim.
 */
#include "config.h"
#include "engine/engine.h"
#include "engine/host.h"
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "sim/sim.h"

static int host_start(struct cs_engine *e, struct cs_job *j, pid_t *pid)
{
    *pid = 0;
    return cs_sim_start(e->host_arg, j);
}

/* The model runs to `until` or to the first completion in the step; the
 * instances that completed end as reaped ones do (exit 0).  1 when some did. */
static int host_wait(struct cs_engine *e, double until)
{
    struct cs_job *ended[e->njobs + 1];
    int n = cs_sim_advance(e->host_arg, until, ended);

    for (int k = 0; k < n; k++)
        cs_engine_ended(e, ended[k], 0, NULL);
    return n > 0;
}

static void host_abandon(struct cs_engine *e, struct cs_job *j)
{
    cs_sim_kill(e->host_arg, j);
}

/* Only a kill ends a model's instance, at once (a --window's end, an aborted run). */
static int host_kill(struct cs_engine *e, struct cs_job *j, int sig)
{
    cs_sim_kill(e->host_arg, j);
    return 1;
}

static void host_end(struct cs_engine *e, int complete)
{
    if (complete && cs_verbosity >= CS_LOG_INFO)
        cs_engine_summary(e);
}

/* No signal handling, no guardian, no job output: the jobs are the model's. */
const struct cs_host_ops cs_sim_host = {
    .name = "simulated node",
    .command = "simulate",
    .end = host_end,
    .start = host_start,
    .abandon = host_abandon,
    .kill = host_kill,
    .wait = host_wait,
};

struct cs_sim *cs_sim_of(const struct cs_engine *e)
{
    return e->host == &cs_sim_host ? e->host_arg : NULL;
}
