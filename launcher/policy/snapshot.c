/*
 * snapshot.c - the snapshot plan() reads each epoch: the node's topology,
 * the managed cpus, the jobs with their class, measurements, memory and
 * stored profile, every table read-only (cosched-policy(7) SNAPSHOT).
 *
 * Part of the policy host (internal.h); uses Lua, core/ and counters/ (the
 * profile's metric names and values).
 */
#include "policy/internal.h"

#include "counters/counters.h"

/*
 * The snapshot is rebuilt at every epoch, but much of it does not change
 * from one epoch to the next and every table of it is immutable (a
 * read-only proxy), so the host reuses tables instead of building them again:
 *
 *   cpu lists    one read-only list per distinct set of PUs, shared by every
 *                table of the snapshot that holds that set (snap.cpus, a job
 *                not placed yet, ...), and kept for the next epoch; the cache
 *                is a Lua table keyed by the bitmap's bytes, in two
 *                generations (cpu_cur, cpu_prev) so that a list unused for a
 *                whole epoch is dropped;
 *   job.stored   built once per job (keyed by id, checked against the
 *                entry's bytes), also in two generations; only its age is
 *                refreshed in place when the clock moved on;
 *   topology     built once and kept (topo_ref) while the topology and the
 *                managed set stay the same (topo_src, topo_fp).
 *
 * What a policy sees is the same; only identities differ (two jobs on the
 * same PUs get the same cpus table, as do consecutive snapshots).  Cached
 * tables live in the policy's own state and count against its memory limit.
 */

static const char CPU_CACHE_KEY[] = "cosched.cpucache";
static const char STORED_CACHE_KEY[] = "cosched.storedcache";

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, long long v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

/* Push the previous generation of a cache (registry key) and a new current
 * one, which replaces it in the registry; *prev, *cur get the stack slots. */
static void cache_begin(lua_State *L, const char *key, int *prev, int *cur, int size)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    *prev = lua_gettop(L);
    lua_createtable(L, 0, size);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
    *cur = lua_gettop(L);
}

/* Push the bytes of s (a finite, non-empty bitmap) as a string; "" for an
 * empty or infinite one, which gives an empty list. */
static void push_bitmap_key(lua_State *L, struct cs_policy *p, hwloc_const_bitmap_t s)
{
    int n, i;

    if (!s || hwloc_bitmap_weight(s) <= 0 || (n = hwloc_bitmap_nr_ulongs(s)) <= 0) {
        lua_pushliteral(L, "");
        return;
    }
    if (n > p->keycap) {
        unsigned long *k = realloc(p->keybuf, sizeof *k * (size_t)n);
        if (!k)
            luaL_error(L, "out of memory");
        p->keybuf = k;
        p->keycap = n;
    }
    for (i = 0; i < n; i++)
        p->keybuf[i] = hwloc_bitmap_to_ith_ulong(s, (unsigned)i);
    lua_pushlstring(L, (const char *)p->keybuf, sizeof *p->keybuf * (size_t)n);
}

/* Push a new read-only list of the set bits of s. */
static void build_cpulist(lua_State *L, hwloc_const_bitmap_t s)
{
    int w = s ? hwloc_bitmap_weight(s) : 0, i = 1;
    unsigned id;

    lua_createtable(L, w > 0 ? w : 0, 0);
    if (w > 0) {
        hwloc_bitmap_foreach_begin(id, s) {
            lua_pushinteger(L, (lua_Integer)id);
            lua_rawseti(L, -2, i++);
        } hwloc_bitmap_foreach_end();
    }
    pol_ro_wrap(L);
}

/* Push a read-only list of the set bits of a (& b if b): the cached one
 * when pol_push_snapshot() is under way. */
static void push_cpulist(lua_State *L, struct cs_policy *p, hwloc_const_bitmap_t a,
                         hwloc_const_bitmap_t b)
{
    hwloc_const_bitmap_t s = a;

    if (a && b) {
        hwloc_bitmap_and(p->tmp, a, b);
        s = p->tmp;
    }
    if (!p->cpu_cur) {
        build_cpulist(L, s);
        return;
    }
    push_bitmap_key(L, p, s);                      /* key */
    lua_pushvalue(L, -1);
    if (lua_rawget(L, p->cpu_cur) != LUA_TNIL) {   /* key list */
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, p->cpu_prev) == LUA_TNIL) {
        lua_pop(L, 1);
        build_cpulist(L, s);
    }
    lua_pushvalue(L, -2);                          /* key list key */
    lua_pushvalue(L, -2);
    lua_rawset(L, p->cpu_cur);
    lua_remove(L, -2);
}

static int cmp_job_id(const void *a, const void *b)
{
    const struct cs_job *x = *(struct cs_job *const *)a, *y = *(struct cs_job *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Live jobs sorted by id, in a userdata anchored at the stack top. */
struct cs_job **pol_live_jobs(lua_State *L, struct cs_engine *e, int *n)
{
    struct cs_job **v = lua_newuserdata(L, sizeof *v * (size_t)(e->njobs + 1));
    int i, k = 0;
    for (i = 0; i < e->njobs; i++)
        if (e->jobs[i] && e->jobs[i]->state == CS_JOB_LIVE)
            v[k++] = e->jobs[i];
    qsort(v, (size_t)k, sizeof *v, cmp_job_id);
    *n = k;
    return v;
}

/* FNV-1a over what push_topology() reads, to tell when to build it again. */
static uint64_t fp_add(uint64_t h, const void *d, size_t n)
{
    const unsigned char *c = d;
    while (n--)
        h = (h ^ *c++) * 0x100000001b3ULL;
    return h;
}

static uint64_t fp_bitmap(uint64_t h, hwloc_const_bitmap_t s)
{
    int n = s ? hwloc_bitmap_nr_ulongs(s) : 0;
    h = fp_add(h, &n, sizeof n);
    for (int i = 0; i < n; i++) {
        unsigned long w = hwloc_bitmap_to_ith_ulong(s, (unsigned)i);
        h = fp_add(h, &w, sizeof w);
    }
    return h;
}

static uint64_t fp_domain(uint64_t h, const struct cs_domain *d)
{
    h = fp_add(h, &d->os_index, sizeof d->os_index);
    h = fp_add(h, &d->size, sizeof d->size);
    h = fp_add(h, &d->depth, sizeof d->depth);
    return fp_bitmap(h, d->cpus);
}

static uint64_t topo_fingerprint(const struct cs_topo *t, hwloc_const_bitmap_t managed)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int i;

    h = fp_bitmap(h, managed);
    h = fp_add(h, &t->nllcs, sizeof t->nllcs);
    for (i = 0; i < t->nllcs; i++)
        h = fp_domain(h, &t->llcs[i]);
    h = fp_add(h, &t->nnumas, sizeof t->nnumas);
    for (i = 0; i < t->nnumas; i++)
        h = fp_domain(h, &t->numas[i]);
    h = fp_add(h, &t->ncores, sizeof t->ncores);
    for (i = 0; i < t->ncores; i++) {
        const struct cs_core *c = &t->cores[i];
        h = fp_add(h, &c->llc, sizeof c->llc);
        h = fp_add(h, &c->numa, sizeof c->numa);
        h = fp_add(h, &c->package, sizeof c->package);
        h = fp_bitmap(h, c->pus);
    }
    return h;
}

static void build_topology(lua_State *L, struct cs_policy *p, struct cs_engine *e)
{
    const struct cs_topo *t = e->topo;
    int *llcmap, i, k;

    llcmap = lua_newuserdata(L, sizeof(int) * (size_t)(t->nllcs + 1));

    lua_createtable(L, 0, 3);
    /* LLC domains with managed PUs, numbered 1.. */
    lua_newtable(L);
    for (i = 0, k = 0; i < t->nllcs; i++) {
        llcmap[i] = 0;
        if (!hwloc_bitmap_intersects(t->llcs[i].cpus, e->managed))
            continue;
        llcmap[i] = ++k;
        lua_createtable(L, 0, 4);
        set_int(L, "index", k);
        push_cpulist(L, p, t->llcs[i].cpus, e->managed);
        lua_setfield(L, -2, "cpus");
        set_int(L, "size", (long long)t->llcs[i].size);
        set_int(L, "level", t->llcs[i].depth);
        pol_ro_wrap(L);
        lua_rawseti(L, -2, k);
    }
    pol_ro_wrap(L);
    lua_setfield(L, -2, "llcs");
    /* every NUMA node (memory-only ones are valid mems) */
    lua_newtable(L);
    for (i = 0; i < t->nnumas; i++) {
        lua_createtable(L, 0, 4);
        set_int(L, "index", i + 1);
        set_int(L, "os_index", t->numas[i].os_index);
        push_cpulist(L, p, t->numas[i].cpus, e->managed);
        lua_setfield(L, -2, "cpus");
        set_int(L, "size", (long long)t->numas[i].size);
        pol_ro_wrap(L);
        lua_rawseti(L, -2, i + 1);
    }
    pol_ro_wrap(L);
    lua_setfield(L, -2, "numa");
    /* cores with managed PUs */
    lua_newtable(L);
    for (i = 0, k = 0; i < t->ncores; i++) {
        const struct cs_core *c = &t->cores[i];
        if (!hwloc_bitmap_intersects(c->pus, e->managed))
            continue;
        lua_createtable(L, 0, 5);
        set_int(L, "index", ++k);
        push_cpulist(L, p, c->pus, e->managed);
        lua_setfield(L, -2, "pus");
        if (c->llc >= 0 && c->llc < t->nllcs && llcmap[c->llc])
            set_int(L, "llc", llcmap[c->llc]);
        if (c->numa >= 0 && c->numa < t->nnumas)
            set_int(L, "numa", c->numa + 1);
        if (c->package >= 0)
            set_int(L, "package", c->package + 1);
        pol_ro_wrap(L);
        lua_rawseti(L, -2, k);
    }
    pol_ro_wrap(L);
    lua_setfield(L, -2, "cores");
    pol_ro_wrap(L);
    lua_remove(L, -2);                     /* llcmap */
}

/* snap.topology: the cached tables while topology and managed set stay. */
static void push_topology(lua_State *L, struct cs_policy *p, struct cs_engine *e)
{
    uint64_t fp;

    if (!e->topo) {
        lua_newtable(L);
        pol_ro_wrap(L);
        return;
    }
    fp = topo_fingerprint(e->topo, e->managed);
    if (p->topo_ref != LUA_NOREF && p->topo_src == e->topo && p->topo_fp == fp) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, p->topo_ref);
        return;
    }
    build_topology(L, p, e);
    luaL_unref(L, LUA_REGISTRYINDEX, p->topo_ref);
    p->topo_ref = LUA_NOREF;
    lua_pushvalue(L, -1);
    p->topo_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    p->topo_src = e->topo;
    p->topo_fp = fp;
}

/* last.metrics = { ipc = ..., bw_l2 = ... } (finite values of the metrics the
 * profile can give; absent when not counted), last.counted, last.socket_owned */
/* job.memory = { pages = N, nodes = { [os_index] = fraction }, home = os_index }
 * (absent when unknown or empty) */
static void push_memory(lua_State *L, const struct cs_job *j)
{
    double total = 0, best = -1;
    int home = -1;

    for (int k = 0; k < j->mem_nnodes; k++) {
        total += j->mem_bytes[k];
        if (j->mem_bytes[k] > best) {
            best = j->mem_bytes[k];
            home = k;
        }
    }
    if (total <= 0)
        return;
    lua_createtable(L, 0, 3);
    set_num(L, "pages", total / 4096.0);
    set_int(L, "home", home);
    lua_createtable(L, 0, j->mem_nnodes);
    for (int k = 0; k < j->mem_nnodes; k++)
        if (j->mem_bytes[k] > 0) {
            lua_pushnumber(L, j->mem_bytes[k] / total);
            lua_rawseti(L, -2, k);
        }
    pol_ro_wrap(L);
    lua_setfield(L, -2, "nodes");
    pol_ro_wrap(L);
    lua_setfield(L, -2, "memory");
}

static void push_metrics(lua_State *L, const struct cs_engine *e, const struct cs_job *j)
{
    const struct cs_profile *pr = e ? e->profile : NULL;

    lua_pushboolean(L, (j->metric_flags & CS_COUNTS_VALID) != 0);
    lua_setfield(L, -2, "counted");
    lua_pushboolean(L, (j->metric_flags & CS_COUNTS_SOCKET_OWNED) != 0);
    lua_setfield(L, -2, "socket_owned");
    if (pr == NULL || j->metric == NULL || !(j->metric_flags & CS_COUNTS_VALID))
        return;
    lua_createtable(L, 0, pr->nmetrics);
    for (int m = 0; m < pr->nmetrics; m++)
        if (pr->metrics[m].available && isfinite(j->metric[m]))
            set_num(L, pr->metrics[m].name, j->metric[m]);
    pol_ro_wrap(L);
    lua_setfield(L, -2, "metrics");
}

static double stored_age(const struct cs_stored *r, time_t now)
{
    double age = (double)now - r->created;
    return age > 0 ? age : 0;
}

/* Push a new job.stored = { class =, ipc_standalone =, ..., bw = { l1 =,
 * l2 =, llc = }, gang_only =, age = seconds }: what the profile store held
 * for the job; its data table (where age is) goes below it. */
static void build_stored(lua_State *L, const struct cs_stored *r, time_t now)
{
    char c[2] = { r->cls, 0 };

    lua_createtable(L, 0, 10);
    lua_pushstring(L, c);
    lua_setfield(L, -2, "class");
    if (isfinite(r->ipc_standalone))
        set_num(L, "ipc_standalone", r->ipc_standalone);
    if (isfinite(r->ipc_folded))
        set_num(L, "ipc_folded", r->ipc_folded);
    if (isfinite(r->fp))
        set_num(L, "fp", r->fp);
    if (isfinite(r->mpki))
        set_num(L, "mpki", r->mpki);
    lua_createtable(L, 0, 3);
    if (isfinite(r->bw_l1))
        set_num(L, "l1", r->bw_l1);
    if (isfinite(r->bw_l2))
        set_num(L, "l2", r->bw_l2);
    if (isfinite(r->bw_llc))
        set_num(L, "llc", r->bw_llc);
    pol_ro_wrap(L);
    lua_setfield(L, -2, "bw");
    if (r->cores_standalone > 0)
        set_int(L, "cores_standalone", r->cores_standalone);
    if (r->cores_folded > 0)
        set_int(L, "cores_folded", r->cores_folded);
    lua_pushboolean(L, r->gang_only);
    lua_setfield(L, -2, "gang_only");
    set_num(L, "age", stored_age(r, now));
    lua_pushvalue(L, -1);
    pol_ro_wrap(L);                            /* data proxy */
}

/* The cache entry of a job.stored: a copy of the entry it was built from and
 * the second its age is of; user values: 1 the proxy, 2 its data table. */
struct stored_cache { struct cs_stored r; time_t t; };

/* job.stored (set in the table on top of the stack). */
static void push_stored(lua_State *L, struct cs_policy *p, const struct cs_job *j, time_t now)
{
    const struct cs_stored *r = j->stored;
    struct stored_cache *sc;
    int found = 0;

    if (!p->st_cur) {
        build_stored(L, r, now);
        lua_remove(L, -2);
        lua_setfield(L, -2, "stored");
        return;
    }
    if (lua_rawgeti(L, p->st_prev, j->id) == LUA_TUSERDATA) {
        sc = lua_touserdata(L, -1);
        found = !memcmp(&sc->r, r, sizeof *r);
    }
    if (!found) {
        lua_pop(L, 1);
        sc = lua_newuserdatauv(L, sizeof *sc, 2);
        memcpy(&sc->r, r, sizeof *r);
        sc->t = now;
        build_stored(L, r, now);               /* ud data proxy */
        lua_setiuservalue(L, -3, 1);
        lua_setiuservalue(L, -2, 2);
    } else if (sc->t != now) {
        lua_getiuservalue(L, -1, 2);           /* ud data */
        lua_pushliteral(L, "age");
        lua_pushnumber(L, stored_age(r, now));
        lua_rawset(L, -3);
        lua_pop(L, 1);
        sc->t = now;
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, p->st_cur, j->id);
    lua_getiuservalue(L, -1, 1);               /* ud proxy */
    lua_remove(L, -2);
    lua_setfield(L, -2, "stored");
}

static void push_job(lua_State *L, struct cs_policy *p, const struct cs_job *j, time_t now)
{
    lua_createtable(L, 0, 16);
    set_int(L, "id", j->id);
    lua_pushstring(L, j->name ? j->name : "");
    lua_setfield(L, -2, "name");
    set_int(L, "threads", j->threads);
    if (j->cls_hint == 'S' || j->cls_hint == 'C' || j->cls_hint == 'N') {
        char c[2] = { j->cls_hint, 0 };
        lua_pushstring(L, c);
        lua_setfield(L, -2, "class");
    }
    set_int(L, "priority", j->priority);
    if (j->has_owner)
        set_int(L, "owner", j->owner);
    set_int(L, "runs", j->runs_done);
    set_num(L, "waited", j->waited);
    set_int(L, "quanta_run", (long long)j->quanta_run);
    set_int(L, "quanta_frozen", (long long)j->quanta_frozen);
    set_num(L, "cpu_time", (double)j->cpu_ns / 1e9);
    if (j->omp && j->omp_team > 0)   /* its OpenMP page (engine/omppage.c) */
        set_int(L, "team", j->omp_team);
    lua_pushboolean(L, j->frozen);
    lua_setfield(L, -2, "frozen");
    if (j->nofreeze) {        /* the engine will not freeze it (cosched.never_frozen) */
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "never_frozen");
    }
    push_cpulist(L, p, j->cpus, NULL);
    lua_setfield(L, -2, "cpus");
    if (j->allowed && !hwloc_bitmap_isequal(j->allowed, p->e->managed)) {
        push_cpulist(L, p, j->allowed, p->e->managed);   /* where it may ever run: a Slurm step's own cpus */
        lua_setfield(L, -2, "home");
    }
    if (j->stored)
        push_stored(L, p, j, now);
    push_memory(L, j);
    if (j->last_step_wall > 0) {
        lua_createtable(L, 0, 7);
        set_num(L, "wall", j->last_step_wall);
        set_num(L, "cpu", j->last_step_cpu);
        set_int(L, "ncpus", j->last_step_ncpus);
        if (j->omp && j->omp_team > 0)   /* only once its shim started a region */
            set_int(L, "regions", j->omp_regions);
        lua_pushboolean(L, j->last_step_ran);
        lua_setfield(L, -2, "ran");
        if (j->last_step_ran && j->step_cpus && !hwloc_bitmap_iszero(j->step_cpus)) {
            push_cpulist(L, p, j->step_cpus, NULL);
            lua_setfield(L, -2, "cpus");
        }
        push_metrics(L, p->e, j);
        pol_ro_wrap(L);
        lua_setfield(L, -2, "last");
    }
    pol_ro_wrap(L);
}

void pol_push_snapshot(lua_State *L, struct cs_policy *p, struct cs_engine *e,
                          struct cs_job **live, int nlive)
{
    time_t now = time(NULL);
    int i, top = lua_gettop(L);

    /* the caches' slots stay valid until the snapshot is on the stack; an
     * error on the way leaves them set, which the next call resets */
    cache_begin(L, CPU_CACHE_KEY, &p->cpu_prev, &p->cpu_cur, 16);
    cache_begin(L, STORED_CACHE_KEY, &p->st_prev, &p->st_cur, nlive);

    lua_createtable(L, 0, 9);
    set_int(L, "api", CS_POLICY_API);
    set_int(L, "epoch", (long long)e->epoch);
    set_num(L, "now", cs_now() - e->t0);
    set_num(L, "quantum", e->quantum);
    /* what measures the jobs: "none" when nothing can be counted */
    lua_pushstring(L, e->profile && e->cnt ? e->cnt->name : "none");
    lua_setfield(L, -2, "counters");
    /* someone reads plan()'s third value (cosched status, node engine; the trace) */
    lua_pushboolean(L, e->explain || e->trace != NULL);
    lua_setfield(L, -2, "explain");
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->params_ref);
    lua_setfield(L, -2, "params");
    push_cpulist(L, p, e->managed, NULL);
    lua_setfield(L, -2, "cpus");
    push_topology(L, p, e);
    lua_setfield(L, -2, "topology");
    lua_createtable(L, nlive, 0);
    for (i = 0; i < nlive; i++) {
        push_job(L, p, live[i], now);
        lua_rawseti(L, -2, i + 1);
    }
    pol_ro_wrap(L);
    lua_setfield(L, -2, "jobs");
    pol_ro_wrap(L);
    p->cpu_cur = p->cpu_prev = p->st_cur = p->st_prev = 0;
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
}

