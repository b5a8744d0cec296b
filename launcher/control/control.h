/*
 * control/control.h - the mechanisms that stop, resume and confine jobs: one
 * ops table per backend (cgroup1.c, cgroup2.c, signals.c, slurm.c), the
 * facade that picks one (control.c) and the guardian (guardian.c), a
 * separate process that restores everything if the engine dies.
 *
 * This is the folder's header for the layers above.  Two private headers
 * serve control/'s own files (and its benchmarks) only: internal.h, what
 * the backends share (/proc in proc.c, affinity.c, binds.c, guardian
 * records, the freeze-and-wait loop of freeze.c), and cgroup.h, the cgroup
 * file system layer (cgroupfs.c) and the kernel's v1 and v2
 * rules (cgrules.c) under every cgroup backend.
 *
 * May use: core/.  Used by: engine/ (through the ops table), node/ (the
 * Slurm backend's registration checks), sim/ (its own backend), cli/.
 */
#ifndef COSCHED_CONTROL_H
#define COSCHED_CONTROL_H

#include <limits.h>
#include <sys/resource.h>
#include "core/job.h"
#include "core/engine_state.h"

/*
 * A control backend.  Every function is called from the engine only.
 * rescue() runs in the guardian process after the engine died, with a record
 * that the backend itself handed to cs_guard_record() earlier.
 */
struct cs_control_ops {
    const char *name;
    /* 0 when usable here; else -1 and why holds the missing piece. */
    int (*probe)(char *why, size_t len);
    /* Set up per-run state (create run cgroups, reclaim leftovers). */
    int (*init)(struct cs_engine *e);
    /* Make the per-job container before the first instance starts. */
    int (*job_prepare)(struct cs_engine *e, struct cs_job *j);
    /* Put a freshly forked (not yet exec'ed) instance under control. */
    int (*job_attach)(struct cs_engine *e, struct cs_job *j, pid_t pid);
    /* Confine the job to cpus (and mems unless empty). */
    int (*set_cpus)(struct cs_engine *e, struct cs_job *j,
                    hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems);
    /* Stop / resume every thread of the job; wait (bounded) until done. */
    int (*freeze)(struct cs_engine *e, struct cs_job *j);
    int (*thaw)(struct cs_engine *e, struct cs_job *j);
    /* CPU time used so far by the job (all instances since prepare), ns. */
    int (*cpu_time)(struct cs_engine *e, struct cs_job *j, uint64_t *ns);
    /* The leader of an instance was reaped with rusage ru (backends that
     * count CPU time from /proc add it here; may be NULL in the table). */
    void (*instance_ended)(struct cs_engine *e, struct cs_job *j, const struct rusage *ru);
    /* Thaw, unconfine and remove the job's container (job may be live). */
    void (*job_release)(struct cs_engine *e, struct cs_job *j);
    /* Undo init. */
    void (*fini)(struct cs_engine *e);
    /* Guardian side: restore what record describes. */
    void (*rescue)(const char *record);
    /* Optional guardian side: only thaw what record describes (the
     * guardian thaws every record first, then restores the rest). */
    void (*rescue_thaw)(const char *record);
    /* Optional (NULL: call freeze() per job): freeze n jobs at once - start
     * every freeze, then wait for all against one bound, so that the waits
     * overlap instead of adding up (a thread must get a CPU once to stop,
     * which takes a while on a crowded runqueue).  frozen[i] is set to 1 for
     * each job frozen; a job that did not freeze in time is thawed back and
     * reported, as freeze() does.  0 if all froze, else -1. */
    int (*freeze_many)(struct cs_engine *e, struct cs_job **jobs, int n, int *frozen);
    /* Optional (NULL: unknown): the time each cpu of cpus has been idle so
     * far, as the kernel (or the model) counts it, s: idle_s[k] for the
     * k-th cpu of cpus in increasing order.  Only differences between two
     * calls mean anything.  0, or -1 when it cannot be read (unknown). */
    int (*cpu_idle)(struct cs_engine *e, hwloc_const_bitmap_t cpus, double *idle_s);
};

extern const struct cs_control_ops cs_control_cgroup1;
extern const struct cs_control_ops cs_control_cgroup2;
extern const struct cs_control_ops cs_control_signals;
/* Slurm steps (slurm.c): Slurm's own step cgroups, v1 or v2 layout. */
extern const struct cs_control_ops cs_control_slurm;
/* Thaw Slurm step freezers a dead engine left frozen; how many (slurmleft.c). */
int cs_slurm_thaw_leftovers(const char *held);
void cs_slurm_stopped(const char *held);
int cs_slurm_keep_state(const char *dir);
int cs_slurm_restore_held(void);
void cs_slurm_set_kill_grace(double seconds);
/*
 * Where a Slurm step is on this node: its identity and its cgroups, as its
 * registration proved them.  The node engine locates a registering task's
 * step once (cs_slurm_step_locate) and hands it to the Slurm backend with the
 * job (j->slurm, core/job.h); the backend never locates it again.
 */
struct cs_slurm_step {
    unsigned long job, step;   /* Slurm's ids */
    int v2;                    /* cgroup v2 (else v1) */
    char dir[PATH_MAX];        /* v1: the freezer's step directory; v2: the step directory */
    char freeze[PATH_MAX];     /* v1: = dir; v2: dir/user (also: tells apart the parts of a step
                                * on several nodes of one machine) */
    char cpuset[PATH_MAX];     /* v1: the cpuset step directory; v2: dir/user or "" (affinity) */
    char orig[512];            /* the step's cores (a list) as Slurm set them */
};
/* Check that pid is a task of Slurm step job.step - its cgroups say so: its
 * step directory's parent is named job_<job>, or peer (the slurmstepd that
 * registered it, by SO_PEERCRED) is in that step - and give where the step
 * is (*at) and the cores of its allocation (cpus); -1 with why. */
int cs_slurm_step_locate(pid_t pid, pid_t peer, unsigned long job, unsigned long step, struct cs_slurm_step *at,
                         hwloc_bitmap_t cpus, char *why, size_t len);
/* Pick by name ("auto" chooses the best usable one and says which). */
const struct cs_control_ops *cs_control_select(const char *name);
const struct cs_control_ops *cs_control_by_name(const char *name);

/* 1 when every thread of pid is stopped (T, t, Z or X) or pid is gone (proc.c). */
int cs_proc_all_stopped(pid_t pid);
/* The CPUs cosched was allowed on when it started: "unconfined" (affinity.c). */
hwloc_const_bitmap_t cs_proc_start_cpus(void);

/* --------------------------------------------------------------- guardian */
/* Fork the guardian; it lives until cs_guard_done() or the engine's death. */
int cs_guard_start(const struct cs_control_ops *ops);
/* Normal shutdown: everything restored by the engine itself. */
void cs_guard_done(void);

#endif
