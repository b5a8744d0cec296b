/*
 * engine/engine.h - the engine (engine.c): runs jobs under a policy, epoch by
 * epoch, step by step, on the state of struct cs_engine (core/engine_state.h).
 *
 * Whose the jobs are is the host's (host.h: local/, node/, sim/ each fill a
 * struct cs_host_ops); summary.c prints a run's summary for the hosts;
 * assemble.c puts an engine together for run, serve and simulate.
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

/*
 * Assembly, the same for every command: each piece as the command chose it
 * (its options, its trust rules, its model); a piece left NULL is looked up
 * where a way is given: topology (cs_topo_load; NULL spec: this machine),
 * managed (none yet: the jobs bring theirs), control (cs_control_select by
 * name).  The trace file is opened (never through a symbolic link).  -1
 * after a message.  Disassembly frees what the engine then holds - trace,
 * policy, managed cpus and topology (unless keep_node: the caller's, shared
 * by several runs), run_id - not the jobs, the profile or the store.
 */
struct cs_engine_parts {
    struct cs_topo *topo;
    const char *topology;
    hwloc_bitmap_t managed;
    struct cs_policy *policy;
    const struct cs_control_ops *ctl;
    const char *control;
    const struct cs_counter_ops *cnt;  /* NULL: none */
    const char *cnt_arg;
    const struct cs_profile *profile;
    const char *trace;                 /* a file to write the trace to, NULL: none */
    const struct cs_host_ops *host;
    void *host_arg;
};
int cs_engine_assemble(struct cs_engine *e, const struct cs_engine_parts *p);
void cs_engine_disassemble(struct cs_engine *e, int keep_node);

/* e->host set: the run, until its jobs are done or its host stops it.
 * The exit status for main(). */
int cs_engine_run(struct cs_engine *e);
/* Stop job j on purpose (from a hook during the run): thaw it, SIGTERM its
 * instance through the host, SIGKILL after e->kill_timeout (the host's).
 * Its end is then neither a failure nor restarted.  Nothing for a host that
 * never signals its jobs or a model's instance. */
void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j);

#endif
