/*
 * cgleave.h - how a node engine started from inside a Slurm step leaves
 * Slurm's cgroups, written once for its two callers: the plugin, which
 * starts the engine on demand from slurmstepd (plugin/remote.c: the targets
 * found before fork, the moves made in the child before exec, where only
 * async-signal-safe calls may run), and the engine itself (node/serve.c,
 * `cosched serve --detach` when started some other way).  An engine left in
 * a step's cgroups would be frozen, confined and killed with that step.
 *
 * The rule: in every hierarchy (v1 controllers, named ones too, and
 * cgroup2) where this process's path names Slurm's tree (holds "slurm" or
 * "/job_"), go to the top of the mount that shows that path (its
 * cgroup.procs): under cgroup2 the only cgroup that may hold processes
 * whatever controllers its children have, and under v1 the place Slurm's
 * tree hangs from.  Hierarchies Slurm does not use are left as they are.
 *
 * libc only: compiled into cosched and into plugin/cosched.so.  Its
 * mountinfo reading is a small libc-only twin of control/cgroupfs.c's
 * cs_cgroup_locate, which the plugin may not use (it includes
 * launcher/shared/ only) and which reports through core/'s log: the
 * lookup is written twice, the rule once.
 */
#ifndef COSCHED_CGLEAVE_H
#define COSCHED_CGLEAVE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>

/* The cgroup.procs files to move to, at most max; how many.  Reads
 * /proc/self/cgroup and /proc/self/mountinfo (not async-signal-safe). */
int cs_leave_slurm_targets(char paths[][PATH_MAX], int max);
/* Move the calling process to path (a cgroup.procs file): open, write "0",
 * close - async-signal-safe.  0, or -1 with errno. */
int cs_leave_slurm_move(const char *path);

#endif
