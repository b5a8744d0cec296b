/*
 * cosched.h - the engine's internal interfaces.
 *
 * Shape of the program (see README "Design"):
 *
 *     CLI (main.c, run.c) --> engine (engine.c) --> policy host (policy.c, Lua)
 *                                 |                      ^ snapshot / v plan
 *                                 v
 *                        control facade (control.c)
 *               cgroup1.c | cgroup2.c | signals.c   (one ops table each)
 *                                 |
 *                        guardian (guardian.c): a separate process that
 *                        restores everything if the engine dies.
 *
 * Lifecycle of one epoch:
 *
 *   epoch start: snapshot -> policy.plan() -> validated plan (steps)
 *     step 1  |-- switch --|======= duration ========|
 *     step 2                |-- switch --|=== duration ===| ...
 *   a job that ends or arrives aborts the epoch; the next one starts at once.
 *   switch = freeze leaving jobs, move cpusets, thaw entering jobs.
 *
 * Error convention (as in hwloc.h): functions return 0 on success, -1 on
 * failure with a message already reported through cs_err() (or errno set where
 * the comment says so); pointer returners return NULL.  exit() is called only
 * from main() and before any job has started.
 */
#ifndef COSCHED_H
#define COSCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <hwloc.h>

#define CS_POLICY_API 1

/* ------------------------------------------------------------------ log */
enum cs_loglevel { CS_LOG_ERROR, CS_LOG_WARN, CS_LOG_INFO, CS_LOG_DEBUG };
extern int cs_verbosity;             /* messages up to this level are printed */
extern void (*cs_log_before)(void);  /* called before a message is written (progress line) */
void cs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cs_err(...)   cs_log(CS_LOG_ERROR, __VA_ARGS__)
#define cs_warn(...)  cs_log(CS_LOG_WARN, __VA_ARGS__)
#define cs_info(...)  cs_log(CS_LOG_INFO, __VA_ARGS__)
#define cs_debug(...) cs_log(CS_LOG_DEBUG, __VA_ARGS__)

/* ---------------------------------------------------------------- utils */
double cs_now(void);                                  /* CLOCK_MONOTONIC, s */
/* Make cs_now() return *clock from now on (a simulated node's virtual time,
 * sim.c), or CLOCK_MONOTONIC again with NULL. */
void cs_set_virtual_clock(const double *clock);
/* Parse a duration ("1s", "250ms", "2.5", "100us", "5m"/"5min", "2h", "30d";
 * plain number = seconds).
 * 0 and sets *out on success; -1 if malformed. */
int cs_parse_duration(const char *s, double *out);
/* Parse an integer in [lo, hi]; -1 if malformed or out of range. */
int cs_parse_long(const char *s, long lo, long hi, long *out);
/* Write/read a small control file; -1 with errno set on failure. */
int cs_write_file(const char *path, const char *s);
int cs_read_file(const char *path, char *buf, size_t len);
/* Did you mean: the candidate closest to word (a typo or two away), or NULL. */
const char *cs_closest(const char *word, const char *const *cands, size_t n);
/* "did you mean --NAME? " for an unknown --option close to one of opts, else "". */
struct option;
const char *cs_option_hint(const char *arg, const struct option *opts, char *buf, size_t len);

FILE *cs_fopen_write(const char *path);
char *cs_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where the shipped data (lua/, profiles/) is: $COSCHED_DATADIR, else the
 * installed location, else - for a cosched run from its build tree - the
 * source tree. */
const char *cs_datadir(void);
/* 0 when path (resolved) and every directory above it belong to root and
 * nobody else may write them (a root-owned sticky directory is fine); -1
 * with why.  The node engine loads only such files (policies, modules). */
int cs_path_trusted(const char *path, char *why, size_t len);
/* s as a JSON string (quotes, escapes), or null when s is NULL. */
void cs_json_str(FILE *f, const char *s);
/* Set by the node engine: the policy host then loads (and requires) only
 * files that pass cs_path_trusted(). */
extern int cs_policy_trusted_only;
/* hwloc bitmap as a list string ("0-3,8"); caller frees. */
char *cs_bitmap_list(hwloc_const_bitmap_t b);

/* ------------------------------------------------------------- topology */
struct cs_core {
    int index;                 /* logical index of the core */
    hwloc_bitmap_t pus;        /* OS indexes of its hardware threads */
    int llc;                   /* index into topo->llcs, -1 if none */
    int numa;                  /* index into topo->numas, -1 if none */
    int package;
};

struct cs_domain {
    int index;
    int os_index;              /* NUMA node number; for caches the logical index */
    hwloc_bitmap_t cpus;       /* PUs below it */
    uint64_t size;             /* cache size or NUMA memory, bytes (0 unknown) */
    int depth;                 /* cache level (3 for L3), 0 for NUMA */
};

struct cs_topo {
    hwloc_topology_t h;
    char *source;              /* "this machine", "synthetic:...", a file name */
    int ncores;
    struct cs_core *cores;
    int nllcs;
    struct cs_domain *llcs;    /* last-level cache domains */
    int nnumas;
    struct cs_domain *numas;
    int npackages;
    int npus;
    hwloc_bitmap_t all_pus;
};

/* spec NULL: this machine; "synthetic:DESC" or an XML file otherwise.
 * Returns NULL after reporting why. */
struct cs_topo *cs_topo_load(const char *spec);
void cs_topo_free(struct cs_topo *t);
/* Print as text (json=0) or JSON (json=1), restricted to managed (or all if NULL). */
void cs_topo_print(const struct cs_topo *t, hwloc_const_bitmap_t managed, FILE *f, int json);
/* Index of the core holding PU os index pu, -1 if none. */
int cs_topo_core_of_pu(const struct cs_topo *t, int pu);
/* A cpu list ("0-3,8") or TYPE:INDEXES terms joined by '+' ("numa:1",
 * "core:0-3+llc:1") into out; -1 with the reason in why. */
int cs_topo_cpus_parse(const struct cs_topo *t, const char *spec, hwloc_bitmap_t out, char *why, size_t len);

/* ------------------------------------------------------------------ jobs */
enum cs_job_state {
    CS_JOB_WAITING,            /* not started yet (or waiting for a restart) */
    CS_JOB_LIVE,               /* an instance is running (maybe frozen) */
    CS_JOB_ENDED               /* finished for good */
};

struct cs_job {
    int id;                    /* 1.. in the order given */
    char *name;
    char **argv;               /* NULL-terminated */
    char *cwd;                 /* NULL: inherit */
    int threads;               /* thread count given to the job (OMP_NUM_THREADS) */
    int threads_explicit;      /* set by the user for this job */
    int preloadable;           /* its executable honours LD_PRELOAD (cs_exe_preloadable) */
    char cls_hint;             /* 'S', 'C', 'N' or 0 */
    int priority;              /* 0 normal; higher is more important */
    const char *origin;        /* "job file x:3" or "command line job 2" */

    /* runtime */
    enum cs_job_state state;
    pid_t pid;                 /* leader of the current instance; also its pgid */
    int runs_started, runs_done;
    int last_status;           /* wait status of the last instance */
    int failed;                /* some instance ended abnormally */
    double t_first_start, t_end, t_instance_start;
    double wall;               /* total wall time of all instances */
    uint64_t cpu_ns;           /* total CPU time consumed, ns */
    uint64_t cpu_mark;         /* backend counter at the start of the step */
    uint64_t quanta_run, quanta_frozen;
    double last_run_end;       /* when it last stopped running (for waiting time) */
    double waited;             /* seconds since it last ran (0 while running) */
    int frozen;                /* current mechanism state */
    hwloc_bitmap_t cpus;       /* cores it is allowed on now */
    hwloc_bitmap_t mems;       /* memory nodes now (may be empty: unchanged) */
    /* last step's measurements, handed to the policy */
    double last_step_wall, last_step_cpu;
    int last_step_ncpus;
    int last_step_ran;         /* it ran in the last step (an instance restarted in it counts) */
    int characterized;         /* characterizations the policy completed for it (plan()'s results) */
    int cut_by_window;         /* its last instance was stopped by --window's end (not a failure) */
    hwloc_bitmap_t step_cpus;  /* cores the current/last step gave it (empty: frozen in it) */
    void *ctl;                 /* backend private state */
    /* counters (counters.h) */
    void *cnt;                 /* counter backend private state */
    uint64_t steps_live;       /* steps this job was live in (replay keys on it) */
    double *metric;            /* last step's metrics in profile order (NaN: unknown) */
    int metric_flags;          /* CS_COUNTS_* of the last step, 0 if none */
    /* where its memory is (numa.c): bytes per NUMA node os index, sampled at
     * most once a second; mem_nnodes 0 = unknown */
    double *mem_bytes;
    int mem_nnodes;
    double mem_sampled;
    double stop_deadline;      /* cs_engine_stop_job(): SIGKILL after this (0: not stopping) */
    int fresh;                 /* started during the current step (starts frozen) */
    int stop_killed;
    /* profile store (store.c): the key, the entry the store held when the
     * job was set up (NULL: none, or --reprofile), the last result a policy
     * handed back (NULL: none).  Freed by cs_store_job_free(), which
     * cs_job_free() calls. */
    struct cs_store_key *store_key;
    struct cs_stored *stored;
    struct cs_stored *result;
    /* node engine (serve.c): cores the job may ever use - its Slurm step's
     * allocation - (NULL: every managed cpu); a job that must never be
     * frozen (a step spanning nodes: see cosched(1) SLURM); serve.c's state;
     * what the policy last said about the job (a JSON object, for status) */
    hwloc_bitmap_t allowed;
    int nofreeze;
    void *served;
    char *policy_info;
};

/* Job file: see cosched(1) JOB FILES.  Returns number of jobs appended or -1
 * after printing "file:line: ..." */
int cs_jobfile_load(const char *path, struct cs_job ***jobs, int *njobs);
/* Split a command line with sh-like quoting (no expansion); NULL on error with
 * *err set to a static message. */
char **cs_split_words(const char *s, const char **err);
void cs_job_free(struct cs_job *j);

/* ------------------------------------------------------------ mechanisms */
struct cs_engine;
struct cs_counter_ops;
struct cs_profile;

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
};

extern const struct cs_control_ops cs_control_cgroup1;
extern const struct cs_control_ops cs_control_cgroup2;
extern const struct cs_control_ops cs_control_signals;
/* Slurm steps (slurm.c): Slurm's own step cgroups, v1 or v2 layout. */
extern const struct cs_control_ops cs_control_slurm;
/* A simulated node (control_sim.c): acts on e->sim; never chosen by name. */
extern const struct cs_control_ops cs_control_sim;
/* Check that pid is a task of Slurm step job.step (its cgroups say so) and
 * give the cores of the step's allocation and the step's cgroup on this node
 * (where: it tells the parts of a step on several nodes of one machine
 * apart); -1 with why. */
/* Thaw Slurm step freezers a dead engine left frozen; how many (slurm.c). */
int cs_slurm_thaw_leftovers(void);
int cs_slurm_keep_state(const char *dir);
int cs_slurm_restore_held(void);
void cs_slurm_set_kill_grace(double seconds);
int cs_slurm_step_cpus(pid_t pid, unsigned long job, unsigned long step, hwloc_bitmap_t cpus,
                       char *where, size_t wlen, char *why, size_t len);
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

/* ------------------------------------------------------------------ numa */
/* Where process pid's resident memory is: bytes per NUMA node (os index),
 * from the kernel's per-mapping node counts (/proc/PID/numa_maps, what
 * numastat reads).  bytes has room for nnodes entries.  0, or -1 with errno
 * (ESRCH when the process is gone). */
int cs_numa_resident(pid_t pid, double *bytes, int nnodes);
/* Sample every live job's memory if a second has passed since its last sample. */
void cs_numa_sample_jobs(struct cs_engine *e);

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

/* ---------------------------------------------------------------- policy */
struct cs_plan_job { int job; hwloc_bitmap_t cpus; hwloc_bitmap_t mems; };
struct cs_plan_step { double duration; int njobs; struct cs_plan_job *jobs; };
struct cs_plan { int nsteps; struct cs_plan_step *steps; };
void cs_plan_free(struct cs_plan *p);

struct cs_policy;
/* Find name in the search path and load it. NULL after reporting. */
struct cs_policy *cs_policy_load(const char *name, char **search, int nsearch,
                                 char **params, int nparams);
const char *cs_policy_name(const struct cs_policy *p);
const char *cs_policy_file(const struct cs_policy *p);
/* The policy's one-line description ("" if it declares none). */
const char *cs_policy_description(const struct cs_policy *p);
/* The policy says it runs jobs on the same CPUs at the same time (shares_cpus
 * = true in its table, cosched-policy(7)): sizing OpenMP teams to a job's CPUs
 * then does not keep threads of different jobs off each other's cores. */
int cs_policy_shares_cpus(const struct cs_policy *p);
/* Bounds for the policies loaded (or listed) from now on; 0 means the
 * default: memory of a policy's Lua state (64 MiB), instructions per call
 * (200 million), seconds per plan() call (min(max(quantum, 0.05), 1.0));
 * loading and init() get max(seconds, 1.0).  Call before cs_policy_load(). */
void cs_policy_limits(size_t mem_bytes, uint64_t instructions, double seconds);
/* Ask for a plan; 0 and *plan filled and validated, or -1 after reporting
 * the failure (file:line) - the caller then runs its fallback plan. */
int cs_policy_plan(struct cs_policy *p, struct cs_engine *e, struct cs_plan *plan);
void cs_policy_free(struct cs_policy *p);
/* List policies found in the search path: name, one-line description, file. */
int cs_policy_list(char **search, int nsearch, FILE *f);

/* ---------------------------------------------------------- profile store */
/*
 * Characterization results kept between runs (store.c; cosched(1) PROFILE
 * STORE), one JSON file per key: the job's executable (resolved path and its
 * ELF build id, else a 64-bit FNV-1a hash of its contents), its arguments,
 * its thread count and this machine's CPU model (hwloc).
 *
 *   run.c:    s = cs_store_open(...); per job: cs_store_job(s, j, exe)
 *               -> j->stored (what the policy sees as job.stored)
 *   policy.c: plan() returns steps, results -> cs_store_result(s, j, r)
 *               -> j->result, and the file written (atomically)
 *   run.c:    cs_store_job_free(j) for every job; cs_store_close(s)
 */
struct cs_stored {
    char cls;                  /* 'S', 'C', 'N'; 0: unknown (results only) */
    double ipc_standalone, ipc_folded, fp, mpki;   /* NaN: not measured */
    double bw_l1, bw_l2, bw_llc;                   /* GB/s; NaN: not measured */
    int cores_standalone, cores_folded;            /* 0: unknown */
    int gang_only;
    int degraded;              /* results only: nothing (usable) was counted; never stored */
    double created;            /* Unix time the result was made */
    int written;               /* results only: cs_store_result() wrote it */
};
struct cs_store;
struct cs_store_key;
/* dir: NULL for the default ($XDG_CACHE_HOME/cosched/profiles, else
 * ~/.cache/cosched/profiles), "none" for no store (returns NULL, as when
 * there is no default).  ttl: seconds after which entries are ignored.
 * reprofile: look nothing up (results are still written).  machine: this
 * machine's hwloc topology for the CPU model, or NULL to load it. */
struct cs_store *cs_store_open(const char *dir, double ttl, int reprofile, hwloc_topology_t machine);
void cs_store_close(struct cs_store *s);
const char *cs_store_dir(const struct cs_store *s);
/* Key job j (exe: its command as found) and look it up into j->stored.
 * s NULL: nothing.  -1 after a warning when the key cannot be made (the job
 * runs, its results are not stored). */
int cs_store_job(struct cs_store *s, struct cs_job *j, const char *exe);
/* A result for j: kept in j->result (created set to now) and, unless s is
 * NULL, r is degraded or its class unknown, written to the store.  -1 after
 * a warning when it could not be written. */
int cs_store_result(struct cs_store *s, struct cs_job *j, const struct cs_stored *r);
void cs_store_job_free(struct cs_job *j);
/* The store file of j's key (NULL: no key). */
const char *cs_store_job_file(const struct cs_job *j);

/* ---------------------------------------------------------------- engine */
enum cs_output_mode { CS_OUT_PREFIX, CS_OUT_FILES, CS_OUT_INHERIT };

struct cs_engine {
    /* configuration */
    struct cs_topo *topo;
    hwloc_bitmap_t managed;            /* PUs cosched may hand out */
    hwloc_bitmap_t all_mems;           /* every NUMA node (unconfining memory) */
    double quantum;                    /* seconds */
    double window;                     /* 0: run each job once */
    const struct cs_control_ops *ctl;
    struct cs_policy *policy;
    int omp_env;                       /* set OMP_* for jobs */
    const char *omp_shim;              /* libcosched-omp.so to preload into jobs, NULL: none (--omp-shim off) */
    enum cs_output_mode output;
    char *output_dir;
    FILE *trace;
    double kill_timeout;               /* after forwarding SIGINT/SIGTERM */
    int progress;                      /* live line on stderr */

    /* jobs */
    struct cs_job **jobs;
    int njobs;

    /* counters: backend, profile (NULL when none), replay argument */
    const struct cs_counter_ops *cnt;
    const struct cs_profile *profile;
    const char *cnt_arg;

    /* run state */
    char *run_id;                      /* "PID" - names cgroups */
    double t0;
    uint64_t epoch, step_seq;
    int nfallbacks;
    double switch_us_total; uint64_t switches;
    void *ctl_state;                   /* backend private */

    /* profile store (NULL: none) and a hook called after every plan() that
     * succeeded, once its results are stored (NULL: none) */
    struct cs_store *store;
    void (*on_plan)(struct cs_engine *e);
    void *on_plan_arg;

    /* node engine mode (serve.c, NULL otherwise): jobs are Slurm steps that
     * register over a socket instead of being forked; the engine runs until
     * SIGTERM/SIGINT or idle-exit, never signals a job, and releases every
     * job (thawed, given back its cores) when it stops. */
    struct cs_serve *serve;

    /* simulated node (sim.c, `cosched simulate`; NULL otherwise): time is
     * the model's virtual clock, no job is forked, no guardian or cgroup is
     * used; the control and counter backends are the "sim" ones, which act
     * on the model.  See "Simulated node" below. */
    struct cs_sim *sim;
};

/*
 * Simulated node (sim.c): the engine's hooks.  In sim mode the engine
 *   - starts an instance with cs_sim_start() instead of fork/exec (the
 *     control backend then attaches, confines and freezes it as usual);
 *   - waits for a step with cs_sim_advance(): the model runs, in virtual
 *     time, to `until` or to the first instance completion before it (the
 *     clock stops there); the jobs whose instance completed come back in
 *     ended[] (at most e->njobs) and end exactly like reaped ones (exit 0);
 *   - closes a --window by cs_sim_kill() of every live instance (they end
 *     as killed by SIGKILL, which is not a failure).
 */
struct cs_sim;
int cs_sim_start(struct cs_sim *s, struct cs_job *j);
int cs_sim_advance(struct cs_sim *s, double until, struct cs_job **ended);
void cs_sim_kill(struct cs_sim *s, struct cs_job *j);

/* serve.c, called by the engine in node engine mode */
struct pollfd;
int cs_serve_pollfds(struct cs_engine *e, struct pollfd *pf, int max);   /* fds to watch, count */
int cs_serve_nfds(struct cs_engine *e);                                   /* upper bound for the above */
/* Handle what poll() reported for the fds cs_serve_pollfds() gave; 1 when
 * the set of jobs changed (the epoch ends, the policy is asked again). */
int cs_serve_ready(struct cs_engine *e, const struct pollfd *pf, int n);
/* Between steps: forget ended jobs; 1 when the engine should stop (idle). */
int cs_serve_tidy(struct cs_engine *e);
/* The engine's side of serve.c:
 * adopt: j (id, name, threads, allowed filled; ctl/cnt state empty) becomes a
 *   live job whose first task is pid: prepared, attached, confined to its
 *   allowed cores and frozen (unless nofreeze) until the plan runs it.
 * drop: j's tasks are gone: counters and container released, state ENDED. */
int cs_engine_adopt(struct cs_engine *e, struct cs_job *j, pid_t pid);
void cs_engine_drop(struct cs_engine *e, struct cs_job *j, const char *why);
/* The cores a job lives on when no plan says otherwise. */
hwloc_const_bitmap_t cs_job_home(const struct cs_engine *e, const struct cs_job *j);

int cs_engine_run(struct cs_engine *e);  /* exit status for main() */
/* Stop job j on purpose (from a hook during the run): thaw it, SIGTERM its
 * process group, SIGKILL after e->kill_timeout.  Its end is then neither a
 * failure nor restarted. */
void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j);
/* The policy handed back a characterization result r for job j: traced, and
 * counted unless degraded (j->characterized; more than one is a
 * re-characterization). */
void cs_engine_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r);

#endif
