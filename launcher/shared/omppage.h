/*
 * shared/omppage.h - the page a job shares with cosched: the layout that
 * libcosched-omp.so (omp/cosched-omp.c) and the engine (engine/omppage.c)
 * both read.  libc only, no functions.
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
 *                   job started), regions (outermost regions completed,
 *                   summed over the job's processes).  Untrusted: the engine
 *                   reads these two words only, bounds them (team <=
 *                   CS_OMPPAGE_TEAM_MAX, regions only counted forward) and a
 *                   job can only mislead decisions about itself.
 */
#ifndef COSCHED_OMPPAGE_H
#define COSCHED_OMPPAGE_H

#include <stdint.h>

#define CS_OMPPAGE_ENV "COSCHED_OMP_PAGE"
#define CS_OMPPAGE_NAME "cosched-omp-page"     /* the memfd's name (/proc/PID/fd/N -> /memfd:NAME) */
#define CS_OMPPAGE_MAGIC 0x63736f6d70706731ULL  /* "csomppg1" */
#define CS_OMPPAGE_VERSION 1u
#define CS_OMPPAGE_SIZE 4096u
#define CS_OMPPAGE_TEAM_MAX 65536u

struct cs_omppage {
    /* engine -> job */
    uint64_t magic;
    uint32_t version, pad0;
    uint64_t gen;                  /* atomic: release store by the engine, acquire load by the shim */
    char pad1[64 - 24];
    /* job -> engine (untrusted) */
    uint32_t team;                 /* atomic, relaxed */
    uint32_t pad2;
    uint64_t regions;              /* atomic, relaxed fetch-add */
    char pad3[64 - 16];
};

_Static_assert(sizeof(struct cs_omppage) == 128, "struct cs_omppage is two cache lines");

#endif
