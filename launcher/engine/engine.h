/*
 * engine/engine.h - the engine (engine.c): runs jobs under a policy, epoch by
 * epoch, step by step, on the state of struct cs_engine (core/core.h).
 *
 * May use: core/, control/, counters/, policy/, shared/.  Used by: node/,
 * sim/, cli/.
 */
#ifndef COSCHED_ENGINE_H
#define COSCHED_ENGINE_H

#include "core/core.h"

/* The engine's side of serve.c:
 * adopt: j (id, name, threads, allowed filled; ctl/cnt state empty) becomes a
 *   live job whose first task is pid: prepared, attached, confined to its
 *   allowed cores and frozen (unless nofreeze) until the plan runs it.
 * drop: j's tasks are gone: counters and container released, state ENDED. */
int cs_engine_adopt(struct cs_engine *e, struct cs_job *j, pid_t pid);
void cs_engine_drop(struct cs_engine *e, struct cs_job *j, const char *why);
/* The cores a job lives on when no plan says otherwise. */
hwloc_const_bitmap_t cs_job_home(const struct cs_engine *e, const struct cs_job *j);

int cs_engine_run(struct cs_engine *e);  /* exit status for main() */
/* Stop job j on purpose (from a hook during the run): thaw it, SIGTERM its
 * process group, SIGKILL after e->kill_timeout.  Its end is then neither a
 * failure nor restarted. */
void cs_engine_stop_job(struct cs_engine *e, struct cs_job *j);
/* The policy handed back a characterization result r for job j: traced, and
 * counted unless degraded (j->characterized; more than one is a
 * re-characterization). */
void cs_engine_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r);

#endif
