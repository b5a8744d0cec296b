/*
 * engine/omppage.h - the engine's side of a job's OpenMP page
 * (shared/omppage.h says what is in it; omp/cosched-omp.c is the other
 * side).  Used by engine.c only: `cosched run` passes the page to the jobs
 * it forks (cs_omppage_exec), the node engine hands it to the Slurm plugin
 * (cs_engine_omp_page, engine.h).
 */
#ifndef COSCHED_ENGINE_OMPPAGE_H
#define COSCHED_ENGINE_OMPPAGE_H

#include "core/job.h"

/* Make job j's page (j->omp) if it has none: 0, or -1 after a warning (the
 * job then runs without one: its shim revalidates on the clock). */
int cs_omppage_open(struct cs_job *j);
/* Its descriptor (close-on-exec; the page's own, not to be closed), -1
 * without a page. */
int cs_omppage_fd(const struct cs_job *j);
/* Unmap and close it (NULL is fine). */
void cs_omppage_close(struct cs_job *j);
/* In the forked child before exec: the page's descriptor inherited, its
 * number in COSCHED_OMP_PAGE.  Nothing without a page. */
void cs_omppage_exec(struct cs_job *j);
/* After a change of j's CPUs: the next region of each of its threads
 * re-reads its affinity. */
void cs_omppage_bump(struct cs_job *j);
/* A new instance of j starts: what its predecessor wrote is forgotten. */
void cs_omppage_reset(struct cs_job *j);
/* At the end of a step: j->omp_team and j->omp_regions from the page,
 * bounded (shared/omppage.h). */
void cs_omppage_step(struct cs_job *j);

#endif
