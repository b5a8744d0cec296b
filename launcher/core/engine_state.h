/*
 * core/engine_state.h - struct cs_engine, the state of one run: its
 * configuration (topology, managed cpus, backends, policy), its jobs, its
 * run state and the host that owns the jobs when the engine does not fork
 * them (the node engine, the simulated node).
 *
 * Defined here, not in engine/, because every layer reads it (a control
 * backend its ctl_state and run_id, the policy host the jobs and the
 * topology); only engine/ drives it (docs/architecture.md).  Used by
 * engine/, policy/, counters/, control/, node/, sim/, cli/.  Uses hwloc and
 * core/job.h, core/topo.h; the types of the layers above are used by
 * pointer only.
 *
 * Lifecycle of one epoch:
 *
 *   epoch start: snapshot -> policy.plan() -> validated plan (steps)
 *     step 1  |-- switch --|======= duration ========|
 *     step 2                |-- switch --|=== duration ===| ...
 *   a job that ends or arrives aborts the epoch; the next one starts at once.
 *   switch = freeze leaving jobs, move cpusets, thaw entering jobs.
 */
#ifndef COSCHED_CORE_ENGINE_STATE_H
#define COSCHED_CORE_ENGINE_STATE_H

#include <stdint.h>
#include <stdio.h>
#include <hwloc.h>
#include "core/job.h"
#include "core/topo.h"

/* Defined by the layers above, used here by pointer only. */
struct cs_control_ops;
struct cs_counter_ops;
struct cs_profile;
struct cs_policy;
struct cs_host_ops;
struct cs_run;
struct cs_store;

enum cs_output_mode { CS_OUT_PREFIX, CS_OUT_FILES, CS_OUT_INHERIT };

struct cs_engine {
    /* configuration */
    struct cs_topo *topo;
    hwloc_bitmap_t managed;            /* PUs cosched may hand out */
    hwloc_bitmap_t all_mems;           /* every NUMA node (unconfining memory) */
    double quantum;                    /* seconds */
    double window;                     /* 0: run each job once */
    const struct cs_control_ops *ctl;
    struct cs_policy *policy;
    int omp_env;                       /* set OMP_* for jobs */
    const char *omp_shim;              /* libcosched-omp.so to preload into jobs, NULL: none (--omp-shim off) */
    enum cs_output_mode output;
    char *output_dir;
    FILE *trace;
    double kill_timeout;               /* after forwarding SIGINT/SIGTERM */
    int progress;                      /* live line on stderr */

    /* jobs */
    struct cs_job **jobs;
    int njobs;

    /* counters: backend, profile (NULL when none), replay argument */
    const struct cs_counter_ops *cnt;
    const struct cs_profile *profile;
    const char *cnt_arg;

    /* run state */
    char *run_id;                      /* "PID" - names cgroups */
    double t0;
    uint64_t epoch, step_seq;
    int nfallbacks;
    double switch_us_total; uint64_t switches;
    /* CPU-seconds the managed cpus sat idle in steps that held a live job
     * frozen: on cpus the plan gave to no running job (nobody) and on cpus
     * of a running job (held); idle_steps: steps where the control backend
     * could say (cpu_idle), the totals cover those only */
    double idle_nobody_s, idle_held_s; uint64_t idle_steps;
    void *ctl_state;                   /* backend private */

    /* profile store (NULL: none) and a hook called after every plan() that
     * succeeded, once its results are stored (NULL: none) */
    struct cs_store *store;
    void (*on_plan)(struct cs_engine *e);
    void *on_plan_arg;

    /* someone reads plan()'s third value, the policy's explanations (the
     * node engine: `cosched status`): the snapshot says so (explain) */
    int explain;

    /* who the jobs belong to - `cosched run`'s own processes (local/), the
     * node engine's Slurm steps (node/) or the simulated node (sim/) - and
     * that host's own state (engine/host.h, struct cs_host_ops) */
    const struct cs_host_ops *host;
    void *host_arg;
    /* the engine's own state during cs_engine_run() (engine.c) */
    struct cs_run *run;
};

#endif
