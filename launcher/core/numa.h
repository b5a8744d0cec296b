/*
 * core/numa.h - where a job's memory is (numa.c): bytes per NUMA node, from
 * /proc/PID/numa_maps, for the NUMA policies' snapshot.
 *
 * Used by engine/ (once an epoch) and by the tests.  Uses libc; reads
 * struct cs_engine (core/engine_state.h).
 */
#ifndef COSCHED_CORE_NUMA_H
#define COSCHED_CORE_NUMA_H

#include <sys/types.h>

struct cs_engine;

/* Where process pid's resident memory is: bytes per NUMA node (os index),
 * from the kernel's per-mapping node counts (/proc/PID/numa_maps, what
 * numastat reads).  bytes has room for nnodes entries.  0, or -1 with errno
 * (ESRCH when the process is gone). */
int cs_numa_resident(pid_t pid, double *bytes, int nnodes);
/* Sample every live job's memory if a second has passed since its last sample. */
void cs_numa_sample_jobs(struct cs_engine *e);

#endif
