/*
 * policy/policy.h - the policy host: loads a Lua policy into its own
 * sandbox, hands it a read-only snapshot of the node and the jobs each
 * epoch, and validates the plan it returns (cosched-policy(7)).  The one
 * public header of policy/; its files (policy.c loading, bounds.c, sandbox.c,
 * clib.c, snapshot.c, plan.c, results.c) share policy/internal.h.
 *
 * May use: core/, counters/ (the profile's metric names and values the
 * snapshot carries).  Used by: engine/, node/, cli/.
 */
#ifndef COSCHED_POLICY_H
#define COSCHED_POLICY_H

#include "core/engine_state.h"
#include "core/store.h"          /* struct cs_stored: a plan's results */

#define CS_POLICY_API 1

/* Set by the node engine: the policy host then loads (and requires) only
 * files that pass cs_path_trusted(). */
extern int cs_policy_trusted_only;

/* What one plan() call returns (cosched-policy(7)): the steps, and beside
 * them the policy's characterization results (its second value) and what it
 * says of each job (its third).  The policy host only fills it; the caller
 * applies it: the engine stores the results (core/store.c), traces them and
 * hangs each info object on its job (policy_info, which it may take: set
 * info[i].json to NULL).  Everything in it is the plan's own until
 * cs_plan_free(). */
struct cs_plan_job { int job; hwloc_bitmap_t cpus; hwloc_bitmap_t mems; };
struct cs_plan_step { double duration; int njobs; struct cs_plan_job *jobs; };
struct cs_plan_result { int job; struct cs_stored r; };      /* job: its id, a live job's */
struct cs_plan_info { int job; struct json_t *json; };       /* an object, at most 2 KiB written */
struct cs_plan {
    int nsteps;
    struct cs_plan_step *steps;
    int nresults;                  /* at most one per live job */
    struct cs_plan_result *results;
    int ninfo;                     /* at most one per live job */
    struct cs_plan_info *info;
};
void cs_plan_free(struct cs_plan *p);

struct cs_policy;
/* Find name in the search path and load it. NULL after reporting. */
struct cs_policy *cs_policy_load(const char *name, char **search, int nsearch,
                                 char **params, int nparams);
const char *cs_policy_name(const struct cs_policy *p);
const char *cs_policy_file(const struct cs_policy *p);
/* The policy's one-line description ("" if it declares none). */
const char *cs_policy_description(const struct cs_policy *p);
/* The policy says it runs jobs on the same CPUs at the same time (shares_cpus
 * = true in its table, cosched-policy(7)): sizing OpenMP teams to a job's CPUs
 * then does not keep threads of different jobs off each other's cores. */
int cs_policy_shares_cpus(const struct cs_policy *p);
/* Bounds for the policies loaded (or listed) from now on; 0 means the
 * default: memory of a policy's Lua state (64 MiB), instructions per call
 * (200 million), seconds per plan() call (min(max(quantum, 0.05), 1.0));
 * loading and init() get max(seconds, 1.0).  Call before cs_policy_load(). */
void cs_policy_limits(size_t mem_bytes, uint64_t instructions, double seconds);
/* The solver behind cosched.fair_lp (cosched-policy(7)): maximise
 * sum_c (sum_j r[c * nj + j]) x[c] over x >= 0, sum x = 1, with every job's
 * sum_c r[c * nj + j] x[c] >= floor_[j]; 0 with x[nc] set, -1 when no such x
 * exists, -2 when the solver failed; silently.  The policy layer has none of its own:
 * cosched's main gives it GLPK's (sim/lp.c) when built with GLPK; without
 * one (the default) policies do not get the function.  Set it before
 * cs_policy_load(). */
typedef int (*cs_policy_lp_fn)(int nj, int nc, const double *r, const double *floor_, double *x);
void cs_policy_set_lp(cs_policy_lp_fn fn);
/* Ask for a plan; 0 and *plan filled and validated, or -1 after reporting
 * the failure (file:line) - the caller then runs its fallback plan.  It
 * reads e (the snapshot) and writes nothing but p and *plan. */
int cs_policy_plan(struct cs_policy *p, struct cs_engine *e, struct cs_plan *plan);
void cs_policy_free(struct cs_policy *p);
/* The policy search path, most specific first (see cosched(1) FILES): extra
 * (--policy-path), $COSCHED_POLICY_PATH, ~/.config/cosched/policies, the
 * site's, the shipped ones.  Strings and vector malloc'ed. */
char **cs_policy_search_path(char **extra, int nextra, int *n);
/* List policies found in the search path: name, one-line description, file. */
int cs_policy_list(char **search, int nsearch, FILE *f);

#endif
