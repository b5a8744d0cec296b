/*
 * cgroup1.c - control through cgroup v1: the freezer stops and resumes a
 * job, cpuset confines its cores and memory nodes, cpuacct (when mounted)
 * counts its CPU time.
 *
 * Layout, in every hierarchy involved (freezer, cpuset, cpuacct; a
 * hierarchy that carries several of them, "cpuset,freezer" say, is used
 * once):
 *
 *     <mount><own cgroup>/cosched/<engine pid>/job<N>
 *
 * <own cgroup> is where cosched was started (from /proc/self/cgroup), so
 * under a batch system the tree sits inside the allocation, and it is also
 * where tasks go back to.  A job dir holds every instance of the job and
 * everything they fork, whatever process group they end up in: the v1
 * freezer and cpuset follow fork, which is why this backend records no
 * per-instance state for the guardian (the job record covers them all).
 *
 * cpuset: a v1 cpuset accepts tasks only once cpuset.cpus and cpuset.mems
 * are set, and a child's CPUs must lie within its parent's; so the shared
 * "cosched" dir copies the own cgroup's values, the run dir gets the managed
 * CPUs, and job dirs start with the run dir's values until set_cpus.
 * Writing cpuset.cpus rebinds every task of the job; what a thread set
 * for itself is kept by binds.c's rule, on every kernel (a thread that
 * pinned itself to all it was given, as GROMACS and LLVM's OpenMP runtime
 * do at start, follows the job's cores: since Linux 6.2 the kernel alone
 * would keep it on those it started on when the cpuset grows).
 *
 * freezer: writing FROZEN starts the freeze; freezer.state reads FREEZING
 * until every task has stopped (the v1 rules, cgrules.c).  v1 has no change
 * notification, so the wait is a short poll (20 us doubling to 2 ms)
 * bounded by CS_FREEZE_TIMEOUT (freeze.c, the loop every backend shares);
 * freeze_many starts all the freezes before polling, so the waits of the
 * jobs leaving at a switch overlap.  A runnable thread must get a CPU once
 * to freeze, so freezing takes longer the more runnable threads share a
 * CPU; a task in uninterruptible sleep can hold a v1 freezer in FREEZING
 * indefinitely.  A job not frozen in time is thawed back and left running
 * for the step rather than stalling the switch.  A task frozen by v1 ignores SIGKILL
 * until thawed: every undo path (release, fini, leftovers, guardian)
 * thaws first.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/engine_state.h"

#define WHO "cgroup1"
#define REC_MAX 8192

enum { C_FREEZER, C_CPUSET, C_CPUACCT, NCTL };
static const char *const ctl_name[NCTL] = { "freezer", "cpuset", "cpuacct" };

struct hier {
    char mnt[PATH_MAX];
    char own[PATH_MAX];         /* cgroup cosched started in: tasks go back here */
    char top[PATH_MAX];         /* own/cosched, shared by concurrent runs */
    char run[PATH_MAX];         /* top/<run id> */
    unsigned ctls;              /* 1 << C_* carried by this hierarchy */
};

struct cg1 {
    struct hier h[NCTL];        /* freezer's first: undo thaws before anything */
    int nh;
    int at[NCTL];               /* index in h of each controller, -1: absent */
    char record[REC_MAX];
};

struct cg1_job {
    char dir[NCTL][PATH_MAX];   /* per hierarchy, same index as h */
    char record[REC_MAX];
    struct cs_cgfreezer fz;     /* the freezer hierarchy's dir (cgrules.c) */
    char what[32];              /* "job N", for messages */
    pid_t live;                 /* leader of the current instance, 0: none */
    struct cs_proc_cpu cpu;     /* without cpuacct: /proc accounting; always: monotonic */
    struct cs_binds *binds;     /* its threads' own CPU bindings (binds.c), from its first move */
};

static int locate(struct cg1 *st, char *why, size_t len)
{
    int c, i;

    st->nh = 0;
    for (c = 0; c < NCTL; c++) {
        char mnt[PATH_MAX], dir[PATH_MAX], w[PATH_MAX + 256];
        st->at[c] = -1;
        if (cs_cgroup_locate(ctl_name[c], mnt, sizeof mnt, dir, sizeof dir, w, sizeof w) < 0) {
            if (c == C_CPUACCT)
                continue;                   /* optional: CPU time from /proc */
            snprintf(why, len, "%s", w);
            return -1;
        }
        for (i = 0; i < st->nh; i++)
            if (strcmp(st->h[i].mnt, mnt) == 0)
                break;
        if (i == st->nh) {
            strcpy(st->h[i].mnt, mnt);
            strcpy(st->h[i].own, dir);
            st->h[i].ctls = 0;
            st->nh++;
        }
        st->h[i].ctls |= 1u << c;
        st->at[c] = i;
    }
    return 0;
}

static int cg1_probe(char *why, size_t len)
{
    struct cg1 *st = calloc(1, sizeof *st);
    int i, ret = -1;

    if (!st) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    if (locate(st, why, len) < 0)
        goto out;
    for (i = 0; i < st->nh; i++)
        if (access(st->h[i].own, W_OK) < 0) {
            snprintf(why, len, "cannot create cgroups in %s: %s (needs root or a delegated cgroup)",
                     st->h[i].own, strerror(errno));
            goto out;
        }
    ret = 0;
out:
    free(st);
    return ret;
}

/* A fresh v1 cpuset takes no task before it has CPUs and memory nodes. */
static int cpuset_fill(const char *dir, const char *parent, const char *cpus)
{
    char mems[4096], pcpus[4096];

    if (cs_cg_read(parent, "cpuset.mems", mems, sizeof mems) < 0) {
        cs_err(WHO ": cannot read %s/cpuset.mems: %s", parent, strerror(errno));
        return -1;
    }
    if (!cpus) {
        if (cs_cg_read(parent, "cpuset.cpus", pcpus, sizeof pcpus) < 0) {
            cs_err(WHO ": cannot read %s/cpuset.cpus: %s", parent, strerror(errno));
            return -1;
        }
        cpus = pcpus;
    }
    if (cs_cg_write(WHO, dir, "cpuset.mems", mems) < 0)
        return -1;
    if (cs_cg_write(WHO, dir, "cpuset.cpus", cpus) < 0) {
        /* v1 answers EACCES (not EINVAL) for CPUs outside the parent's */
        if ((errno == EACCES || errno == EINVAL)
            && cs_cg_read(parent, "cpuset.cpus", pcpus, sizeof pcpus) >= 0)
            cs_err(WHO ": CPUs %s are not all within %s/cpuset.cpus (%s)", cpus, parent, pcpus);
        return -1;
    }
    return 0;
}

static int cg1_init(struct cs_engine *e)
{
    struct cg1 *st = calloc(1, sizeof *st);
    char why[PATH_MAX + 256], *managed = NULL;
    int made[NCTL] = { 0 };
    int i, recorded = 0;

    if (!st) {
        cs_err(WHO ": out of memory");
        return -1;
    }
    if (locate(st, why, sizeof why) < 0) {
        cs_err(WHO ": %s", why);
        goto fail;
    }
    if (hwloc_bitmap_list_asprintf(&managed, e->managed) < 0) {
        cs_err(WHO ": out of memory");
        goto fail;
    }
    strcpy(st->record, "cg1 run");
    for (i = 0; i < st->nh; i++) {
        struct hier *h = &st->h[i];
        if ((size_t)snprintf(h->top, sizeof h->top, "%s/cosched", h->own) >= sizeof h->top
            || (size_t)snprintf(h->run, sizeof h->run, "%s/%s", h->top, e->run_id) >= sizeof h->run) {
            cs_err(WHO ": cgroup path too long below %s", h->own);
            goto fail;
        }
        if (cs_rec_add(st->record, sizeof st->record, h->run) < 0
            || cs_rec_add(st->record, sizeof st->record, h->own) < 0) {
            cs_err(WHO ": guardian record too long for %s", h->run);
            goto fail;
        }
    }
    for (i = 0; i < st->nh; i++)
        cs_cgroup_reclaim_leftovers(WHO, st->h[i].top, st->h[i].own, cs_proc_start_cpus());
    /* recorded before anything exists: a rescue of what is not there is a no-op */
    cs_guard_record("%s", st->record);
    recorded = 1;
    for (i = 0; i < st->nh; i++) {
        struct hier *h = &st->h[i];
        int tries;
        for (tries = 0;; tries++) {
            if (cs_cg_mkdir(WHO, h->top, 1) < 0)
                goto fail;
            /* shared and possibly stale: always as wide as the own cgroup */
            if ((h->ctls & 1u << C_CPUSET) && cpuset_fill(h->top, h->own, NULL) < 0)
                goto fail;
            if (mkdir(h->run, 0755) == 0)
                break;
            /* another cosched's fini removed top between our two mkdirs */
            if (errno != ENOENT || tries == 3) {
                cs_cg_mkdir(WHO, h->run, 0);
                goto fail;
            }
        }
        made[i] = 1;
        if ((h->ctls & 1u << C_CPUSET) && cpuset_fill(h->run, h->top, managed) < 0)
            goto fail;
    }
    cs_debug(WHO ": run directories ready (%s)", st->record + 8);
    e->ctl_state = st;
    free(managed);
    return 0;
fail:
    for (i = st->nh - 1; i >= 0; i--) {
        if (made[i])
            cs_cgroup_reclaim(WHO, st->h[i].run, st->h[i].own, NULL);
        if (recorded)
            rmdir(st->h[i].top);            /* only if empty: others may use it */
    }
    if (recorded)
        cs_guard_forget("%s", st->record);
    free(managed);
    free(st);
    return -1;
}

static int cg1_job_prepare(struct cs_engine *e, struct cs_job *j)
{
    struct cg1 *st = e->ctl_state;
    struct cg1_job *cj = calloc(1, sizeof *cj);
    int made[NCTL] = { 0 };
    int i, recorded = 0;

    if (!cj) {
        cs_err(WHO ": out of memory");
        return -1;
    }
    strcpy(cj->record, "cg1 job");
    for (i = 0; i < st->nh; i++) {
        if ((size_t)snprintf(cj->dir[i], sizeof cj->dir[i], "%s/job%d", st->h[i].run, j->id)
                >= sizeof cj->dir[i]
            || cs_rec_add(cj->record, sizeof cj->record, cj->dir[i]) < 0
            || cs_rec_add(cj->record, sizeof cj->record, st->h[i].own) < 0) {
            cs_err(WHO ": job %d: cgroup path too long below %s", j->id, st->h[i].run);
            goto fail;
        }
    }
    cs_guard_record("%s", cj->record);
    recorded = 1;
    for (i = 0; i < st->nh; i++) {
        if (cs_cg_mkdir(WHO, cj->dir[i], 0) < 0)
            goto fail;
        made[i] = 1;
        if ((st->h[i].ctls & 1u << C_CPUSET) && cpuset_fill(cj->dir[i], st->h[i].run, NULL) < 0)
            goto fail;
        /* a plan's mems move the job's pages with it (paper 002: migrate
         * memory with the job), not only its future allocations */
        if ((st->h[i].ctls & 1u << C_CPUSET) && cs_cg_write(WHO, cj->dir[i], "cpuset.memory_migrate", "1") < 0)
            cs_warn(WHO ": job %d: cpuset.memory_migrate could not be set: memory will not follow a change "
                    "of memory nodes", j->id);
    }
    cs_cgf_open(&cj->fz, WHO, 0, cj->dir[st->at[C_FREEZER]]);
    snprintf(cj->what, sizeof cj->what, "job %d", j->id);
    j->ctl = cj;
    return 0;
fail:
    for (i = st->nh - 1; i >= 0; i--)
        if (made[i])
            cs_cgroup_reclaim(WHO, cj->dir[i], st->h[i].own, NULL);
    if (recorded)
        cs_guard_forget("%s", cj->record);
    free(cj);
    return -1;
}

static int cg1_job_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    struct cg1 *st = e->ctl_state;
    struct cg1_job *cj = j->ctl;
    char num[24];
    int i;

    snprintf(num, sizeof num, "%ld", (long)pid);
    for (i = 0; i < st->nh; i++)
        if (cs_cg_write(WHO, cj->dir[i], "cgroup.procs", num) < 0)
            return -1;
    cj->live = pid;
    return 0;
}

static int cg1_set_cpus(struct cs_engine *e, struct cs_job *j,
                        hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
    struct cg1 *st = e->ctl_state;
    struct cg1_job *cj = j->ctl;
    const char *dir = cj->dir[st->at[C_CPUSET]];
    pid_t *tids;
    size_t n = cs_binds_look(&cj->binds, dir, 0, j->cpus, &tids);
    int r = cs_cg_write_cpuset(WHO, dir, cpus, mems);

    if (r == 0 && n)
        cs_binds_moved(cj->binds, dir, 0, tids, n, j->cpus, cpus);
    free(tids);
    return r;
}

/* freeze_many() through cs_freeze_wait(): the job's freezer (cgrules.c),
 * polled (v1 has no change notification). */
static int cg1_fz_start(void *arg, int i, struct cs_job *j)
{
    struct cg1_job *cj = j->ctl;

    return cs_cgf_ask(WHO, &cj->fz, 1) < 0 ? -1 : 0;
}

static int cg1_fz_check(void *arg, int i, struct cs_job *j)
{
    struct cg1_job *cj = j->ctl;

    return cs_cgf_check(WHO, cj->what, &cj->fz);
}

static void cg1_fz_laggard(void *arg, int i, struct cs_job *j)
{
    struct cg1_job *cj = j->ctl;
    char state[64];

    cs_cgf_describe(&cj->fz, state, sizeof state);
    if (cs_cgf_ask(WHO, &cj->fz, 0) < 0)
        cs_err(WHO ": job %d: freezer stuck in %s and could not be thawed back", j->id, state);
    else
        cs_warn(WHO ": job %d: freezer stuck in %s after %.0f ms (%s/freezer.state: a task "
                "in uninterruptible sleep, or more runnable threads than CPUs); thawed, "
                "left running this step", j->id, state, CS_FREEZE_TIMEOUT * 1e3, cj->fz.dir);
}

static const struct cs_freeze_ops cg1_fz = {
    .who = WHO,
    .start = cg1_fz_start,
    .check = cg1_fz_check,
    .laggard = cg1_fz_laggard,
};

/* Start every freeze, then poll them all until FROZEN or the common bound. */
static int cg1_freeze_many(struct cs_engine *e, struct cs_job **jobs, int n, int *frozen)
{
    return cs_freeze_wait(&cg1_fz, NULL, jobs, n, frozen);
}

static int cg1_freeze(struct cs_engine *e, struct cs_job *j)
{
    int frozen;

    return cg1_freeze_many(e, &j, 1, &frozen);
}

static int cg1_thaw(struct cs_engine *e, struct cs_job *j)
{
    struct cg1_job *cj = j->ctl;

    return cs_cgf_thaw(WHO, cj->what, &cj->fz);
}

static int cg1_cpu_time(struct cs_engine *e, struct cs_job *j, uint64_t *ns)
{
    struct cg1 *st = e->ctl_state;
    struct cg1_job *cj = j->ctl;

    if (st->at[C_CPUACCT] >= 0) {
        uint64_t v;
        if (cs_cg_cpu_ns(WHO, 0, cj->dir[st->at[C_CPUACCT]], &v) < 0)
            return -1;
        *ns = cs_proc_cpu_monotonic(&cj->cpu, v);
        return 0;
    }
    return cs_proc_cpu_read(&cj->cpu, cj->live, ns);
}

static void cg1_instance_ended(struct cs_engine *e, struct cs_job *j, const struct rusage *ru)
{
    struct cg1_job *cj = j->ctl;

    if (!cj)
        return;
    cs_proc_cpu_reaped(&cj->cpu, ru);
    cj->live = 0;
}

static void cg1_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct cg1 *st = e->ctl_state;
    struct cg1_job *cj = j->ctl;
    int i;

    if (!cj)
        return;
    for (i = 0; i < st->nh; i++)
        cs_cgroup_reclaim(WHO, cj->dir[i], st->h[i].own, cs_proc_start_cpus());
    cs_guard_forget("%s", cj->record);
    cs_binds_free(cj->binds);
    free(cj);
    j->ctl = NULL;
}

static void cg1_fini(struct cs_engine *e)
{
    struct cg1 *st = e->ctl_state;
    int i;

    if (!st)
        return;
    for (i = 0; i < st->nh; i++) {
        cs_cgroup_reclaim(WHO, st->h[i].run, st->h[i].own, cs_proc_start_cpus());
        if (rmdir(st->h[i].top) < 0 && errno != ENOENT && errno != EBUSY && errno != ENOTEMPTY)
            cs_warn(WHO ": cannot remove %s: %s", st->h[i].top, strerror(errno));
    }
    cs_guard_forget("%s", st->record);
    free(st);
    e->ctl_state = NULL;
}

/* "cg1 run|job DIR ORIGIN [DIR ORIGIN]...", freezer pair first.  Every
 * thread gets the CPUs cosched started with (the guardian's copy of them)
 * before it goes back, as in release and fini (processes a job left): moving it back to ORIGIN alone would leave a thread
 * that pinned itself while its job was folded on that part (Linux >= 6.2
 * keeps a thread's own mask, binds.c); its own binding is lost instead. */
static void cg1_rescue(const char *record)
{
    char *copy = strdup(record), *f[2 + 2 * NCTL];
    int n, i;

    if (!copy)
        return;
    n = cs_rec_split(copy, f, 2 + 2 * NCTL);
    if (n < 4 || strcmp(f[0], "cg1") || (n & 1)) {
        cs_warn(WHO ": guardian: ignoring malformed record '%s'", record);
        goto out;
    }
    for (i = 2; i + 1 < n; i += 2) {
        cs_cgroup_reclaim(WHO, f[i], f[i + 1], cs_proc_start_cpus());
        if (strcmp(f[1], "run") == 0) {
            char *slash = strrchr(f[i], '/');
            if (slash) {
                *slash = '\0';
                rmdir(f[i]);                /* the shared "cosched" dir, if now empty */
            }
        }
    }
out:
    free(copy);
}

const struct cs_control_ops cs_control_cgroup1 = {
    .name = "cgroup1",
    .probe = cg1_probe,
    .init = cg1_init,
    .job_prepare = cg1_job_prepare,
    .job_attach = cg1_job_attach,
    .set_cpus = cg1_set_cpus,
    .freeze = cg1_freeze,
    .thaw = cg1_thaw,
    .cpu_time = cg1_cpu_time,
    .instance_ended = cg1_instance_ended,
    .job_release = cg1_job_release,
    .fini = cg1_fini,
    .rescue = cg1_rescue,
    .freeze_many = cg1_freeze_many,
    .cpu_idle = cs_proc_cpu_idle,
};
