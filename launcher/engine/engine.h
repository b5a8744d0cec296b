/*
 * engine/engine.h - the engine (engine.c): runs jobs under a policy, epoch by
 * epoch, step by step, on the state of struct cs_engine (core/engine_state.h).
 *
 * May use: core/, control/, counters/, policy/, shared/.  Used by: node/,
 * sim/, cli/.
 */
#ifndef COSCHED_ENGINE_H
#define COSCHED_ENGINE_H

#include "core/job.h"
#include "core/engine_state.h"

/* For a host of external jobs (the node engine):
 * adopt: j (id, name, threads, allowed filled; ctl/cnt state empty) becomes a
 *   live job whose first task is pid: prepared, attached, confined to its
 *   allowed cores and frozen (unless nofreeze) until the plan runs it.
 * drop: j's tasks are gone: counters, container and OpenMP page released,
 *   state ENDED. */
int cs_engine_adopt(struct cs_engine *e, struct cs_job *j, pid_t pid);
void cs_engine_drop(struct cs_engine *e, struct cs_job *j, const char *why);
/* omp_page: a new descriptor (close-on-exec, the caller's to close) of live
 *   job j's OpenMP page (shared/omppage.h), the page made at the first call;
 *   -1 when the policy runs jobs on the same cpus (no shim there) or no page
 *   could be made (a warning).  The engine owns the page: it bumps its
 *   generation with every change of j's cpus (do_switch, as for its own
 *   jobs), reads team and regions back each step, and closes it at drop. */
int cs_engine_omp_page(struct cs_engine *e, struct cs_job *j);
/* The cores a job lives on when no plan says otherwise. */
hwloc_const_bitmap_t cs_job_home(const struct cs_engine *e, const struct cs_job *j);

int cs_engine_run(struct cs_engine *e);  /* exit status for main() */
/* Stop job j on purpose (from a hook during the run): thaw it, SIGTERM its
 * process group, SIGKILL after e->kill_timeout.  Its end is then neither a
 * failure nor restarted. */
void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j);

/*
 * The host of a run whose jobs the engine does not fork itself (e->host;
 * NULL for `cosched run`: jobs forked, signals forwarded to them, a
 * guardian).  The node engine (node/serve.c) and the simulated node
 * (sim/sim.c) each fill one and set e->host and e->host_arg (their own
 * state) before cs_engine_run(), as a command registers on_plan: the engine
 * calls them and knows neither by name.
 *
 *  - Virtual time (start, advance and kill set: the simulated node).  An
 *    instance starts in the host's model instead of fork/exec (the control
 *    backend then attaches, confines and freezes it as usual); a step is
 *    waited for with advance(): the model runs to `until` or to the first
 *    instance completion before it (the clock stops there), and the jobs
 *    whose instance completed come back in ended[] (at most e->njobs) and
 *    end exactly like reaped ones (exit 0); a --window closes by kill() of
 *    every live instance (they end as killed by SIGKILL, not a failure).
 *    No signal handling, no guardian, no job output.
 *  - Jobs from outside (external_jobs set: the node engine).  Jobs register
 *    through the host's descriptors (nfds, pollfds, ready) and are adopted
 *    with cs_engine_adopt(); the engine runs until SIGTERM/SIGINT or until
 *    tidy() says stop, never signals a job, releases every job (thawed,
 *    given back its cores) when it stops, and exits 0.
 */
struct pollfd;
struct cs_host_ops {
    const char *name;
    int external_jobs;
    int (*start)(struct cs_engine *e, struct cs_job *j);
    int (*advance)(struct cs_engine *e, double until, struct cs_job **ended);
    void (*kill)(struct cs_engine *e, struct cs_job *j);
    /* upper bound of pollfds(); the fds to watch beside the engine's own */
    int (*nfds)(struct cs_engine *e);
    int (*pollfds)(struct cs_engine *e, struct pollfd *pf, int max);
    /* handle what poll() reported for them; 1 when the set of jobs changed
     * (the epoch ends, the policy is asked again) */
    int (*ready)(struct cs_engine *e, const struct pollfd *pf, int n);
    /* the time (cs_now()) by which ready() must run again though none of
     * its fds moved; 0: none */
    double (*wake)(struct cs_engine *e);
    /* between steps: forget ended jobs; 1 when the engine should stop (idle) */
    int (*tidy)(struct cs_engine *e);
};

#endif
