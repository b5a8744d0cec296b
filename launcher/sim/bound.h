/*
 * sim/bound.h - what `cosched simulate` computes from the model beyond the
 * runs (bound.c): --bound, the upper bounds of the linear programs over node
 * configurations (solved by lp.c), and --calibrate, the tables
 * share/sim/README.md quotes.
 *
 * Used by cli/simulate.c.  Uses core/ and the model (sim/sim.h).
 *
 * --bound: an upper bound on what any schedule can get from the model for
 * this workload, as linear programs over the time fractions x_c of node
 * configurations c (lp.c; share/sim/README.md "The bound" states them):
 *
 *   r_jc = runs/s of job j in configuration c / runs/s of j alone on all the
 *          cores (its "standalone" rate; both from the model, no noise)
 *   y_j  = sum_c x_c r_jc, the normalised throughput of j; sum_c x_c = 1
 *   total   max sum_j y_j                         (no constraint)
 *   fair    max sum_j y_j with y_j >= 1/n         (plain gang: alone, 1/n of the time)
 *   maxmin  max t with y_j >= t                   (the least job)
 *
 * The configurations: every job alone on all the cores and on either half;
 * every pair folded (one half each, both ways round) and unfolded (both on
 * all the cores); all the jobs on all the cores (the linux baseline); and
 * every configuration any policy of this invocation went through
 * (cs_sim_record: cores, phase and memory of each running instance, with the
 * rates the run had).  A run's normalised throughputs are exactly
 * sum_c (its seconds in c / its length) r_jc, a point of the LP's feasible
 * set, so "total" is above every policy that ran, "maxmin" above each one's
 * least job, and "fair" above each one that gives every job at least 1/n.
 * The generated configurations use steady rates (phases averaged over a
 * run, memory where first touch puts it: cs_sim_steady); the recorded ones
 * the phase they were in, which makes the bound looser, never wrong, for
 * apps with phases.
 *
 * --calibrate: the tables share/sim/README.md quotes, from steady rates of
 * every app of the apps file (or of --mix/--workload) on the node:
 *   fold  = runs/s on half the cores / on all cores, alone (paper 001 Fig. 6);
 *   pairs = slowdown of each app beside each other, both folded on half the
 *           cores (TFT), relative to folded alone, averaged per class pair
 *           (paper 001 Fig. 4: imposed along the columns, suffered along the rows);
 *   gang  = throughput of each app beside each other relative to gang (half
 *           the time alone on all cores), folded (TFT) and both on all cores
 *           under the linux model, per class of the app (paper 001 Fig. 7);
 *   cfs   = pace (instructions per CPU cycle / alone) of each app sharing all
 *           cores with stream, jacobi or 3mm under the linux model (Sec. 4.3, Fig. 8).
 */
#ifndef COSCHED_SIM_BOUND_H
#define COSCHED_SIM_BOUND_H

#include <stdint.h>
#include <hwloc.h>
#include "core/job.h"
#include "core/topo.h"
#include "sim/sim.h"

#define CS_SIM_BOUND_MAX_JOBS 64

/* The model and the jobs of one invocation: job i (id i + 1) runs w[i].app
 * with w[i].threads threads, its memory on NUMA node w[i].home (as
 * cs_sim_add_job); make_jobs(arg) makes the n struct cs_job of a fresh run
 * (freed here with cs_jobs_free). */
struct cs_sim_bench_job { const struct cs_sim_app *app; int threads, home; };
struct cs_sim_bench {
    const struct cs_sim_node *node;
    const struct cs_sim_apps *apps;
    enum cs_sim_model model;
    uint64_t seed;
    const struct cs_topo *topo;
    hwloc_const_bitmap_t managed;
    int n;
    const struct cs_sim_bench_job *w;
    struct cs_job **(*make_jobs)(void *arg);
    void *arg;
};

/* The configurations one policy's run went through (cs_sim_take_configs). */
struct cs_sim_run {
    const char *policy;
    const struct cs_sim_config *cfgs;
    int ncfgs;
    double virtual_s;
};

struct cs_sim_bound {
    int n, ncols, nrecorded;
    double *standalone;          /* [i] runs/s alone on all the cores */
    double floor;                /* fair: 1/n */
    struct { double value, sum, *y; char *schedule; } lp[3];   /* by enum cs_lp_kind */
};
extern const char *const cs_sim_lp_name[3];   /* "total", "fair", "maxmin" */

/* --bound: the three programs over the generated configurations and those of
 * the npols runs; bd's arrays are malloc'ed (the caller frees standalone and
 * each lp[k].y and .schedule).  -1 after cs_err(). */
int cs_sim_bound(const struct cs_sim_bench *b, const struct cs_sim_run *runs, int npols, struct cs_sim_bound *bd);
/* A run's normalised throughput per job, from the configurations it recorded:
 * sum_c seconds_c runs_jc / virtual_s / standalone_j (the LP's point of the run). */
double cs_sim_recorded_total(const struct cs_sim_run *r, const struct cs_sim_bound *bd);
/* --calibrate: print the tables on stdout.  -1 after cs_err(). */
int cs_sim_calibrate(const struct cs_sim_bench *b);

#endif
