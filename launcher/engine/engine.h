/*
 * engine/engine.h - the engine (engine.c): runs jobs under a policy, epoch by
 * epoch, step by step, on the state of struct cs_engine (core/engine_state.h).
 *
 * Whose the jobs are is the host's (host.h: local/, node/, sim/ each fill a
 * struct cs_host_ops); summary.c prints a run's summary for the hosts.
 *
 * May use: core/, control/, counters/, policy/, shared/.  Used by: local/,
 * node/, sim/, cli/.
 */
#ifndef COSCHED_ENGINE_H
#define COSCHED_ENGINE_H

#include "core/job.h"
#include "core/engine_state.h"
#include "engine/host.h"

/* omp_page: a new descriptor (close-on-exec, the caller's to close) of live
 *   job j's OpenMP page (shared/omppage.h), the page made at the first call;
 *   -1 when the policy runs jobs on the same cpus (no shim there) or no page
 *   could be made (a warning).  The engine owns the page: it bumps its
 *   generation with every change of j's cpus (do_switch, as for its own
 *   jobs), reads team and regions back each step, and closes it at drop. */
int cs_engine_omp_page(struct cs_engine *e, struct cs_job *j);
/* The cores a job lives on when no plan says otherwise. */
hwloc_const_bitmap_t cs_job_home(const struct cs_engine *e, const struct cs_job *j);

/* e->host set: the run, until its jobs are done or its host stops it.
 * The exit status for main(). */
int cs_engine_run(struct cs_engine *e);
/* Stop job j on purpose (from a hook during the run): thaw it, SIGTERM its
 * instance through the host, SIGKILL after e->kill_timeout (the host's).
 * Its end is then neither a failure nor restarted.  Nothing for a host that
 * never signals its jobs or a model's instance. */
void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j);

#endif
