/*
 * engine/host.h - the host contract: who a run's jobs belong to.
 *
 * The engine (engine.c) runs epochs and steps and owns the run's jobs
 * (e->jobs, e->njobs, e->managed, e->policy): it alone adds, adopts and
 * forgets them, through the functions below.  A host supplies the jobs'
 * instances and is told of events; it fills a struct cs_host_ops and sets
 * e->host and e->host_arg (its own state) before cs_engine_run(), as a
 * command registers on_plan.  Three hosts, beside each other above engine/:
 *
 *   local/  `cosched run`: instances forked, blocked before their exec until
 *           they are under control; their output passed through; signals
 *           forwarded to them; the guardian (cs_local_host)
 *   node/   `cosched serve`: Slurm steps that register over a socket, adopted
 *           with cs_engine_add(); never signalled (cs_node_host)
 *   sim/    `cosched simulate`: instances in a model's virtual time
 *           (cs_sim_host)
 *
 * The engine knows none of them by name: it asks the host through its ops,
 * and an op a host leaves NULL has the meaning its comment gives.
 *
 * An instance's life, as the engine drives it:
 *
 *   start()  -> put under control (attach, confine, counters, frozen) -> go()
 *      |            `-- failed: abandon() (nothing of it ran)
 *      |   the plan thaws and freezes it, step by step
 *      `-> its end: the host calls cs_engine_ended() (reaped, or completed in
 *          the model) -> restarted under --window or ended
 *
 * May use: core/, engine/.  Included by engine.h.
 */
#ifndef COSCHED_ENGINE_HOST_H
#define COSCHED_ENGINE_HOST_H

#include <sys/types.h>
#include <sys/resource.h>

struct cs_engine;
struct cs_job;
struct cs_policy;
struct pollfd;

struct cs_host_ops {
    const char *name;          /* for messages: "local", "node engine", "simulated node" */
    const char *command;       /* the trace's "command": "run", "serve", "simulate" */
    /* Before any job is prepared: signals, the guardian.  -1: no run (said why). */
    int (*begin)(struct cs_engine *e);
    /* After every job is released.  complete: every job was prepared (a
     * summary may be printed). */
    void (*end)(struct cs_engine *e, int complete);
    /* Start an instance of job j (prepared): a process that runs nothing of
     * the job before go() (*pid its leader, also its process group), or a
     * model's instance (*pid 0).  -1: not started (said why).  NULL: the host
     * starts nothing (its jobs come through cs_engine_add()). */
    int (*start)(struct cs_engine *e, struct cs_job *j, pid_t *pid);
    /* The instance start() made is under control (frozen): let it go. NULL: nothing to do. */
    void (*go)(struct cs_engine *e, struct cs_job *j);
    /* End j's instance, which must not run on (it could not be put under
     * control, or the run ends while it is live): killed and reaped, or
     * removed from the model.  NULL: not the engine's to end (Slurm's). */
    void (*abandon)(struct cs_engine *e, struct cs_job *j);
    /* Send sig to j's live instance: 0 sent (its end comes later through
     * cs_engine_ended()), 1 the instance is gone already (a model's: the
     * engine ends it as killed by sig).  NULL: the host's jobs are never
     * signalled by the engine (Slurm signals its steps). */
    int (*kill)(struct cs_engine *e, struct cs_job *j, int sig);
    /* Wait for a step until `until` in the host's own time (a model advances
     * to it, or to the first completion before it); 1 when the epoch must end
     * early.  NULL: the engine polls the host's descriptors (below). */
    int (*wait)(struct cs_engine *e, double until);
    /* Upper bound of pollfds(); the descriptors to watch (signals, job
     * output, a socket, ...). */
    int (*nfds)(struct cs_engine *e);
    int (*pollfds)(struct cs_engine *e, struct pollfd *pf, int max);
    /* Handle what poll() reported for them (on a failed poll, every one is
     * marked readable); 1 when the epoch must end (jobs came or went, a
     * signal). */
    int (*ready)(struct cs_engine *e, const struct pollfd *pf, int n);
    /* The time (cs_now()) by which ready() must run again though none of
     * its descriptors moved; 0: none. */
    double (*wake)(struct cs_engine *e);
    /* A step begins; run[i]: job i of e->jobs runs in it (--progress). */
    void (*stepped)(struct cs_engine *e, const int *run);
    /* Between steps: 1 when the run should stop now (the host's jobs are
     * released as they are: thawed, on their own cores). */
    int (*tidy)(struct cs_engine *e);
    /* No job is live: 1 while more may come (the engine waits for them),
     * NULL or 0: the run is over. */
    int (*more)(struct cs_engine *e);
};

/* ---- what a host asks of the engine (engine.c) ---- */

/* Job j (id, name, threads, allowed filled; ctl/cnt state empty), already
 * running as task pid inside its own confinement (a Slurm step), joins the
 * run: placed in e->jobs, prepared, attached and frozen (unless nofreeze)
 * until the plan runs it; e->managed grows by j->allowed.  -1: not added (the
 * job stays the caller's to free). */
int cs_engine_add(struct cs_engine *e, struct cs_job *j, pid_t pid);
/* j's tasks are gone: counters, container and OpenMP page released, state
 * ENDED; e->managed shrinks to the live jobs' allowed cores. */
void cs_engine_drop(struct cs_engine *e, struct cs_job *j, const char *why);
/* Remove the ended jobs from e->jobs, each given to free_job (between steps:
 * the host's tidy()). */
void cs_engine_forget(struct cs_engine *e, void (*free_job)(struct cs_job *j));
/* The run's policy from now on (the old one is freed). */
void cs_engine_set_policy(struct cs_engine *e, struct cs_policy *p);
/* The instance of j ended with wait status `status` (ru: its rusage, NULL
 * when none): accounted, then restarted under --window or ended. */
void cs_engine_ended(struct cs_engine *e, struct cs_job *j, int status, const struct rusage *ru);
/* A signal asks the run to stop: no restarts, the fallback plan from now
 * on, exit status 128+sig (the first one counts). */
void cs_engine_stop(struct cs_engine *e, int sig);
/* Thaw live job j and give it its home cores (before a signal reaches it:
 * a frozen task cannot act on one). */
void cs_engine_unleash(struct cs_engine *e, struct cs_job *j);
/* The run's summary on stderr (jobs, switches, idle time). */
void cs_engine_summary(struct cs_engine *e);
/* Live jobs. */
int cs_engine_nlive(const struct cs_engine *e);
/* A descriptor for SIGCHLD, SIGINT, SIGTERM and SIGHUP (blocked from now
 * on; SIGPIPE ignored), nonblocking; -1 after a message. */
int cs_engine_signalfd(void);

#endif
