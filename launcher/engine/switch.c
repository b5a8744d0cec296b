/*
 * switch.c - a step applied (cs_engine_switch, engine/internal.h): which job
 * each plan entry names, the leaving jobs frozen (all at once where the
 * backend can), cores moved, the entering jobs thawed; and the fallback plan
 * (every live job on its home cores, nobody frozen).
 */
#include "config.h"
#include <stdlib.h>
#include "engine/engine.h"
#include "engine/internal.h"
#include "engine/omppage.h"
#include "core/util.h"
#include "control/control.h"
#include "policy/policy.h"

/* ------------------------------------------------------------ plans */

void cs_engine_fallback_plan(struct cs_engine *e, struct cs_plan *p)
{
    int n = cs_engine_nlive(e), k = 0;

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
 * where it is (a step spanning nodes, see cs_engine_add), 0 otherwise.
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
double cs_engine_switch(struct cs_engine *e, const struct cs_plan_step *st, int *run)
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
