/*
 * engine.c - runs jobs under a policy, epoch by epoch, step by step.
 *
 *   start:  host begin (signals, guardian) -> backend init -> job_prepare
 *           (all jobs) -> every instance started by the host, put under
 *           control (attached, confined, frozen) and let go
 *   epoch:  snapshot -> policy plan (or the fallback plan) -> steps
 *   step:   switch (freeze leavers, move cpusets, thaw entrants)
 *           -> wait for the step's end, a job's end, a signal
 *           -> measure CPU time per job, write the trace line
 *   end:    every job released (thawed, unconfined, cgroups removed)
 *           -> backend fini -> host end (guardian told "done", summary)
 *
 * Whose the jobs are is the host's business (host.h): `cosched run`'s
 * forked processes (local/), the node engine's Slurm steps (node/), a
 * simulated node's model (sim/).  The engine asks the host through its ops
 * and knows none of them by name.
 *
 * A job that ends (or is restarted under --window) ends the epoch at once and
 * the policy is asked again.  A policy that fails gets the fallback plan for
 * that epoch: every live job on every managed cpu, nobody frozen.
 *
 * Exit status: 0 when every job instance exited 0; otherwise the status of the
 * first failed job in job order (its exit code, or 128+signal).  A run ended
 * by a signal (cs_engine_stop) exits 128+signal.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/engine.h"
#include "engine/internal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "engine/omppage.h"
#include "engine/numa.h"
#include "engine/trace.h"
#include "core/store.h"
#include "core/json.h"

/* The engine's state during a run (e->run). */
struct cs_run {
    int stopping;             /* cs_engine_stop(): no restarts, the fallback plan */
    int stop_signal;
    int window_closed;
    int aborted;              /* a job could not be started: the run stops */
};

/* ------------------------------------------------------------ helpers */

hwloc_const_bitmap_t cs_job_home(const struct cs_engine *e, const struct cs_job *j)
{
    return j->allowed ? j->allowed : e->managed;
}

static int nlive(const struct cs_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->njobs; i++)
        n += e->jobs[i]->state == CS_JOB_LIVE;
    return n;
}

/* Open the job's output destinations before its first instance. */

int cs_engine_nlive(const struct cs_engine *e)
{
    return nlive(e);
}

/* Bookkeeping of a new instance whose leader is pid (0 on a simulated node). */
static void instance_begun(struct cs_job *j, pid_t pid)
{
    j->pid = pid;
    j->state = CS_JOB_LIVE;
    j->runs_started++;
    j->t_instance_start = cs_now();
    if (j->runs_started == 1)
        j->t_first_start = j->t_instance_start;
    j->last_run_end = j->t_instance_start;
}

/*
 * Put an instance under control - the one sequence for every host: attached
 * to the control backend, confined to its home cores (unless it is there
 * already: a Slurm step inside its allocation), frozen until the plan runs
 * it (never a job that must not be; a freeze that fails is tried three
 * times: a forked child sleeping before its exec freezes at once unless the
 * run queue is crowded; if it does not, it runs confined and the first
 * switch freezes it - not worth refusing the job for), then followed by the
 * counters (nothing of it has run yet: the host lets it go after this).
 */
static int under_control(struct cs_engine *e, struct cs_job *j, pid_t pid, int confined)
{
    instance_begun(j, pid);
    if (e->ctl->job_attach(e, j, pid) < 0 ||
        (!confined && e->ctl->set_cpus(e, j, cs_job_home(e, j), j->mems) < 0)) {
        cs_err("job %d (%s): could not be put under control; it is not started", j->id, j->name);
        return -1;
    }
    hwloc_bitmap_copy(j->cpus, cs_job_home(e, j));
    j->frozen = 0;
    for (int tries = 0; tries < 3 && !j->frozen && !j->nofreeze; tries++)
        j->frozen = e->ctl->freeze(e, j) == 0;
    if (e->cnt->job_attach(e, j, pid) < 0)
        cs_warn("job %d (%s): counters could not follow this instance; it runs unmeasured", j->id, j->name);
    j->fresh = 1;
    cs_trace_job(e, j, "start", 0);
    return 0;
}

/* Start an instance of j (prepared) through the host; it runs its first
 * instruction only when the plan thaws it. */
static int start_instance(struct cs_engine *e, struct cs_job *j)
{
    pid_t pid = 0;

    if (e->host->start == NULL || e->host->start(e, j, &pid) < 0)
        return -1;
    if (under_control(e, j, pid, 0) < 0) {
        if (e->host->abandon)
            e->host->abandon(e, j);   /* nothing of the job ran */
        j->pid = 0;
        return -1;
    }
    if (e->host->go)
        e->host->go(e, j);
    return 0;
}

/* A job's per-run state: its cpu and memory sets, its metrics (unknown). */
static void job_alloc(struct cs_engine *e, struct cs_job *j)
{
    j->cpus = hwloc_bitmap_alloc();
    j->mems = hwloc_bitmap_alloc();
    j->step_cpus = hwloc_bitmap_alloc();
    if (e->profile) {
        j->metric = malloc(e->profile->nmetrics * sizeof *j->metric);
        for (int m = 0; m < e->profile->nmetrics; m++)
            j->metric[m] = NAN;
    }
}

/*
 * A job that exists already - the first task of a Slurm step, inside
 * Slurm's cgroups - joins the run: placed, prepared, put under control and
 * frozen until a plan runs it (the epoch in progress is cut and the policy
 * asked: most run it a switch later; a policy that finishes its epochs, as
 * flca does, at the end of the epoch).
 */
int cs_engine_add(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    struct cs_job **nj = realloc(e->jobs, (e->njobs + 1) * sizeof *nj);

    if (nj == NULL) {
        cs_err("job %d (%s): out of memory", j->id, j->name);
        return -1;
    }
    e->jobs = nj;
    job_alloc(e, j);
    if (e->ctl->job_prepare(e, j) < 0)
        return -1;
    if (under_control(e, j, pid, 1) < 0) {
        e->ctl->job_release(e, j);
        return -1;
    }
    e->jobs[e->njobs++] = j;
    if (j->allowed)
        hwloc_bitmap_or(e->managed, e->managed, j->allowed);
    return 0;
}

void cs_engine_drop(struct cs_engine *e, struct cs_job *j, const char *why)
{
    uint64_t ns;

    if (j->state != CS_JOB_LIVE)
        return;
    e->cnt->instance_ended(e, j);
    if (e->ctl->cpu_time(e, j, &ns) == 0)
        j->cpu_ns = ns;
    j->wall += cs_now() - j->t_instance_start;
    j->runs_done = 1;
    cs_trace_job(e, j, "end", 0);
    e->cnt->job_release(e, j);
    e->ctl->job_release(e, j);
    cs_omppage_close(j);
    j->released = 1;
    j->frozen = 0;
    j->pid = 0;
    j->state = CS_JOB_ENDED;
    j->t_end = cs_now();
    cs_info("job %d (%s) left the %s: %s", j->id, j->name, e->host->name, why);
    if (j->allowed) {   /* the managed cpus: the live jobs' own */
        hwloc_bitmap_zero(e->managed);
        for (int i = 0; i < e->njobs; i++)
            if (e->jobs[i]->state == CS_JOB_LIVE && e->jobs[i]->allowed)
                hwloc_bitmap_or(e->managed, e->managed, e->jobs[i]->allowed);
    }
}

void cs_engine_forget(struct cs_engine *e, void (*free_job)(struct cs_job *j))
{
    int k = 0;

    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_ENDED)
            e->jobs[k++] = j;
        else
            free_job(j);
    }
    e->njobs = k;
}

void cs_engine_set_policy(struct cs_engine *e, struct cs_policy *p)
{
    if (e->policy)
        cs_policy_free(e->policy);
    e->policy = p;
}

int cs_engine_omp_page(struct cs_engine *e, struct cs_job *j)
{
    if (j->state != CS_JOB_LIVE || cs_policy_shares_cpus(e->policy) || cs_omppage_open(j) < 0)
        return -1;
    return fcntl(cs_omppage_fd(j), F_DUPFD_CLOEXEC, 3);
}

/* What a plan carries beside its steps (policy.h): each characterization
 * result counted (unless degraded), traced and stored; each job's info from
 * the policy hung on the job for this epoch (status, the trace), none where
 * the policy said nothing.  Only after a plan() that succeeded: a fallback
 * epoch keeps the last info. */
static void plan_results(struct cs_engine *e, struct cs_plan *p)
{
    for (int i = 0; i < p->nresults; i++)
        for (int k = 0; k < e->njobs; k++)
            if (e->jobs[k] && e->jobs[k]->id == p->results[i].job) {
                if (!p->results[i].r.degraded)   /* a degraded result measured nothing */
                    e->jobs[k]->characterized++;
                cs_trace_characterized(e, e->jobs[k], &p->results[i].r);
                cs_store_result(e->store, e->jobs[k], &p->results[i].r);
            }
    for (int k = 0; k < e->njobs; k++) {
        json_decref(e->jobs[k]->policy_info);
        e->jobs[k]->policy_info = NULL;
    }
    for (int i = 0; i < p->ninfo; i++)
        for (int k = 0; k < e->njobs; k++)
            if (e->jobs[k]->id == p->info[i].job && p->info[i].json) {
                e->jobs[k]->policy_info = p->info[i].json;
                p->info[i].json = NULL;
            }
}

/* ------------------------------------------------------------ switching */

struct stepstate {
    int *run;             /* per job index: runs in this step (see step_members) */
    int njobs;            /* jobs when the step began (serve adds jobs during it) */
    const struct cs_plan_step *st;   /* the step (its cpus go to the trace) */
    double t_start, t_plan_end, switch_us;
    int fallback;
    /* the managed cpus at the step's start and their idle time then
     * (control's cpu_idle; idle_ok 0: unknown), see idle_frozen() */
    hwloc_bitmap_t idle_cpus;
    double *idle0;
    int idle_cap, idle_ok;
};

static void measure_begin(struct cs_engine *e, struct stepstate *ss)
{
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        uint64_t ns;
        if (j->state == CS_JOB_LIVE && e->ctl->cpu_time(e, j, &ns) == 0)
            j->cpu_mark = ns;
    }
    /* last, nearest the step's start: the idle time of the managed cpus */
    ss->idle_ok = 0;
    if (e->ctl->cpu_idle == NULL)
        return;
    int n = hwloc_bitmap_weight(e->managed);
    if (n > ss->idle_cap) {
        double *p = realloc(ss->idle0, (size_t)n * sizeof *p);
        if (p == NULL)
            return;
        ss->idle0 = p;
        ss->idle_cap = n;
    }
    if (ss->idle_cpus == NULL)
        ss->idle_cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_copy(ss->idle_cpus, e->managed);
    ss->idle_ok = n > 0 && e->ctl->cpu_idle(e, ss->idle_cpus, ss->idle0) == 0;
}

/*
 * Work conservation, measured: the CPU-seconds the step's cpus sat idle
 * (what control's cpu_idle reports: the kernel's per-cpu idle time, or the
 * model's) while the plan held some live job frozen, split into cpus the
 * step gave to no running job (nobody) and cpus of a running job that left
 * them idle (held: fewer busy threads than cores, or it ended in the step).
 * Both 0 when no job was held; -1 when unknown (no cpu_idle, a failed read).
 * The step's cpus are the managed ones at its start; a job the plan ran
 * holds the cpus it ran on (step_cpus), a job that is never frozen the ones
 * it is on.  Held means live at the step's start and not in the plan: an
 * instance waiting for its first quantum is held like any other (it could
 * run); one restarted during the step (--window) follows one the plan ran.
 * A job that registered during the step (serve) is not in it.  idle: each
 * of the step's cpus' idle seconds in the step (step_end), NULL: unknown.
 */
static int idle_frozen(struct cs_engine *e, const struct stepstate *ss, const int *was_live, const double *idle,
                       double *nobody, double *held)
{
    int someone_held = 0, k = 0;
    hwloc_bitmap_t used;

    *nobody = *held = 0;
    if (idle == NULL)
        return -1;
    used = hwloc_bitmap_alloc();
    for (int i = 0; i < ss->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (!was_live[i])
            continue;
        if (ss->run[i] > 0) {
            if (j->step_cpus)
                hwloc_bitmap_or(used, used, j->step_cpus);
        } else if (ss->run[i] < 0)
            hwloc_bitmap_or(used, used, j->cpus);
        else
            someone_held = 1;
    }
    for (int c = hwloc_bitmap_first(ss->idle_cpus); someone_held && c >= 0;
         c = hwloc_bitmap_next(ss->idle_cpus, c), k++) {
        double d = idle[k];
        if (d <= 0)
            continue;
        if (hwloc_bitmap_isset(used, (unsigned)c))
            *held += d;
        else
            *nobody += d;
    }
    hwloc_bitmap_free(used);
    return 0;
}

/* Read the step's counts of job j, which had cpus in it, and turn them into metrics. */
static void measure_counters(struct cs_engine *e, struct cs_job *j, double seconds, hwloc_const_bitmap_t cpus)
{
    struct cs_counts c = { 0 };

    j->metric_flags = 0;
    if (e->profile == NULL || j->metric == NULL)
        return;
    if (e->cnt->read(e, j, &c) < 0 || !(c.flags & CS_COUNTS_VALID)) {
        for (int m = 0; m < e->profile->nmetrics; m++)
            j->metric[m] = NAN;
    } else {
        if (c.seconds <= 0)
            c.seconds = seconds;
        int ncores = 0;
        for (int k = 0; k < e->topo->ncores; k++)
            ncores += hwloc_bitmap_intersects(e->topo->cores[k].pus, cpus);
        for (int m = 0; m < e->profile->nmetrics; m++)
            if (cs_profile_eval(e->profile, m, c.v, c.seconds, ncores ? ncores : 1, &j->metric[m]) < 0)
                j->metric[m] = NAN;
        j->metric_flags = c.flags;
    }
    cs_counters_record(e, j, j->steps_live, &c);
    j->steps_live++;
}

/* End of a step (complete or cut short): account and trace. */
static void step_end(struct cs_engine *e, struct stepstate *ss, const int *was_live)
{
    double now = cs_now();
    double wall = now - ss->t_start;
    int nidle = ss->idle_ok ? hwloc_bitmap_weight(ss->idle_cpus) : 0;
    double idle[nidle + 1], nobody, held;
    /* first, nearest the step's end (the jobs' CPU times take a while); then
     * each cpu's idle seconds in the step, for the trace and idle_frozen */
    int idle_known = ss->idle_ok && e->ctl->cpu_idle(e, ss->idle_cpus, idle) == 0;
    for (int k = 0; idle_known && k < nidle; k++)
        idle[k] -= ss->idle0[k];

    json_t *line = cs_trace_step(e, ss->t_start, now, ss->t_plan_end, ss->switch_us, ss->fallback);
    for (int i = 0; i < ss->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        uint64_t ns = j->cpu_mark;
        double cpu;
        if (!was_live[i])
            continue;
        if (j->released)
            continue;   /* a step that left during the step: released, its counts with it */
        if (e->ctl->cpu_time(e, j, &ns) < 0)
            ns = j->cpu_mark;
        cpu = ns > j->cpu_mark ? (ns - j->cpu_mark) * 1e-9 : 0.0;
        j->cpu_ns = ns;
        /* an instance restarted during the step starts frozen: the step
         * belongs to the instance that ran in it */
        int fresh = j->fresh;
        int frozen_now = j->frozen && !fresh;
        j->fresh = 0;
        j->last_step_ran = ss->run[i] && !frozen_now;
        /* the CPUs of the step: where it ran (an instance that ended in it
         * is confined to its home since), else where it is confined */
        hwloc_const_bitmap_t given =
            j->last_step_ran && j->step_cpus && !hwloc_bitmap_iszero(j->step_cpus) ? j->step_cpus : j->cpus;
        measure_counters(e, j, now - ss->t_start, given);
        j->last_step_wall = wall;
        j->last_step_cpu = cpu;
        j->last_step_ncpus = hwloc_bitmap_weight(given);
        cs_job_stepped(j, j->last_step_ran, now);
        cs_omppage_step(j);
        if (e->trace) {
            /* the cpus of the step: an instance that ended in it may have been unconfined since */
            char *c = cs_bitmap_list(ss->run[i] > 0 && ss->st && !j->allowed ? ss->st->jobs[ss->run[i] - 1].cpus
                                                                              : j->cpus);
            /* the state shown: the mechanism's, except for an instance started
             * during the step (or before the first), which starts frozen: the
             * plan's then (its predecessor ran, or it waited frozen); "stuck"
             * only where the mechanism disagrees with the plan */
            int shown_frozen = fresh ? !ss->run[i] : j->frozen;
            cs_trace_step_job(line, e, j, (!ss->run[i] == !shown_frozen) ? "stuck" : ss->run[i] ? "run" : "frozen",
                              c, cpu);
            free(c);
        }
    }
    if (idle_known)
        cs_trace_step_cpu_idle(line, ss->idle_cpus, idle);
    if (idle_frozen(e, ss, was_live, idle_known ? idle : NULL, &nobody, &held) == 0) {
        e->idle_nobody_s += nobody;
        e->idle_held_s += held;
        e->idle_steps++;
        cs_trace_step_idle_frozen(line, nobody, held);
    }
    cs_trace_step_put(e, line);
    e->switch_us_total += ss->switch_us;
    e->switches++;
    e->step_seq++;
}


/* ------------------------------------------------------------ the loop */

void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j)
{
    /* a model's instance has no process to signal; a host that never
     * signals its jobs has no kill */
    if (j->state != CS_JOB_LIVE || j->pid <= 0 || j->stop_deadline > 0 || e->host->kill == NULL)
        return;
    j->stop_deadline = cs_now() + e->kill_timeout;
    if (j->frozen && e->ctl->thaw(e, j) == 0)   /* a frozen task cannot act on SIGTERM */
        j->frozen = 0;
    e->host->kill(e, j, SIGTERM);   /* SIGKILL at the deadline: the host's (its wake) */
}

static int job_still_restartable(struct cs_engine *e)
{
    const struct cs_run *rs = e->run;
    return e->window > 0 && !rs->stopping && !rs->window_closed && cs_now() - e->t0 < e->window;
}

/*
 * The instance of job j ended with wait status `status` (rusage ru, NULL on a
 * simulated node): account it, then restart the job under --window or end it.
 * Both ways an instance ends - reaped by its host or completed in the model -
 * come here through the host.
 */
void cs_engine_ended(struct cs_engine *e, struct cs_job *j, int status, const struct rusage *ru)
{
    struct cs_run *rs = e->run;

    if (e->ctl->instance_ended && ru)
        e->ctl->instance_ended(e, j, ru);
    e->cnt->instance_ended(e, j);
    uint64_t ns;
    if (e->ctl->cpu_time(e, j, &ns) == 0)
        j->cpu_ns = ns;
    j->wall += cs_now() - j->t_instance_start;
    j->last_status = status;
    int was_stopped = j->stop_deadline > 0;
    int killed_by_us = (rs->window_closed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                       (was_stopped && WIFSIGNALED(status));
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    j->cut_by_window = rs->window_closed && killed_by_us;
    j->stopped_by_us = !j->cut_by_window && was_stopped && WIFSIGNALED(status);
    if (ok)
        j->runs_done++;
    else if (!killed_by_us) {
        j->failed = 1;
        if (WIFEXITED(status))
            cs_warn("job %d (%s): exited with status %d", j->id, j->name, WEXITSTATUS(status));
        else if (WIFSIGNALED(status) && !rs->stopping)
            cs_warn("job %d (%s): killed by signal %d (%s)", j->id, j->name, WTERMSIG(status),
                    strsignal(WTERMSIG(status)));
    }
    cs_trace_job(e, j, "end", status);
    j->pid = 0;
    /* processes the instance left behind stay in its container: never
     * leave them frozen or confined while the run goes on */
    if (j->frozen && e->ctl->thaw(e, j) == 0)
        j->frozen = 0;
    if (!hwloc_bitmap_isequal(j->cpus, cs_job_home(e, j)) &&
        e->ctl->set_cpus(e, j, cs_job_home(e, j), e->all_mems) == 0) {
        hwloc_bitmap_copy(j->cpus, cs_job_home(e, j));
        cs_omppage_bump(j);
    }
    j->frozen = 0;
    if (job_still_restartable(e) && !(j->failed && !ok) && !was_stopped) {
        j->state = CS_JOB_WAITING;
        if (start_instance(e, j) < 0) {
            j->failed = 1;
            j->state = CS_JOB_ENDED;
        }
    } else {
        if (j->failed && !ok && e->window > 0 && !rs->stopping)
            cs_warn("job %d (%s): not restarted after a failure", j->id, j->name);
        j->state = CS_JOB_ENDED;
        j->t_end = cs_now();
    }
}


/* Thaw live job j and give it its home cores. */
void cs_engine_unleash(struct cs_engine *e, struct cs_job *j)
{
    if (j->state != CS_JOB_LIVE)
        return;
    hwloc_const_bitmap_t home = cs_job_home(e, j);
    if (!hwloc_bitmap_isequal(j->cpus, home) && e->ctl->set_cpus(e, j, home, e->all_mems) == 0) {
        hwloc_bitmap_copy(j->cpus, home);
        cs_omppage_bump(j);
    }
    if (j->frozen && e->ctl->thaw(e, j) == 0)
        j->frozen = 0;
}

void cs_engine_stop(struct cs_engine *e, int sig)
{
    if (e->run->stopping)
        return;
    e->run->stopping = 1;
    e->run->stop_signal = sig;
}

/* Send sig to every live instance; those the host ended at once (a model's)
 * end as killed by sig.  How many ended so. */
static int kill_all(struct cs_engine *e, int sig)
{
    int gone = 0;

    if (e->host->kill == NULL)
        return 0;
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || e->host->kill(e, j, sig) != 1)
            continue;
        cs_engine_ended(e, j, sig, NULL);   /* the wait status of a death by sig */
        gone++;
    }
    return gone;
}

int cs_engine_signalfd(void)
{
    sigset_t set;
    int fd;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if ((fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
        cs_err("signalfd: %s", strerror(errno));
    return fd;
}

/*
 * Wait until `until` (cs_now() time) or until the host says the epoch must
 * end (a signal, a job's end, a job's arrival): the host's own wait (a
 * model's time), else a poll of the host's descriptors.  Returns 1 when the
 * epoch must end early.
 */
static int wait_step(struct cs_engine *e, double until)
{
    static struct pollfd *pf;
    static int pfcap;
    static int poll_failed;

    if (e->host->wait)
        return e->host->wait(e, until);
    for (;;) {
        int n, ms;
        double left = until - cs_now();
        int nhost = e->host->nfds ? e->host->nfds(e) : 0;

        if (pfcap < nhost + 1) {
            struct pollfd *np = realloc(pf, (nhost + 1) * sizeof *pf);
            if (np == NULL) {
                cs_err("out of memory waiting for %d descriptor(s)", nhost);
                return 1;
            }
            pf = np;
            pfcap = nhost + 1;
        }
        if (left <= 0)
            return 0;
        double wake = e->host->wake ? e->host->wake(e) : 0;
        if (wake > 0 && (wake -= cs_now()) < left)
            left = wake > 0 ? wake : 0;
        n = nhost > 0 ? e->host->pollfds(e, pf, nhost) : 0;
        ms = (int)ceil(left * 1000.0);
        if (poll(pf, n, ms) < 0) {
            if (errno == EINTR)
                continue;
            /* never spin blind: signals and ended jobs are still handled */
            if (!poll_failed++)
                cs_err("waiting for %d descriptor(s) failed: %s; job output may be delayed", n, strerror(errno));
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            for (int k = 0; k < n; k++)
                pf[k].revents = POLLIN;
        }
        if (n > 0 && e->host->ready(e, pf, n))
            return 1;
    }
}

static int exit_status(struct cs_engine *e)
{
    const struct cs_run *rs = e->run;

    if (rs->aborted)
        return 1;
    if (rs->stopping)
        return 128 + rs->stop_signal;
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (!j->failed)
            continue;
        if (j->runs_started == 0)
            return 1;
        if (WIFEXITED(j->last_status))
            return WEXITSTATUS(j->last_status) ? WEXITSTATUS(j->last_status) : 1;
        if (WIFSIGNALED(j->last_status))
            return 128 + WTERMSIG(j->last_status);
        return 1;
    }
    return 0;
}

int cs_engine_run(struct cs_engine *e)
{
    struct cs_run rs = { 0 };
    struct stepstate ss = { 0 };
    struct cs_plan plan = { 0 };
    int cap = e->njobs + 1;
    int *was_live = calloc(cap, sizeof *was_live);
    int status = 1, nprepared = 0, istep = 0;

    e->run = &rs;
    ss.run = calloc(cap, sizeof *ss.run);
    e->t0 = cs_now();
    e->all_mems = hwloc_bitmap_alloc();
    for (int k = 0; k < e->topo->nnumas; k++)
        hwloc_bitmap_set(e->all_mems, (unsigned)e->topo->numas[k].os_index);
    if (e->run_id == NULL)
        e->run_id = cs_strdup_printf("%d", (int)getpid());
    if (e->trace)
        cs_trace_run(e, e->host->command,
                     e->policy ? cs_policy_name(e->policy) : NULL, e->ctl ? e->ctl->name : NULL);

    if (e->host->begin && e->host->begin(e) < 0)
        goto out;
    if (e->cnt == NULL)
        e->cnt = &cs_counters_none;
    if (e->cnt->init(e, e->cnt_arg, e->profile) < 0) {
        if (e->host->end)
            e->host->end(e, 0);
        goto out;
    }
    if (e->ctl->init(e) < 0) {
        e->cnt->fini(e);
        if (e->host->end)
            e->host->end(e, 0);
        goto out;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        job_alloc(e, j);
        if (e->ctl->job_prepare(e, j) < 0)
            goto release;
        nprepared++;
    }
    for (int i = 0; i < e->njobs; i++)
        if (start_instance(e, e->jobs[i]) < 0) {
            e->jobs[i]->failed = 1;
            e->jobs[i]->state = CS_JOB_ENDED;
            /* nothing of it ran; stop the others too: the run would not be what was asked */
            rs.aborted = rs.stopping = 1;
            kill_all(e, SIGKILL);
            break;
        }

    for (;;) {
        /* the host may stop the run (the node engine: a signal, or idle) */
        if (e->host->tidy && e->host->tidy(e))
            break;
        if (nlive(e) == 0) {
            if (!(e->host->more && e->host->more(e)))
                break;
            wait_step(e, cs_now() + 1.0);   /* jobs may come */
            istep = plan.nsteps;
            continue;
        }
        if (e->window > 0 && !rs.window_closed && cs_now() - e->t0 >= e->window) {
            rs.window_closed = 1;
            cs_info("window of %g s closed: stopping the running instances", e->window);
            istep = plan.nsteps;   /* the old plan must not freeze them again */
            if (kill_all(e, SIGKILL) > 0)
                continue;
        }
        if (istep >= plan.nsteps) {
            cs_plan_free(&plan);
            istep = 0;
            e->epoch++;
            ss.fallback = 0;
            if (rs.stopping || rs.window_closed) {
                cs_engine_fallback_plan(e, &plan);
            } else if (cs_numa_sample_jobs(e), cs_policy_plan(e->policy, e, &plan) < 0) {
                e->nfallbacks++;
                ss.fallback = 1;
                cs_warn("policy %s failed in epoch %llu: every job runs on every managed cpu this epoch",
                        cs_policy_name(e->policy), (unsigned long long)e->epoch);
                cs_engine_fallback_plan(e, &plan);
            } else {
                plan_results(e, &plan);
                if (e->on_plan)
                    e->on_plan(e);
            }
        }
        const struct cs_plan_step *st = &plan.steps[istep++];
        if (e->njobs > cap) {
            cap = e->njobs * 2;
            free(ss.run);
            free(was_live);
            ss.run = calloc(cap, sizeof *ss.run);
            was_live = calloc(cap, sizeof *was_live);
        }
        ss.njobs = e->njobs;
        for (int i = 0; i < e->njobs; i++)
            was_live[i] = e->jobs[i]->state == CS_JOB_LIVE;
        ss.switch_us = cs_engine_switch(e, st, ss.run);
        ss.st = st;
        {
            hwloc_const_bitmap_t cpus_of[e->njobs + 1];
            for (int i = 0; i < e->njobs; i++)
                cpus_of[i] = (e->jobs[i]->state == CS_JOB_LIVE && ss.run[i] && !e->jobs[i]->frozen)
                                 ? e->jobs[i]->cpus : NULL;
            e->cnt->step_begin(e, cpus_of);
        }
        measure_begin(e, &ss);
        ss.t_start = cs_now();
        ss.t_plan_end = ss.t_start + st->duration;
        if (e->host->stepped)
            e->host->stepped(e, ss.run);
        double until = ss.t_plan_end;
        if (e->window > 0 && !rs.window_closed && e->t0 + e->window < until)
            until = e->t0 + e->window;
        int cut = wait_step(e, until);
        step_end(e, &ss, was_live);
        if (cut) {
            istep = plan.nsteps;   /* replan at once */
        }
    }
    status = exit_status(e);
    nprepared = e->njobs;   /* every job it holds now was prepared (or added) */

release:
    /* the jobs are gone (or never started), or the host stops with them
     * live: release their containers */
    for (int i = 0; i < nprepared; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state == CS_JOB_LIVE && e->host->abandon) {   /* only after a failed start */
            cs_engine_unleash(e, j);
            e->host->abandon(e, j);
            j->state = CS_JOB_ENDED;
        }
        e->cnt->job_release(e, j);
        e->ctl->job_release(e, j);
        cs_omppage_close(j);
    }
    e->ctl->fini(e);
    e->cnt->fini(e);
    if (e->host->end)
        e->host->end(e, nprepared == e->njobs);
out:
    cs_plan_free(&plan);
    hwloc_bitmap_free(e->all_mems);
    e->all_mems = NULL;
    free(ss.run);
    free(ss.idle0);
    if (ss.idle_cpus)
        hwloc_bitmap_free(ss.idle_cpus);
    free(was_live);
    e->run = NULL;
    return status;
}
