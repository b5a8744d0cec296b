/*
 * core/store.h - the profile store (store.c): characterization results kept
 * between runs, one JSON file per job key.
 *
 * Used by cli/ (open, close, key the jobs), policy/ (a job's stored entry,
 * results handed back) and engine/.  Uses libc, hwloc and jansson.
 */
#ifndef COSCHED_CORE_STORE_H
#define COSCHED_CORE_STORE_H

#include <hwloc.h>

struct cs_job;

/*
 * Characterization results kept between runs (store.c; cosched(1) PROFILE
 * STORE), one JSON file per key: the job's executable (resolved path and its
 * ELF build id, else a 64-bit FNV-1a hash of its contents), its arguments,
 * its thread count and this machine's CPU model (hwloc).
 *
 *   run.c:    s = cs_store_open(...); per job: cs_store_job(s, j, exe)
 *               -> j->stored (what the policy sees as job.stored)
 *   engine.c: a plan's results (policy.h, struct cs_plan) -> cs_store_result(s, j, r)
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

#endif
