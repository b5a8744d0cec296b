/*
 * counters.h - hardware (or software) counters per job, behind one ops table.
 *
 *   --counters=auto|likwid|perf|replay:FILE|none
 *
 * A backend counts the events of one profile (profile.h) for every job.
 * During a step each core belongs to at most one job, so per-core counts of
 * the cores a job held are that job's counts.  Socket-scope (uncore) events
 * can only be attributed in a step where one job owns the whole socket; the
 * backend says so per read (CS_COUNTS_SOCKET_OWNED).
 *
 * Lifecycle, driven by the engine:
 *
 *   probe -> init(profile) -> per job instance: job_attach(pid) before exec
 *     -> every step: step_begin(), ..., read(job) at the step's end
 *     -> instance_ended -> job_release -> fini
 *
 * read() returns counts accumulated since the previous read() of that job
 * (the step's deltas), one double per profile event (NaN: not counted this
 * step), and the flags below.  The engine turns them into metrics with
 * cs_profile_eval() and hands the metrics to the policy.
 *
 * Errors: 0 / -1 after a cs_err() that names the backend and the cause.
 *
 * counters/ is the facade (counters.c), the backends (perf.c, likwid.c,
 * replay.c) and the profiles they count (profile.c, profile.h: part of this
 * header, included by it).  May use: core/.  Used by: engine/, policy/ (the
 * metrics a snapshot carries), node/, sim/, cli/.
 */
#ifndef COSCHED_COUNTERS_H
#define COSCHED_COUNTERS_H

#include "core/job.h"
#include "core/engine_state.h"
#include "counters/profile.h"

#define CS_COUNTS_MAX 32

enum {
    CS_COUNTS_VALID = 1,          /* values are meaningful */
    CS_COUNTS_SOCKET_OWNED = 2,   /* the job owned its socket(s): uncore events are its own */
    CS_COUNTS_MULTIPLEXED = 4,    /* scaled from partial counting time */
};

struct cs_counts {
    int flags;
    int n;                        /* = profile->nevents */
    double v[CS_COUNTS_MAX];
    double seconds;               /* wall time the counts cover */
};

struct cs_counter_ops {
    const char *name;
    /* 0 when usable here; else -1 and why says what is missing and what to change. */
    int (*probe)(const char *arg, char *why, size_t len);
    /* arg: the part after "replay:" (the file), else NULL. */
    int (*init)(struct cs_engine *e, const char *arg, const struct cs_profile *p);
    /* A new instance (forked, not yet exec'ed: counters set now follow every
     * thread and child it will create). */
    int (*job_attach)(struct cs_engine *e, struct cs_job *j, pid_t pid);
    /* A step starts; cpus_of[i] is job i's cpus in it (NULL if frozen). */
    int (*step_begin)(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of);
    /* Counts of job j since its previous read. */
    int (*read)(struct cs_engine *e, struct cs_job *j, struct cs_counts *out);
    void (*instance_ended)(struct cs_engine *e, struct cs_job *j);
    void (*job_release)(struct cs_engine *e, struct cs_job *j);
    void (*fini)(struct cs_engine *e);
};

extern const struct cs_counter_ops cs_counters_none;
extern const struct cs_counter_ops cs_counters_perf;
extern const struct cs_counter_ops cs_counters_replay;
extern const struct cs_counter_ops cs_counters_likwid;

/* Which events of p this backend can count here: countable[i] set per event
 * (may be NULL); returns how many, -1 on error; why says what is missing. */
int cs_counters_perf_check(const struct cs_profile *p, unsigned char *countable, char *why, size_t len);
int cs_counters_likwid_check(const struct cs_profile *p, unsigned char *countable, char *why, size_t len);

/* "auto" tries likwid, then perf; says once why counting is impossible and
 * returns cs_counters_none.  An explicitly named backend that cannot work is
 * an error (NULL).  *arg gets the replay file. */
const struct cs_counter_ops *cs_counters_select(const char *spec, const struct cs_profile *p,
                                                const char **arg);
/* Why "auto" chose cs_counters_none, in one line (for JSON results). */
const char *cs_counters_none_why(void);

/* Recording (--record-counters FILE): one JSON line per job per step. */
int cs_counters_record_open(const char *path, const struct cs_profile *p);
void cs_counters_record(const struct cs_engine *e, const struct cs_job *j, uint64_t step,
                        const struct cs_counts *c);
void cs_counters_record_close(void);

#endif
