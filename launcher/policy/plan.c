/*
 * plan.c - cs_policy_plan(): plan() called under the limits (bounds.c) with
 * the snapshot (snapshot.c), its steps converted into a struct cs_plan and
 * validated (jobs live, cpus managed, no overlap unless shares_cpus, step
 * durations in range), its other values by results.c; cs_plan_free().  It
 * writes nothing but the policy and the plan: the caller applies the plan's
 * results and info (policy.h).
 *
 * Part of the policy host (internal.h); uses Lua and core/ only.
 */
#include "policy/internal.h"

#include "core/json.h"

#define PLAN_MAX_STEPS  1024
#define STEP_MIN        0.001
#define STEP_MAX        3600.0

/* Describe the value at idx for a message (pushes it; returns it). */
const char *pol_describe(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, idx));
        return lua_pushfstring(L, "%f", lua_tonumber(L, idx));
    case LUA_TSTRING:
        return lua_pushfstring(L, "'%s'", lua_tostring(L, idx));
    default:
        return lua_pushfstring(L, "(a %s)", luaL_typename(L, idx));
    }
}

/* Integer value of a number at idx (3.0 counts), else 0 and *ok = 0. */
long long pol_int_at(lua_State *L, int idx, int *ok)
{
    int isnum = 0;
    lua_Integer v;
    *ok = 0;
    if (lua_type(L, idx) != LUA_TNUMBER)
        return 0;
    v = lua_tointegerx(L, idx, &isnum);
    *ok = isnum;
    return v;
}

/* Fields not in known[] (plain tables only) are typos: refuse them. */
void pol_check_fields(lua_State *L, int t, const char *const *known, const char *where,
                         const char *list)
{
    if (lua_getmetatable(L, t)) {
        lua_pop(L, 1);
        return;
    }
    lua_pushnil(L);
    while (lua_next(L, t)) {
        int ok = 0;
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING) {
            for (const char *const *k = known; *k; k++)
                if (!strcmp(*k, lua_tostring(L, -1)))
                    ok = 1;
        }
        if (!ok) {
            if (lua_type(L, -1) == LUA_TSTRING)
                pol_verror(L, "%sunknown field '%s' (fields: %s)", where, lua_tostring(L, -1), list);
            if (lua_type(L, -1) != LUA_TNUMBER)
                pol_verror(L, "%sunknown field %s (fields: %s)", where, pol_describe(L, -1), list);
            /* integer keys: someone wrote a list where a table was due */
            pol_verror(L, "%sholds list items, expected only the fields %s", where, list);
        }
    }
}

static void managed_str(struct cs_engine *e, char *buf, size_t len)
{
    if (hwloc_bitmap_list_snprintf(buf, len, e->managed) >= (int)len && len > 4)
        strcpy(buf + len - 4, "...");
}

/*
 * The engine reads what plan() returns raw: no metamethod runs while a plan
 * is converted (a __len that answers 2^62, or an __index that is a C
 * function, would otherwise drive the loops below from C, where no hook
 * stops them).  A read-only proxy of the snapshot is read through to its
 * data; any other table as it is, its metatable ignored (cosched-policy(7)).
 */
int pol_plain_at(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE && lua_getmetatable(L, idx)) {
        lua_pushliteral(L, "__newindex");
        lua_rawget(L, -2);
        if (lua_tocfunction(L, -1) == pol_ro_newindex) {
            lua_pushliteral(L, "__index");
            lua_rawget(L, -3);
            lua_replace(L, idx);
        }
        lua_pop(L, 2);
    }
    return idx;
}

int pol_rawfield(lua_State *L, int t, const char *k)
{
    lua_pushstring(L, k);
    return lua_rawget(L, t);
}

/* Read a list of integers at idx into set; kind is "cpu" or "mem". */
static void read_set(lua_State *L, struct cs_policy *p, int idx, hwloc_bitmap_t set,
                     int step, int id, const char *field)
{
    struct cs_engine *e = p->e;
    lua_Integer n, i;
    char buf[256];
    int is_cpus = !strcmp(field, "cpus");

    if (!lua_istable(L, idx))
        pol_verror(L, "step %d: job %d: %s must be a list of numbers (it is %s)", step, id, field,
               luaL_typename(L, idx));
    idx = pol_plain_at(L, idx);
    n = (lua_Integer)lua_rawlen(L, idx);
    for (i = 1; i <= n; i++) {
        int ok;
        long long v;
        lua_rawgeti(L, idx, i);
        v = pol_int_at(L, -1, &ok);
        if (!ok)
            pol_verror(L, "step %d: job %d: %s[%d] = %s is not an integer", step, id, field, (int)i,
                   pol_describe(L, -1));
        if (is_cpus) {
            if (v < 0 || v > INT_MAX || !hwloc_bitmap_isset(e->managed, (unsigned)v)) {
                managed_str(e, buf, sizeof buf);
                pol_verror(L, "step %d: job %d: cpu %d is not managed (managed: %s)", step, id,
                       (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v), buf);
            }
        } else {
            if (v < 0 || v > INT_MAX || !hwloc_bitmap_isset(p->nodes, (unsigned)v)) {
                if (hwloc_bitmap_list_snprintf(buf, sizeof buf, p->nodes) < 0)
                    buf[0] = 0;
                pol_verror(L, "step %d: job %d: mems: %d is not a NUMA node (nodes: %s)", step, id,
                       (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v),
                       buf[0] ? buf : "none");
            }
        }
        hwloc_bitmap_set(set, (unsigned)v);
        lua_pop(L, 1);
    }
}

/*
 * Cpu lists already read in this plan, by table identity: a policy often hands
 * the same table to many jobs (linux gives snap.cpus to every job; cached
 * groups and halves are reused), and reading 256 cpus of 1,000 jobs one by one
 * was most of a plan's validation.  Only tables whose contents cannot change
 * while the plan is read are reused: plain tables and the snapshot's read-only
 * proxies (reads run no Lua code); a table with any other metatable is read
 * every time.  A reused list was checked when first read (every cpu managed).
 */
#define LIST_CACHE 16
struct list_cache { const void *t; hwloc_const_bitmap_t set; };

static int list_cacheable(lua_State *L, int idx)
{
    int ok;
    if (!lua_getmetatable(L, idx))
        return 1;
    lua_pushliteral(L, "__newindex");
    lua_rawget(L, -2);
    ok = lua_tocfunction(L, -1) == pol_ro_newindex;
    lua_pop(L, 2);
    return ok;
}

/* Read the cpu list at idx into set, through the cache c. */
static void read_cpus(lua_State *L, struct cs_policy *p, int idx, hwloc_bitmap_t set,
                      int step, int id, struct list_cache *c)
{
    const void *t = lua_type(L, idx) == LUA_TTABLE ? lua_topointer(L, idx) : NULL;
    struct list_cache *slot = t ? &c[((uintptr_t)t >> 4) % LIST_CACHE] : NULL;

    if (slot && slot->t == t) {
        hwloc_bitmap_copy(set, slot->set);
        return;
    }
    read_set(L, p, idx, set, step, id, "cpus");
    if (slot && list_cacheable(L, idx)) {
        slot->t = t;
        slot->set = set;            /* owned by the plan until cs_plan_free() */
    }
}

static void convert_plan(lua_State *L, struct cs_policy *p, int res, struct cs_job **live,
                         int nlive)
{
    struct list_cache lcache[LIST_CACHE] = { { 0 } };
    static const char *const step_fields[] = { "duration", "jobs", "shared", NULL };
    static const char *const job_fields[] = { "id", "cpus", "mems", NULL };
    struct cs_engine *e = p->e;
    struct cs_plan *plan = p->out;
    int maxid = 0, i, s, nsteps;
    int *seen;
    char *kept;
    lua_Integer n;

    for (i = 0; i < nlive; i++)
        if (live[i]->id > maxid)
            maxid = live[i]->id;
    seen = lua_newuserdata(L, sizeof(int) * (size_t)(maxid + 1));
    for (i = 0; i <= maxid; i++)
        seen[i] = -1;                   /* -1: not live; 0: live; s: in step s */
    for (i = 0; i < nlive; i++)
        if (live[i]->id >= 0)
            seen[live[i]->id] = 0;
    /* the jobs the engine never freezes (cosched.never_frozen): two of them
     * may be given the same cpus, as no plan can keep them apart in time */
    kept = lua_newuserdata(L, (size_t)(maxid + 1));
    memset(kept, 0, (size_t)(maxid + 1));
    for (i = 0; i < nlive; i++)
        if (live[i]->id >= 0 && live[i]->nofreeze)
            kept[live[i]->id] = 1;

    hwloc_bitmap_zero(p->nodes);
    for (i = 0; e->topo && i < e->topo->nnumas; i++)
        if (e->topo->numas[i].os_index >= 0)
            hwloc_bitmap_set(p->nodes, (unsigned)e->topo->numas[i].os_index);

    if (!lua_istable(L, res))
        pol_verror(L, "plan() returned %s, expected a list of steps", luaL_typename(L, res));
    res = pol_plain_at(L, res);
    n = (lua_Integer)lua_rawlen(L, res);
    if (n < 1)
        pol_verror(L, "plan() returned no steps (at least one is needed)");
    if (n > PLAN_MAX_STEPS)
        pol_verror(L, "plan() returned %d steps, at most %d are allowed", (int)n, PLAN_MAX_STEPS);
    nsteps = (int)n;
    plan->steps = calloc((size_t)nsteps, sizeof *plan->steps);
    if (!plan->steps)
        luaL_error(L, "out of memory");
    plan->nsteps = nsteps;

    for (s = 1; s <= nsteps; s++) {
        struct cs_plan_step *st = &plan->steps[s - 1];
        int stp, jl, shared, k;
        lua_Integer nj;

        lua_rawgeti(L, res, s);
        stp = pol_plain_at(L, -1);
        if (!lua_istable(L, stp))
            pol_verror(L, "step %d is %s, expected a table { duration = ..., jobs = {...} }", s,
                   luaL_typename(L, stp));
        pol_check_fields(L, stp, step_fields, lua_pushfstring(L, "step %d: ", s),
                     "duration, jobs, shared");
        lua_pop(L, 1);

        pol_rawfield(L, stp, "duration");
        if (lua_isnil(L, -1)) {
            st->duration = e->quantum;
        } else if (lua_type(L, -1) != LUA_TNUMBER) {
            pol_verror(L, "step %d: duration must be a number of seconds (it is %s)", s,
                   luaL_typename(L, -1));
        } else {
            st->duration = lua_tonumber(L, -1);
            if (!(st->duration >= STEP_MIN && st->duration <= STEP_MAX))
                pol_verror(L, "step %d: duration %f s is out of range [%f, %f]", s,
                       st->duration, STEP_MIN, STEP_MAX);
        }
        lua_pop(L, 1);

        pol_rawfield(L, stp, "shared");
        shared = lua_toboolean(L, -1);
        lua_pop(L, 1);

        pol_rawfield(L, stp, "jobs");
        jl = pol_plain_at(L, -1);
        if (!lua_istable(L, jl))
            pol_verror(L, "step %d: jobs must be a list of { id = ..., cpus = {...} } (it is %s)", s,
                   luaL_typename(L, jl));
        nj = (lua_Integer)lua_rawlen(L, jl);
        if (nj == 0 && nlive > 0)
            pol_verror(L, "step %d: no jobs, but %d job%s live (a step must run at least one)", s,
                   nlive, nlive == 1 ? " is" : "s are");
        /* more entries than live jobs: the check of ids below fails first */
        st->njobs = nj < nlive ? (int)nj : nlive;
        if (st->njobs > 0) {
            st->jobs = calloc((size_t)st->njobs, sizeof *st->jobs);
            if (!st->jobs)
                luaL_error(L, "out of memory");
        }
        hwloc_bitmap_zero(p->used);
        hwloc_bitmap_zero(p->kept);

        for (k = 1; k <= (int)nj; k++) {
            struct cs_plan_job *pj = &st->jobs[k - 1];
            int ent, ok, id;
            long long v;

            lua_rawgeti(L, jl, k);
            ent = pol_plain_at(L, -1);
            if (!lua_istable(L, ent))
                pol_verror(L, "step %d: jobs[%d] is %s, expected { id = ..., cpus = {...} }", s, k,
                       luaL_typename(L, ent));
            pol_rawfield(L, ent, "id");
            v = pol_int_at(L, -1, &ok);
            if (lua_isnil(L, -1))
                pol_verror(L, "step %d: jobs[%d] has no id", s, k);
            if (!ok)
                pol_verror(L, "step %d: jobs[%d]: id %s is not an integer", s, k, pol_describe(L, -1));
            if (v < 0 || v > maxid || seen[v] < 0) {
                char ids[256];
                int len = 0;
                ids[0] = 0;
                for (i = 0; i < nlive && len < (int)sizeof ids - 16; i++)
                    len += snprintf(ids + len, sizeof ids - (size_t)len, "%s%d", i ? ", " : "",
                                    live[i]->id);
                pol_verror(L, "step %d: job %d is not a live job (live: %s)", s,
                       (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v),
                       nlive ? ids : "none");
            }
            id = (int)v;
            lua_pop(L, 1);
            if (seen[id] == s)
                pol_verror(L, "step %d: job %d appears twice", s, id);
            seen[id] = s;
            pj->job = id;
            pol_check_fields(L, ent, job_fields, lua_pushfstring(L, "step %d: job %d: ", s, id),
                         "id, cpus, mems");
            lua_pop(L, 1);

            pj->cpus = hwloc_bitmap_alloc();
            pj->mems = hwloc_bitmap_alloc();
            if (!pj->cpus || !pj->mems)
                luaL_error(L, "out of memory");
            pol_rawfield(L, ent, "cpus");
            if (lua_isnil(L, -1))
                pol_verror(L, "step %d: job %d: cpus is missing", s, id);
            read_cpus(L, p, lua_gettop(L), pj->cpus, s, id, lcache);
            if (hwloc_bitmap_iszero(pj->cpus))
                pol_verror(L, "step %d: job %d: cpus is empty", s, id);
            lua_pop(L, 1);
            /* p->used: the cpus of the step's other jobs so far; p->kept:
             * those of its never-frozen ones, which another of them may share */
            if (kept[id])
                hwloc_bitmap_copy(p->tmp, p->used);
            else
                hwloc_bitmap_or(p->tmp, p->used, p->kept);
            hwloc_bitmap_and(p->tmp, p->tmp, pj->cpus);
            if ((!shared || (!p->shares_cpus && !p->overlap_warned)) && !hwloc_bitmap_iszero(p->tmp)) {
                int cpu, other = -1, m;
                cpu = hwloc_bitmap_first(p->tmp);
                for (m = 0; m < k - 1; m++)
                    if (hwloc_bitmap_isset(st->jobs[m].cpus, (unsigned)cpu) &&
                        !(kept[id] && kept[st->jobs[m].job]))
                        other = st->jobs[m].job;
                if (!shared)
                    pol_verror(L, "step %d: job %d: cpu %d is also given to job %d "
                           "(set shared = true in the step to let jobs share cpus)",
                           s, id, cpu, other);
                /* allowed, but the engine gave OpenMP jobs the shim and
                 * their runtime's spinning on the word of shares_cpus */
                p->overlap_warned = 1;
                cs_warn("policy %s: step %d runs jobs %d and %d on cpu %d at once, but the policy "
                        "does not declare shares_cpus = true: OpenMP jobs given the shim keep "
                        "spinning there (cosched-policy(7), shares_cpus)", p->name, s, other, id, cpu);
            }
            if (kept[id])
                hwloc_bitmap_or(p->kept, p->kept, pj->cpus);
            else
                hwloc_bitmap_or(p->used, p->used, pj->cpus);

            pol_rawfield(L, ent, "mems");
            if (!lua_isnil(L, -1))
                read_set(L, p, lua_gettop(L), pj->mems, s, id, "mems");
            lua_settop(L, ent - 1);
        }
        lua_settop(L, stp - 1);
    }
}

static int plan_protected(lua_State *L)
{
    struct cs_policy *p = getp(L);
    struct cs_job **live;
    int nlive, res, kept = 0;

    luaL_checkstack(L, 40, "snapshot");
    live = pol_live_jobs(L, p->e, &nlive);
    for (int i = 0; i < nlive && !p->shares_cpus && !kept; i++)
        kept = live[i]->nofreeze;
    if (kept) {                 /* plan() through cosched.never_frozen */
        lua_pushcfunction(L, pol_require);
        lua_pushliteral(L, "cosched.never_frozen");
        lua_call(L, 1, 1);
        lua_getfield(L, -1, "plan");
        lua_remove(L, -2);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->plan_ref);
    pol_push_snapshot(L, p, p->e, live, nlive);
    lua_call(L, kept ? 2 : 1, 3);
    res = lua_gettop(L) - 2;
    convert_plan(L, p, res, live, nlive);
    pol_convert_results(L, p, res + 1, live, nlive);
    pol_convert_info(L, p, res + 2, live, nlive);
    return 0;
}

int cs_policy_plan(struct cs_policy *p, struct cs_engine *e, struct cs_plan *plan)
{
    double limit = p->seconds, t;
    char *err = NULL;

    memset(plan, 0, sizeof *plan);
    if (limit <= 0) {
        limit = e->quantum > 0.05 ? e->quantum : 0.05;
        if (limit > 1.0)
            limit = 1.0;
    }
    p->e = e;
    p->out = plan;
    t = cs_now();
    /* Garbage collection paced by the plan: the collector is stopped while
     * plan() runs and, once the plan is converted, does the work that the
     * call's allocations (the snapshot, the policy's tables) call for, in
     * one incremental step.  Left to itself the collector did a whole cycle
     * every two or three plans, inside one of them: at 1,000 jobs that plan
     * took 3-5 ms more than the others (BENCHMARKS.md, section 5).  The
     * memory cap still collects at once when it is reached (cs_hook). */
    size_t used0 = p->mem_used;
    lua_gc(p->L, LUA_GCSTOP);
    int rc = pol_call_bounded(p, plan_protected, NULL, 0, limit, "plan()", &err);
    size_t grown = p->mem_used > used0 ? p->mem_used - used0 : 0;
    lua_gc(p->L, LUA_GCSTEP, (int)(grown >> 10 < INT_MAX ? (grown >> 10) + 1 : INT_MAX));
    lua_gc(p->L, LUA_GCRESTART);
    if (rc < 0) {
        p->cpu_cur = p->cpu_prev = p->st_cur = p->st_prev = 0;
        cs_err("%s", err);
        free(err);
        cs_plan_free(plan);
        p->e = NULL;
        p->out = NULL;
        return -1;
    }
    cs_debug("policy %s: plan() took %.3f ms, %s%llu instructions, %d step%s, "
             "%zu KiB in use", p->name, (cs_now() - t) * 1e3, p->ticks ? "about " : "under ",
             (unsigned long long)(p->ticks ? p->ticks : 1) * HOOK_EVERY, plan->nsteps,
             plan->nsteps == 1 ? "" : "s", p->mem_used >> 10);
    p->e = NULL;
    p->out = NULL;
    return 0;
}

void cs_plan_free(struct cs_plan *plan)
{
    int i, j;

    if (!plan)
        return;
    for (i = 0; i < plan->nsteps && plan->steps; i++) {
        for (j = 0; j < plan->steps[i].njobs && plan->steps[i].jobs; j++) {
            hwloc_bitmap_free(plan->steps[i].jobs[j].cpus);
            hwloc_bitmap_free(plan->steps[i].jobs[j].mems);
        }
        free(plan->steps[i].jobs);
    }
    free(plan->steps);
    free(plan->results);
    for (i = 0; i < plan->ninfo && plan->info; i++)
        json_decref(plan->info[i].json);
    free(plan->info);
    memset(plan, 0, sizeof *plan);
}

