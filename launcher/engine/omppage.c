/*
 * omppage.c - a job's OpenMP page, the engine's side (omppage.h).
 *
 * The page is a sealed memfd: F_SEAL_SHRINK and F_SEAL_GROW keep its size,
 * so a job cannot truncate it under the engine's mapping (a fault in a root
 * process); F_SEAL_SEAL keeps those seals.  The engine writes magic, version
 * and gen; it reads back team and the region counts (regions and the slots)
 * only, bounded: a job that writes anything there misleads what the engine
 * reports about itself, nothing else.
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "engine/omppage.h"
#include "core/log.h"
#include "core/job.h"
#include "shared/omppage.h"

struct omppage {
    int fd;
    struct cs_omppage *pg;
    uint64_t gen;              /* the engine's own count: never read back from the page */
    uint64_t regions_mark;     /* regions at the start of the step */
};

int cs_omppage_open(struct cs_job *j)
{
    if (j->omp)
        return 0;
    struct omppage *o = calloc(1, sizeof *o);
    if (o == NULL)
        return -1;
    o->fd = memfd_create(CS_OMPPAGE_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (o->fd < 0 || ftruncate(o->fd, CS_OMPPAGE_SIZE) < 0 ||
        fcntl(o->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
        (o->pg = mmap(NULL, CS_OMPPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0)) == MAP_FAILED) {
        cs_warn("job %d (%s): no OpenMP page (%s): its teams follow its cores within a clock tick instead",
                j->id, j->name, strerror(errno));
        if (o->fd >= 0)
            close(o->fd);
        free(o);
        return -1;
    }
    o->pg->magic = CS_OMPPAGE_MAGIC;
    o->pg->version = CS_OMPPAGE_VERSION;
    o->gen = 1;
    atomic_store_explicit((_Atomic uint64_t *)&o->pg->gen, o->gen, memory_order_release);
    j->omp = o;
    return 0;
}

int cs_omppage_fd(const struct cs_job *j)
{
    const struct omppage *o = j->omp;
    return o ? o->fd : -1;
}

void cs_omppage_close(struct cs_job *j)
{
    struct omppage *o = j->omp;
    if (o == NULL)
        return;
    munmap(o->pg, CS_OMPPAGE_SIZE);
    close(o->fd);
    free(o);
    j->omp = NULL;
}

void cs_omppage_exec(struct cs_job *j)
{
    struct omppage *o = j->omp;
    char b[16];
    if (o == NULL || fcntl(o->fd, F_SETFD, 0) < 0)
        return;
    snprintf(b, sizeof b, "%d", o->fd);
    setenv(CS_OMPPAGE_ENV, b, 1);
}

void cs_omppage_bump(struct cs_job *j)
{
    struct omppage *o = j->omp;
    if (o)
        atomic_store_explicit((_Atomic uint64_t *)&o->pg->gen, ++o->gen, memory_order_release);
}

void cs_omppage_reset(struct cs_job *j)
{
    struct omppage *o = j->omp;
    if (o == NULL)
        return;
    atomic_store_explicit((_Atomic uint32_t *)&o->pg->team, 0, memory_order_relaxed);
    /* the new instance's threads claim the slots again (their counts go on
     * from where the last one's stopped: the sum only grows) */
    atomic_store_explicit((_Atomic uint32_t *)&o->pg->nslots, 0, memory_order_relaxed);
    j->omp_team = 0;
    j->omp_regions = 0;
}

void cs_omppage_step(struct cs_job *j)
{
    struct omppage *o = j->omp;
    if (o == NULL)
        return;
    uint32_t team = atomic_load_explicit((_Atomic uint32_t *)&o->pg->team, memory_order_relaxed);
    uint64_t regions = cs_omppage_regions(o->pg);   /* job-written: a sum of untrusted words */
    /* one process's team: the job's only when it is the job's one process */
    j->omp_team = team <= CS_OMPPAGE_TEAM_MAX && j->omp_procs <= 1 ? (int)team : 0;
    /* counted forward only: a count that went back or leapt by 2^40 (the job
     * wrote it) is no count for this step, and the next counts from there */
    j->omp_regions = regions >= o->regions_mark && regions - o->regions_mark < (1ULL << 40)
                     ? (long long)(regions - o->regions_mark) : 0;
    o->regions_mark = regions;
}
