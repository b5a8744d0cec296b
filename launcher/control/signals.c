/*
 * signals.c - control without cgroups, for users who have neither root nor
 * a delegated cgroup: SIGSTOP/SIGCONT stop and resume a job,
 * sched_setaffinity confines its cores, /proc and the leaders' rusage count
 * its CPU time.
 *
 * A job instance is its process group: the engine's child calls
 * setpgid(0,0) before exec and job_attach repeats setpgid(pid, pid) from
 * this side, so there is no window in which the group does not exist yet.
 * Stop and resume go to the whole group with killpg() and, one by one, to
 * descendants of members that have left the group (see cs_proc_members).
 * A freeze is complete when every thread of those processes shows T (or is
 * dead) in /proc; the wait is a short bounded poll, there being nothing to
 * wait on (freeze_many signals every leaving job before polling, so their
 * waits overlap).  A job that does not stop in time (a task in
 * uninterruptible sleep, or too crowded a runqueue) is continued again and
 * left running for the step.
 *
 * Limits, by construction (use a cgroup backend where these matter):
 *  - a process that leaves its process group and is reparented (double
 *    fork, daemon(3)) escapes control: it is neither stopped nor confined,
 *    and its CPU time is not counted;
 *  - anyone may send SIGCONT: the job itself, a shell, an operator, Slurm's
 *    "scontrol resume" - a stopped job is not held against its will; and
 *    cosched's SIGCONT equally undoes a stop someone else made (Slurm 22.05
 *    suspends with SIGSTOP);
 *  - a stop is visible: the parent gets SIGCHLD/CLD_STOPPED (the engine
 *    must use SA_NOCLDSTOP or ignore WIFSTOPPED), programs that handle
 *    SIGCONT run their handler, timers keep running;
 *  - affinity is advice the job may widen again with its own
 *    sched_setaffinity; memory nodes are not applied at all (noted once in
 *    debug output): moving another process's memory needs privileges this
 *    backend exists to do without;
 *  - every freeze and set_cpus scans /proc, so its cost grows with the
 *    number of processes on the node; CPU time has clock-tick resolution
 *    and loses the time of members reaped outside the group.
 *
 * Guardian records: one "sig PGID CPUS" per live instance (CPUS: the affinity
 * cosched started with); rescue continues the group and gives the CPUs back.
 * cgroup2 in affinity mode does not need these: its cgroup finds the threads.
 * When an instance leader is reaped, members that outlived it are continued,
 * unconfined and left alone: the group id could otherwise be reused by an
 * unrelated process once they are gone.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"

#define WHO "signals"
#define REC_MAX 8192

struct sig {
    hwloc_bitmap_t restore;     /* unconfined: cosched's own CPUs at start */
    char *restore_list;
};

struct sig_job {
    pid_t live;                 /* group of the current instance, 0: none */
    pid_t *extra;               /* stopped members outside the group */
    size_t nextra;
    struct cs_proc_cpu cpu;     /* CPU time: reaped instances + the live group */
    char record[REC_MAX];
};

static int sig_probe(char *why, size_t len)
{
    if (access("/proc/self/stat", R_OK) < 0) {
        snprintf(why, len, "/proc is not mounted (/proc/self/stat: %s)", strerror(errno));
        return -1;
    }
    return 0;
}

static int sig_init(struct cs_engine *e)
{
    struct sig *st = calloc(1, sizeof *st);

    if (!st || !(st->restore = hwloc_bitmap_dup(cs_proc_start_cpus()))
        || hwloc_bitmap_list_asprintf(&st->restore_list, st->restore) < 0) {
        cs_err(WHO ": cannot tell which CPUs cosched started with");
        if (st)
            hwloc_bitmap_free(st->restore);
        free(st);
        return -1;
    }
    e->ctl_state = st;
    return 0;
}

static int sig_job_prepare(struct cs_engine *e, struct cs_job *j)
{
    struct sig_job *sj = calloc(1, sizeof *sj);

    if (!sj) {
        cs_err(WHO ": out of memory");
        return -1;
    }
    j->ctl = sj;
    return 0;
}

/* Continue the group and the members outside it that we stopped. */
static void cont_all(struct sig_job *sj)
{
    size_t i;

    if (killpg(sj->live, SIGCONT) < 0 && errno != ESRCH)
        cs_warn(WHO ": cannot send SIGCONT to process group %ld: %s", (long)sj->live,
                strerror(errno));
    for (i = 0; i < sj->nextra; i++)
        kill(sj->extra[i], SIGCONT);
    sj->nextra = 0;
}

/* The instance is over for cosched: continue and unconfine what is left. */
static void let_go(struct sig *st, struct sig_job *sj, struct cs_job *j, int warn)
{
    struct cs_pstat *m = NULL;
    size_t n = 0, i, alive = 0;

    cont_all(sj);
    if (cs_proc_members(sj->live, &m, &n) == 0) {
        for (i = 0; i < n; i++) {
            kill(m[i].pid, SIGCONT);
            alive += m[i].state != 'Z' && m[i].state != 'X';
        }
        if (n)
            cs_affinity_pgrp(sj->live, st->restore);
        if (warn && alive)
            cs_warn(WHO ": job %d: %zu process(es) of group %ld outlived the instance leader "
                    "(pid %ld first); resumed, given back CPUs %s, no longer controlled",
                    j->id, alive, (long)sj->live, (long)m[0].pid, st->restore_list);
    }
    free(m);
    cs_guard_forget("%s", sj->record);
    sj->live = 0;
}

static int sig_job_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    struct sig *st = e->ctl_state;
    struct sig_job *sj = j->ctl;
    char num[24];
    pid_t pg;

    /* the child does the same; whichever runs first creates the group */
    if (setpgid(pid, pid) < 0 && errno != EACCES) {
        cs_err(WHO ": job %d: cannot make process %ld a process group leader: %s",
               j->id, (long)pid, strerror(errno));
        return -1;
    }
    pg = getpgid(pid);
    if (pg != pid) {
        cs_err(WHO ": job %d: process %ld is in process group %ld, not its own; "
               "it cannot be controlled by signals", j->id, (long)pid, (long)pg);
        return -1;
    }
    if (sj->live)
        let_go(st, sj, j, 1);               /* should have been reaped first */
    snprintf(num, sizeof num, "%ld", (long)pid);
    sj->record[0] = '\0';
    if (cs_rec_add(sj->record, sizeof sj->record, "sig") < 0
        || cs_rec_add(sj->record, sizeof sj->record, num) < 0
        || cs_rec_add(sj->record, sizeof sj->record, st->restore_list) < 0) {
        cs_err(WHO ": job %d: guardian record too long", j->id);
        return -1;
    }
    cs_guard_record("%s", sj->record);
    sj->live = pid;
    return 0;
}

static int sig_set_cpus(struct cs_engine *e, struct cs_job *j,
                        hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
    static int mems_noted;
    struct sig_job *sj = j->ctl;

    if (mems && !hwloc_bitmap_iszero(mems) && !mems_noted++)
        cs_debug(WHO ": memory nodes are not applied by this backend");
    if (!sj->live)
        return 0;
    return cs_affinity_pgrp(sj->live, cpus) < 0 ? -1 : 0;
}

static int remember(struct sig_job *sj, pid_t pid)
{
    pid_t *p;
    size_t i;

    for (i = 0; i < sj->nextra; i++)
        if (sj->extra[i] == pid)
            return 0;
    p = realloc(sj->extra, (sj->nextra + 1) * sizeof *p);
    if (!p)
        return -1;
    sj->extra = p;
    sj->extra[sj->nextra++] = pid;
    return 0;
}

/* Stop one job: the group, then its members outside the group. *m gets
 * the members to watch; -1 (reported) if nothing could be sent. */
static int stop_job(struct cs_job *j, struct cs_pstat **m, size_t *n)
{
    struct sig_job *sj = j->ctl;
    size_t i;

    if (cs_proc_members(sj->live, m, n) < 0) {
        cs_err(WHO ": job %d: cannot scan /proc for process group %ld: %s", j->id,
               (long)sj->live, strerror(errno));
        return -1;
    }
    if (killpg(sj->live, SIGSTOP) < 0 && errno != ESRCH) {
        cs_err(WHO ": job %d: cannot send SIGSTOP to process group %ld: %s", j->id,
               (long)sj->live, strerror(errno));
        return -1;
    }
    for (i = 0; i < *n; i++) {
        if ((*m)[i].pgrp == sj->live)
            continue;
        if (remember(sj, (*m)[i].pid) < 0) {
            cs_err(WHO ": out of memory");
            cont_all(sj);
            return -1;
        }
        if (kill((*m)[i].pid, SIGSTOP) < 0 && errno != ESRCH)
            cs_warn(WHO ": job %d: cannot stop process %ld (outside group %ld): %s", j->id,
                    (long)(*m)[i].pid, (long)sj->live, strerror(errno));
    }
    return 0;
}

/* Index of the first member not stopped yet, n if all are. */
static size_t first_running(const struct cs_pstat *m, size_t n)
{
    size_t i;

    for (i = 0; i < n && cs_proc_all_stopped(m[i].pid); i++)
        ;
    return i;
}

/* freeze_many() through cs_freeze_wait(): SIGSTOP to every member found,
 * then /proc polled until each is stopped.  The members of job i found at
 * its stop: m[i][0 .. n[i]-1]. */
struct sig_stopping { struct cs_pstat **m; size_t *n; };

static int sig_fz_start(void *arg, int i, struct cs_job *j)
{
    struct sig_stopping *s = arg;
    struct sig_job *sj = j->ctl;

    if (!sj->live)
        return 1;                           /* nothing left to stop */
    return stop_job(j, &s->m[i], &s->n[i]) < 0 ? -1 : 0;
}

static int sig_fz_check(void *arg, int i, struct cs_job *j)
{
    struct sig_stopping *s = arg;

    return first_running(s->m[i], s->n[i]) == s->n[i];
}

static void sig_fz_laggard(void *arg, int i, struct cs_job *j)
{
    struct sig_stopping *s = arg;
    size_t k = first_running(s->m[i], s->n[i]);

    cont_all(j->ctl);
    cs_warn(WHO ": job %d: process %ld still not stopped %.0f ms after SIGSTOP (a task in "
            "uninterruptible sleep, or more runnable threads than CPUs); continued, left "
            "running this step", j->id, k < s->n[i] ? (long)s->m[i][k].pid : 0L,
            CS_FREEZE_TIMEOUT * 1e3);
}

static const struct cs_freeze_ops sig_fz = {
    .who = WHO,
    .start = sig_fz_start,
    .check = sig_fz_check,
    .laggard = sig_fz_laggard,
};

/* Stop every job, then poll them all until stopped or the common bound.
 * frozen[i]: 1 stopped, else 0. */
static int sig_freeze_many(struct cs_engine *e, struct cs_job **jobs, int njobs, int *frozen)
{
    struct sig_stopping s = { calloc((size_t)njobs, sizeof *s.m), calloc((size_t)njobs, sizeof *s.n) };
    int ret;

    if (!s.m || !s.n) {
        cs_err(WHO ": out of memory");
        free(s.m);
        free(s.n);
        return -1;
    }
    ret = cs_freeze_wait(&sig_fz, &s, jobs, njobs, frozen);
    for (int i = 0; i < njobs; i++)
        free(s.m[i]);
    free(s.m);
    free(s.n);
    return ret;
}

static int sig_freeze(struct cs_engine *e, struct cs_job *j)
{
    int frozen;

    return sig_freeze_many(e, &j, 1, &frozen);
}

static int sig_thaw(struct cs_engine *e, struct cs_job *j)
{
    struct sig_job *sj = j->ctl;

    if (!sj->live)
        return 0;
    if (killpg(sj->live, SIGCONT) < 0 && errno != ESRCH) {
        cs_err(WHO ": job %d: cannot send SIGCONT to process group %ld: %s", j->id,
               (long)sj->live, strerror(errno));
        return -1;
    }
    cont_all(sj);
    return 0;
}

static int sig_cpu_time(struct cs_engine *e, struct cs_job *j, uint64_t *ns)
{
    struct sig_job *sj = j->ctl;

    return cs_proc_cpu_read(&sj->cpu, sj->live, ns);
}

static void sig_instance_ended(struct cs_engine *e, struct cs_job *j, const struct rusage *ru)
{
    struct sig_job *sj = j->ctl;

    if (!sj)
        return;
    cs_proc_cpu_reaped(&sj->cpu, ru);
    if (sj->live)
        let_go(e->ctl_state, sj, j, 1);
}

static void sig_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct sig_job *sj = j->ctl;

    if (!sj)
        return;
    if (sj->live)
        let_go(e->ctl_state, sj, j, 0);
    free(sj->extra);
    free(sj);
    j->ctl = NULL;
}

static void sig_fini(struct cs_engine *e)
{
    struct sig *st = e->ctl_state;

    if (!st)
        return;
    hwloc_bitmap_free(st->restore);
    free(st->restore_list);
    free(st);
    e->ctl_state = NULL;
}

/* "sig PGID CPUS" */
static void sig_rescue(const char *record)
{
    char *copy = strdup(record), *f[4], *end;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    struct cs_pstat *m = NULL;
    size_t n = 0, i;
    long pgid;

    if (!copy || !cpus)
        goto out;
    if (cs_rec_split(copy, f, 4) != 3 || strcmp(f[0], "sig")
        || (pgid = strtol(f[1], &end, 10)) <= 1 || *end
        || hwloc_bitmap_list_sscanf(cpus, f[2]) < 0 || hwloc_bitmap_iszero(cpus)) {
        cs_warn(WHO ": guardian: ignoring malformed record '%s'", record);
        goto out;
    }
    killpg((pid_t)pgid, SIGCONT);
    if (cs_proc_members((pid_t)pgid, &m, &n) == 0) {
        for (i = 0; i < n; i++)
            kill(m[i].pid, SIGCONT);
        if (n)
            cs_affinity_pgrp((pid_t)pgid, cpus);
    }
out:
    free(m);
    hwloc_bitmap_free(cpus);
    free(copy);
}

const struct cs_control_ops cs_control_signals = {
    .name = "signals",
    .probe = sig_probe,
    .init = sig_init,
    .job_prepare = sig_job_prepare,
    .job_attach = sig_job_attach,
    .set_cpus = sig_set_cpus,
    .freeze = sig_freeze,
    .thaw = sig_thaw,
    .cpu_time = sig_cpu_time,
    .instance_ended = sig_instance_ended,
    .job_release = sig_job_release,
    .fini = sig_fini,
    .rescue = sig_rescue,
    .freeze_many = sig_freeze_many,
    .cpu_idle = cs_proc_cpu_idle,
};
