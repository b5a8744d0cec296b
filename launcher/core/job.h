/*
 * core/job.h - a job (struct cs_job: what was asked, and its state in a run)
 * and job files (jobfile.c; cosched(1) JOB FILES).
 *
 * Used by every layer that handles jobs: engine/, policy/, counters/,
 * control/, node/, sim/, cli/.  Uses libc and hwloc only; the profile store
 * and the policy's info are held by pointer (core/store.h, core/json.h).
 */
#ifndef COSCHED_CORE_JOB_H
#define COSCHED_CORE_JOB_H

#include <stdint.h>
#include <sys/types.h>
#include <hwloc.h>

struct cs_store_key;
struct cs_stored;
struct json_t;
struct cs_slurm_step;

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
    /* whose job it is (node/register.c: the Slurm step's uid), for policies
     * as job.owner; has_owner 0: not known (cosched run: every job is the
     * user's) */
    int has_owner;
    long owner;
    /* where a Slurm step is (control/control.h): its identity and cgroups,
     * located once by the host that registered it and handed to the control
     * backend (NULL: not a Slurm step) */
    struct cs_slurm_step *slurm;
    /* its container and counters were released while the run goes on
     * (cs_engine_drop): nothing of it is measured any more */
    int released;
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

#endif
