/*
 * cgroup2.c - control through the unified hierarchy: cgroup.freeze stops and
 * resumes a job, the cpuset controller (when this cgroup can have it)
 * confines its cores, cpu.stat counts its CPU time.
 *
 * Layout: <base>/cosched/<engine pid>/job<N>, where base is the cgroup
 * cosched was started in (the "0::" line of /proc/self/cgroup below the
 * cgroup2 mount): the root on a plain system, a delegated subtree under a
 * service manager or a batch system.  Tasks go back to base.
 *
 * Freezing (the v2 rules, cgrules.c): write 1 to cgroup.freeze, then wait
 * for "frozen 1" in cgroup.events.  The events file is opened once per job
 * and waited on with ppoll(POLLPRI): kernfs flags a change against what this descriptor last
 * read, and the state is re-read after every wake-up, so no notification
 * can be missed and nothing sleeps in a loop; freeze_many waits on the
 * events files of all leaving jobs in one ppoll.  The wait is bounded; a job
 * that does not freeze in time (a task in uninterruptible sleep, or a
 * runqueue so crowded that some thread never got a CPU) is thawed back and
 * left running for the step.  Unlike v1, frozen v2 tasks still die
 * on SIGKILL.
 *
 * Cores: the cpuset controller is used when cpuset is in base's
 * cgroup.controllers and it can be switched on for base's children.  cgroup
 * v2 hands domain controllers only to the children of a cgroup that holds no
 * process itself ("no internal processes"), the root excepted; cosched runs
 * in base, so outside the root this is normally impossible, and we say so
 * rather than move processes around behind the operator's back.  Otherwise
 * (hybrid systems such as this one, where cpuset belongs to v1) cores are
 * set with sched_setaffinity on every thread in the job's cgroup.threads:
 * the cgroup, not the process group, defines the job, so processes that
 * left the group stay confined, and the set_cpus the engine makes before
 * releasing a new instance is inherited by everything it creates (and a
 * thread's own binding is overridden at each move; with the cpuset it is
 * kept, binds.c's rule as in cgroup1.c).  What affinity cannot do: stop a
 * job from widening its own mask again, or move its memory (mems are
 * ignored, noted once in debug output).
 *
 * Guardian records: "cg2 run|job DIR ORIGIN CPUS", CPUS being the affinity
 * to give back (cosched's own at start), in both modes: with the cpuset,
 * moving a task back to ORIGIN alone would leave a thread that pinned
 * itself while its job was folded on that part (Linux >= 6.2 keeps a
 * thread's own mask, binds.c), so a rescued job's threads lose their own
 * bindings instead.  One job
 * record covers every instance, so none is kept per instance.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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

#define WHO "cgroup2"
#define REC_MAX 8192

struct cg2 {
    char mnt[PATH_MAX];
    char base[PATH_MAX];        /* cgroup cosched started in: tasks go back here */
    char top[PATH_MAX];         /* base/cosched */
    char run[PATH_MAX];         /* top/<run id> */
    int cpuset;                 /* cores through the cpuset controller */
    hwloc_bitmap_t restore;     /* affinity mode: what unconfined means */
    char record[REC_MAX];
};

struct cg2_job {
    char dir[PATH_MAX];
    struct cs_cgfreezer fz;     /* dir's freezer, cgroup.events held open (cgrules.c) */
    char what[32];              /* "job N", for messages */
    char record[REC_MAX];
    struct cs_binds *binds;     /* its threads' own CPU bindings (binds.c), from its first move */
};

static int has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *p = list;

    while ((p = strstr(p, w))) {
        if ((p == list || p[-1] == ' ' || p[-1] == '\n')
            && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
            return 1;
        p += n;
    }
    return 0;
}

int cs_cgroup2_cpuset_usable(char *why, size_t len)
{
    char mnt[PATH_MAX], base[PATH_MAX], ctl[1024], w[PATH_MAX + 256];

    if (cs_cgroup_locate(NULL, mnt, sizeof mnt, base, sizeof base, w, sizeof w) < 0) {
        snprintf(why, len, "%s", w);
        return -1;
    }
    if (cs_cg_read(base, "cgroup.controllers", ctl, sizeof ctl) < 0) {
        snprintf(why, len, "cannot read %s/cgroup.controllers: %s", base, strerror(errno));
        return -1;
    }
    if (!has_word(ctl, "cpuset")) {
        snprintf(why, len, "no cpuset controller at %s (cgroup.controllers: %s)", base,
                 ctl[0] ? ctl : "empty");
        return -1;
    }
    if (strcmp(base, mnt) != 0) {
        char sub[1024];
        if (cs_cg_read(base, "cgroup.subtree_control", sub, sizeof sub) < 0 || !has_word(sub, "cpuset")) {
            snprintf(why, len, "cpuset is available at %s but cannot be handed to its children: "
                     "cosched runs in that cgroup, and cgroup v2 gives no controller to the "
                     "children of a cgroup holding processes (start cosched from the root "
                     "cgroup, or from a cgroup whose parent enables cpuset)", base);
            return -1;
        }
    } else if (access(base, W_OK) < 0) {
        snprintf(why, len, "cannot write %s/cgroup.subtree_control: %s", base, strerror(errno));
        return -1;
    }
    return 0;
}

static int cg2_probe(char *why, size_t len)
{
    char mnt[PATH_MAX], base[PATH_MAX], dir[PATH_MAX + 64], file[PATH_MAX + 96];
    char w[PATH_MAX + 256];
    int ret = -1;

    if (cs_cgroup_locate(NULL, mnt, sizeof mnt, base, sizeof base, w, sizeof w) < 0) {
        snprintf(why, len, "%s", w);
        return -1;
    }
    /* cgroup.freeze exists in non-root cgroups only: make a throwaway one */
    snprintf(dir, sizeof dir, "%s/cosched-probe.%ld", base, (long)getpid());
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        snprintf(why, len, "cannot create cgroups in %s: %s (needs root or a delegated cgroup)",
                 base, strerror(errno));
        return -1;
    }
    snprintf(file, sizeof file, "%s/cgroup.freeze", dir);
    if (access(file, W_OK) < 0)
        snprintf(why, len, "%s: %s (cgroup.freeze needs Linux 5.2 or later)", file, strerror(errno));
    else
        ret = 0;
    rmdir(dir);
    return ret;
}

/* Switch cpuset on for dir's children unless it already is. */
static int enable_cpuset(const char *dir)
{
    char sub[1024];

    if (cs_cg_read(dir, "cgroup.subtree_control", sub, sizeof sub) >= 0 && has_word(sub, "cpuset"))
        return 0;
    if (cs_cg_write(WHO, dir, "cgroup.subtree_control", "+cpuset") < 0) {
        if (errno == EBUSY)
            cs_err(WHO ": %s holds processes, so cgroup v2 cannot give its children the cpuset "
                   "controller", dir);
        return -1;
    }
    return 0;
}

static int cg2_init(struct cs_engine *e)
{
    struct cg2 *st = calloc(1, sizeof *st);
    char why[PATH_MAX + 512], *managed = NULL, *restore = NULL;
    int tries, made = 0, recorded = 0;

    if (!st) {
        cs_err(WHO ": out of memory");
        return -1;
    }
    if (cs_cgroup_locate(NULL, st->mnt, sizeof st->mnt, st->base, sizeof st->base,
                         why, sizeof why) < 0) {
        cs_err(WHO ": %s", why);
        goto fail;
    }
    st->cpuset = cs_cgroup2_cpuset_usable(why, sizeof why) == 0;
    if (!st->cpuset)
        cs_info(WHO ": %s; cores are set with sched_setaffinity", why);
    st->restore = hwloc_bitmap_dup(cs_proc_start_cpus());
    if (!st->restore || hwloc_bitmap_list_asprintf(&managed, e->managed) < 0
        || hwloc_bitmap_list_asprintf(&restore, st->restore) < 0) {
        cs_err(WHO ": cannot tell which CPUs cosched started with");
        goto fail;
    }
    if ((size_t)snprintf(st->top, sizeof st->top, "%s/cosched", st->base) >= sizeof st->top
        || (size_t)snprintf(st->run, sizeof st->run, "%s/%s", st->top, e->run_id) >= sizeof st->run
        || cs_rec_add(st->record, sizeof st->record, "cg2") < 0
        || cs_rec_add(st->record, sizeof st->record, "run") < 0
        || cs_rec_add(st->record, sizeof st->record, st->run) < 0
        || cs_rec_add(st->record, sizeof st->record, st->base) < 0
        || cs_rec_add(st->record, sizeof st->record, restore) < 0) {
        cs_err(WHO ": cgroup path too long below %s", st->base);
        goto fail;
    }
    /* earlier runs may have used affinity: always give it back */
    cs_cgroup_reclaim_leftovers(WHO, st->top, st->base, st->restore);
    cs_guard_record("%s", st->record);
    recorded = 1;
    if (st->cpuset && enable_cpuset(st->base) < 0)
        goto fail;
    for (tries = 0;; tries++) {
        if (cs_cg_mkdir(WHO, st->top, 1) < 0)
            goto fail;
        if (mkdir(st->run, 0755) == 0)
            break;
        if (errno != ENOENT || tries == 3) {    /* ENOENT: a concurrent fini took top */
            cs_cg_mkdir(WHO, st->run, 0);
            goto fail;
        }
    }
    made = 1;
    if (st->cpuset && (enable_cpuset(st->top) < 0
                       || cs_cg_write(WHO, st->run, "cpuset.cpus", managed) < 0
                       || enable_cpuset(st->run) < 0))
        goto fail;
    cs_debug(WHO ": run directory %s ready (cores via %s)", st->run,
             st->cpuset ? "cpuset" : "sched_setaffinity");
    e->ctl_state = st;
    free(managed);
    free(restore);
    return 0;
fail:
    if (made)
        cs_cgroup_reclaim(WHO, st->run, st->base, NULL);
    if (recorded) {
        rmdir(st->top);                     /* only if empty: others may use it */
        cs_guard_forget("%s", st->record);
    }
    hwloc_bitmap_free(st->restore);
    free(managed);
    free(restore);
    free(st);
    return -1;
}

static int cg2_job_prepare(struct cs_engine *e, struct cs_job *j)
{
    struct cg2 *st = e->ctl_state;
    struct cg2_job *cj = calloc(1, sizeof *cj);
    char *restore = NULL;
    int made = 0, recorded = 0;

    if (!cj) {
        cs_err(WHO ": out of memory");
        return -1;
    }
    cj->fz.events = -1;
    if (hwloc_bitmap_list_asprintf(&restore, st->restore) < 0) {
        cs_err(WHO ": out of memory");
        goto fail;
    }
    if ((size_t)snprintf(cj->dir, sizeof cj->dir, "%s/job%d", st->run, j->id) >= sizeof cj->dir
        || cs_rec_add(cj->record, sizeof cj->record, "cg2") < 0
        || cs_rec_add(cj->record, sizeof cj->record, "job") < 0
        || cs_rec_add(cj->record, sizeof cj->record, cj->dir) < 0
        || cs_rec_add(cj->record, sizeof cj->record, st->base) < 0
        || cs_rec_add(cj->record, sizeof cj->record, restore ? restore : "") < 0) {
        cs_err(WHO ": job %d: cgroup path too long below %s", j->id, st->run);
        goto fail;
    }
    cs_guard_record("%s", cj->record);
    recorded = 1;
    if (cs_cg_mkdir(WHO, cj->dir, 0) < 0)
        goto fail;
    made = 1;
    if (cs_cgf_open(&cj->fz, WHO, 1, cj->dir) < 0)
        goto fail;
    snprintf(cj->what, sizeof cj->what, "job %d", j->id);
    j->ctl = cj;
    free(restore);
    return 0;
fail:
    cs_cgf_close(&cj->fz);
    if (made)
        cs_cgroup_reclaim(WHO, cj->dir, st->base, NULL);
    if (recorded)
        cs_guard_forget("%s", cj->record);
    free(restore);
    free(cj);
    return -1;
}

static int cg2_job_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    struct cg2_job *cj = j->ctl;
    char num[24];

    snprintf(num, sizeof num, "%ld", (long)pid);
    return cs_cg_write(WHO, cj->dir, "cgroup.procs", num);
}

static int cg2_set_cpus(struct cs_engine *e, struct cs_job *j,
                        hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
    static int mems_noted;
    struct cg2 *st = e->ctl_state;
    struct cg2_job *cj = j->ctl;
    pid_t *tids;
    size_t n;
    int r;

    if (!st->cpuset) {
        if (mems && !hwloc_bitmap_iszero(mems) && !mems_noted++)
            cs_debug(WHO ": memory nodes are not applied without the cpuset controller");
        return cs_affinity_cgroup(WHO, cj->dir, cpus) < 0 ? -1 : 0;
    }
    /* the cpuset: threads' own bindings kept, as in cgroup1.c */
    n = cs_binds_look(&cj->binds, cj->dir, 1, j->cpus, &tids);
    r = cs_cg_write_cpuset(WHO, cj->dir, cpus, mems);
    if (r == 0 && n)
        cs_binds_moved(cj->binds, cj->dir, 1, tids, n, j->cpus, cpus);
    free(tids);
    return r;
}

/* freeze_many() through cs_freeze_wait(): the job's freezer (cgrules.c),
 * and a ppoll() on the cgroup.events of the pending jobs. */
static int cg2_fz_start(void *arg, int i, struct cs_job *j)
{
    struct cg2_job *cj = j->ctl;

    return cs_cgf_ask(WHO, &cj->fz, 1) < 0 ? -1 : 0;
}

static int cg2_fz_check(void *arg, int i, struct cs_job *j)
{
    struct cg2_job *cj = j->ctl;

    return cs_cgf_check(WHO, cj->what, &cj->fz);
}

static int cg2_fz_event_fd(void *arg, int i, struct cs_job *j)
{
    struct cg2_job *cj = j->ctl;

    return cj->fz.events;
}

static void cg2_fz_laggard(void *arg, int i, struct cs_job *j)
{
    struct cg2_job *cj = j->ctl;

    if (cs_cgf_ask(WHO, &cj->fz, 0) < 0)
        cs_err(WHO ": job %d: freeze did not complete and could not be undone", j->id);
    else
        cs_warn(WHO ": job %d: not frozen after %.0f ms (%s/cgroup.events: a task in "
                "uninterruptible sleep, or more runnable threads than CPUs); thawed, left "
                "running this step", j->id, CS_FREEZE_TIMEOUT * 1e3, cj->dir);
}

static const struct cs_freeze_ops cg2_fz = {
    .who = WHO,
    .events = "cgroup.events",
    .start = cg2_fz_start,
    .check = cg2_fz_check,
    .event_fd = cg2_fz_event_fd,
    .laggard = cg2_fz_laggard,
};

/* Start every freeze, then wait on all pending cgroup.events at once. */
static int cg2_freeze_many(struct cs_engine *e, struct cs_job **jobs, int n, int *frozen)
{
    return cs_freeze_wait(&cg2_fz, NULL, jobs, n, frozen);
}

static int cg2_freeze(struct cs_engine *e, struct cs_job *j)
{
    int frozen;

    return cg2_freeze_many(e, &j, 1, &frozen);
}

static int cg2_thaw(struct cs_engine *e, struct cs_job *j)
{
    struct cg2_job *cj = j->ctl;

    return cs_cgf_thaw(WHO, cj->what, &cj->fz);
}

static int cg2_cpu_time(struct cs_engine *e, struct cs_job *j, uint64_t *ns)
{
    struct cg2_job *cj = j->ctl;

    return cs_cg_cpu_ns(WHO, 1, cj->dir, ns);
}

static void cg2_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct cg2 *st = e->ctl_state;
    struct cg2_job *cj = j->ctl;

    if (!cj)
        return;
    cs_cgf_close(&cj->fz);
    cs_cgroup_reclaim(WHO, cj->dir, st->base, st->restore);
    cs_guard_forget("%s", cj->record);
    cs_binds_free(cj->binds);
    free(cj);
    j->ctl = NULL;
}

static void cg2_fini(struct cs_engine *e)
{
    struct cg2 *st = e->ctl_state;

    if (!st)
        return;
    cs_cgroup_reclaim(WHO, st->run, st->base, st->restore);
    if (rmdir(st->top) < 0 && errno != ENOENT && errno != EBUSY && errno != ENOTEMPTY)
        cs_warn(WHO ": cannot remove %s: %s", st->top, strerror(errno));
    cs_guard_forget("%s", st->record);
    hwloc_bitmap_free(st->restore);
    free(st);
    e->ctl_state = NULL;
}

/* "cg2 run|job DIR ORIGIN CPUS" */
static void cg2_rescue(const char *record)
{
    char *copy = strdup(record), *f[6];
    hwloc_bitmap_t restore = NULL;
    int n;

    if (!copy)
        return;
    n = cs_rec_split(copy, f, 6);
    if (n != 5 || strcmp(f[0], "cg2")) {
        cs_warn(WHO ": guardian: ignoring malformed record '%s'", record);
        goto out;
    }
    if (f[4][0]) {
        restore = hwloc_bitmap_alloc();
        if (!restore || hwloc_bitmap_list_sscanf(restore, f[4]) < 0) {
            cs_warn(WHO ": guardian: bad CPU list '%s' in record; affinity not restored", f[4]);
            hwloc_bitmap_free(restore);
            restore = NULL;
        }
    }
    cs_cgroup_reclaim(WHO, f[2], f[3], restore);
    if (strcmp(f[1], "run") == 0) {
        char *slash = strrchr(f[2], '/');
        if (slash) {
            *slash = '\0';
            rmdir(f[2]);                    /* the shared "cosched" dir, if now empty */
        }
    }
out:
    hwloc_bitmap_free(restore);
    free(copy);
}

const struct cs_control_ops cs_control_cgroup2 = {
    .name = "cgroup2",
    .probe = cg2_probe,
    .init = cg2_init,
    .job_prepare = cg2_job_prepare,
    .job_attach = cg2_job_attach,
    .set_cpus = cg2_set_cpus,
    .freeze = cg2_freeze,
    .thaw = cg2_thaw,
    .cpu_time = cg2_cpu_time,
    .instance_ended = NULL,             /* cpu.stat keeps reaped tasks' time */
    .job_release = cg2_job_release,
    .fini = cg2_fini,
    .rescue = cg2_rescue,
    .freeze_many = cg2_freeze_many,
    .cpu_idle = cs_proc_cpu_idle,
};
