/*
 * engine/internal.h - what the engine's own files share (engine.h is its
 * face to the hosts and commands).
 */
#ifndef COSCHED_ENGINE_INTERNAL_H
#define COSCHED_ENGINE_INTERNAL_H

#include "engine/engine.h"

struct cs_plan;
struct cs_plan_step;

/* switch.c: the fallback plan - one step of e->quantum, every live job on
 * its home cores, nobody frozen - in *p. */
void cs_engine_fallback_plan(struct cs_engine *e, struct cs_plan *p);
/* switch.c: apply step st - freeze the leaving jobs, move cores, thaw the
 * entering ones; run[i] (per job of e->jobs): k + 1 when job i is the step's
 * k-th entry, -1 when it cannot be frozen and keeps running where it is, 0
 * when it is frozen in the step.  The switch's cost in us. */
double cs_engine_switch(struct cs_engine *e, const struct cs_plan_step *st, int *run);

#endif
