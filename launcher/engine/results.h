/*
 * engine/results.h - what the engine does with a result a policy hands back
 * (results.c): a characterization counted on its job and recorded in the
 * trace (the "characterized" record, cosched(1) TRACE).  The profile store
 * itself is core/store.h.
 *
 * Used by the engine's side of a plan (today policy.c's cs_policy_plan still
 * calls it, until the plan carries its results: issue 27, deliver 3).  Uses
 * core/ and jansson (core/json.h).
 */
#ifndef COSCHED_ENGINE_RESULTS_H
#define COSCHED_ENGINE_RESULTS_H

struct cs_engine;
struct cs_job;
struct cs_stored;

/* The policy handed back a characterization result r for job j: traced (in
 * e->trace), and counted unless degraded (j->characterized; more than one is
 * a re-characterization). */
void cs_job_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r);

#endif
