/*
 * engine.c - runs jobs under a policy, epoch by epoch, step by step.
 *
 *   start:  guardian -> backend init -> job_prepare (all jobs)
 *           -> every job forked, attached and frozen before its exec
 *   epoch:  snapshot -> policy plan (or the fallback plan) -> steps
 *   step:   switch (freeze leavers, move cpusets, thaw entrants)
 *           -> wait for the step's end, a job's end, a signal
 *           -> measure CPU time per job, write the trace line
 *   end:    every job released (thawed, unconfined, cgroups removed)
 *           -> backend fini -> guardian told "done" -> summary
 *
 * On a host in virtual time (e->host with advance(): `cosched simulate`) the
 * same loop runs in the model's virtual time: instances start in the model
 * instead of being forked, a step is waited for by advancing the model, an
 * instance that completes in the model ends exactly like a reaped one, and
 * there is no guardian, no signal handling and no job output.  With a host
 * of external jobs (the node engine) jobs come and go through the host's
 * descriptors.  engine.h, struct cs_host_ops, says what each host does.
 *
 * A job that ends (or is restarted under --window) ends the epoch at once and
 * the policy is asked again.  A policy that fails gets the fallback plan for
 * that epoch: every live job on every managed cpu, nobody frozen.
 *
 * SIGINT, SIGTERM and SIGHUP are forwarded to every job (after thawing and
 * unconfining them, since a frozen task cannot act on a signal); after
 * --kill-timeout the stragglers get SIGKILL.  SIGKILL of cosched itself is
 * the guardian's business (guardian.c).
 *
 * Exit status: 0 when every job instance exited 0; otherwise the status of the
 * first failed job in job order (its exit code, or 128+signal).  A run ended
 * by a signal exits 128+signal.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/engine.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "shared/ompinject.h"
#include "engine/omppage.h"
#include "engine/numa.h"
#include "engine/trace.h"
#include "core/store.h"
#include "core/json.h"

/* The run's host (engine.h, struct cs_host_ops): a model in virtual time, or
 * jobs that register from outside; neither for `cosched run`. */
static int virtual_time(const struct cs_engine *e)
{
    return e->host && e->host->advance;
}

static int external_jobs(const struct cs_engine *e)
{
    return e->host && e->host->external_jobs;
}

/* ------------------------------------------------------------ output */

struct outbuf { int fd; FILE *to; struct cs_job *job; size_t len; char buf[4096]; };

static struct outbuf *outs;
static int nouts;

static void progress_clear(void);

static void out_flush_line(struct outbuf *o, size_t n)
{
    if (o->to == stdout || o->to == stderr)
        progress_clear();
    fprintf(o->to, "[%s] %.*s\n", o->job->name, (int)n, o->buf);
    fflush(o->to);
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
}

/* Read what a job wrote; prefix each complete line. 0 at EOF. */
static int out_read(struct outbuf *o)
{
    ssize_t r = read(o->fd, o->buf + o->len, sizeof o->buf - o->len);
    char *nl;


    if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return 1;
        if (o->len)
            out_flush_line(o, o->len);
        close(o->fd);
        o->fd = -1;
        return 0;
    }
    o->len += r;
    while ((nl = memchr(o->buf, '\n', o->len)) != NULL) {
        size_t n = nl - o->buf;
        if (o->to == stdout || o->to == stderr)
            progress_clear();
        fprintf(o->to, "[%s] %.*s\n", o->job->name, (int)n, o->buf);
        memmove(o->buf, nl + 1, o->len - n - 1);
        o->len -= n + 1;
    }
    if (o->len == sizeof o->buf)
        out_flush_line(o, o->len);
    fflush(o->to);
    return 1;
}

static void out_add(int fd, FILE *to, struct cs_job *j)
{
    outs = realloc(outs, (nouts + 1) * sizeof *outs);
    outs[nouts] = (struct outbuf){ .fd = fd, .to = to, .job = j };
    fcntl(fd, F_SETFL, O_NONBLOCK);
    nouts++;
}

/* Forget the outputs that reached EOF and were flushed (a --window run starts
 * thousands of instances: their pipes must not pile up). */
static void out_compact(void)
{
    int k = 0;
    for (int i = 0; i < nouts; i++)
        if (outs[i].fd >= 0 || outs[i].len > 0)
            outs[k++] = outs[i];
    nouts = k;
}

static void out_drain_all(void)
{
    for (int i = 0; i < nouts; i++)
        while (outs[i].fd >= 0 && out_read(&outs[i]) > 0)
            ;
}

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
static int job_outputs(struct cs_engine *e, struct cs_job *j, int *ofd, int *efd)
{
    int p[2];

    *ofd = *efd = -1;
    switch (e->output) {
    case CS_OUT_INHERIT:
        return 0;
    case CS_OUT_FILES: {
        char *o = cs_strdup_printf("%s/%s.out", e->output_dir, j->name);
        char *er = cs_strdup_printf("%s/%s.err", e->output_dir, j->name);
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (j->runs_started ? O_APPEND : O_TRUNC);
        *ofd = open(o, flags, 0644);
        *efd = *ofd >= 0 ? open(er, flags, 0644) : -1;
        if (*ofd < 0 || *efd < 0) {
            cs_err("job %d (%s): cannot open %s: %s", j->id, j->name, *ofd < 0 ? o : er, strerror(errno));
            if (*ofd >= 0)
                close(*ofd);
            free(o);
            free(er);
            return -1;
        }
        free(o);
        free(er);
        return 0;
    }
    case CS_OUT_PREFIX:
        if (pipe2(p, O_CLOEXEC) < 0)
            goto perr;
        out_add(p[0], stdout, j);
        *ofd = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
            goto perr;
        out_add(p[0], stderr, j);
        *efd = p[1];
        return 0;
    }
    return 0;
perr:
    cs_err("job %d (%s): cannot create an output pipe: %s", j->id, j->name, strerror(errno));
    if (*ofd >= 0)
        close(*ofd);
    return -1;
}

static void set_default_env(const char *k, const char *v, int force)
{
    if (force || getenv(k) == NULL)
        setenv(k, v, 1);
}

static const char *get_env(const char *name, void *arg)
{
    return getenv(name);
}

/* In the child: become the job.  Never returns. */
static void child_exec(struct cs_engine *e, struct cs_job *j, int gofd, int ofd, int efd)
{
    sigset_t none;
    struct sched_param sp = { 0 };
    char b[32];

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sched_setscheduler(0, SCHED_OTHER, &sp);
    setpgid(0, 0);
    /* jobs run in their own process group, in the background of a terminal:
     * reading it would stop them (SIGTTIN) for good */
    int nullfd = open("/dev/null", O_RDONLY);
    if (nullfd < 0 || dup2(nullfd, STDIN_FILENO) < 0)
        _exit(126);
    if (nullfd != STDIN_FILENO)
        close(nullfd);
    if (ofd >= 0 && dup2(ofd, STDOUT_FILENO) < 0)
        _exit(126);
    if (efd >= 0 && dup2(efd, STDERR_FILENO) < 0)
        _exit(126);
    /* wait until the engine has put us under control */
    ssize_t got;
    while ((got = read(gofd, b, 1)) < 0 && errno == EINTR)
        ;
    if (got != 1)      /* cosched died before letting us go: the job never starts */
        _exit(125);
    if (e->omp_env) {
        snprintf(b, sizeof b, "%d", j->threads);
        set_default_env("OMP_NUM_THREADS", b, j->threads_explicit);
        /* teams that follow the job's cores may spin as the runtime likes;
         * where the shim cannot apply, spinning threads on folded or frozen
         * cores cost > 100x (BENCHMARKS.md section 2): wait passively.  So
         * under a policy that runs jobs on the same cores at once (linux):
         * teams the size of the job's cores still overlap other jobs'. */
        char pre[4096];
        if (e->omp_shim && j->preloadable && !cs_policy_shares_cpus(e->policy) &&
            cs_omp_env_allows(get_env, NULL) &&
            cs_preload_value(e->omp_shim, getenv("LD_PRELOAD"), pre, sizeof pre)) {
            setenv("LD_PRELOAD", pre, 1);
            cs_omppage_exec(j);
#if !defined(__x86_64__)
            /* the shim resizes libomp's teams on x86-64 only (cosched-omp.c) */
            set_default_env("KMP_BLOCKTIME", "0", 0);
#endif
        } else {
            set_default_env("OMP_WAIT_POLICY", "passive", 0);
            set_default_env("GOMP_SPINCOUNT", "0", 0);
            set_default_env("KMP_BLOCKTIME", "0", 0);
        }
    }
    snprintf(b, sizeof b, "%d", j->id);
    setenv("COSCHED_JOB_ID", b, 1);
    setenv("COSCHED_JOB_NAME", j->name, 1);
    if (j->cwd && chdir(j->cwd) < 0) {
        fprintf(stderr, "cosched: job %d (%s): cannot change to directory %s: %s\n", j->id, j->name, j->cwd,
                strerror(errno));
        _exit(126);
    }
    execvp(j->argv[0], j->argv);
    fprintf(stderr, "cosched: job %d (%s): cannot execute %s: %s\n", j->id, j->name, j->argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
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

/* A host in virtual time: its model starts the instance (no process); it is put
 * under the control backend's control as a forked one would be, frozen
 * until the plan runs it. */
static int start_model_instance(struct cs_engine *e, struct cs_job *j)
{
    if (e->host->start(e, j) < 0)
        return -1;
    instance_begun(j, 0);
    if (e->ctl->job_attach(e, j, 0) < 0 || e->ctl->set_cpus(e, j, cs_job_home(e, j), j->mems) < 0) {
        cs_err("job %d (%s): could not be put under control; it is not started", j->id, j->name);
        e->host->kill(e, j);
        return -1;
    }
    hwloc_bitmap_copy(j->cpus, cs_job_home(e, j));
    if (e->cnt->job_attach(e, j, 0) < 0)
        cs_warn("job %d (%s): counters could not follow this instance; it runs unmeasured", j->id, j->name);
    j->frozen = e->ctl->freeze(e, j) == 0;
    j->fresh = 1;
    cs_trace_job(e, j, "start", 0);
    return 0;
}

/*
 * Start an instance: fork a child that blocks before exec, put it under
 * control (attach, cores, frozen), then let it go.  It runs its first
 * instruction only when the plan thaws it.
 */
static int start_instance(struct cs_engine *e, struct cs_job *j)
{
    int go[2], ofd, efd;
    pid_t pid;

    if (virtual_time(e))
        return start_model_instance(e, j);
    if (job_outputs(e, j, &ofd, &efd) < 0)
        return -1;
    if (e->omp_env && e->omp_shim && j->preloadable && !cs_policy_shares_cpus(e->policy))
        cs_omppage_open(j);   /* the shim's page (omppage.h); child_exec passes it with the shim */
    cs_omppage_reset(j);
    if (pipe2(go, O_CLOEXEC) < 0) {
        cs_err("job %d (%s): cannot create a pipe: %s", j->id, j->name, strerror(errno));
        goto fail_out;
    }
    pid = fork();
    if (pid < 0) {
        cs_err("job %d (%s): cannot fork: %s", j->id, j->name, strerror(errno));
        close(go[0]);
        close(go[1]);
        goto fail_out;
    }
    if (pid == 0) {
        close(go[1]);
        child_exec(e, j, go[0], ofd, efd);
    }
    close(go[0]);
    if (ofd >= 0)
        close(ofd);
    if (efd >= 0)
        close(efd);
    setpgid(pid, pid);
    instance_begun(j, pid);

    if (e->ctl->job_attach(e, j, pid) < 0 || e->ctl->set_cpus(e, j, cs_job_home(e, j), j->mems) < 0) {
        cs_err("job %d (%s): could not be put under control; it is not started", j->id, j->name);
        kill(pid, SIGKILL);   /* still blocked before exec: nothing of the job ran */
        close(go[1]);
        return -1;
    }
    hwloc_bitmap_copy(j->cpus, cs_job_home(e, j));
    if (e->cnt->job_attach(e, j, pid) < 0)
        cs_warn("job %d (%s): counters could not follow this instance; it runs unmeasured", j->id, j->name);
    /* The child sleeps in read(): it freezes at once unless the run queue is
     * crowded.  If it does not, it starts running (confined) and the first
     * switch freezes it - not worth refusing the job for. */
    j->frozen = 0;
    for (int tries = 0; tries < 3 && !j->frozen; tries++)
        j->frozen = e->ctl->freeze(e, j) == 0;
    if (write(go[1], "g", 1) != 1)
        cs_warn("job %d (%s): could not release the start pipe: %s", j->id, j->name, strerror(errno));
    close(go[1]);
    j->fresh = 1;
    cs_trace_job(e, j, "start", 0);
    cs_debug("job %d (%s): instance %d started as pid %d", j->id, j->name, j->runs_started, (int)pid);
    return 0;

fail_out:
    if (ofd >= 0)
        close(ofd);
    if (efd >= 0)
        close(efd);
    return -1;
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
 * A host of external jobs (the node engine): a job that exists already - the first task of a
 * Slurm step, inside Slurm's cgroups - is put under control: attached,
 * confined to its allocation and frozen until a plan runs it (the epoch in
 * progress is cut and the policy asked: most run it a switch later; a policy
 * that finishes its epochs, as flca does, at the end of the epoch).
 */
int cs_engine_adopt(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    job_alloc(e, j);
    if (e->ctl->job_prepare(e, j) < 0)
        return -1;
    if (e->ctl->job_attach(e, j, pid) < 0) {
        e->ctl->job_release(e, j);
        return -1;
    }
    j->pid = pid;
    j->state = CS_JOB_LIVE;
    j->runs_started = 1;
    j->t_instance_start = j->t_first_start = j->last_run_end = cs_now();
    hwloc_bitmap_copy(j->cpus, cs_job_home(e, j));
    if (e->cnt->job_attach(e, j, pid) < 0)
        cs_warn("job %d (%s): counters could not follow it; it runs unmeasured", j->id, j->name);
    j->frozen = !j->nofreeze && e->ctl->freeze(e, j) == 0;
    j->fresh = 1;
    cs_trace_job(e, j, "start", 0);
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
    j->frozen = 0;
    j->pid = 0;
    j->state = CS_JOB_ENDED;
    j->t_end = cs_now();
    cs_info("job %d (%s) left the node engine: %s", j->id, j->name, why);
}

int cs_engine_omp_page(struct cs_engine *e, struct cs_job *j)
{
    if (j->state != CS_JOB_LIVE || cs_policy_shares_cpus(e->policy) || cs_omppage_open(j) < 0)
        return -1;
    return fcntl(cs_omppage_fd(j), F_DUPFD_CLOEXEC, 3);
}

/* ------------------------------------------------------------ plans */

static void fallback_plan(struct cs_engine *e, struct cs_plan *p)
{
    int n = nlive(e), k = 0;

    p->nsteps = 1;
    p->steps = calloc(1, sizeof *p->steps);
    p->steps[0].duration = e->quantum;
    p->steps[0].jobs = calloc(n ? n : 1, sizeof *p->steps[0].jobs);
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->state == CS_JOB_LIVE) {
            p->steps[0].jobs[k].job = e->jobs[i]->id;
            p->steps[0].jobs[k].cpus = hwloc_bitmap_dup(cs_job_home(e, e->jobs[i]));
            p->steps[0].jobs[k].mems = hwloc_bitmap_alloc();
            k++;
        }
    p->steps[0].njobs = k;
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

/* Freeze every live job with run[i] == 0 that is not frozen yet, all at once
 * where the backend can (the waits overlap instead of adding up). */
static void freeze_jobs(struct cs_engine *e, const int *run)
{
    struct cs_job *leave[e->njobs];
    int frozen[e->njobs], n = 0;

    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->state == CS_JOB_LIVE && !(run && run[i]) && !e->jobs[i]->frozen &&
            e->jobs[i]->stop_deadline <= 0)   /* a job being stopped must be able to die */
            leave[n++] = e->jobs[i];
    if (n == 0)
        return;
    if (e->ctl->freeze_many) {
        e->ctl->freeze_many(e, leave, n, frozen);
        for (int k = 0; k < n; k++)
            leave[k]->frozen = frozen[k];
        return;
    }
    for (int k = 0; k < n; k++)
        leave[k]->frozen = e->ctl->freeze(e, leave[k]) == 0;
}

/*
 * Which job of the engine each plan entry names: run[i] = k + 1 when job i is
 * the step's k-th entry, -1 when job i cannot be frozen and keeps running
 * where it is (a step spanning nodes, see cs_engine_adopt), 0 otherwise.
 */
static void step_members(struct cs_engine *e, const struct cs_plan_step *st, int *run)
{
    int maxid = 0;
    for (int i = 0; i < e->njobs; i++) {
        run[i] = 0;
        if (e->jobs[i]->id > maxid)
            maxid = e->jobs[i]->id;
    }
    int *pos = malloc(((size_t)maxid + 1) * sizeof *pos);
    for (int i = 0; pos && i < e->njobs; i++)
        pos[e->jobs[i]->id] = i;
    for (int k = 0; pos && k < st->njobs; k++) {
        int id = st->jobs[k].job;
        if (id >= 1 && id <= maxid && e->jobs[pos[id]]->id == id && e->jobs[pos[id]]->state == CS_JOB_LIVE)
            run[pos[id]] = k + 1;
    }
    free(pos);
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->nofreeze && e->jobs[i]->state == CS_JOB_LIVE && !run[i])
            run[i] = -1;
}

/* Apply a step.  Returns the switch cost in µs. */
static double do_switch(struct cs_engine *e, const struct cs_plan_step *st, int *run)
{
    double t0 = cs_now();
    hwloc_bitmap_t want = hwloc_bitmap_alloc();

    step_members(e, st, run);
    /* 1. freeze the jobs that leave: the cores they free are never oversubscribed */
    freeze_jobs(e, run);
    /* 2. move cores and 3. thaw the entrants.  A job never leaves its home
     * (its Slurm allocation under serve): the plan's cores are cut to it, and
     * a plan giving it none of its own runs it on all of them. */
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        const struct cs_plan_job *pj;
        if (j->state != CS_JOB_LIVE || run[i] <= 0)
            continue;
        pj = &st->jobs[run[i] - 1];
        hwloc_bitmap_and(want, pj->cpus, cs_job_home(e, j));
        if (hwloc_bitmap_iszero(want))
            hwloc_bitmap_copy(want, cs_job_home(e, j));
        if (!hwloc_bitmap_isequal(j->cpus, want) ||
            (pj->mems && !hwloc_bitmap_iszero(pj->mems) && !hwloc_bitmap_isequal(j->mems, pj->mems))) {
            if (e->ctl->set_cpus(e, j, want, pj->mems) == 0) {
                hwloc_bitmap_copy(j->cpus, want);
                cs_omppage_bump(j);
                if (pj->mems && !hwloc_bitmap_iszero(pj->mems))
                    hwloc_bitmap_copy(j->mems, pj->mems);
            }
        }
    }
    hwloc_bitmap_free(want);
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        /* where it runs in this step, kept for the snapshot after it: an
         * instance ending in the step resets j->cpus to its home */
        if (j->step_cpus) {
            if (j->state == CS_JOB_LIVE && run[i] > 0)
                hwloc_bitmap_copy(j->step_cpus, j->cpus);
            else
                hwloc_bitmap_zero(j->step_cpus);
        }
        if (j->state == CS_JOB_LIVE && run[i] && j->frozen) {
            if (e->ctl->thaw(e, j) == 0)
                j->frozen = 0;
        }
    }
    return (cs_now() - t0) * 1e6;
}

/* Thaw every live job and give it every managed core (shutdown, fallback). */
static void unleash_all(struct cs_engine *e)
{
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE)
            continue;
        hwloc_const_bitmap_t home = cs_job_home(e, j);
        if (!hwloc_bitmap_isequal(j->cpus, home) && e->ctl->set_cpus(e, j, home, e->all_mems) == 0) {
            hwloc_bitmap_copy(j->cpus, home);
            cs_omppage_bump(j);
        }
        if (j->frozen && e->ctl->thaw(e, j) == 0)
            j->frozen = 0;
    }
}

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

/* Read the step's counts of job j and turn them into metrics. */
static void measure_counters(struct cs_engine *e, struct cs_job *j, double seconds)
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
            ncores += hwloc_bitmap_intersects(e->topo->cores[k].pus, j->cpus);
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
        if (external_jobs(e) && j->state != CS_JOB_LIVE)
            continue;   /* a step that left during the step: released, its counts with it */
        if (e->ctl->cpu_time(e, j, &ns) < 0)
            ns = j->cpu_mark;
        cpu = ns > j->cpu_mark ? (ns - j->cpu_mark) * 1e-9 : 0.0;
        j->cpu_ns = ns;
        measure_counters(e, j, now - ss->t_start);
        j->last_step_wall = wall;
        j->last_step_cpu = cpu;
        j->last_step_ncpus = hwloc_bitmap_weight(j->cpus);
        /* an instance restarted during the step starts frozen: the step
         * belongs to the instance that ran in it */
        int fresh = j->fresh;
        int frozen_now = j->frozen && !fresh;
        j->fresh = 0;
        j->last_step_ran = ss->run[i] && !frozen_now;
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

/*
 * The progress line (--progress): one line on stderr, redrawn in place at
 * every step.  It never shares a line with anything else: it is erased
 * before job output passes through (out_read) and before any message
 * (cs_log_before), and drawn again once the output is out (wait_step); it
 * is cut to the terminal's width, since a wrapped line cannot be erased with
 * one \r.  The end of the run erases it, so the summary starts on a clean
 * line.  With --output inherit the jobs write to the terminal themselves,
 * so run.c leaves it off unless asked (cosched(1), --progress).
 */
static char progress_text[1024];
static int progress_shown;

static void progress_clear(void)
{
    if (!progress_shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress_shown = 0;
}

static void progress_draw(void)
{
    if (progress_shown || !progress_text[0])
        return;
    fprintf(stderr, "\r\033[K%s", progress_text);
    fflush(stderr);
    progress_shown = 1;
}

static void progress_line(struct cs_engine *e, const int *run)
{
    size_t n = 0, cap = sizeof progress_text;
    int runs = 0, ended = 0, width = 0;
    struct winsize ws;
    double now = cs_now();

#define PUT(...) do { int w_ = snprintf(progress_text + n, cap - n, __VA_ARGS__); \
                      if (w_ > 0) n = (size_t)w_ < cap - n ? n + (size_t)w_ : cap - 1; } while (0)
    PUT("cosched: %.1fs epoch %llu |", now - e->t0, (unsigned long long)e->epoch);
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state == CS_JOB_LIVE && run[i]) {
            char *c = cs_bitmap_list(j->cpus);
            PUT(" %s[%s]", j->name, c ? c : "?");
            free(c);
        }
        runs += j->runs_done;
        ended += j->state == CS_JOB_ENDED;
    }
    if (e->window > 0)
        PUT(" | %d run%s completed, %.0fs of the %gs window left", runs, runs == 1 ? "" : "s",
            fmax(0.0, e->t0 + e->window - now), e->window);
    else
        PUT(" | %d of %d job%s completed", ended, e->njobs, e->njobs == 1 ? "" : "s");
#undef PUT
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
        width = ws.ws_col;
    if (width > 1 && n >= (size_t)width)
        progress_text[width - 1] = '\0';      /* bytes, not characters: at worst shorter */
    cs_log_before = progress_clear;
    progress_shown = 0;
    progress_draw();
}

/* ------------------------------------------------------------ the loop */

struct runstate {
    int sfd;
    int stopping;             /* a signal arrived: no restarts, forward */
    int stop_signal;
    double kill_deadline;
    int killed;
    int window_closed;
    int aborted;              /* a job could not be started: the run stops */
};

void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j)
{
    if (j->state != CS_JOB_LIVE || j->pid <= 0 || j->stop_deadline > 0 || external_jobs(e) || virtual_time(e))
        return;
    j->stop_deadline = cs_now() + e->kill_timeout;
    if (j->frozen && e->ctl->thaw(e, j) == 0)   /* a frozen task cannot act on SIGTERM */
        j->frozen = 0;
    killpg(j->pid, SIGTERM);
}

/* SIGKILL the jobs stopped on purpose whose time is up; seconds until the
 * next such deadline (or a large number). */
static double stop_deadlines(struct cs_engine *e)
{
    double next = 1e9, now = cs_now();

    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || j->stop_deadline <= 0 || j->stop_killed)
            continue;
        if (now >= j->stop_deadline) {
            killpg(j->pid, SIGKILL);
            j->stop_killed = 1;
        } else if (j->stop_deadline - now < next) {
            next = j->stop_deadline - now;
        }
    }
    return next;
}

static int job_still_restartable(struct cs_engine *e, struct runstate *rs)
{
    return e->window > 0 && !rs->stopping && !rs->window_closed && cs_now() - e->t0 < e->window;
}

/*
 * The instance of job j ended with wait status `status` (rusage ru, NULL on a
 * simulated node): account it, then restart the job under --window or end it.
 * Both ways an instance ends - reaped (reap) or completed in the model
 * (model_wait_step) - go through here.
 */
static void instance_end(struct cs_engine *e, struct runstate *rs, struct cs_job *j, int status,
                         const struct rusage *ru)
{
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
    if (job_still_restartable(e, rs) && !(j->failed && !ok) && !was_stopped) {
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

/* Reap ended instances.  Returns number of jobs whose instance ended. */
static int reap(struct cs_engine *e, struct runstate *rs)
{
    int ended = 0, status;
    struct rusage ru;
    pid_t pid;

    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        struct cs_job *j = NULL;
        for (int i = 0; i < e->njobs; i++)
            if (e->jobs[i]->state == CS_JOB_LIVE && e->jobs[i]->pid == pid)
                j = e->jobs[i];
        if (j == NULL) {
            cs_debug("reaped pid %d that is no job leader", (int)pid);
            continue;
        }
        ended++;
        instance_end(e, rs, j, status, &ru);
    }
    return ended;
}

/* A host in virtual time: the model runs to `until` or to the first completion in
 * the step; completed instances end as reaped ones do.  1 when some ended. */
static int model_wait_step(struct cs_engine *e, struct runstate *rs, double until)
{
    struct cs_job *ended[e->njobs + 1];
    int n = e->host->advance(e, until, ended);

    for (int k = 0; k < n; k++)
        instance_end(e, rs, ended[k], 0, NULL);
    return n > 0;
}

/* A host in virtual time: end every live instance as killed by SIGKILL (the window
 * closed, or the run is aborted). */
static void model_kill_all(struct cs_engine *e, struct runstate *rs)
{
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE)
            continue;
        e->host->kill(e, j);
        instance_end(e, rs, j, SIGKILL, NULL);
    }
}

static void forward_signal(struct cs_engine *e, int sig)
{
    unleash_all(e);
    if (external_jobs(e))      /* Slurm's steps: Slurm signals them, never the node engine */
        return;
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->state == CS_JOB_LIVE && e->jobs[i]->pid > 0)
            killpg(e->jobs[i]->pid, sig);
}

/* Handle what signalfd delivered.  Returns 1 if jobs ended (replan). */
static int on_signal(struct cs_engine *e, struct runstate *rs)
{
    struct signalfd_siginfo si;
    int replan = 0;

    while (read(rs->sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue;
        if (external_jobs(e)) {
            if (!rs->stopping)
                cs_info("received %s: giving every step back to Slurm (thawed, on its own cores) and exiting",
                        strsignal(sig));
            rs->stopping = 1;
            rs->stop_signal = sig;
            replan = 1;
            continue;
        }
        if (!rs->stopping) {
            rs->stopping = 1;
            rs->stop_signal = sig;
            rs->kill_deadline = cs_now() + e->kill_timeout;
            cs_warn("received %s: forwarding it to %d job(s), SIGKILL after %g s", strsignal(sig), nlive(e),
                    e->kill_timeout);
            forward_signal(e, sig);
        } else if (!rs->killed) {
            cs_warn("received %s again: killing the jobs now", strsignal(sig));
            forward_signal(e, SIGKILL);
            rs->killed = 1;
        }
        replan = 1;
    }
    return reap(e, rs) > 0 || replan;
}

/*
 * Wait until `until` (monotonic s), a signal or a job's end, passing job
 * output through.  Returns 1 when the epoch must end early.
 */
static int wait_step(struct cs_engine *e, struct runstate *rs, double until)
{
    static struct pollfd *pf;
    static int pfcap;
    static int poll_failed;

    if (virtual_time(e))
        return model_wait_step(e, rs, until);
    for (;;) {
        int n = 0, ms;
        double left = until - cs_now();

        int nhost = e->host && e->host->nfds ? e->host->nfds(e) : 0;
        out_compact();
        if (pfcap < 1 + nouts + nhost) {
            struct pollfd *np = realloc(pf, (1 + nouts + nhost) * sizeof *pf);
            if (np == NULL) {
                cs_err("out of memory waiting for %d job output pipe(s)", nouts);
                return 1;
            }
            pf = np;
            pfcap = 1 + nouts + nhost;
        }

        if (rs->stopping && external_jobs(e))
            return 1;
        if (rs->stopping) {
            double kl = rs->kill_deadline - cs_now();
            if (!rs->killed && kl <= 0) {
                cs_warn("%d job(s) still running %g s after the signal: sending SIGKILL", nlive(e),
                        e->kill_timeout);
                forward_signal(e, SIGKILL);
                rs->killed = 1;
            }
            left = rs->killed ? 0.1 : kl;
        }
        if (left <= 0)
            return 0;
        double stop_left = stop_deadlines(e);
        if (stop_left < left)
            left = stop_left;
        double wake = nhost > 0 && e->host->wake ? e->host->wake(e) : 0;
        if (wake > 0 && (wake -= cs_now()) < left)
            left = wake > 0 ? wake : 0;
        pf[n++] = (struct pollfd){ .fd = rs->sfd, .events = POLLIN };
        for (int i = 0; i < nouts; i++)
            pf[n++] = (struct pollfd){ .fd = outs[i].fd, .events = POLLIN };
        if (nhost > 0)
            nhost = e->host->pollfds(e, pf + n, nhost);
        n += nhost;
        ms = (int)ceil(left * 1000.0);
        if (poll(pf, n, ms) < 0) {
            if (errno == EINTR)
                continue;
            /* never spin blind: signals and ended jobs are still handled */
            if (!poll_failed++)
                cs_err("waiting for signals and %d job output pipe(s) failed: %s; "
                       "job output may be delayed", nouts, strerror(errno));
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            return on_signal(e, rs);
        }
        for (int i = 0; i < nouts; i++)
            if (outs[i].fd >= 0 && (pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
                out_read(&outs[i]);
        if (e->progress)
            progress_draw();
        if ((pf[0].revents & POLLIN) && on_signal(e, rs))
            return 1;
        if (nhost > 0 && e->host->ready(e, pf + 1 + nouts, nhost))
            return 1;
        if (rs->stopping && (nlive(e) == 0 || external_jobs(e)))
            return 1;
    }
}

static void print_summary(struct cs_engine *e)
{
    fprintf(stderr, "\ncosched: summary (policy %s, control %s, %.1f s, %llu steps, mean switch %.0f us%s)\n",
            cs_policy_name(e->policy), e->ctl->name, cs_now() - e->t0, (unsigned long long)e->step_seq,
            e->switches ? e->switch_us_total / e->switches : 0.0,
            e->nfallbacks ? ", policy fallbacks occurred" : "");
    if (e->idle_steps)
        fprintf(stderr, "idle while a job was frozen: %.2f CPU-s (%.2f on cpus given to nobody, %.2f on cpus of a "
                        "running job)%s\n", e->idle_nobody_s + e->idle_held_s, e->idle_nobody_s, e->idle_held_s,
                e->idle_steps < e->step_seq ? ", in the steps where the idle time could be read" : "");
    else if (e->step_seq)
        fprintf(stderr, "idle while a job was frozen: unknown (control %s could not read the cpus' idle time)\n",
                e->ctl->name);
    fprintf(stderr, "%4s %-16s %5s %8s %9s %9s %7s %7s  %s\n", "id", "name", "runs", "done", "wall_s", "cpu_s",
            "q_run", "q_froz", "status");
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        char st[48];
        int s = j->last_status;
        if (j->runs_started == 0)
            snprintf(st, sizeof st, "not started");
        else if (j->cut_by_window && !j->failed)
            snprintf(st, sizeof st, "ok, last run cut by the window");
        else if (j->cut_by_window)
            snprintf(st, sizeof st, "cut by the window (earlier run failed)");
        else if (j->stopped_by_us)   /* classify, once characterized: asked for, not a failure */
            snprintf(st, sizeof st, "%sstopped by cosched (signal %d)", j->failed ? "" : "ok, ", WTERMSIG(s));
        else if (WIFEXITED(s))
            snprintf(st, sizeof st, "exit %d%s", WEXITSTATUS(s), j->failed ? " (failed)" : "");
        else if (WIFSIGNALED(s))
            snprintf(st, sizeof st, "signal %d%s", WTERMSIG(s), j->failed ? " (failed)" : "");
        else
            snprintf(st, sizeof st, "?");
        fprintf(stderr, "%4d %-16s %5d %8d %9.2f %9.2f %7llu %7llu  %s\n", j->id, j->name, j->runs_started,
                j->runs_done, j->wall, j->cpu_ns * 1e-9, (unsigned long long)j->quanta_run,
                (unsigned long long)j->quanta_frozen, st);
    }
    /* characterizations (policies that measure jobs): more than one per job
     * is a re-characterization - a phase change, or a false one */
    int nch = 0, nre = 0;
    for (int i = 0; i < e->njobs; i++) {
        nch += e->jobs[i]->characterized;
        nre += e->jobs[i]->characterized > 1 ? e->jobs[i]->characterized - 1 : 0;
    }
    if (nch) {
        fprintf(stderr, "characterizations: %d, of which %d re-characterization%s", nch, nre, nre == 1 ? "" : "s");
        for (int i = 0, first = 1; i < e->njobs; i++)
            if (e->jobs[i]->characterized > 1) {
                fprintf(stderr, "%s%s x%d", first ? " (" : ", ", e->jobs[i]->name, e->jobs[i]->characterized);
                first = 0;
            }
        fprintf(stderr, "%s\n", nre ? ")" : "");
    }
}

static int exit_status(struct cs_engine *e, struct runstate *rs)
{
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
    struct runstate rs = { .sfd = -1 };
    struct stepstate ss = { 0 };
    struct cs_plan plan = { 0 };
    int cap = e->njobs + 1;
    int *was_live = calloc(cap, sizeof *was_live);
    int status = 1, nprepared = 0, istep = 0;
    sigset_t set;

    ss.run = calloc(cap, sizeof *ss.run);
    e->t0 = cs_now();
    e->all_mems = hwloc_bitmap_alloc();
    for (int k = 0; k < e->topo->nnumas; k++)
        hwloc_bitmap_set(e->all_mems, (unsigned)e->topo->numas[k].os_index);
    if (e->run_id == NULL)
        e->run_id = cs_strdup_printf("%d", (int)getpid());
    if (e->trace)
        cs_trace_run(e, external_jobs(e) ? "serve" : e->host ? "simulate" : "run",
                     e->policy ? cs_policy_name(e->policy) : NULL, e->ctl ? e->ctl->name : NULL);

    if (virtual_time(e))
        goto started;   /* nothing to forward, nothing to guard: the jobs are the model's */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    rs.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (rs.sfd < 0) {
        cs_err("signalfd: %s", strerror(errno));
        goto out;
    }
    if (cs_guard_start(e->ctl) < 0)
        goto out;
started:
    if (e->cnt == NULL)
        e->cnt = &cs_counters_none;
    if (e->cnt->init(e, e->cnt_arg, e->profile) < 0) {
        cs_guard_done();
        goto out;
    }
    if (e->ctl->init(e) < 0) {
        e->cnt->fini(e);
        cs_guard_done();
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
            if (virtual_time(e)) {
                model_kill_all(e, &rs);
                break;
            }
            forward_signal(e, SIGKILL);
            rs.killed = 1;
            rs.kill_deadline = cs_now();
            break;
        }

    for (;;) {
        if (external_jobs(e)) {
            /* node engine: jobs come and go; it stops on a signal or when idle */
            if (rs.stopping || (e->host->tidy && e->host->tidy(e)))
                break;
            if (nlive(e) == 0) {
                wait_step(e, &rs, cs_now() + 1.0);
                istep = plan.nsteps;
                continue;
            }
        } else if (nlive(e) == 0) {
            break;
        }
        if (e->window > 0 && !rs.window_closed && cs_now() - e->t0 >= e->window) {
            rs.window_closed = 1;
            cs_info("window of %g s closed: stopping the running instances", e->window);
            istep = plan.nsteps;   /* the old plan must not freeze them again */
            if (virtual_time(e)) {
                model_kill_all(e, &rs);
                continue;
            }
            forward_signal(e, SIGKILL);
        }
        if (istep >= plan.nsteps) {
            cs_plan_free(&plan);
            istep = 0;
            e->epoch++;
            ss.fallback = 0;
            if (rs.stopping || rs.window_closed) {
                fallback_plan(e, &plan);
            } else if (cs_numa_sample_jobs(e), cs_policy_plan(e->policy, e, &plan) < 0) {
                e->nfallbacks++;
                ss.fallback = 1;
                cs_warn("policy %s failed in epoch %llu: every job runs on every managed cpu this epoch",
                        cs_policy_name(e->policy), (unsigned long long)e->epoch);
                fallback_plan(e, &plan);
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
        ss.switch_us = do_switch(e, st, ss.run);
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
        if (e->progress)
            progress_line(e, ss.run);
        double until = ss.t_plan_end;
        if (e->window > 0 && !rs.window_closed && e->t0 + e->window < until)
            until = e->t0 + e->window;
        int cut = wait_step(e, &rs, until);
        step_end(e, &ss, was_live);
        if (cut) {
            istep = plan.nsteps;   /* replan at once */
        }
    }
    if (e->progress) {
        progress_clear();
        progress_text[0] = '\0';
        cs_log_before = NULL;
    }
    status = external_jobs(e) ? 0 : exit_status(e, &rs);
    if (external_jobs(e))
        nprepared = e->njobs;   /* every job it holds was adopted */

release:
    /* the jobs are gone (or never started): release their containers */
    for (int i = 0; i < nprepared; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state == CS_JOB_LIVE && j->pid > 0 && !external_jobs(e)) {   /* only after a failed start */
            unleash_all(e);
            killpg(j->pid, SIGKILL);
            waitpid(j->pid, NULL, 0);
            j->state = CS_JOB_ENDED;
        }
        e->cnt->job_release(e, j);
        e->ctl->job_release(e, j);
        cs_omppage_close(j);
    }
    e->ctl->fini(e);
    e->cnt->fini(e);
    cs_guard_done();
    out_drain_all();
    if (nprepared == e->njobs && !external_jobs(e) && cs_verbosity >= CS_LOG_INFO)   /* --quiet: none */
        print_summary(e);
out:
    cs_plan_free(&plan);
    hwloc_bitmap_free(e->all_mems);
    e->all_mems = NULL;
    free(ss.run);
    free(ss.idle0);
    if (ss.idle_cpus)
        hwloc_bitmap_free(ss.idle_cpus);
    free(was_live);
    if (rs.sfd >= 0)
        close(rs.sfd);
    return status;
}
