/*
 * shared/omppage.h - the page a job shares with cosched: the layout that
 * libcosched-omp.so (omp/cosched-omp.c) and the engine (engine/omppage.c)
 * both read.  libc only.
 *
 * The engine makes one page per job: a sealed memfd (its size can neither
 * shrink nor grow, so a job cannot make the root engine's mapping fault),
 * mapped shared, inherited by the job's processes and named in their
 * environment as COSCHED_OMP_PAGE=<fd number>.  Two halves on separate
 * cache lines:
 *
 *   engine -> job:  magic, version, gen.  gen is bumped (release order)
 *                   after every change of the job's CPUs; the shim re-reads
 *                   its affinity only when gen moved.  The engine never reads
 *                   this half back: a job that scribbles on it misleads
 *                   only its own team sizes.
 *   job -> engine:  team (the outermost team size of the last region the
 *                   job started) and the count of outermost regions
 *                   completed, summed over the job's processes and threads:
 *                   regions plus every slot.  Each thread that completes
 *                   regions claims a slot of its own (nslots, a fetch-add
 *                   once per thread) on a cache line of its own and counts
 *                   there with a plain load and store: no locked
 *                   instruction per region (a lock add drains the store
 *                   buffer at the end of every region).  Two writers of a
 *                   slot (a process left over from a job's previous
 *                   instance, whose threads' claims the engine forgot; a
 *                   child made by a raw clone()) may lose counts, and a
 *                   step whose sum went back counts none: the job's own
 *                   signal only.  Threads beyond
 *                   CS_OMPPAGE_SLOTS count in regions with a fetch-add.
 *                   Untrusted: the engine reads team, regions and the
 *                   slots only (never nslots), bounds them (team <=
 *                   CS_OMPPAGE_TEAM_MAX, the sum only counted forward) and
 *                   a job can only mislead decisions about itself.
 *
 * One function, cs_omppage_regions(): the sum, for the engine and tests.
 */
#ifndef COSCHED_OMPPAGE_H
#define COSCHED_OMPPAGE_H

#include <stdatomic.h>
#include <stdint.h>

#define CS_OMPPAGE_ENV "COSCHED_OMP_PAGE"
#define CS_OMPPAGE_NAME "cosched-omp-page"     /* the memfd's name (/proc/PID/fd/N -> /memfd:NAME) */
#define CS_OMPPAGE_MAGIC 0x63736f6d70706731ULL  /* "csomppg1" */
#define CS_OMPPAGE_VERSION 2u
#define CS_OMPPAGE_SIZE 4096u
#define CS_OMPPAGE_TEAM_MAX 65536u
#define CS_OMPPAGE_SLOTS 62u

struct cs_omppage {
    /* engine -> job */
    uint64_t magic;
    uint32_t version, pad0;
    uint64_t gen;                  /* atomic: release store by the engine, acquire load by the shim */
    char pad1[64 - 24];
    /* job -> engine (untrusted) */
    uint32_t team;                 /* atomic, relaxed */
    uint32_t nslots;               /* atomic: slots claimed (the engine never reads it; 0 for a new instance) */
    uint64_t regions;              /* atomic, relaxed fetch-add: threads without a slot */
    char pad3[64 - 16];
    struct { uint64_t regions; char pad[56]; } slot[CS_OMPPAGE_SLOTS];   /* one writer each, relaxed */
};

_Static_assert(sizeof(struct cs_omppage) == CS_OMPPAGE_SIZE, "struct cs_omppage is the page");

/* outermost regions completed: regions plus the slots (wrapping) */
static inline uint64_t cs_omppage_regions(const struct cs_omppage *pg)
{
    uint64_t n = atomic_load_explicit((const _Atomic uint64_t *)&pg->regions, memory_order_relaxed);
    for (unsigned i = 0; i < CS_OMPPAGE_SLOTS; i++)
        n += atomic_load_explicit((const _Atomic uint64_t *)&pg->slot[i].regions, memory_order_relaxed);
    return n;
}

#endif
