/*
 * engine/trace.h - the trace (--trace FILE; cosched(1) TRACE, its schema
 * share/trace-schema.json): one JSON object per line, the format written
 * and read in one place (trace.c).
 *
 *   {"type":"run", ...}            first line (version 2): command, policy,
 *                                  quantum, window, managed cpus, control
 *   {"type":"job", ...}            an instance started or ended
 *   {"type":"characterized", ...}  the policy handed back a result for a job
 *   {"type":"step", ...}           a step: its epoch, times, the switch, the
 *                                  cpus' idle time, and per job live in it
 *                                  its state, cpus, CPU time, metrics and
 *                                  what the policy said of it
 *
 * The writers (engine.c calls them) write e->trace and do nothing when it is
 * NULL; the reader (cosched report) reads a trace back, checks it and sums
 * it up.  A reader skips records of a type it does not know (a newer trace).
 *
 * May use: core/ (util, json, job, engine_state), counters/profile.h (the
 * metric names of a step's job).  Used by: engine/engine.c, cli/report.c.
 */
#ifndef COSCHED_ENGINE_TRACE_H
#define COSCHED_ENGINE_TRACE_H

#include <hwloc.h>
#include "core/json.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"

/* ------------------------------------------------------------ writing */

/* The first line: command "run", "serve" or "simulate"; the names of the
 * policy and the control backend (NULL: none). */
void cs_trace_run(struct cs_engine *e, const char *command, const char *policy, const char *control);
/* Instance of j started (event "start") or ended ("end", status as from
 * waitpid: exit code or signal). */
void cs_trace_job(struct cs_engine *e, const struct cs_job *j, const char *event, int status);
/* The policy handed back result r for j (j->characterized already counted). */
void cs_trace_characterized(struct cs_engine *e, const struct cs_job *j, const struct cs_stored *r);

/* A step's line, built in four calls: begun (NULL when there is no trace or
 * no memory; the calls below then do nothing), one object per job live in
 * it, the cpus' idle time, written (and freed).  Times are cs_now()'s:
 * start, end, and the plan's end of the step. */
json_t *cs_trace_step(const struct cs_engine *e, double start, double end, double plan_end, double switch_us,
                      int fallback);
/* state "run", "frozen" or "stuck"; cpus a cpu list; with j's metrics of the
 * step, its OpenMP page's team and regions, and j->policy_info. */
void cs_trace_step_job(json_t *line, const struct cs_engine *e, const struct cs_job *j, const char *state,
                       const char *cpus, double cpu_s);
/* cpu_idle: idle[k] seconds of the k-th cpu of cpus (those idle >= 1 ms). */
void cs_trace_step_cpu_idle(json_t *line, hwloc_const_bitmap_t cpus, const double *idle);
/* idle_frozen: CPU-seconds idle while a live job was held. */
void cs_trace_step_idle_frozen(json_t *line, double nobody, double held);
void cs_trace_step_put(struct cs_engine *e, json_t *line);

/* ------------------------------------------------------------ reading */

/* The state of a job in a step, as read (run, frozen, stuck) and then as
 * drawn and summed (cosched(1) REPORT): folded when it ran on fewer cpus
 * than threads, characterizing when the policy said so. */
enum cs_trace_state { CS_TRACE_RUN, CS_TRACE_FOLDED, CS_TRACE_FROZEN, CS_TRACE_CHAR, CS_TRACE_STUCK,
                      CS_TRACE_NSTATES };

struct cs_trace_job {
    int id;
    char *name;
    int threads;                 /* 0: unknown (trace version 1) */
    int maxcpus;                 /* most cpus it had in a running step */
    int instances, completed, other_ends;
    double cpu_s, sec[CS_TRACE_NSTATES];
    int steps[CS_TRACE_NSTATES];
    int characterized;
};

/* a job in a step */
struct cs_trace_sj { int job; int state; int ncpus; hwloc_bitmap_t cpus; int characterizing; };
struct cs_trace_step {
    unsigned long long seq, epoch;
    double start, end;
    int fallback;
    int n;
    struct cs_trace_sj *jobs;
    int idle_known;              /* the step says idle_frozen */
    double idle_nobody, idle_held;
    int nidle;                   /* the step's cpu_idle: cpus that sat idle, and the share of the step */
    struct cs_trace_idle { int cpu; double share; } *idle;
};

struct cs_trace {
    const char *file;
    const char *who;             /* the messages' prefix: the command reading */
    char *policy;
    double quantum;              /* 0: unknown */
    int version;
    hwloc_bitmap_t cpus;         /* managed (header) and every cpu seen */
    struct cs_trace_job *jobs;   /* sorted by id */
    int njobs;
    struct cs_trace_step *steps;
    int nsteps;
    double t0, t1;
    unsigned long long nepochs;
    int nfallback;
    int idle_steps;              /* steps that say idle_frozen; the totals are theirs */
    double idle_nobody, idle_held;
};

/* Read file into *t (zeroed here): every record checked, the jobs sorted by
 * id, each step's job states classified and summed.  0, or -1 after one
 * message "WHO: FILE:LINE: what was expected" (who: the command).  Free *t
 * with cs_trace_free() either way. */
int cs_trace_read(struct cs_trace *t, const char *file, const char *who);
void cs_trace_free(struct cs_trace *t);
/* The index of job id in t->jobs, -1 when the trace has none. */
int cs_trace_job_index(const struct cs_trace *t, int id);

#endif
