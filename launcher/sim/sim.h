/*
 * sim.h - the simulated node of `cosched simulate`: a node model, application
 * models and interference models, run by the real engine in virtual time.
 *
 *   node file (share/sim/NAME.node)   apps file (share/sim/NAME.apps)
 *        |  cs_sim_node_load               |  cs_sim_apps_load
 *        v                                 v
 *   struct cs_sim_node  ---synthetic--> hwloc topology (cs_topo) for the engine
 *        \                               /
 *         cs_sim_new(node, apps, model, seed, noise, topo)
 *                   |  cs_sim_add_job(job, app) for every job
 *                   v
 *   engine (e->host = &cs_sim_host)    control_sim.c          counters_sim.c
 *     cs_sim_start / cs_sim_advance     cs_sim_set_cpus         cs_sim_read
 *     cs_sim_kill                       cs_sim_freeze, cpu_ns
 *
 * sim/ is the model (sim.c; its files: files.c), the engine's host (host.c),
 * its control and counter backends (control_sim.c, counters_sim.c), the
 * bound and calibration (bound.[ch]) and their linear programs (lp.c).  May use: core/, control/, counters/, engine/.  Used by: cli/.
 *
 * The file formats, the models and their calibration are described in
 * share/sim/README.md.  Errors: loaders return NULL after one
 * "FILE:LINE: what was expected" message through cs_err(); the rest follows
 * core/log.h (0 / -1 after cs_err()).
 *
 * Determinism: everything random (counter noise, the placement imbalance of
 * the linux model) comes from one xoshiro256** generator seeded from the
 * seed with splitmix64, drawn in a fixed order: the same inputs and seed
 * give the same run, bit for bit.
 */
#ifndef COSCHED_SIM_H
#define COSCHED_SIM_H

#include <stdint.h>
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"

/* Events the model produces, in this order (profiles/sim.txt names them
 * SIM.<NAME>; counters_sim.c maps a profile's events by those names). */
enum {
    CS_SIM_INSTRUCTIONS, CS_SIM_CYCLES, CS_SIM_L1_LINES, CS_SIM_L2_LINES, CS_SIM_LLC_MISSES,
    CS_SIM_LLC_REFS, CS_SIM_ORB_FULL, CS_SIM_MEM_LINES, CS_SIM_LOCAL_LINES, CS_SIM_REMOTE_LINES,
    CS_SIM_NEVENTS
};
extern const char *const cs_sim_event_names[CS_SIM_NEVENTS];   /* "SIM.INSTRUCTIONS", ... */

struct cs_sim_node {
    char *file, *name, *description;
    int packages, numa_per_package, llc_per_numa, cores_per_llc;
    double llc_size, memory_per_numa;          /* bytes */
    double mem_bw, interconnect_bw;            /* GB/s per controller, per link */
    double freq;                               /* GHz */
    double mem_latency, remote_latency;        /* ns */
    double queue, mlp, pollution, sq_size, cpi_floor, cfs_imbalance;
};

struct cs_sim_phase { double work, ipc, bw; };   /* share of the work, multipliers */

struct cs_sim_app {
    char *name;
    int line;
    int threads;
    double work, time;               /* instructions per run; or standalone seconds (work 0) */
    double ipc, bw_l1, bw_l2, bw_llc;    /* standalone, at min(threads, cores) cores */
    double footprint;                /* bytes */
    int home;                        /* NUMA node (os index), -1: first touch */
    double scaling, fold_loss, mlp, llc_ws, sensitivity, sync, orb;
    char cls;                        /* class the source says (documentation, tests); 0 none */
    int nphases;
    struct cs_sim_phase *phases;
};

struct cs_sim_apps {
    char *file, *name, *description;
    int napps;
    struct cs_sim_app *apps;
    /* empirical model: perf[i * napps + k] = performance (% of standalone)
     * of app k beside app i (paper 004 Table 1: row = influencer); NAN: none */
    double *perf;
    int have_matrix;
};

enum cs_sim_model { CS_SIM_ANALYTIC, CS_SIM_EMPIRICAL };

struct cs_sim_node *cs_sim_node_load(const char *path);
void cs_sim_node_free(struct cs_sim_node *n);
/* "synthetic:pack:P numa:N(memory=..) l3:L(size=..) core:C pu:1"; caller frees. */
char *cs_sim_node_synthetic(const struct cs_sim_node *n);
struct cs_sim_apps *cs_sim_apps_load(const char *path);
void cs_sim_apps_free(struct cs_sim_apps *a);
const struct cs_sim_app *cs_sim_app_find(const struct cs_sim_apps *a, const char *name);

struct cs_sim;
/* topo: the node's synthetic topology, loaded (cs_topo_load).  The sim
 * installs its virtual clock (cs_set_virtual_clock) at 0; cs_sim_free()
 * removes it. */
struct cs_sim *cs_sim_new(const struct cs_sim_node *n, const struct cs_sim_apps *a, enum cs_sim_model model,
                          uint64_t seed, double noise, const struct cs_topo *topo);
/* Job j (id 1..) runs app with j->threads threads, its memory on NUMA node
 * home (OS index; -2: the app's home=, -1: first touch); -1 after cs_err()
 * when the model cannot run it (empirical model: app not in the matrix). */
int cs_sim_add_job(struct cs_sim *s, struct cs_job *j, const struct cs_sim_app *app, int home);
void cs_sim_free(struct cs_sim *s);

/* control side (control_sim.c) */
int cs_sim_set_cpus(struct cs_sim *s, struct cs_job *j, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems);
int cs_sim_freeze(struct cs_sim *s, struct cs_job *j, int frozen);
uint64_t cs_sim_cpu_ns(struct cs_sim *s, struct cs_job *j);
/* Idle seconds so far of each cpu of cpus (control's cpu_idle): virtual time
 * minus the time some thread ran on its core.  A core is busy min(1, load)
 * of the time, load = the threads of the running jobs placed on it (each
 * job's threads spread evenly over its cores): a core of no running job is
 * idle, and a job of T threads on C > T cores leaves C - T cores' worth idle.
 * The model's cores have one PU each. */
int cs_sim_cpu_idle(struct cs_sim *s, hwloc_const_bitmap_t cpus, double *idle_s);
/* counter side (counters_sim.c): the counts since the previous read, with
 * the noise applied; seconds covered. */
int cs_sim_read(struct cs_sim *s, struct cs_job *j, double v[CS_SIM_NEVENTS], double *seconds);
/* Fraction of an instance done: of the live one, else of the last one when
 * it was killed (0 after a completion). */
double cs_sim_fraction(struct cs_sim *s, struct cs_job *j);
/* Instructions per run of job j's app. */
double cs_sim_work(struct cs_sim *s, struct cs_job *j);

/*
 * Steady rates without the engine (the bound, calibration): runs of job k per
 * virtual second when the jobs of ids[0..n-1] run together, job ids[i] on
 * the cores cpus[i] (bitmaps of PUs), nobody else; rates[i] out.  The phases
 * of an app are averaged over a run.  No randomness is drawn.
 */
int cs_sim_steady(struct cs_sim *s, const int *ids, hwloc_const_bitmap_t const *cpus, int n, double *rates);

/*
 * Configurations a run went through (the bound of `cosched simulate --bound`
 * puts every one of them among its LP's columns, so that no policy can beat
 * it).  A configuration is the model's, not a step's plan: the running (live,
 * thawed, placed on cores) instances, each with its cores, its phase and
 * where its memory is -- everything the rates depend on.  The model changes
 * configuration only through the control backend, an instance starting or
 * ending, or a phase boundary, and re-evaluates then; cs_sim_record() makes
 * that re-evaluation also look the configuration up (by its canonical key)
 * in a list of distinct ones and charge it the virtual time until the next
 * change.  Frozen time with nothing running is the configuration "".
 *
 *   cs_sim_record(s)                    before the run (cs_engine_run)
 *   cs_sim_take_configs(s, &n)          after it: the list, the caller owns
 *   cs_sim_configs_free(c, n)
 */
struct cs_sim_config {
    char *key;        /* "ID@CPUS/pPHASE/mMEM,MEM;..." of the running jobs, in id order */
    char *desc;       /* "NAME@CPUS + NAME@CPUS" for people */
    double seconds;   /* virtual time spent in it */
    double *runs;     /* [job id - 1]: runs/s (instructions/s over instructions per run), 0 not running */
};
void cs_sim_record(struct cs_sim *s);
struct cs_sim_config *cs_sim_take_configs(struct cs_sim *s, int *n);
void cs_sim_configs_free(struct cs_sim_config *c, int n);

/*
 * The linear programs of the bound (lp.c, solved by GLPK's simplex).
 * r[c * nj + j] >= 0: job j's normalised rate in configuration c of nc;
 * variables x_c >= 0 with sum_c x_c = 1 (time fractions); y_j = sum_c x_c r_cj.
 *   CS_LP_TOTAL   maximise sum_j y_j
 *   CS_LP_FAIR    maximise sum_j y_j subject to y_j >= floor[j] for every j
 *   CS_LP_MAXMIN  maximise t subject to y_j >= t for every j
 * 0 with *value, x[nc] and y[nj] set; < 0 after cs_err() when infeasible, the solver
 * fails or there is no GLPK (cs_lp_available() says so first, with why).  cs_lp_fair:
 * CS_LP_FAIR for cosched.fair_lp, silent: -1 infeasible, -2 otherwise; x[nc] set.
 */
enum cs_lp_kind { CS_LP_TOTAL, CS_LP_FAIR, CS_LP_MAXMIN };
int cs_lp_available(char *why, size_t len);
int cs_lp_bound(enum cs_lp_kind kind, int nj, int nc, const double *r, const double *floor_, double *value,
                double *x, double *y);
int cs_lp_fair(int nj, int nc, const double *r, const double *floor_, double *x);

/*
 * The engine's host (engine/host.h, struct cs_host_ops): a host in virtual
 * time.  cosched simulate sets e->host = &cs_sim_host and e->host_arg to the
 * struct cs_sim; the host's start() starts instances in the model
 * (cs_sim_start), its wait() runs the model for a step (cs_sim_advance: to
 * `until` or to the first instance completion before it) and ends the
 * completed instances (cs_engine_ended, exit 0), its kill() closes a
 * --window (cs_sim_kill: the instance ends at once, as killed by SIGKILL).
 * No signals, no guardian, no job output.  The sim
 * control and counter backends find the model with cs_sim_of(e).
 */
extern const struct cs_host_ops cs_sim_host;
/* Its control backend (control_sim.c): acts on the model; never chosen by
 * name (cs_control_select() does not offer it). */
extern const struct cs_control_ops cs_control_sim;
/* Its counter backend (counters_sim.c): the profile's events are mapped by
 * name to the model's (SIM.INSTRUCTIONS, ...). */
extern const struct cs_counter_ops cs_counters_sim;
struct cs_sim *cs_sim_of(const struct cs_engine *e);
int cs_sim_start(struct cs_sim *s, struct cs_job *j);
int cs_sim_advance(struct cs_sim *s, double until, struct cs_job **ended);
void cs_sim_kill(struct cs_sim *s, struct cs_job *j);

#endif
