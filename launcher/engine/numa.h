/*
 * engine/numa.h - where a job's memory is (numa.c): bytes per NUMA node, from
 * /proc/PID/numa_maps, sampled by the engine once an epoch for the NUMA
 * policies' snapshot.
 *
 * Used by engine/ only.  Uses libc and core/ (struct cs_engine's jobs and
 * topology).
 */
#ifndef COSCHED_ENGINE_NUMA_H
#define COSCHED_ENGINE_NUMA_H

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
