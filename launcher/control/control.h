/*
 * control/control.h - the mechanisms that stop, resume and confine jobs: one
 * ops table per backend (cgroup1.c, cgroup2.c, signals.c, slurm.c), the
 * facade that picks one (control.c), the helpers the backends share
 * (proc.c: /proc and cgroup files; binds.c: the jobs' own CPU bindings) and
 * the guardian (guardian.c), a separate process that restores everything if
 * the engine dies.
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
/* Thaw Slurm step freezers a dead engine left frozen; how many (slurm.c). */
int cs_slurm_thaw_leftovers(void);
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

/* Used by signals.c: set the affinity of every thread of every process in
 * process group pgid; also continues the scan through the children of its
 * members.  Returns number of tasks set, -1.  (cgroup2's affinity fallback
 * binds the threads listed by the job's cgroup instead: cs_affinity_cgroup.) */
int cs_affinity_pgrp(pid_t pgid, hwloc_const_bitmap_t cpus);
/* Sum utime+stime(+cutime+cstime) of processes in pgid, ns. */
int cs_proc_cputime_pgrp(pid_t pgid, uint64_t *ns);
/* CPU time of a job counted from /proc, for backends without cgroup
 * accounting: the reaped instances (rusage) plus the live process group,
 * never going back (a member reaped outside the group drops out of /proc). */
struct cs_proc_cpu { uint64_t reaped_ns, last_ns; };
int cs_proc_cpu_read(struct cs_proc_cpu *a, pid_t live_pgid, uint64_t *ns);
void cs_proc_cpu_reaped(struct cs_proc_cpu *a, const struct rusage *ru);
/* Keep a counter monotonic: the larger of v and the last value returned. */
uint64_t cs_proc_cpu_monotonic(struct cs_proc_cpu *a, uint64_t v);
/* cpu_idle() of the backends on a real node (proc.c): idle + iowait of the
 * cpuN lines of /proc/stat, in USER_HZ ticks, as seconds.  -1 when the file
 * cannot be read or a cpu of cpus has no line (offline). */
int cs_proc_cpu_idle(struct cs_engine *e, hwloc_const_bitmap_t cpus, double *idle_s);

/* Helpers shared by the control backends and their rescue code (proc.c,
 * cgroup2.c); not for the engine.  who ("cgroup1") prefixes messages. */
struct cs_pstat { pid_t pid, ppid, pgrp; char state; uint64_t ticks; /* u+s+cu+cs */ };
/* Processes of the job whose group is pgid: group members and, to a fixed
 * point, children of members.  *out is malloc'ed. */
int cs_proc_members(pid_t pgid, struct cs_pstat **out, size_t *n);
int cs_proc_is_cosched(pid_t pid);
/* One process's /proc/PID/stat (ticks = utime+stime+cutime+cstime); -1 with errno. */
int cs_proc_stat(pid_t pid, struct cs_pstat *st);
/* pid's cgroup path in the v1 hierarchy carrying ctl, or in cgroup2 when ctl
 * is NULL (pid 0: this process); -1 with errno (ENOENT: no such line). */
int cs_proc_cgroup(pid_t pid, const char *ctl, char *path, size_t len);            /* alive and comm "cosched" */
int cs_proc_all_stopped(pid_t pid);           /* 1: every thread T, t, Z or X */
hwloc_const_bitmap_t cs_proc_start_cpus(void); /* cosched's affinity at start */
/* Bind every thread listed in dir's cgroup.threads (v2) or tasks (v1). */
int cs_affinity_cgroup(const char *who, const char *dir, hwloc_const_bitmap_t cpus);
/* The CPU bindings a job's threads chose themselves, kept across core moves
 * (binds.c): note() before a move from cur, apply() after it, with the
 * threads found in the job's cgroups; apply gives each bound thread
 * binding & now (all of now where that is empty) and returns how many it
 * had to set.  format/parse: "TID=LIST;..." for guardian records. */
struct cs_binds;
struct cs_binds *cs_binds_new(void);
void cs_binds_free(struct cs_binds *s);
void cs_binds_note(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t cur);
int cs_binds_apply(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t now);
int cs_binds_count(const struct cs_binds *s);
int cs_binds_format(const struct cs_binds *s, char *out, size_t len);
int cs_binds_parse(struct cs_binds *s, const char *text);
/* Directory of cosched's own cgroup in the v1 hierarchy of ctl, or in
 * cgroup2 if ctl is NULL, and that hierarchy's mount point; -1 and why. */
int cs_cgroup_locate(const char *ctl, char *mnt, size_t mntlen, char *dir, size_t dirlen,
                     char *why, size_t whylen);
/* dir/file I/O: write reports "who: cannot write V to P: why" unless who is
 * NULL; read NUL-terminates and strips the newline (returns length). */
int cs_cg_write(const char *who, const char *dir, const char *file, const char *val);
int cs_cg_read(const char *dir, const char *file, char *buf, size_t len);
char *cs_cg_read_all(const char *dir, const char *file);
/* Write cpus to dir/cpuset.cpus, then mems (unless NULL or empty) to
 * dir/cpuset.mems, as lists; reports as cs_cg_write (who must not be NULL). */
int cs_cg_write_cpuset(const char *who, const char *dir, hwloc_const_bitmap_t cpus,
                       hwloc_const_bitmap_t mems);
int cs_cgroup_move_procs(const char *who, const char *from, const char *to);
/* Thaw, (restore affinity,) move processes to origin, rmdir, children first. */
int cs_cgroup_reclaim(const char *who, const char *dir, const char *origin,
                      hwloc_const_bitmap_t restore);
/* Reclaim every cosched_dir/<pid> whose pid is not a live cosched, warning. */
void cs_cgroup_reclaim_leftovers(const char *who, const char *cosched_dir, const char *origin,
                                 hwloc_const_bitmap_t restore);
/* Guardian records: append one escaped field; split (in place) and unescape. */
int cs_rec_add(char *rec, size_t len, const char *field);
int cs_rec_split(char *rec, char **fields, int max);
/* 0 if cgroup2's cpuset controller can confine jobs here; else -1 and why. */
int cs_cgroup2_cpuset_usable(char *why, size_t len);


/* --------------------------------------------------------------- guardian */
/* Fork the guardian; it lives until cs_guard_done() or the engine's death. */
int cs_guard_start(const struct cs_control_ops *ops);
/* Hand a record ("what to restore") to the guardian; forget with unrecord. */
void cs_guard_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cs_guard_forget(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Normal shutdown: everything restored by the engine itself. */
void cs_guard_done(void);
/* Run rescue(record) in a child process, waited for at most timeout s
 * (then killed): a rescue that crashes or hangs costs one record, not all. */
int cs_rescue_isolated(void (*rescue)(const char *), const char *record, double timeout);

/* -------------------------------------------------------- freeze and wait */
/* The bound of every freeze and thaw confirmation, s (freeze.c says why). */
#define CS_FREEZE_TIMEOUT 0.100
/*
 * The one freeze-and-wait loop (freeze.c) behind the backends'
 * freeze_many(): start(), then check() each job until it is frozen or the
 * common bound has passed, waiting on event_fd()s with ppoll() where given,
 * else with a back-off; then laggard() for each job still not frozen.  arg
 * and i (the job's index in jobs) are handed to every call.
 *   start:   0 started, 1 nothing to freeze (counts as frozen), -1 failed
 *            (reported, nothing to undo), -2 not frozen on purpose (silent)
 *   check:   1 frozen, 0 not yet, -1 failed (reported and undone)
 *   laggard: not frozen at the bound: undo the freeze and warn
 *   settle:  optional, for each frozen job once the wait is over: 1 when it
 *            must be given back after all (undone and reported)
 * frozen[i] ends 1 for a frozen job, else 0.  0 when all froze, else -1.
 */
struct cs_freeze_ops {
    const char *who;           /* "cgroup1": prefixes messages */
    const char *events;        /* what event_fd() watches, for a message */
    int (*start)(void *arg, int i, struct cs_job *j);
    int (*check)(void *arg, int i, struct cs_job *j);
    int (*event_fd)(void *arg, int i, struct cs_job *j);
    void (*laggard)(void *arg, int i, struct cs_job *j);
    int (*settle)(void *arg, int i, struct cs_job *j);
};
int cs_freeze_wait(const struct cs_freeze_ops *w, void *arg, struct cs_job **jobs, int n, int *frozen);

#endif
