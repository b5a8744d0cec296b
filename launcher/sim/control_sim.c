/*
 * control_sim.c - the "sim" control backend: a simulated node's jobs (sim.c)
 * are confined, frozen and thawed in the model, which then charges them CPU
 * time.  Nothing of the operating system is touched, so there is nothing
 * for a guardian to restore.  Used by `cosched simulate` only (cs_sim_of(e) set);
 * cs_control_select() never offers it.
 */
#include "config.h"
#include <string.h>
#include "control/control.h"
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "sim/sim.h"

static int sim_probe(char *why, size_t len)
{
    snprintf(why, len, "the sim backend drives a simulated node (cosched simulate) only");
    return -1;
}

static int sim_init(struct cs_engine *e)
{
    if (!cs_sim_of(e)) {
        cs_err("control sim: no simulated node");
        return -1;
    }
    return 0;
}

static int sim_job_prepare(struct cs_engine *e, struct cs_job *j)
{
    return 0;
}

static int sim_job_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return 0;
}

static int sim_set_cpus(struct cs_engine *e, struct cs_job *j, hwloc_const_bitmap_t cpus,
                        hwloc_const_bitmap_t mems)
{
    return cs_sim_set_cpus(cs_sim_of(e), j, cpus, mems);
}

static int sim_freeze(struct cs_engine *e, struct cs_job *j)
{
    return cs_sim_freeze(cs_sim_of(e), j, 1);
}

static int sim_thaw(struct cs_engine *e, struct cs_job *j)
{
    return cs_sim_freeze(cs_sim_of(e), j, 0);
}

static int sim_cpu_time(struct cs_engine *e, struct cs_job *j, uint64_t *ns)
{
    *ns = cs_sim_cpu_ns(cs_sim_of(e), j);
    return 0;
}

static int sim_cpu_idle(struct cs_engine *e, hwloc_const_bitmap_t cpus, double *idle_s)
{
    return cs_sim_cpu_idle(cs_sim_of(e), cpus, idle_s);
}

static void sim_job_release(struct cs_engine *e, struct cs_job *j)
{
    cs_sim_freeze(cs_sim_of(e), j, 0);
}

static void sim_fini(struct cs_engine *e)
{
}

static void sim_rescue(const char *record)
{
}

const struct cs_control_ops cs_control_sim = {
    .name = "sim",
    .probe = sim_probe,
    .init = sim_init,
    .job_prepare = sim_job_prepare,
    .job_attach = sim_job_attach,
    .set_cpus = sim_set_cpus,
    .freeze = sim_freeze,
    .thaw = sim_thaw,
    .cpu_time = sim_cpu_time,
    .instance_ended = NULL,
    .job_release = sim_job_release,
    .fini = sim_fini,
    .rescue = sim_rescue,
    .cpu_idle = sim_cpu_idle,
};
