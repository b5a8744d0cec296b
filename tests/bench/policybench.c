/*
 * policybench - policy decision time: one cs_policy_plan() call (snapshot
 * building + the policy's Lua plan() + validation of the plan) for N live
 * jobs on a synthetic node, per shipped policy.
 *
 * No process is started and nothing is confined: a fake struct cs_engine
 * holds N jobs in state CS_JOB_LIVE (ids 1..N, threads = managed PUs,
 * class hints S, C, N in turn), managed = every PU of the topology, quantum
 * 1 s, no counters.  Each cell (policy, N, topology) runs -e epochs (30) on a
 * fresh policy state; between two plans the benchmark does what the engine
 * does (engine.c do_switch + step_end), on a simulated clock, for every step
 * of the plan: jobs not in the step are frozen, jobs in it get its cpus and
 * run; then each live job gets last_step_wall/cpu/ncpus, and quanta_run,
 * last_run_end = now, waited = 0 if it ran, else quanta_frozen and waited =
 * now - last_run_end.  snap.now follows the simulated clock (e->t0 is moved).
 *
 * Job profiles (-m):
 *   stored  every job has a profile-store entry (job.stored: class, IPCs, FP,
 *           MPKI, bandwidths varying by job): characterize seeds it and every
 *           job is ready from the first epoch - the steady state.
 *   fresh   no entries: the policies that use cosched.characterize start by
 *           characterizing every job (one per LLC domain at a time; without
 *           counters each gives up after standalone + folded quanta), so the
 *           30 epochs are all in that phase.
 *
 * Where the time goes: in the same engine state, right after each real
 * plan, two reference policies (written to a temporary directory) are timed:
 *   (null)  plan() returns snap.jobs[1] on snap.cpus: the cost of building
 *           the snapshot (read-only proxies included) + calling plan() +
 *           validating a one-job plan, with its own garbage collection;
 *   (walk)  reads every field of every job, every cpu of every job.cpus and
 *           of the topology through the proxies, then returns as (null):
 *           walk - null = what reading the whole snapshot costs a policy.
 * "snapshot share" = median(null) / median(policy) in that cell.
 *
 * Output: a markdown table on stdout (ms per plan() call over the epochs:
 * median, p90, max, first epoch); progress and problems on stderr.  A cell
 * whose plan() fails under the default limits (cs_policy_limits) is run
 * again with raised limits (-L) and marked; the failure message on stderr
 * says which limit.
 *
 *   COSCHED_DATADIR=$srcdir policybench [-P gang,tft,...] [-j 10,100,1000]
 *       [-t 1,8] [-e 30] [-m stored|fresh|both] [-o key=value ...] [-w T] [-L] [-R] [-v]
 *
 * -t: LLC domains; 1 = synthetic:pack:1 l3:1 core:256 pu:1, 8 =
 * synthetic:pack:2 l3:4 core:32 pu:1 (256 cores either way); any other
 * value D (dividing 256) = pack:1 l3:D core:256/D pu:1.  -T DESC replaces
 * the list by one synthetic description.  -w T: every job has T threads
 * (default: the managed PUs): with fewer threads than the cores a job would
 * get, the paper-001 policies trim it and fill the residual cores with other
 * jobs (cosched.pairing.fill_holes), which this measures.  -P default: every policy that
 * `cosched policies` lists except classify.  -o: --policy-opt for every
 * policy (only those that declare the key get it).  -L: raised limits from
 * the start.  -R: time the policies only, not (null) and (walk) (for a
 * profiler: `perf record -g policybench -R -P fop -j 1000 -t 1`).  -v: the
 * host's debug log (plan() instructions and Lua memory per call).
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"

#define MAXLIST 64

/* raised limits (-L, or after a failure under the defaults) */
#define RAISED_MEM    ((size_t)1 << 30)
#define RAISED_INSNS  20000000000ULL
#define RAISED_SECS   60.0

static int epochs = 30;
static int job_threads;             /* -w: threads per job; 0: the managed PUs */
static int no_refs;                 /* -R: skip (null) and (walk), e.g. under perf */
static char *opts[MAXLIST];
static int nopts;
static char tmpdir[] = "/tmp/policybench.XXXXXX";

static const char NULL_POLICY[] =
    "return { api = 1, name = 'pb_null', description = 'policybench: snapshot only',\n"
    "  plan = function(snap)\n"
    "    local j = snap.jobs[1]\n"
    "    return { { jobs = { { id = j.id, cpus = snap.cpus } } } }\n"
    "  end }\n";

static const char WALK_POLICY[] =
    "return { api = 1, name = 'pb_walk', description = 'policybench: read the whole snapshot',\n"
    "  plan = function(snap)\n"
    "    local n = snap.epoch + snap.now + snap.quantum\n"
    "    for _, c in ipairs(snap.cpus) do n = n + c end\n"
    "    for _, core in ipairs(snap.topology.cores) do\n"
    "      n = n + core.index + (core.llc or 0)\n"
    "      for _, c in ipairs(core.pus) do n = n + c end\n"
    "    end\n"
    "    for _, j in ipairs(snap.jobs) do\n"
    "      n = n + j.id + j.threads + j.priority + j.runs + j.waited + j.quanta_run\n"
    "        + j.quanta_frozen + j.cpu_time + #j.name + (j.frozen and 1 or 0)\n"
    "        + (j.class and 1 or 0)\n"
    "      for _, c in ipairs(j.cpus) do n = n + c end\n"
    "      local l = j.last\n"
    "      if l then n = n + l.wall + l.cpu + l.ncpus + (l.counted and 1 or 0) end\n"
    "      local s = j.stored\n"
    "      if s then n = n + (s.ipc_standalone or 0) + (s.fp or 0) + (s.bw.llc or 0) end\n"
    "    end\n"
    "    local j = snap.jobs[1]\n"
    "    return { { jobs = { { id = j.id, cpus = snap.cpus } } } }\n"
    "  end }\n";

/* ------------------------------------------------------------ helpers */

static int split_list(char *s, char **v, int max)
{
    int n = 0;
    for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ","))
        v[n++] = t;
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile of a sorted array */
static double pct(const double *v, int n, double p)
{
    int k = (int)ceil(p / 100.0 * n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int write_policy(const char *name, const char *text)
{
    char *path = cs_strdup_printf("%s/%s.lua", tmpdir, name);
    FILE *f = fopen(path, "w");
    int rc = f && fputs(text, f) >= 0 && fclose(f) == 0 ? 0 : -1;
    if (rc < 0)
        perror(path);
    free(path);
    return rc;
}

/* The policy names `cosched policies` lists. */
static int shipped_policies(char **search, char **names, int max)
{
    char *buf = NULL, *line, *save = NULL;
    size_t len = 0;
    int n = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || cs_policy_list(search, 1, f) < 0) {
        if (f)
            fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    for (line = strtok_r(buf, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
        line[strcspn(line, " ")] = 0;
        if (*line && strcmp(line, "classify") != 0)
            names[n++] = strdup(line);
    }
    free(buf);
    return n;
}

/* The -o options that policy p declares (a policy refuses unknown keys).
 * Decided by loading it once with each option alone, quietly. */
static int opts_for(const char *name, char **search, int nsearch, char **out)
{
    int n = 0, saved = cs_verbosity;
    for (int i = 0; i < nopts; i++) {
        cs_verbosity = -1;
        struct cs_policy *p = cs_policy_load(name, search, nsearch, &opts[i], 1);
        cs_verbosity = saved;
        if (p) {
            out[n++] = opts[i];
            cs_policy_free(p);
        }
    }
    return n;
}

/* ------------------------------------------------------------ fake engine */

static void engine_init(struct cs_engine *e, struct cs_topo *t, int njobs, int stored)
{
    static const char cls[3] = { 'S', 'C', 'N' };

    memset(e, 0, sizeof *e);
    e->topo = t;
    e->managed = hwloc_bitmap_dup(t->all_pus);
    e->quantum = 1.0;
    e->njobs = njobs;
    e->jobs = calloc((size_t)njobs, sizeof *e->jobs);
    e->t0 = cs_now();
    for (int i = 0; i < njobs; i++) {
        struct cs_job *j = calloc(1, sizeof *j);
        j->id = i + 1;
        j->name = cs_strdup_printf("job%d", j->id);
        j->threads = job_threads > 0 ? job_threads : hwloc_bitmap_weight(e->managed);
        j->cls_hint = cls[i % 3];
        j->origin = "policybench";
        j->state = CS_JOB_LIVE;
        j->runs_started = 1;
        j->pid = -1;
        /* as start_instance(): confined to every managed cpu, frozen */
        j->cpus = hwloc_bitmap_dup(e->managed);
        j->mems = hwloc_bitmap_alloc();
        j->frozen = 1;
        j->t_first_start = j->t_instance_start = j->last_run_end = 0;
        if (stored) {
            struct cs_stored *s = calloc(1, sizeof *s);
            double x = (double)((j->id * 2654435761u) % 1000) / 1000.0;   /* 0..1, by job */
            s->cls = j->cls_hint;
            s->ipc_standalone = 0.5 + 2 * x;
            s->ipc_folded = s->ipc_standalone * (0.55 + 0.4 * x);
            s->fp = 1 - s->ipc_folded / s->ipc_standalone;
            s->mpki = s->cls == 'S' ? 20 + 10 * x : s->cls == 'C' ? 5 + 5 * x : 0.5 * x;
            s->bw_l1 = 100 + 50 * x;
            s->bw_l2 = 40 + 20 * x;
            s->bw_llc = s->cls == 'S' ? 60 + 40 * x : s->cls == 'C' ? 10 + 10 * x : 1 + x;
            s->cores_standalone = j->threads;
            s->cores_folded = (j->threads + 1) / 2;
            s->created = (double)time(NULL) - 3600;
            j->stored = s;
        }
        e->jobs[i] = j;
    }
}

static void engine_free(struct cs_engine *e)
{
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        hwloc_bitmap_free(j->cpus);
        hwloc_bitmap_free(j->mems);
        free(j->stored);
        j->stored = NULL;
        cs_store_job_free(j);
        free(j->name);
        free(j);
    }
    free(e->jobs);
    hwloc_bitmap_free(e->managed);
}

/* What the engine does with one step of a plan: do_switch() then, after the
 * step's duration on the simulated clock, step_end(). */
static void run_step(struct cs_engine *e, const struct cs_plan_step *st, int *run, double *clock)
{
    for (int i = 0; i < e->njobs; i++)
        run[i] = 0;
    for (int k = 0; k < st->njobs; k++) {
        int id = st->jobs[k].job;
        if (id >= 1 && id <= e->njobs && e->jobs[id - 1]->state == CS_JOB_LIVE)
            run[id - 1] = k + 1;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE)
            continue;
        if (!run[i]) {
            j->frozen = 1;
            continue;
        }
        const struct cs_plan_job *pj = &st->jobs[run[i] - 1];
        hwloc_bitmap_copy(j->cpus, pj->cpus);
        if (pj->mems && !hwloc_bitmap_iszero(pj->mems))
            hwloc_bitmap_copy(j->mems, pj->mems);
        j->frozen = 0;
    }
    e->step_seq++;
    *clock += st->duration;
    double now = *clock;
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE)
            continue;
        int ncpus = hwloc_bitmap_weight(j->cpus);
        double cpu = 0;
        if (run[i] && !j->frozen)
            cpu = st->duration * (j->threads < ncpus ? j->threads : ncpus);
        j->cpu_ns += (uint64_t)(cpu * 1e9);
        j->last_step_wall = st->duration;
        j->last_step_cpu = cpu;
        j->last_step_ncpus = ncpus;
        j->steps_live++;
        cs_job_stepped(j, run[i] && !j->frozen, now);
    }
}

/* Time one plan() call in the engine's current state: ms, or -1. */
static double timed_plan(struct cs_policy *p, struct cs_engine *e, double clock, struct cs_plan *plan)
{
    e->t0 = cs_now() - clock;           /* snap.now = the simulated time */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = cs_policy_plan(p, e, plan);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (rc < 0)
        return -1;
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

struct result {
    double med, p90, max, first;
    double null_med, walk_med;
    double steps, jobs_per_step;        /* plan shape (means) */
    int ok;
};

/* One cell; 0, or -1 when a plan() failed (reported on stderr). */
static int run_cell(const char *policy, char **search, int nsearch, struct cs_topo *t, int njobs,
                    int stored, struct result *r)
{
    struct cs_engine e;
    struct cs_policy *p, *pn, *pw;
    char *popts[MAXLIST];
    int npopts = opts_for(policy, search, nsearch, popts), rc = 0;
    double *tp = calloc((size_t)epochs, sizeof *tp), *tn = calloc((size_t)epochs, sizeof *tn),
           *tw = calloc((size_t)epochs, sizeof *tw);
    int *run = calloc((size_t)njobs, sizeof *run);
    double clock = 0, nsteps = 0, njobs_run = 0;

    memset(r, 0, sizeof *r);
    engine_init(&e, t, njobs, stored);
    p = cs_policy_load(policy, search, nsearch, popts, npopts);
    pn = cs_policy_load("pb_null", search, nsearch, NULL, 0);
    pw = cs_policy_load("pb_walk", search, nsearch, NULL, 0);
    if (!p || !pn || !pw) {
        rc = -1;
        goto out;
    }
    e.policy = p;
    for (int ep = 0; ep < epochs; ep++) {
        struct cs_plan plan, ref;
        e.epoch++;
        tp[ep] = timed_plan(p, &e, clock, &plan);
        if (tp[ep] < 0) {
            fprintf(stderr, "policybench: %s, %d jobs, %d LLCs: plan() failed in epoch %d\n",
                    policy, njobs, t->nllcs, ep + 1);
            rc = -1;
            goto out;
        }
        /* the same state, snapshot-only and full-walk references */
        if (!no_refs) {
            tn[ep] = timed_plan(pn, &e, clock, &ref);
            cs_plan_free(&ref);
            tw[ep] = timed_plan(pw, &e, clock, &ref);
            cs_plan_free(&ref);
        }
        if (tn[ep] < 0 || tw[ep] < 0) {
            rc = -1;
            cs_plan_free(&plan);
            goto out;
        }
        nsteps += plan.nsteps;
        for (int s = 0; s < plan.nsteps; s++) {
            njobs_run += plan.steps[s].njobs;
            run_step(&e, &plan.steps[s], run, &clock);
        }
        cs_plan_free(&plan);
    }
    r->first = tp[0];
    r->med = median(tp, epochs);           /* sorts */
    r->p90 = pct(tp, epochs, 90);
    r->max = tp[epochs - 1];
    r->null_med = median(tn, epochs);
    r->walk_med = median(tw, epochs);
    r->steps = nsteps / epochs;
    r->jobs_per_step = nsteps > 0 ? njobs_run / nsteps : 0;
    r->ok = 1;
out:
    if (p)
        cs_policy_free(p);
    if (pn)
        cs_policy_free(pn);
    if (pw)
        cs_policy_free(pw);
    engine_free(&e);
    free(tp);
    free(tn);
    free(tw);
    free(run);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: policybench [-P policy,...] [-j 10,100,1000] [-t 1,8 | -T DESC] [-e 30]\n"
                    "                   [-m stored|fresh|both] [-o key=value]... [-w threads] [-L] [-R] [-v]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char *pols[MAXLIST], *jobs_s[MAXLIST], *llc_s[MAXLIST], *topos[MAXLIST];
    char jl[] = "10,100,1000", ll[] = "1,8";
    int npols = 0, njl, nll, ntopos = 0, c, raised_from_start = 0;
    int modes[2] = { 1, 0 }, nmodes = 1;
    char *pol_arg = NULL, *jobs_arg = jl, *llc_arg = ll, *topo_arg = NULL;

    while ((c = getopt(argc, argv, "P:j:t:T:e:m:o:w:LRvh")) != -1) {
        switch (c) {
        case 'P': pol_arg = optarg; break;
        case 'j': jobs_arg = optarg; break;
        case 't': llc_arg = optarg; break;
        case 'T': topo_arg = optarg; break;
        case 'e': epochs = atoi(optarg); if (epochs < 1) usage(); break;
        case 'w': job_threads = atoi(optarg); if (job_threads < 1) usage(); break;
        case 'm':
            if (!strcmp(optarg, "stored")) { modes[0] = 1; nmodes = 1; }
            else if (!strcmp(optarg, "fresh")) { modes[0] = 0; nmodes = 1; }
            else if (!strcmp(optarg, "both")) { modes[0] = 1; modes[1] = 0; nmodes = 2; }
            else usage();
            break;
        case 'o': if (nopts < MAXLIST) opts[nopts++] = optarg; break;
        case 'L': raised_from_start = 1; break;
        case 'R': no_refs = 1; break;
        case 'v': cs_verbosity = CS_LOG_DEBUG; break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();

#ifdef COSCHED_SRCDIR
    setenv("COSCHED_DATADIR", COSCHED_SRCDIR, 0);
#endif
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    if (write_policy("pb_null", NULL_POLICY) < 0 || write_policy("pb_walk", WALK_POLICY) < 0)
        return 1;
    char *shipped = cs_strdup_printf("%s/lua/policies", cs_datadir());
    char *search[2] = { shipped, tmpdir };

    if (pol_arg)
        npols = split_list(pol_arg, pols, MAXLIST);
    else if ((npols = shipped_policies(search, pols, MAXLIST)) <= 0) {
        fprintf(stderr, "policybench: no policies in %s (set COSCHED_DATADIR)\n", shipped);
        return 1;
    }
    njl = split_list(jobs_arg, jobs_s, MAXLIST);
    if (topo_arg) {
        topos[ntopos++] = cs_strdup_printf("synthetic:%s", topo_arg);
    } else {
        nll = split_list(llc_arg, llc_s, MAXLIST);
        for (int i = 0; i < nll; i++) {
            int d = atoi(llc_s[i]);
            if (d == 8)
                topos[ntopos++] = strdup("synthetic:pack:2 l3:4 core:32 pu:1");
            else if (d >= 1 && 256 % d == 0)
                topos[ntopos++] = cs_strdup_printf("synthetic:pack:1 l3:%d core:%d pu:1", d, 256 / d);
            else
                usage();
        }
    }

    struct cs_topo *tp[MAXLIST];
    for (int i = 0; i < ntopos; i++)
        if (!(tp[i] = cs_topo_load(topos[i])))
            return 1;

    if (job_threads > 0)
        printf("Policy decision time: one cs_policy_plan() call (snapshot + Lua plan() + validation), "
               "%d epochs per cell, quantum 1 s, every job live (threads = %d), no counters.\n",
               epochs, job_threads);
    else
        printf("Policy decision time: one cs_policy_plan() call (snapshot + Lua plan() + validation), "
               "%d epochs per cell, quantum 1 s, every job live (threads = managed PUs), no counters.\n",
               epochs);
    for (int i = 0; i < ntopos; i++)
        printf("Topology %d LLC%s: %s (%d cores, %d PUs).\n", tp[i]->nllcs, tp[i]->nllcs == 1 ? "" : "s",
               topos[i], tp[i]->ncores, tp[i]->npus);
    printf("\n");

    int notes = 0;
    for (int m = 0; m < nmodes; m++) {
        int stored = modes[m];
        printf("### job profiles: %s\n\n", stored ? "stored (every job ready: steady state)"
                                                   : "fresh (jobs being characterized)");
        printf("| policy | jobs | LLCs | median ms | p90 ms | max ms | 1st epoch ms | steps/plan | jobs/step "
               "| snapshot ms (null) | snapshot share | full walk ms |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        fflush(stdout);
        for (int pi = 0; pi < npols; pi++)
            for (int ti = 0; ti < ntopos; ti++)
                for (int ji = 0; ji < njl; ji++) {
                    int n = atoi(jobs_s[ji]), raised = raised_from_start;
                    struct result r;
                    if (raised)
                        cs_policy_limits(RAISED_MEM, RAISED_INSNS, RAISED_SECS);
                    else
                        cs_policy_limits(0, 0, 0);
                    fprintf(stderr, "policybench: %s, %d jobs, %d LLCs, %s...\n", pols[pi], n,
                            tp[ti]->nllcs, stored ? "stored" : "fresh");
                    int rc = run_cell(pols[pi], search, 2, tp[ti], n, stored, &r);
                    if (rc < 0 && !raised) {
                        fprintf(stderr, "policybench: again with raised limits (%zu MiB, %llu instructions, "
                                        "%.0f s)\n", RAISED_MEM >> 20, RAISED_INSNS, RAISED_SECS);
                        cs_policy_limits(RAISED_MEM, RAISED_INSNS, RAISED_SECS);
                        raised = 2;
                        rc = run_cell(pols[pi], search, 2, tp[ti], n, stored, &r);
                    }
                    if (rc < 0) {
                        printf("| %s | %d | %d | failed | | | | | | | | |\n", pols[pi], n, tp[ti]->nllcs);
                    } else {
                        printf("| %s%s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.1f | %.1f ",
                               pols[pi], raised == 2 ? " (limits raised)" : raised ? " (-L)" : "", n,
                               tp[ti]->nllcs, r.med, r.p90, r.max, r.first, r.steps, r.jobs_per_step);
                        if (no_refs)
                            printf("| - | - | - |\n");
                        else
                            printf("| %.3f | %.0f %% | %.3f |\n", r.null_med,
                                   r.med > 0 ? 100 * r.null_med / r.med : 0, r.walk_med);
                        notes |= raised == 2;
                    }
                    fflush(stdout);
                }
        printf("\n");
    }
    if (notes)
        printf("(limits raised): plan() exceeded a default policy limit (64 MiB, 200 million "
               "instructions, min(max(quantum, 0.05), 1) s); the cell was run with %zu MiB, %llu "
               "instructions, %.0f s.  stderr says which limit.\n", RAISED_MEM >> 20, RAISED_INSNS,
               RAISED_SECS);

    for (int i = 0; i < ntopos; i++)
        cs_topo_free(tp[i]);
    char *f1 = cs_strdup_printf("%s/pb_null.lua", tmpdir), *f2 = cs_strdup_printf("%s/pb_walk.lua", tmpdir);
    unlink(f1);
    unlink(f2);
    rmdir(tmpdir);
    free(f1);
    free(f2);
    free(shipped);
    return 0;
}
