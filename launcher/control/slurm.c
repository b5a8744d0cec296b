/*
 * slurm.c - control of Slurm steps through Slurm's own step cgroups (the
 * node engine, `cosched serve`).  Facts behind every choice were measured
 * here with Slurm 22.05 (shared notes "slurm-and-cgroups"):
 *
 *   cgroup v1 (proctrack/cgroup, task/cgroup), per controller:
 *       <mnt>/slurm_<node>/uid_<u>/job_<j>/step_<s>[/task_<t>]
 *     freeze:  the STEP's freezer (freezer.state).  Never a child freezer
 *              group under the step (proctrack reads only the step's own
 *              cgroup.procs: scancel would miss the moved tasks and drain the
 *              node) and never the job-level freezer (slurmstepd lives there:
 *              the job would hang in COMPLETING).
 *     cores:   the step's cpuset.cpus and every cpuset below it (task
 *              groups), written parent first when growing and children
 *              first when shrinking, since a v1 child must stay inside its
 *              parent.  Writing cpuset.cpus rebinds the tasks to the whole
 *              set (kernels before 6.2): each move keeps the threads' own
 *              bindings (--cpu-bind) through binds.c, and release and the
 *              guardian's record give them back (cosched(1)).
 *   cgroup v2 (Slurm's cgroup/v2 layout):
 *       <mnt>/.../job_<j>/step_<s>/{slurm,user/task_<t>}
 *     freeze:  step_<s>/user/cgroup.freeze - the tasks' part of the step; the
 *              step itself also holds slurmstepd ("slurm"), which must never
 *              be frozen.
 *     cores:   step_<s>/user/cpuset.cpus where the cpuset controller is
 *              enabled there, else sched_setaffinity on every thread below
 *              step_<s>/user (as cgroup2.c does on machines like ours).
 *     Run under Debian's Slurm 22.05 with cgroup/v2 in the test VM
 *     (tests/vm/40-slurm.bats): tasks in step_<s>/user/task_special of
 *     system.slice/<node>_slurmstepd.scope (a build for multiple slurmd).
 *
 * This file says WHERE a step's cgroups are and Slurm's safety rules (never
 * the job-level freezer, leave a step Slurm is killing running, bounds on a
 * tree its user owns, a step Slurm suspends); HOW to freeze, wait (v2: on
 * cgroup.events, like every v2 freeze), thaw, read CPU time and move a v1
 * tree's cores is the cgroup layer's (cgroup.h: cgrules.c, cgroupfs.c),
 * shared with cgroup1.c and cgroup2.c; what a dead engine leaves (the held
 * steps' records, left-frozen steps) is slurmleft.c's.
 *
 * Slurm stays in charge: no signal is ever sent (scontrol suspend in 22.05
 * uses SIGSTOP/SIGCONT; the freezer neither sends nor undoes them, so an
 * admin's suspend stays in force); nothing of Slurm's is created or removed;
 * scancel kills a frozen v1 step because Slurm thaws its step freezer before
 * killing, and a v2-frozen task dies on SIGKILL.  Release (and the guardian,
 * if the engine dies) thaws and gives the step back its own cores.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/engine_state.h"

#define WHO "slurm"
/* What the engine follows below a step (everything there is the step owner's
 * to create: Slurm 22.05 makes the user own the step's cgroup directories).
 * Slurm itself makes one level (task_<t>); deeper or more is the user's.  A
 * step whose tree is larger keeps the cores Slurm gave it (it is still
 * frozen and thawed): a user can only hurt the user's own step. */
#define TREE_DEPTH 3                /* levels below the step's directory */
#define PIDS_LOOKED_AT 512          /* tasks read for pending kill signals */
#define TIDS_BOUND 4096             /* threads whose own CPU binding is kept */

struct sl_job {
    int v2;
    char step[PATH_MAX];        /* v1: the freezer step dir; v2: the step dir */
    char freeze[PATH_MAX];      /* v1: = step; v2: step/user */
    char cpuset[PATH_MAX];      /* v1: the cpuset step dir; v2: step/user or "" (affinity) */
    char orig[512];             /* the step's cores (list) as Slurm set them */
    int dying;                  /* a kill signal is pending: not frozen (since dying_since) */
    double dying_since;
    int kill_ignored;           /* pending for longer than Slurm's kill takes: looked at no more */
    int pinned;                 /* its tree is too large: its cores are no longer moved */
    char record[CS_SLURM_REC_MAX];
    char cur[1024];             /* the cores the engine last gave it */
    struct cs_binds *binds;     /* its threads' own CPU bindings (binds.c), from its first move */
    char bindrec[CS_SLURM_REC_MAX / 2];  /* those bindings as the record has them */
    int bind_overflow;          /* more than a record holds (said once) */
    struct cs_proc_cpu cpu;
    struct cs_cgfreezer fz;     /* freeze's freezer: v1 freezer.state, v2 cgroup.freeze + events (cgrules.c) */
    struct cs_fzwatch watch;    /* writes of fz's file (fzwatch.c): Slurm's kill */
    int by_write;               /* dying because Slurm wrote fz's file (not a pending signal) */
    int suspended;              /* Slurm froze fz itself (its suspend): not written again until Slurm does */
    char what[48];              /* "step J.S", for messages */
};

/*
 * Where a step is, from what the kernel says (/proc/PID/cgroup), not from
 * the names one Slurm release gives it: Slurm's cgroup/v2 puts a step's
 * tasks in <scope>/<job dir>/step_<s>/user/task_<t> and its slurmstepd in
 * .../step_<s>/slurm, where <scope> is <node>_slurmstepd.scope of
 * system.slice or (25.11) of any CgroupSlice, and <job dir> is job_<j>
 * (before 26.05, or CgroupJobIdPaths=yes) or (26.05) the job's SLUID; v1
 * puts them in .../job_<j>/step_<s> of each hierarchy, slurmstepd in
 * .../job_<j> of the freezer.  So:
 *   - the step's directory is the FIRST component of the task's path named
 *     step_<s> (or step_<s>+<het>) - under v2, followed by "user".  Only
 *     root makes the directories above a step (a user can make some below
 *     it): the first match from the root is Slurm's.
 *   - it is job <j>'s when its parent is named job_<j>, or when the
 *     registering slurmstepd (root, known by SO_PEERCRED; it sent the ids
 *     from Slurm's own spank items) is in that step (v2: outside its user/)
 *     or in its parent (v1 freezer).  A parent named job_<another> is
 *     refused whoever asks.
 */
static const char *step_comp(const char *path, unsigned long step, int v2, const char **parent)
{
    char want[32];
    int n = snprintf(want, sizeof want, "step_%lu", step);
    const char *prev = NULL;

    for (const char *c = path; c && *c; ) {
        const char *e;
        while (*c == '/')
            c++;
        e = strchr(c, '/');
        size_t k = e ? (size_t)(e - c) : strlen(c);
        if (k >= (size_t)n && strncmp(c, want, (size_t)n) == 0 &&
            (k == (size_t)n || (c[n] == '+' && strspn(c + n + 1, "0123456789") == k - (size_t)n - 1 && k > (size_t)n + 1)) &&
            (!v2 || (e && strncmp(e, "/user", 5) == 0 && (e[5] == '/' || e[5] == '\0')))) {
            *parent = prev;
            return c + k;
        }
        prev = c;
        c = e;
    }
    return NULL;
}

/* rel = the step's directory in pid's cgroup path of ctl (NULL: cgroup2),
 * path = that whole path; 0, 1 (absent), or -1 with why (not job's). */
static int step_of(pid_t pid, pid_t peer, const char *ctl, unsigned long job, unsigned long step, char *path,
                   size_t plen, char *rel, size_t rlen, char *why, size_t wlen)
{
    const char *parent = NULL, *end;
    char pp[PATH_MAX];
    int v2 = ctl == NULL;

    if (cs_proc_cgroup(pid, ctl, path, plen) < 0 || (end = step_comp(path, step, v2, &parent)) == NULL)
        return 1;
    if ((size_t)(end - path) >= rlen)
        return 1;
    memcpy(rel, path, (size_t)(end - path));
    rel[end - path] = '\0';
    if (parent && strncmp(parent, "job_", 4) == 0 && isdigit((unsigned char)parent[4])) {
        char *pe;
        unsigned long pj = strtoul(parent + 4, &pe, 10);
        if (*pe == '/' && pj == job)
            return 0;
        if (*pe == '/') {
            snprintf(why, wlen, "pid %d is in %s, a step of job %lu, not of job %lu", (int)pid, rel, pj, job);
            return -1;
        }
    }
    /* not named for the job (26.05's SLUID): the registering slurmstepd must be there */
    size_t rl = strlen(rel), pl = (size_t)(strrchr(rel, '/') - rel);
    if (peer > 0 && cs_proc_cgroup(peer, ctl, pp, sizeof pp) == 0 &&
        (v2 ? strncmp(pp, rel, rl) == 0 && pp[rl] == '/' && strncmp(pp + rl, "/user", 5) != 0
            : (strncmp(pp, rel, rl) == 0 && (pp[rl] == '\0' || pp[rl] == '/')) ||
              (pl > 0 && strlen(pp) == pl && strncmp(pp, rel, pl) == 0)))
        return 0;
    snprintf(why, wlen, "pid %d is in %s, whose job directory is not named job_%lu, and the slurmstepd that "
             "registered it (pid %d) is not in that step (its %s cgroup: %s)", (int)pid, rel, job, (int)peer,
             ctl ? ctl : "cgroup2", peer > 0 && cs_proc_cgroup(peer, ctl, pp, sizeof pp) == 0 ? pp : "none");
    return -1;
}

/* out = a b; -1 when it does not fit (a path deeper than PATH_MAX). */
static int join(char *out, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 1 > len)
        return -1;
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
    return 0;
}

static int mount_of(const char *ctl, char *mnt, size_t len)
{
    char dir[PATH_MAX], why[256];
    return cs_cgroup_locate(ctl, mnt, len, dir, sizeof dir, why, sizeof why);
}

/* Find the step's dirs from where pid is (peer: the registering
 * slurmstepd, 0 if none); 0, or -1 with why. */
static int locate(pid_t pid, pid_t peer, unsigned long job, unsigned long step, struct sl_job *sj, char *why,
                  size_t len)
{
    char path[PATH_MAX], mnt[PATH_MAX], rel[PATH_MAX], crel[PATH_MAX], cpath[PATH_MAX];
    int r;

    memset(sj, 0, sizeof *sj);
    r = step_of(pid, peer, "freezer", job, step, path, sizeof path, rel, sizeof rel, why, len);
    if (r < 0)
        return -1;
    if (r == 0) {
        if (mount_of("freezer", mnt, sizeof mnt) < 0) {
            snprintf(why, len, "pid %d is in freezer cgroup %s but the freezer hierarchy is not mounted here",
                     (int)pid, path);
            return -1;
        }
        if (join(sj->step, sizeof sj->step, mnt, rel) < 0)
            goto too_long;
        memcpy(sj->freeze, sj->step, sizeof sj->freeze);
        /* the cpuset step: the same directory in the cpuset hierarchy */
        const char *pe = NULL, *ce;
        if (cs_proc_cgroup(pid, "cpuset", cpath, sizeof cpath) < 0 || !(ce = step_comp(cpath, step, 0, &pe)) ||
            (size_t)(ce - cpath) != strlen(rel) || strncmp(cpath, rel, strlen(rel)) != 0 ||
            mount_of("cpuset", mnt, sizeof mnt) < 0) {
            snprintf(why, len, "pid %d is in step %lu.%lu's freezer cgroup but not in its cpuset cgroup "
                     "(is ConstrainCores=yes in cgroup.conf?)", (int)pid, job, step);
            return -1;
        }
        memcpy(crel, cpath, strlen(rel) + 1);
        crel[strlen(rel)] = '\0';
        if (join(sj->cpuset, sizeof sj->cpuset, mnt, crel) < 0)
            goto too_long;
        if (cs_cg_read(sj->cpuset, "cpuset.cpus", sj->orig, sizeof sj->orig) < 0) {
            snprintf(why, len, "cannot read %s/cpuset.cpus: %s", sj->cpuset, strerror(errno));
            return -1;
        }
        return 0;
    }
    r = step_of(pid, peer, NULL, job, step, path, sizeof path, rel, sizeof rel, why, len);
    if (r < 0)
        return -1;
    if (r == 0) {
        char ctls[256] = "";
        if (mount_of(NULL, mnt, sizeof mnt) < 0) {
            snprintf(why, len, "pid %d is in cgroup2 %s but cgroup2 is not mounted here", (int)pid, path);
            return -1;
        }
        sj->v2 = 1;
        if (join(sj->step, sizeof sj->step, mnt, rel) < 0 || join(sj->freeze, sizeof sj->freeze, sj->step, "/user") < 0)
            goto too_long;
        if (access(sj->freeze, F_OK) < 0) {
            snprintf(why, len, "pid %d is in %s, not below %s/user where Slurm's cgroup/v2 puts a step's tasks",
                     (int)pid, path, rel);
            return -1;
        }
        cs_cg_read(sj->freeze, "cgroup.controllers", ctls, sizeof ctls);
        if (strstr(ctls, "cpuset")) {
            snprintf(sj->cpuset, sizeof sj->cpuset, "%s", sj->freeze);
            if (cs_cg_read(sj->step, "cpuset.cpus.effective", sj->orig, sizeof sj->orig) < 0)
                sj->orig[0] = '\0';
        }
        if (!sj->orig[0]) {
            /* no cpuset here: the task's own affinity is the step's cores */
            hwloc_topology_t t;
            hwloc_bitmap_t b = hwloc_bitmap_alloc();
            if (hwloc_topology_init(&t) == 0 && hwloc_topology_load(t) == 0 &&
                hwloc_get_proc_cpubind(t, pid, b, HWLOC_CPUBIND_PROCESS) == 0)
                hwloc_bitmap_list_snprintf(sj->orig, sizeof sj->orig, b);
            hwloc_topology_destroy(t);
            hwloc_bitmap_free(b);
            if (!sj->orig[0]) {
                snprintf(why, len, "cannot read the cores of pid %d", (int)pid);
                return -1;
            }
        }
        return 0;
    }
    {
        char v2[PATH_MAX] = "none";
        if (cs_proc_cgroup(pid, "freezer", path, sizeof path) < 0)
            snprintf(path, sizeof path, "none");
        if (cs_proc_cgroup(pid, NULL, v2, sizeof v2) < 0)
            snprintf(v2, sizeof v2, "none");
        const char *pe, *e2 = strcmp(v2, "none") ? step_comp(v2, step, 0, &pe) : NULL;
        if (kill(pid, 0) < 0 && errno == ESRCH)
            snprintf(why, len, "pid %d does not exist", (int)pid);
        else if (e2)
            snprintf(why, len, "pid %d is in %s, not below %.*s/user where Slurm's cgroup/v2 puts a step's tasks",
                     (int)pid, v2, (int)(e2 - v2), v2);
        else
            snprintf(why, len, "pid %d is not in the cgroups of Slurm step %lu.%lu (its v1 freezer cgroup: %s; "
                     "its cgroup2: %s)", (int)pid, job, step, path, v2);
    }
    return -1;
too_long:
    snprintf(why, len, "step %lu.%lu: its cgroup path is longer than %d bytes", job, step, PATH_MAX);
    return -1;
}

int cs_slurm_step_locate(pid_t pid, pid_t peer, unsigned long job, unsigned long step, struct cs_slurm_step *at,
                         hwloc_bitmap_t cpus, char *why, size_t len)
{
    struct sl_job sj;

    if (locate(pid, peer, job, step, &sj, why, len) < 0)
        return -1;
    if (hwloc_bitmap_list_sscanf(cpus, sj.orig) < 0 || hwloc_bitmap_iszero(cpus)) {
        snprintf(why, len, "step %lu.%lu has no cores ('%s')", job, step, sj.orig);
        return -1;
    }
    memset(at, 0, sizeof *at);
    at->job = job;
    at->step = step;
    at->v2 = sj.v2;
    memcpy(at->dir, sj.step, sizeof at->dir);
    memcpy(at->freeze, sj.freeze, sizeof at->freeze);
    memcpy(at->cpuset, sj.cpuset, sizeof at->cpuset);
    memcpy(at->orig, sj.orig, sizeof at->orig);
    return 0;
}

static int sl_probe(char *why, size_t len)
{
    return 0;
}

static int sl_init(struct cs_engine *e)
{
    return 0;
}

static int sl_job_prepare(struct cs_engine *e, struct cs_job *j)
{
    return 0;
}

static int record_anew(struct sl_job *sj);

/* Slurm wrote the step's freezer since the last look: a freeze is its
 * suspend (the step is Slurm's until it writes again: suspended), a thaw
 * its kill (fzwatch.c says why) or a resume: the step is taken for dying
 * from now, left running for kill_grace (dying()). */
static int slurm_touched(struct cs_job *j, double now)
{
    struct sl_job *sj = j->ctl;

    if (!cs_fzwatch_written(&sj->watch))
        return 0;
    /* a freeze of Slurm's is its suspend (proctrack/cgroup answers SIGSTOP
     * by freezing the step): the step is Slurm's until Slurm thaws it */
    int was = sj->suspended;
    sj->suspended = cs_cgf_asked(&sj->fz) == 1;
    if (was != sj->suspended && record_anew(sj) < 0)   /* a rescue then leaves it frozen */
        cs_warn(WHO ": %s: its threads' own CPU bindings no longer fit its record", sj->what);
    if (sj->suspended) {
        if (!was)
            cs_info(WHO ": step %s: Slurm froze it (a suspend): left to Slurm until it thaws it", j->name);
        return 1;
    }
    if (!sj->dying)
        cs_info(WHO ": step %s: Slurm wrote its freezer (a kill, or a resume): left running", j->name);
    sj->dying = sj->by_write = 1;
    sj->dying_since = now;
    return 1;
}

/* The engine's own write of the step's freeze file: a write of Slurm's
 * before it is noted first (and a freeze not made then: -2), the engine's
 * own event drained after. */
static int ask(struct cs_job *j, int on, double now)
{
    struct sl_job *sj = j->ctl;
    int r;

    if (slurm_touched(j, now) && on)
        return -2;
    if (sj->suspended)
        return on ? -2 : 0;
    r = cs_cgf_ask(WHO, &sj->fz, on);
    cs_fzwatch_written(&sj->watch);
    return r;
}

static int make_record(struct sl_job *sj);

static int sl_job_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    const struct cs_slurm_step *at = j->slurm;
    struct sl_job *sj = calloc(1, sizeof *sj);
    char path[PATH_MAX + 32];

    /* where the step is: located once, by the host that registered it
     * (cs_slurm_step_locate), never again here */
    if (!sj || !at) {
        cs_err(WHO ": job %d (%s): %s", j->id, j->name, sj ? "not a Slurm step" : "out of memory");
        free(sj);
        return -1;
    }
    sj->v2 = at->v2;
    memcpy(sj->step, at->dir, sizeof sj->step);
    memcpy(sj->freeze, at->freeze, sizeof sj->freeze);
    memcpy(sj->cpuset, at->cpuset, sizeof sj->cpuset);
    memcpy(sj->orig, at->orig, sizeof sj->orig);
    /* sj->binds: made at the first core move (sl_set_cpus), none before */
    snprintf(sj->what, sizeof sj->what, "step %s", j->name);
    if (cs_cgf_open(&sj->fz, WHO, sj->v2, sj->freeze) < 0) {
        free(sj);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", sj->freeze, sj->v2 ? "cgroup.freeze" : "freezer.state");
    if (cs_fzwatch_add(&sj->watch, path) < 0)
        cs_warn(WHO ": step %s: cannot watch %s (%s): its kill is seen from pending signals only", j->name, path,
                strerror(errno));
    snprintf(sj->cur, sizeof sj->cur, "%s", sj->orig);
    make_record(sj);
    cs_guard_record("%s", sj->record);
    cs_slurm_held_add(sj->record);
    j->ctl = sj;
    return 0;
}

/* The step's record for the guardian and the held file (slurmleft.c's
 * format); -1 (and the record without its bindings) when they do not fit. */
static int make_record(struct sl_job *sj)
{
    const struct cs_slurm_rec r = { .v2 = sj->v2, .suspended = sj->suspended, .freeze = sj->freeze,
                                    .cpuset = sj->cpuset, .cores = sj->orig, .binds = sj->bindrec };

    if (cs_slurm_rec_make(sj->record, sizeof sj->record, &r) == 0)
        return 0;
    sj->bindrec[0] = '\0';
    return -1;
}

/* The guardian and the held file get the step's record anew (its
 * bindings or Slurm's suspend changed); make_record's result. */
static int record_anew(struct sl_job *sj)
{
    cs_guard_forget("%s", sj->record);
    cs_slurm_held_drop(sj->record);
    int r = make_record(sj);
    cs_guard_record("%s", sj->record);
    cs_slurm_held_add(sj->record);
    return r;
}

/* After the bindings changed: the new record, so that a rescue restores
 * the bindings too. */
static void update_record(struct sl_job *sj, const char *name)
{
    char b[sizeof sj->bindrec];
    int fits = cs_binds_format(sj->binds, b, sizeof b) == 0;

    if (!fits)
        b[0] = '\0';
    if (strcmp(b, sj->bindrec) != 0) {
        snprintf(sj->bindrec, sizeof sj->bindrec, "%s", b);
        fits = record_anew(sj) == 0 && fits;
    }
    if (!fits && !sj->bind_overflow)
        cs_warn(WHO ": step %s: too many bound threads to keep for the guardian: if the engine dies, "
                "the step gets its cores back but not its threads' own CPU bindings", name);
    sj->bind_overflow = !fits;
}

/* The threads of a step as far as the engine follows its tree (v1: the
 * cpuset tree's tasks; v2: cgroup.threads below step/user), at most
 * TIDS_BOUND; malloc'd into *out, count returned (0 on any failure). */
static size_t step_tids(int v2, const char *cpuset, const char *freeze, pid_t **out)
{
    return cs_cgtree_tids(v2 ? freeze : cpuset, v2, TREE_DEPTH, TIDS_BOUND, out);
}

/* The step's cores: v2 with a cpuset controller, its user/cpuset.cpus (the
 * kernel confines what is below); v2 without one, the affinity of every
 * thread in the tree; v1, cpuset.cpus of every group of the tree by v1's
 * nesting rule (cs_cg1_tree_cpus).  -2 when the tree is larger than we
 * follow and the cores cannot be moved consistently. */
static int set_cores(int v2, const char *cpuset, const char *freeze, const char *list)
{
    struct cs_cgtree *t;
    int r = 0;

    if (v2 && cpuset[0])
        return cs_cg_write(WHO, cpuset, "cpuset.cpus", list);
    if (v2) {
        hwloc_bitmap_t b = hwloc_bitmap_alloc();
        char path[PATH_MAX];
        /* no nesting rule here: what is followed is bound even when more is below */
        if (!(t = cs_cgtree_open(freeze, TREE_DEPTH, NULL)) || hwloc_bitmap_list_sscanf(b, list) < 0)
            r = -1;
        for (int i = 0; r == 0 && i < t->n; i++)
            if (cs_affinity_cgroup(WHO, cs_cgtree_path(t, i, path, sizeof path), b) < 0)
                r = -1;
        if (r == 0 && t->truncated)
            r = -2;
        cs_cgtree_close(t);
        hwloc_bitmap_free(b);
        return r;
    }
    return cs_cg1_tree_cpus(WHO, cpuset, TREE_DEPTH, list);
}

/* Move the step's cores to list, keeping its threads' own CPU bindings.
 * With learn, what the threads have now is looked at first (cur: what they
 * were given last); without (a guardian's rescue, a step given back its
 * cores for good) the bindings binds holds are kept and every thread it
 * does not know gets all of list (cs_binds_adopt). */
static int move(int v2, const char *cpuset, const char *freeze, struct cs_binds *binds, int learn,
                const char *cur, const char *list)
{
    hwloc_bitmap_t c = hwloc_bitmap_alloc(), l = hwloc_bitmap_alloc();
    pid_t *tids = NULL;
    size_t n = 0;
    int r;

    if (binds && c && l && hwloc_bitmap_list_sscanf(c, cur) == 0 && hwloc_bitmap_list_sscanf(l, list) == 0) {
        n = step_tids(v2, cpuset, freeze, &tids);
        if (learn)
            cs_binds_note(binds, tids, n, c);
        else
            cs_binds_adopt(binds, tids, n);
    }
    r = set_cores(v2, cpuset, freeze, list);
    if (r != -1 && n) {
        cs_binds_apply(binds, tids, n, l, 1);
        if (!hwloc_bitmap_isincluded(l, c))
            cs_binds_look_again(binds, v2 ? freeze : cpuset, v2, TREE_DEPTH, TIDS_BOUND, l);
    }
    free(tids);
    hwloc_bitmap_free(c);
    hwloc_bitmap_free(l);
    return r;
}

static int sl_set_cpus(struct cs_engine *e, struct cs_job *j, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
    struct sl_job *sj = j->ctl;
    char list[1024];
    int r;

    if (sj->pinned)
        return 0;
    if (!sj->binds && !(sj->binds = cs_binds_new())) {
        cs_err(WHO ": step %s: out of memory", j->name);
        return -1;
    }
    hwloc_bitmap_list_snprintf(list, sizeof list, cpus);
    r = move(sj->v2, sj->cpuset, sj->freeze, sj->binds, 1, sj->cur, list);
    if (r == 0)
        snprintf(sj->cur, sizeof sj->cur, "%s", list);
    if (r == -2) {
        sj->pinned = 1;
        cs_warn(WHO ": step %s has more than %d cgroups or %d levels below %s (made by its owner): its cores "
                "are no longer moved, it keeps the ones Slurm gave it (%s) and is only frozen and thawed",
                j->name, CS_CGTREE_GROUPS, TREE_DEPTH, sj->v2 ? sj->freeze : sj->cpuset, sj->orig);
        r = move(sj->v2, sj->cpuset, sj->freeze, sj->binds, 0, sj->cur, sj->orig) == -1 ? -1 : 0;
        snprintf(sj->cur, sizeof sj->cur, "%s", sj->orig);
    }
    update_record(sj, j->name);
    return r;
}

/* Seconds a step may show a pending kill signal and still be taken for
 * being killed by Slurm (cosched serve --kill-grace). */
static double kill_grace = 60.0;

void cs_slurm_set_kill_grace(double seconds)
{
    kill_grace = seconds;
}

/* 1 when a task of the step shows a kill Slurm sends (scancel, a time
 * limit: SIGTERM, KillWait, SIGKILL): SIGKILL pending, or SIGTERM pending
 * and not blocked.  A v1 freezer would hold a task with a pending SIGKILL
 * for good and would eat the grace period SIGTERM gives, so such a step is
 * not frozen while it lasts.  A SIGTERM the task blocks is not acted on
 * anyway (and a task can keep it pending at will): it does not count.
 * Looks at the tasks Slurm puts there only: v1, the step freezer's own
 * cgroup.procs; v2, user/ and user/task_* - and at most PIDS_LOOKED_AT of
 * them (Slurm signals every task, so any of them shows it). */
static int being_killed(const struct sl_job *sj)
{
    struct cs_cgtree *t = cs_cgtree_open(sj->freeze, sj->v2 ? 1 : 0, "task_");
    int killed = 0, looked = 0;

    for (int i = 0; t && i < t->n && !killed && looked < PIDS_LOOKED_AT; i++) {
        char *list = cs_cgtree_read(t, i, "cgroup.procs"), *p, *end;
        for (p = list; p && *p && !killed && looked < PIDS_LOOKED_AT; p = end) {
            long pid = strtol(p, &end, 10);
            char name[64], line[256];
            unsigned long long pnd = 0, blk = 0;
            FILE *f;
            if (end == p) {
                end = p + 1;
                continue;
            }
            looked++;
            snprintf(name, sizeof name, "/proc/%ld/status", pid);
            if ((f = fopen(name, "re")) == NULL)
                continue;
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "ShdPnd:", 7) == 0 || strncmp(line, "SigPnd:", 7) == 0)
                    pnd |= strtoull(line + 7, NULL, 16);
                else if (strncmp(line, "SigBlk:", 7) == 0)
                    blk = strtoull(line + 7, NULL, 16);
            fclose(f);
            if ((pnd & (1ULL << (SIGKILL - 1))) || (pnd & ~blk & (1ULL << (SIGTERM - 1))))
                killed = 1;
        }
        free(list);
    }
    cs_cgtree_close(t);
    return killed;
}

/* Whether to leave the step running this time because Slurm kills it:
 * for at most kill_grace seconds from the first sight; a kill signal that
 * stays pending longer is not Slurm's (its kill takes KillWait, 30 s by
 * default), and the step's pending signals are not looked at again. */
static int dying(struct cs_job *j, double now)
{
    struct sl_job *sj = j->ctl;

    if (slurm_touched(j, now) || sj->suspended)
        return 1;
    if (sj->dying && sj->by_write) {
        if (now - sj->dying_since <= kill_grace)
            return 1;
        sj->dying = sj->by_write = 0;   /* a resume, not a kill: co-scheduled again */
    }
    if (sj->kill_ignored)
        return 0;
    if (!sj->dying) {
        if (!being_killed(sj))
            return 0;
        sj->dying = 1;
        sj->dying_since = now;
        cs_info(WHO ": step %s is being killed by Slurm: left running", j->name);
        return 1;
    }
    if (now - sj->dying_since <= kill_grace)
        return 1;
    sj->dying = 0;
    sj->kill_ignored = 1;
    cs_warn(WHO ": step %s has shown a pending kill signal for %.0f s, longer than Slurm takes to kill "
            "(--kill-grace): not Slurm's; co-scheduled again, its signals no longer looked at", j->name,
            now - sj->dying_since);
    return 0;
}

/* freeze_many() through cs_freeze_wait(): the step's freezer (cgrules.c),
 * v2 waited on cgroup.events like every v2 freeze, v1 polled; arg is the
 * time the switch began (a step being killed by Slurm is not frozen:
 * dying()). */
static int sl_fz_start(void *arg, int i, struct cs_job *j)
{
    int r;

    if (dying(j, *(const double *)arg))
        return -2;
    r = ask(j, 1, *(const double *)arg);
    return r == -2 ? -2 : r < 0 ? -1 : 0;
}

/* cs_cgf_check's rule (an unreadable freezer is thawed), the thaw made
 * through ask(): a write of Slurm's before it is noted, the thaw's own is
 * not taken for Slurm's at the next look. */
static int sl_fz_check(void *arg, int i, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;
    int s = cs_cgf_state(&sj->fz);

    if (s >= 0)
        return s == 1;
    cs_err(WHO ": %s: cannot read the state of its freezer %s: %s", sj->what, sj->freeze, strerror(errno));
    ask(j, 0, *(const double *)arg);
    return -1;
}

static int sl_fz_event_fd(void *arg, int i, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;

    return sj->fz.events;
}

static void sl_fz_laggard(void *arg, int i, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;

    if (ask(j, 0, cs_now()) < 0)
        cs_err(WHO ": step %s: freeze did not complete and could not be undone", j->name);
    else
        cs_warn(WHO ": step %s: not frozen after %.0f ms (%s); thawed, left running this step",
                j->name, CS_FREEZE_TIMEOUT * 1e3, sj->freeze);
}

/* A kill that came while the freeze was under way: let it through. */
static int sl_fz_settle(void *arg, int i, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;

    double now = cs_now();

    if (!slurm_touched(j, now)) {
        if (sj->kill_ignored || !being_killed(sj))
            return 0;
        sj->dying = 1;
        sj->dying_since = now;
    }
    ask(j, 0, now);
    cs_info(WHO ": step %s is being killed by Slurm: thawed, left running", j->name);
    return 1;
}

static const struct cs_freeze_ops sl_fz = {
    .who = WHO,
    .events = "cgroup.events",
    .start = sl_fz_start,
    .check = sl_fz_check,
    .event_fd = sl_fz_event_fd,
    .laggard = sl_fz_laggard,
    .settle = sl_fz_settle,
};

/* Start every freeze, then wait for them all until frozen or the common bound. */
static int sl_freeze_many(struct cs_engine *e, struct cs_job **jobs, int n, int *frozen)
{
    double t0 = cs_now();

    return cs_freeze_wait(&sl_fz, &t0, jobs, n, frozen);
}

static int sl_freeze(struct cs_engine *e, struct cs_job *j)
{
    int frozen;
    return sl_freeze_many(e, &j, 1, &frozen);
}

static int sl_thaw(struct cs_engine *e, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;
    int r;

    /* a write of Slurm's before it counts; the thaw's own writes do not */
    slurm_touched(j, cs_now());
    if (sj->suspended)
        return 0;
    r = cs_cgf_thaw(WHO, sj->what, &sj->fz);
    cs_fzwatch_written(&sj->watch);
    return r;
}

/* CPU time of the step's tasks: cpu.stat under v2; under v1 the sum over the
 * processes in the step's freezer cgroup (utime+stime of them and of their
 * reaped children), kept monotonic. */
static int sl_cpu_time(struct cs_engine *e, struct cs_job *j, uint64_t *ns)
{
    struct sl_job *sj = j->ctl;
    uint64_t total = 0;

    /* once a step: a suspend of Slurm's is seen (and recorded) also for a
     * step no switch writes, one never frozen or running alone */
    slurm_touched(j, cs_now());
    if (sj->v2) {
        if (cs_cg_cpu_ns(NULL, 1, sj->freeze, &total) < 0)
            return -1;
    } else {
        char *list = cs_cg_read_all(sj->freeze, "cgroup.procs"), *p, *end;
        long tck = sysconf(_SC_CLK_TCK);
        if (!list)
            return -1;
        for (p = list; *p; p = end) {
            long pid = strtol(p, &end, 10);
            struct cs_pstat ps;
            if (end == p) {
                end = p + 1;
                continue;
            }
            if (cs_proc_stat((pid_t)pid, &ps) == 0)
                total += ps.ticks * 1000000000ULL / (uint64_t)tck;
        }
        free(list);
    }
    *ns = cs_proc_cpu_monotonic(&sj->cpu, total);
    return 0;
}

/* Thaw and give the step back its own cores; the step may be gone already
 * (Slurm removes its cgroups when it ends): nothing to say then.  -1 when
 * the thaw failed. */
static int restore(int v2, int thaw, const char *freeze, const char *cpuset, const char *orig,
                   struct cs_binds *binds, const char *cur)
{
    struct cs_cgfreezer fz = { .v2 = v2, .events = -1, .dir = freeze };
    int r = 0;

    if (access(freeze, F_OK) < 0)
        return 0;
    if (thaw)
        r = cs_cgf_ask(WHO, &fz, 0) < 0 ? -1 : 0;
    else
        cs_info(WHO ": %s: Slurm holds it suspended: its cores given back, left frozen for Slurm's resume", freeze);
    if ((cpuset[0] || v2) && move(v2, cpuset, freeze, binds, cur != NULL, cur ? cur : orig, orig) == -2 && !v2) {
        /* a tree larger than we follow: give back what we can, parents first */
        struct cs_cgtree *t = cs_cgtree_open(cpuset, TREE_DEPTH, NULL);
        for (int i = 0; t && i < t->n; i++)
            cs_cgtree_write(WHO, t, i, "cpuset.cpus", orig);
        cs_cgtree_close(t);
    }
    return r;
}

static void sl_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct sl_job *sj = j->ctl;

    if (!sj)
        return;
    slurm_touched(j, cs_now());
    cs_cgf_close(&sj->fz);
    cs_fzwatch_del(&sj->watch);
    /* its record is kept for a step Slurm suspends (the next engine leaves
     * it frozen too) and for one the thaw failed (the next engine thaws it) */
    if (restore(sj->v2, !sj->suspended, sj->freeze, sj->cpuset, sj->orig, sj->binds, sj->cur) == 0 &&
        !sj->suspended)
        cs_slurm_held_drop(sj->record);
    cs_guard_forget("%s", sj->record);
    cs_binds_free(sj->binds);
    free(sj);
    j->ctl = NULL;
}

static void sl_fini(struct cs_engine *e)
{
}

/* A record of make_record's: thaw unless Slurm suspended the step, give it
 * back its cores and its threads' own bindings. */
static void sl_rescue(const char *record)
{
    char *copy = strdup(record);
    struct cs_slurm_rec r;
    struct cs_binds *b = NULL;

    if (!copy)
        return;
    if (cs_slurm_rec_parse(copy, &r) < 0) {
        cs_warn(WHO ": guardian: ignoring malformed record '%s'", record);
    } else {
        if ((b = cs_binds_new()) && r.binds && cs_binds_parse(b, r.binds) < 0)
            cs_warn(WHO ": guardian: ignoring malformed bindings in record '%s'", record);
        restore(r.v2, !r.suspended, r.freeze, r.cpuset, r.cores, b, NULL);
    }
    cs_binds_free(b);
    free(copy);
}

/* Only the thaw of a record (the guardian's first pass): none for a step
 * Slurm suspended. */
static void sl_rescue_thaw(const char *record)
{
    char *copy = strdup(record);
    struct cs_slurm_rec r;

    if (copy && cs_slurm_rec_parse(copy, &r) == 0 && !r.suspended && access(r.freeze, F_OK) == 0) {
        struct cs_cgfreezer fz = { .v2 = r.v2, .events = -1, .dir = r.freeze };
        cs_cgf_ask(WHO, &fz, 0);
    }
    free(copy);
}

const struct cs_control_ops cs_control_slurm = {
    .name = "slurm",
    .probe = sl_probe,
    .init = sl_init,
    .job_prepare = sl_job_prepare,
    .job_attach = sl_job_attach,
    .set_cpus = sl_set_cpus,
    .freeze = sl_freeze,
    .thaw = sl_thaw,
    .cpu_time = sl_cpu_time,
    .job_release = sl_job_release,
    .fini = sl_fini,
    .rescue = sl_rescue,
    .rescue_thaw = sl_rescue_thaw,
    .freeze_many = sl_freeze_many,
    .cpu_idle = cs_proc_cpu_idle,
};
