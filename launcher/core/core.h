/*
 * core/core.h - what every part of cosched shares: logging, utilities, the
 * node's topology, jobs and job files, the profile store, where a job's
 * memory is, and struct cs_engine, the state of one run.
 *
 * The layers (docs/architecture.md; each folder's header says what it is):
 *
 *     cli/                the commands (main.c dispatches)
 *      |        \
 *     node/      sim/     node engine (Slurm steps) | simulated node
 *      |        /
 *     engine/             epochs and steps: snapshot -> plan -> switch -> measure
 *      |        \          \
 *     policy/   counters/   control/     Lua host | counter backends | mechanisms
 *      |        /          /
 *     core/               this header: log, util, topo, jobs, store, numa;
 *                         json.h: JSON through jansson
 *
 *     shared/   libc-only code compiled into both cosched and the SPANK
 *               plugin (the engine socket's protocol, OpenMP environment)
 *
 * Dependencies point down only: a folder includes the headers of the
 * folders below it and its own, never one above.  struct cs_engine is
 * defined here, not in engine/, because every layer reads it (a backend its
 * ctl_state, the policy host the jobs and the topology); only engine/
 * drives it.  core/ may use libc, hwloc, jansson (json.h) and nothing of
 * cosched above it.
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
#ifndef COSCHED_CORE_H
#define COSCHED_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <hwloc.h>

/* ------------------------------------------------------------------ log */
enum cs_loglevel { CS_LOG_ERROR, CS_LOG_WARN, CS_LOG_INFO, CS_LOG_DEBUG };
extern int cs_verbosity;             /* messages up to this level are printed */
extern void (*cs_log_before)(void);  /* called before a message is written (progress line) */
extern int cs_log_copy;              /* >= 0: every message is written to this descriptor too */
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
/* Free the n strings of v, then v (NULL is fine). */
void cs_strv_free(char **v, int n);
/* Where the shipped data (lua/, profiles/) is: $COSCHED_DATADIR, else the
 * installed location, else - for a cosched run from its build tree - the
 * source tree. */
const char *cs_datadir(void);
/* 1 when this process is the cosched of the build tree
 * (COSCHED_BUILDDIR/cosched, run before installing), else 0. */
int cs_from_build_tree(void);
/* 0 when path (resolved) and every directory above it belong to root and
 * nobody else may write them (a root-owned sticky directory is fine); -1
 * with why.  The node engine loads only such files (policies, modules). */
int cs_path_trusted(const char *path, char *why, size_t len);
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
    int stopped_by_us;         /* its last instance ended by cs_engine_stop_job()'s signal (not a failure) */
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
    struct json_t *policy_info;    /* jansson's json_t (core/json.h) */
    /* its OpenMP page (engine/omppage.c; NULL: none) and what its shim wrote
     * there by the end of the last step: the outermost team it last started
     * (0: none yet), the outermost regions completed in the step; the most
     * processes the host knew to share it (a Slurm step's tasks on this
     * node, node/serve.c; 0: not known): with more than one, the team one
     * of them wrote says nothing of the job's */
    void *omp;
    int omp_team;
    int omp_procs;
    long long omp_regions;
};

/* Job file: see cosched(1) JOB FILES.  Returns number of jobs appended or -1
 * after printing "file:line: ..." */
int cs_jobfile_load(const char *path, struct cs_job ***jobs, int *njobs);
/* Split a command line with sh-like quoting (no expansion); NULL on error with
 * *err set to a static message. */
char **cs_split_words(const char *s, const char **err);
void cs_job_free(struct cs_job *j);
/* cs_job_free() each of the n jobs, then free the array (NULL is fine). */
void cs_jobs_free(struct cs_job **jobs, int n);
/* The end of a step for a live job: ran (it ran in the step) counts a quantum
 * run, ends its wait at now; else a quantum frozen, waited = now - last run. */
void cs_job_stepped(struct cs_job *j, int ran, double now);


/* Defined by the layers above, used here by pointer only. */
struct cs_engine;
struct cs_control_ops;
struct cs_counter_ops;
struct cs_profile;
struct cs_policy;
struct cs_host_ops;

/* ------------------------------------------------------------------ numa */
/* Where process pid's resident memory is: bytes per NUMA node (os index),
 * from the kernel's per-mapping node counts (/proc/PID/numa_maps, what
 * numastat reads).  bytes has room for nnodes entries.  0, or -1 with errno
 * (ESRCH when the process is gone). */
int cs_numa_resident(pid_t pid, double *bytes, int nnodes);
/* Sample every live job's memory if a second has passed since its last sample. */
void cs_numa_sample_jobs(struct cs_engine *e);

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
/* The policy handed back a characterization result r for job j: traced (in
 * e->trace), and counted unless degraded (j->characterized; more than one is
 * a re-characterization). */
void cs_job_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r);

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
    /* CPU-seconds the managed cpus sat idle in steps that held a live job
     * frozen: on cpus the plan gave to no running job (nobody) and on cpus
     * of a running job (held); idle_steps: steps where the control backend
     * could say (cpu_idle), the totals cover those only */
    double idle_nobody_s, idle_held_s; uint64_t idle_steps;
    void *ctl_state;                   /* backend private */

    /* profile store (NULL: none) and a hook called after every plan() that
     * succeeded, once its results are stored (NULL: none) */
    struct cs_store *store;
    void (*on_plan)(struct cs_engine *e);
    void *on_plan_arg;

    /* someone reads plan()'s third value, the policy's explanations (the
     * node engine: `cosched status`): the snapshot says so (explain) */
    int explain;

    /* who the jobs belong to when the engine does not fork them itself -
     * the node engine (Slurm steps) or the simulated node - and that host's
     * own state; NULL for `cosched run` (engine/engine.h, struct
     * cs_host_ops) */
    const struct cs_host_ops *host;
    void *host_arg;
};


#endif
