/*
 * policy/internal.h - what the files of the policy host share: struct
 * cs_policy (one per loaded policy) and the functions each file offers the
 * others.  Included by the .c files of launcher/policy/ only; everything
 * else uses policy.h.
 *
 * A policy is a Lua file that returns a table { api = 1, name, description,
 * params, init, plan } (cosched-policy(7) is the reference).  Each policy
 * gets a lua_State of its own:
 *
 *   lua_newstate(capped allocator)          memory cap (default 64 MiB)
 *     global table = the sandbox            safe base functions, string,
 *                                           table, math, utf8, read-only
 *                                           `cosched`, our require/load/pcall
 *     count hook every 1000 instructions    instruction budget + time limit
 *
 * Every entry into Lua (loading, init(), plan(), require from them) runs under
 * lua_pcall with a message handler, inside a protected C function, so that no
 * Lua error - not even "out of memory" while building the snapshot - escapes.
 * C allocations made while converting a plan hang off the caller's struct
 * cs_plan, which the caller frees on failure; scratch bitmaps live in the
 * policy itself.
 *
 * The files, in the order of a policy's life:
 *   policy.c    loading (policy_open, cs_policy_load), init(), params, the
 *               accessors, listing, the search path, cs_policy_free
 *   sandbox.c   the sandbox: the global table, read-only proxies, require,
 *               load, pcall/xpcall that cannot catch a limit
 *   clib.c      the bounded C library: string and table functions wrapped
 *               so that no single call loops unbounded
 *   bounds.c    the limits: capped allocator, count hook (instructions, CPU
 *               and wall time), error messages, call_bounded()
 *   snapshot.c  the snapshot plan() reads (read-only, cached tables)
 *   plan.c      cs_policy_plan(): plan() called, its steps converted and
 *               validated; cs_plan_free()
 *   results.c   plan()'s second and third values: characterization results
 *               and per-job info, into the struct cs_plan
 */
#ifndef COSCHED_POLICY_INTERNAL_H
#define COSCHED_POLICY_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "policy/policy.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"

#define HOOK_EVERY      1000
#define LOAD_SECONDS    1.0      /* loading, init(), and lua_close() */

enum overrun { OVER_NONE, OVER_TIME, OVER_WALL, OVER_INSNS, OVER_MEM, OVER_MEM_HARD, OVER_SIGNAL };

struct cs_policy {
    char *name;                /* as selected: NAME of NAME.lua */
    char *file;                /* where it was found */
    char *dir;                 /* its directory (second module root) */
    char *moddir;              /* <datadir>/lua */
    char *description;
    int shares_cpus;           /* runs jobs on the same CPUs at once (linux) */
    int overlap_warned;        /* said once that it does so undeclared */
    lua_State *L;

    /* allocator */
    size_t mem_used, mem_limit;
    int mem_over;              /* above the cap since the last check */

    /* limits */
    uint64_t insn_limit;
    double seconds;            /* 0: min(max(quantum, 0.05), 1.0) per plan() */
    /* the call under way */
    double call_limit;         /* CPU seconds */
    double t0, cpu_deadline, wall_deadline;
    uint64_t ticks;
    enum overrun why;
    char where[160];           /* file:line where a limit was hit */
    int verr;                  /* the error is ours (validation), not Lua's */
    int quiet;                 /* listing: no warnings */

    int plan_ref, init_ref, decl_ref, params_ref;

    /* snapshot caches (snapshot.c): the topology tables while the
     * topology and the managed set stay the same; the stack slots of the
     * cpu-list and job.stored caches while push_snapshot() runs (0 else) */
    int topo_ref;
    const struct cs_topo *topo_src;
    uint64_t topo_fp;
    int cpu_cur, cpu_prev, st_cur, st_prev;
    unsigned long *keybuf;     /* a cpu bitmap as bytes: the cache key */
    int keycap;

    /* plan_protected() context */
    struct cs_engine *e;
    struct cs_plan *out;
    hwloc_bitmap_t tmp, used, kept, nodes;   /* kept: a step's never-frozen jobs' cpus */
    char warnbuf[512];
    size_t warnlen;
};

static inline struct cs_policy *getp(lua_State *L)
{
    return *(struct cs_policy **)lua_getextraspace(L);
}

/* policy.c */
char *pol_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int pol_is_regular_file(const char *path);

/* bounds.c: the allocator handed to lua_newstate (ud: the policy) */
void *pol_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
/* Start the limits of a call of `seconds` (the count hook set). */
void pol_begin_call(struct cs_policy *p, double seconds);
/* Raise a validation error: our message, no position, no traceback. */
int pol_verror(lua_State *L, const char *fmt, ...);
/* Run f (a lua_CFunction) protected and bounded; nres results stay on the
 * stack on success.  On failure -1 and *err holds the message (malloc'd). */
int pol_call_bounded(struct cs_policy *p, lua_CFunction f, void *arg, int nres,
                     double seconds, const char *what, char **err);

/* sandbox.c */
/* Push the position of the nearest Lua code on the stack ("file:line: "). */
void pol_push_where(lua_State *L);
/* Replace the table on top of the stack by a read-only proxy of it. */
void pol_ro_wrap(lua_State *L);
/* A read-only proxy's __newindex (raises): how a proxy is recognized. */
int pol_ro_newindex(lua_State *L);
int pol_valid_module_name(const char *s);
int pol_require(lua_State *L);   /* require(name), as a policy's */
/* Build the sandbox in the state's global table (a lua_CFunction for
 * pol_call_bounded); lua_atpanic's and lua_setwarnf's functions. */
int pol_setup_sandbox(lua_State *L);
int pol_panic(lua_State *L);
void pol_warnf(void *ud, const char *msg, int tocont);

/* fairlp.c: cosched.fair_lp into the library table at the stack top, when a
 * solver was given (cs_policy_set_lp). */
void pol_add_fair_lp(lua_State *L);

/* clib.c: wrap the string and table functions that can loop for long in
 * one call, in the libraries of the global table (stack top). */
void pol_bound_clib(lua_State *L);

/* snapshot.c */
/* Live jobs sorted by id, in a userdata anchored at the stack top. */
struct cs_job **pol_live_jobs(lua_State *L, struct cs_engine *e, int *n);
/* Push plan()'s argument, the snapshot of e and its live jobs. */
void pol_push_snapshot(lua_State *L, struct cs_policy *p, struct cs_engine *e,
                       struct cs_job **live, int nlive);

/* plan.c: reading what plan() returned */
/* Describe the value at idx for a message (pushes it; returns it). */
const char *pol_describe(lua_State *L, int idx);
/* Integer value of a number at idx (3.0 counts), else 0 and *ok = 0. */
long long pol_int_at(lua_State *L, int idx, int *ok);
/* Fields not in known[] (plain tables only) are typos: refuse them. */
void pol_check_fields(lua_State *L, int t, const char *const *known, const char *where,
                      const char *list);
/* The table at idx as read: a read-only proxy's data, else itself. */
int pol_plain_at(lua_State *L, int idx);
/* Push t[k] without metamethods; its type. */
int pol_rawfield(lua_State *L, int t, const char *k);

/* results.c: plan()'s second and third values (at stack index res) into
 * p->out's results and info; a bad one raises (pol_verror). */
void pol_convert_results(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive);
void pol_convert_info(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive);

#endif
