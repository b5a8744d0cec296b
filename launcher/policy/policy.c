/*
 * policy.c - the Lua policy host.
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
 * Limits: the hook raises an error when the budget or the time limit is
 * exceeded, then fires on every instruction and keeps raising, and the
 * sandbox's pcall/xpcall re-raise, so a policy cannot catch its way out.  The
 * allocator lets a call go 1/8 above the memory cap: past the cap it only sets
 * a flag, the next hook collects garbage and raises an error with a file:line
 * if the live data are still above the cap; past cap + 1/8 allocations fail
 * (Lua's own "not enough memory", without position).
 *
 * The time limit is CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID),
 * so that a busy machine, which delays the host without making the policy
 * slower, does not turn a short limit into an error.  A wall-clock backstop,
 * max(10 x the limit, 2 s), still ends a call that the machine starves.  The
 * thread's CPU time cannot exceed the wall time elapsed, so the hook reads
 * the CPU clock (a system call) only once the call has run for as long as
 * its limit.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "policy/policy.h"
#include "counters/counters.h"
#include "core/json.h"

#ifndef COSCHED_DATADIR
#define COSCHED_DATADIR "/usr/local/share/cosched"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define MEM_DEFAULT     ((size_t)64 << 20)
#define INSNS_DEFAULT   200000000ULL
#define HOOK_EVERY      1000
#define LOAD_SECONDS    1.0      /* loading, init(), and lua_close() */
#define WALL_FLOOR      2.0      /* the wall-clock backstop is at least this */
#define PLAN_MAX_STEPS  1024
#define STEP_MIN        0.001
#define STEP_MAX        3600.0
#define NAME_MAX_LEN    64

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

    /* snapshot caches (see "snapshot" below): the topology tables while the
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
    hwloc_bitmap_t tmp, used, nodes;
    char warnbuf[512];
    size_t warnlen;
};

/* cs_policy_limits(): for every policy loaded afterwards */
static size_t limit_mem = MEM_DEFAULT;
static uint64_t limit_insns = INSNS_DEFAULT;
static double limit_seconds;

static struct cs_policy *getp(lua_State *L)
{
    return *(struct cs_policy **)lua_getextraspace(L);
}

/* ------------------------------------------------------------- helpers */

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static int valid_policy_name(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '_' || s[n] == '-'))
            return 0;
    return n > 0 && n <= NAME_MAX_LEN;
}

static int is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *datadir(void)
{
    return cs_datadir();
}

/* "1.0", "0.05", "2.5": seconds as a person writes them. */
static void fmt_seconds(char *buf, size_t len, double s)
{
    snprintf(buf, len, "%g", s);
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", len - strlen(buf) - 1);
}

static void fmt_bytes(char *buf, size_t len, size_t b)
{
    if (b % ((size_t)1 << 20) == 0)
        snprintf(buf, len, "%zu MiB", b >> 20);
    else if (b % 1024 == 0)
        snprintf(buf, len, "%zu KiB", b >> 10);
    else
        snprintf(buf, len, "%zu bytes", b);
}

/* ----------------------------------------------------------- allocator */

static void *cs_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct cs_policy *p = ud;
    size_t old = ptr ? osize : 0;   /* without ptr, osize is a type tag */
    void *n;

    if (nsize == 0) {
        free(ptr);
        p->mem_used -= old < p->mem_used ? old : p->mem_used;
        return NULL;
    }
    if (nsize > old) {
        size_t grow = nsize - old;
        size_t hard = p->mem_limit + p->mem_limit / 8;
        if (p->mem_used + grow > hard || p->mem_used + grow < p->mem_used)
            return NULL;            /* Lua collects and retries once */
        if (p->mem_used + grow > p->mem_limit)
            p->mem_over = 1;
    }
    n = realloc(ptr, nsize);
    if (!n) {
        if (nsize <= old)
            return ptr;             /* Lua assumes shrinking never fails */
        return NULL;
    }
    p->mem_used = p->mem_used - old + nsize;
    return n;
}

/* ------------------------------------------------------ limits (hook) */

static int stop_pending(void)
{
    sigset_t set;

    return sigpending(&set) == 0 &&
           (sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1 || sigismember(&set, SIGHUP) == 1);
}

/* CPU time of the calling thread, in seconds (wall time if unavailable). */
static double thread_cpu(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return cs_now();
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The wall-clock backstop of a call limited to `seconds` of CPU time. */
static double wall_backstop(double seconds)
{
    return 10 * seconds > WALL_FLOOR ? 10 * seconds : WALL_FLOOR;
}

static void cs_hook(lua_State *L, lua_Debug *ar)
{
    struct cs_policy *p = getp(L);

    if (p->why == OVER_NONE) {
        p->ticks++;
        if (p->mem_over) {
            lua_gc(L, LUA_GCCOLLECT, 0);
            p->mem_over = p->mem_used > p->mem_limit;
            if (p->mem_over)
                p->why = OVER_MEM;
        }
        if (!p->why && p->ticks * HOOK_EVERY > p->insn_limit)
            p->why = OVER_INSNS;
        if (!p->why) {
            double now = cs_now();
            if (now - p->t0 > p->call_limit && thread_cpu() > p->cpu_deadline)
                p->why = OVER_TIME;
            else if (now > p->wall_deadline)
                p->why = OVER_WALL;
        }
        /* a stop signal (blocked: the engine reads them from a signalfd) is
         * acted on within a few ms whatever the policy does */
        if (!p->why && (p->ticks & 63) == 0 && stop_pending())
            p->why = OVER_SIGNAL;
        if (!p->why)
            return;
        if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
            snprintf(p->where, sizeof p->where, "%s:%d", ar->short_src, ar->currentline);
        else if (ar->short_src[0])
            snprintf(p->where, sizeof p->where, "%s", ar->short_src);
        /* from now on every instruction fails */
        lua_sethook(L, cs_hook, LUA_MASKCOUNT, 1);
    }
    lua_pushliteral(L, "policy limit exceeded");
    lua_error(L);
}

static void begin_call(struct cs_policy *p, double seconds)
{
    p->call_limit = seconds;
    p->t0 = cs_now();
    p->wall_deadline = p->t0 + wall_backstop(seconds);
    p->cpu_deadline = thread_cpu() + seconds;
    p->ticks = 0;
    p->why = OVER_NONE;
    p->where[0] = 0;
    p->verr = 0;
    lua_sethook(p->L, cs_hook, LUA_MASKCOUNT, HOOK_EVERY);
}

/* Raise a validation error: our message, no position, no traceback. */
static int verror(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    getp(L)->verr = 1;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    return lua_error(L);
}

/* Message handler of every call: keep limit and validation errors as they
 * are, add a traceback to Lua errors (first line = the message). */
static int cs_msgh(lua_State *L)
{
    struct cs_policy *p = getp(L);
    const char *msg;

    if (p->why || p->verr)
        return 1;
    msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/*
 * Turn the failure of a protected call into one message (malloc'd), the
 * traceback (if any) going to the debug log.  what: "plan()", "loading"...
 */
static char *failure(struct cs_policy *p, const char *what, int status)
{
    lua_State *L = p->L;
    const char *msg = lua_tostring(L, -1);
    char lim[32], *first, *nl, *out;

    if (!msg)
        msg = "(no message)";
    first = strdup(msg);
    if (!first)
        return NULL;
    nl = strchr(first, '\n');
    if (nl) {
        *nl = 0;
        if (!p->quiet)
            cs_debug("policy %s: %s", p->name, nl + 1);
    }
    if (status == LUA_ERRMEM && p->why == OVER_NONE)
        p->why = OVER_MEM_HARD;

    switch (p->why) {
    case OVER_TIME:
        fmt_seconds(lim, sizeof lim, p->call_limit);
        out = xprintf("policy %s (%s): %s exceeded its time limit of %s s of CPU time (at %s)",
                      p->name, p->file, what, lim, p->where[0] ? p->where : "?");
        break;
    case OVER_WALL: {
        char wall[32];
        fmt_seconds(lim, sizeof lim, p->call_limit);
        fmt_seconds(wall, sizeof wall, wall_backstop(p->call_limit));
        out = xprintf("policy %s (%s): %s did not end within %s s of wall-clock time, although it used less than "
                      "its time limit of %s s of CPU time: cosched got too little CPU (an overloaded machine?) "
                      "(at %s)",
                      p->name, p->file, what, wall, lim, p->where[0] ? p->where : "?");
        break;
    }
    case OVER_INSNS:
        out = xprintf("policy %s (%s): %s exceeded its budget of %llu instructions (at %s)",
                      p->name, p->file, what, (unsigned long long)p->insn_limit,
                      p->where[0] ? p->where : "?");
        break;
    case OVER_MEM:
        fmt_bytes(lim, sizeof lim, p->mem_limit);
        out = xprintf("policy %s (%s): %s exceeded its memory limit of %s (at %s)",
                      p->name, p->file, what, lim, p->where[0] ? p->where : "?");
        break;
    case OVER_MEM_HARD:
        fmt_bytes(lim, sizeof lim, p->mem_limit);
        out = xprintf("policy %s (%s): %s exceeded its memory limit of %s",
                      p->name, p->file, what, lim);
        break;
    case OVER_SIGNAL:
        out = xprintf("policy %s (%s): %s stopped: cosched received a signal to stop (at %s)",
                      p->name, p->file, what, p->where[0] ? p->where : "?");
        break;
    default:
        if (p->verr)
            out = xprintf("policy %s (%s): %s", p->name, p->file, first);
        else
            out = xprintf("policy %s (%s): %s failed: %s", p->name, p->file, what, first);
    }
    free(first);
    lua_settop(L, 0);
    return out;
}

/* Run f (a lua_CFunction) protected and bounded; nres results stay on the
 * stack on success.  On failure *err holds the message. */
static int call_bounded(struct cs_policy *p, lua_CFunction f, void *arg, int nres,
                        double seconds, const char *what, char **err)
{
    lua_State *L = p->L;
    int status, base;

    lua_settop(L, 0);
    lua_pushcfunction(L, cs_msgh);
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, arg);
    base = 1;
    begin_call(p, seconds);
    status = lua_pcall(L, 1, nres, base);
    if (status != LUA_OK) {
        *err = failure(p, what, status);
        if (!*err)
            *err = strdup("out of memory");
        /* a lingering huge garbage pile would fail the next call early */
        if (p->why == OVER_MEM || p->why == OVER_MEM_HARD) {
            begin_call(p, LOAD_SECONDS);
            lua_gc(L, LUA_GCCOLLECT, 0);
        }
        p->why = OVER_NONE;
        return -1;
    }
    lua_remove(L, base);
    p->why = OVER_NONE;
    return 0;
}

/* ------------------------------------------------------------ sandbox */

/* Position of the nearest Lua code on the stack (table.sort(snap.cpus) is
 * reported where the policy called table.sort). */
static void push_where(lua_State *L)
{
    lua_Debug ar;
    for (int lvl = 1; lua_getstack(L, lvl, &ar); lvl++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
            return;
        }
    }
    lua_pushliteral(L, "");
}

/* Read-only proxies: an empty table whose metatable forwards reads to the
 * data table, raises on writes, and answers # and pairs(). */
static int ro_newindex(lua_State *L)
{
    push_where(L);
    if (lua_type(L, 2) == LUA_TSTRING)
        lua_pushfstring(L, "%sattempt to modify field '%s' of a read-only table "
                        "(copy what you need to change)", lua_tostring(L, -1), lua_tostring(L, 2));
    else
        lua_pushfstring(L, "%sattempt to modify a read-only table (copy what you need to change)",
                        lua_tostring(L, -1));
    return lua_error(L);
}

static void ro_data(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx))
        luaL_error(L, "not a read-only table");
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2);
    lua_remove(L, -2);
}

static int ro_len(lua_State *L)
{
    ro_data(L, 1);
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
    return 1;
}

static int ro_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    if (lua_next(L, 1))
        return 2;
    lua_pushnil(L);
    return 1;
}

static int ro_pairs(lua_State *L)
{
    lua_pushcfunction(L, ro_next);
    ro_data(L, 1);
    lua_pushnil(L);
    return 3;
}

/* Replace the table on top of the stack by a read-only proxy of it. */
static void ro_wrap(lua_State *L)
{
    lua_newtable(L);                    /* data proxy */
    lua_createtable(L, 0, 5);           /* data proxy mt */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ro_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, ro_len);
    lua_setfield(L, -2, "__len");
    lua_pushcfunction(L, ro_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_remove(L, -2);
}

static int sb_log(lua_State *L)
{
    static const char *const levels[] = { "debug", "info", "warn", NULL };
    struct cs_policy *p = getp(L);
    int lvl = luaL_checkoption(L, 1, NULL, levels);
    const char *msg = luaL_checkstring(L, 2);

    switch (lvl) {
    case 0: cs_debug("policy %s: %s", p->name, msg); break;
    case 1: cs_info("policy %s: %s", p->name, msg); break;
    default: cs_warn("policy %s: %s", p->name, msg); break;
    }
    return 0;
}

/* pcall/xpcall that do not catch limit overruns: a failed call raises the
 * overrun again, else returns false and the error object. */
static int pcall_failed(lua_State *L, int status)
{
    struct cs_policy *p = getp(L);
    if (status == LUA_ERRMEM && p->why == OVER_NONE)
        p->why = OVER_MEM_HARD;
    if (p->why != OVER_NONE)
        lua_error(L);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

static int sb_pcall(lua_State *L)
{
    int status;
    luaL_checkany(L, 1);
    status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    if (status != LUA_OK)
        return pcall_failed(L, status);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    return lua_gettop(L);
}

/* The handler of an error raised by our hook runs while Lua has hooks
 * disabled: a looping handler would never be stopped, so skip it then. */
static int sb_msgh(lua_State *L)
{
    if (getp(L)->why != OVER_NONE)
        return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L), status;
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, sb_msgh, 1);
    lua_replace(L, 2);
    lua_pushvalue(L, 1);                /* f msgh args... f */
    lua_copy(L, 2, 1);                  /* msgh msgh args... f */
    lua_replace(L, 2);                  /* msgh f args... */
    status = lua_pcall(L, n - 2, LUA_MULTRET, 1);
    if (status != LUA_OK)
        return pcall_failed(L, status);
    lua_pushboolean(L, 1);
    lua_replace(L, 1);
    return lua_gettop(L);
}

/* setmetatable() without __gc: Lua runs finalizers with hooks disabled, out
 * of reach of the limits. */
static int sb_setmetatable(lua_State *L)
{
    if (lua_istable(L, 2)) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed in policies");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* load() for text chunks only, in the sandbox unless env is given. */
static int sb_load(lua_State *L)
{
    int n = lua_gettop(L);
    if (n < 3)
        lua_settop(L, 3);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n < 3 ? 3 : n, LUA_MULTRET);
    return lua_gettop(L);
}

static int valid_module_name(const char *s)
{
    int seg = 0;
    if (!*s || strlen(s) > 128)
        return 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (!seg)
                return 0;
            seg = 0;
        } else if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                   (*s >= '0' && *s <= '9') || *s == '_' || *s == '-') {
            seg++;
        } else {
            return 0;
        }
    }
    return seg > 0;
}

static const char LOADED_KEY[] = "cosched.loaded";
static const char LOADING_KEY[] = "cosched.loading";

/* require(name): <datadir>/lua/NAME.lua, then <policy dir>/NAME.lua, dots
 * as directory separators; cached; run in the sandbox. */
int cs_policy_trusted_only;

static int sb_require(lua_State *L)
{
    struct cs_policy *p = getp(L);
    const char *name = luaL_checkstring(L, 1);
    const char *roots[2] = { p->moddir, p->dir };
    char rel[160], path[PATH_MAX];
    int i, found = 0, status;

    if (!valid_module_name(name))
        return luaL_error(L, "require: invalid module name '%s' (letters, digits, '_', '-', "
                          "dots between parts)", name);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LOADED_KEY);           /* 2 */
    lua_getfield(L, 2, name);
    if (!lua_isnil(L, -1)) {
        lua_getfield(L, LUA_REGISTRYINDEX, LOADING_KEY);
        if (lua_rawequal(L, -1, -2))
            return luaL_error(L, "require: module '%s' requires itself (circular require)", name);
        lua_pop(L, 1);
        return 1;
    }
    lua_pop(L, 1);

    snprintf(rel, sizeof rel, "%s", name);
    for (char *c = rel; *c; c++)
        if (*c == '.')
            *c = '/';
    for (i = 0; i < 2 && !found; i++) {
        if (!roots[i])
            continue;
        snprintf(path, sizeof path, "%s/%s.lua", roots[i], rel);
        found = is_regular_file(path);
    }
    if (!found)
        return luaL_error(L, "require: module '%s' not found (looked for %s.lua in %s and %s)",
                          name, rel, p->moddir, p->dir);

    if (cs_policy_trusted_only) {
        char why[PATH_MAX + 200];
        if (cs_path_trusted(path, why, sizeof why) < 0)
            return luaL_error(L, "require: module '%s' refused: %s", name, why);
    }
    lua_getfield(L, LUA_REGISTRYINDEX, LOADING_KEY);
    lua_setfield(L, 2, name);
    status = luaL_loadfilex(L, path, "t");
    if (status == LUA_OK) {
        lua_pushstring(L, name);
        lua_pushstring(L, path);
        status = lua_pcall(L, 2, 1, 0);
    }
    if (status != LUA_OK) {
        lua_pushnil(L);
        lua_setfield(L, 2, name);
        return lua_error(L);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, 2, name);
    lua_pushstring(L, path);
    return 2;
}

static const luaL_Reg cosched_lib[] = {
    { "log", sb_log },
    { NULL, NULL }
};

/* ------------------------------------------------- C library limits */

/*
 * The instruction budget and the time limit are checked by the count hook,
 * which runs between Lua instructions only: a C function of the standard
 * library that loops inside one call is never interrupted.  Those that can
 * loop for long on a small input are wrapped here (in the library tables
 * themselves, so that s:rep() is covered too):
 *
 *   string.rep              "" repeated n times: "" at once (the loop would
 *                           run n times writing nothing)
 *   string.find/match/      the matcher backtracks: a call whose worst case
 *   gmatch/gsub             (subject length + 1)^(quantifiers + %b + %1..9,
 *                           + 1 unless anchored) x pattern length exceeds
 *                           MATCH_BUDGET steps is refused; plain finds cost
 *                           subject x pattern length
 *   table.insert/remove/    walk #t elements, and # may be any number a
 *   move/sort/concat/       __len returns: at most LOOP_MAX elements per call
 *   unpack                  (# is taken once, then the loop is bounded)
 *
 * What is left - allocation-bound work such as string.rep("x", n) - is
 * bounded by the memory cap.  cosched-policy(7) LIMITS lists them.
 */
#define LOOP_MAX     (1 << 20)
#define MATCH_BUDGET 33554432.0     /* 2^25 steps, ~0.1 s */

static int lim_error(lua_State *L, const char *fn, const char *fmt, ...)
{
    va_list ap;

    push_where(L);
    lua_pushfstring(L, "%s: ", fn);
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    lua_pushliteral(L, " (a limit of the policy host: cosched-policy(7) LIMITS)");
    lua_concat(L, 4);
    return lua_error(L);
}

/* Call the wrapped library function (upvalue 1) with the arguments as they are. */
static int call_orig(lua_State *L)
{
    int n = lua_gettop(L);

    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

static int w_rep(lua_State *L)
{
    size_t l, lsep = 0;

    luaL_checklstring(L, 1, &l);
    luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    return call_orig(L);
}

/* Worst-case matcher steps of pattern p on a subject of ls bytes. */
static double match_cost(const char *p, size_t lp, size_t ls, int may_anchor)
{
    double n1 = (double)ls + 1, cost = (double)lp + 1;
    size_t i = 0;

    if (may_anchor && lp > 0 && p[0] == '^')
        i = 1;
    else
        cost *= n1;
    while (i < lp) {
        char c = p[i++];
        if (c == '%' && i < lp) {
            char k = p[i++];
            if (k == 'b' || (k >= '1' && k <= '9'))
                cost *= n1;                 /* a scan of the subject per try */
            if (k == 'b')
                i += 2;
        } else if (c == '[') {
            if (i < lp && p[i] == '^')
                i++;
            if (i < lp && p[i] == ']')
                i++;
            while (i < lp && p[i] != ']')
                i += p[i] == '%' ? 2 : 1;
            i++;
        } else if (c == '*' || c == '+' || c == '-') {
            cost *= n1;
        } else if (c == '?') {
            cost *= 2;
        }
        if (cost > 1e300)
            break;
    }
    return cost;
}

static int w_match_like(lua_State *L, const char *fn, int plain_arg, int may_anchor)
{
    size_t ls, lp;
    const char *p;
    double cost;

    luaL_checklstring(L, 1, &ls);
    p = luaL_checklstring(L, 2, &lp);
    if (plain_arg && lua_toboolean(L, plain_arg))
        cost = ((double)ls + 1) * ((double)lp + 1);
    else
        cost = match_cost(p, lp, ls, may_anchor);
    if (cost > MATCH_BUDGET) {
        char c[32], m[32];
        snprintf(c, sizeof c, "%.1e", cost);
        snprintf(m, sizeof m, "%.1e", MATCH_BUDGET);
        return lim_error(L, fn, "pattern '%s' on a %I-byte subject could take about %s steps (at most %s)",
                         lp > 40 ? "(long pattern)" : p, (LUAI_UACINT)ls, c, m);
    }
    return call_orig(L);
}

static int w_find(lua_State *L) { return w_match_like(L, "string.find", 4, 1); }
static int w_match(lua_State *L) { return w_match_like(L, "string.match", 0, 1); }
static int w_gmatch(lua_State *L) { return w_match_like(L, "string.gmatch", 0, 0); }
static int w_gsub(lua_State *L) { return w_match_like(L, "string.gsub", 0, 1); }

/* #t taken once (it may run a __len), bounded. */
static lua_Integer bounded_len(lua_State *L, int idx, const char *fn)
{
    lua_Integer n;

    luaL_checktype(L, idx, LUA_TTABLE);
    n = luaL_len(L, idx);
    if (n > LOOP_MAX || n < 0)
        lim_error(L, fn, "the table's length is %I (at most %d elements per call)", (LUAI_UACINT)n, LOOP_MAX);
    return n;
}

static int w_insert(lua_State *L)
{
    lua_Integer e = bounded_len(L, 1, "table.insert") + 1, pos;

    switch (lua_gettop(L)) {
    case 2:
        lua_seti(L, 1, e);
        return 0;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2, "position out of bounds");
        for (lua_Integer i = e; i > pos; i--) {
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
        }
        lua_seti(L, 1, pos);
        return 0;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
}

static int w_remove(lua_State *L)
{
    lua_Integer size = bounded_len(L, 1, "table.remove");
    lua_Integer pos = luaL_optinteger(L, 2, size);

    if (pos != size)
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 2, "position out of bounds");
    lua_geti(L, 1, pos);
    for (; pos < size; pos++) {
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

static int w_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);

    if (e >= f && (e - f >= LOOP_MAX || e - f < 0))
        return lim_error(L, "table.move", "%I to %I is more than %d elements", (LUAI_UACINT)f, (LUAI_UACINT)e,
                         LOOP_MAX);
    return call_orig(L);
}

/* concat and unpack: j given explicitly, so the library takes no # of its own */
static int w_range(lua_State *L, const char *fn, int iarg)
{
    lua_Integer i, j;

    luaL_checktype(L, 1, LUA_TTABLE);
    i = luaL_optinteger(L, iarg, 1);
    j = lua_isnoneornil(L, iarg + 1) ? bounded_len(L, 1, fn) : luaL_checkinteger(L, iarg + 1);
    if (j >= i && (j - i >= LOOP_MAX || j - i < 0))
        return lim_error(L, fn, "%I to %I is more than %d elements", (LUAI_UACINT)i, (LUAI_UACINT)j, LOOP_MAX);
    lua_settop(L, iarg + 1);
    lua_pushinteger(L, i);
    lua_replace(L, iarg);
    lua_pushinteger(L, j);
    lua_replace(L, iarg + 1);
    return call_orig(L);
}

static int w_concat(lua_State *L)
{
    if (lua_isnoneornil(L, 2)) {
        lua_settop(L, 2);
        lua_pushliteral(L, "");
        lua_replace(L, 2);
    }
    return w_range(L, "table.concat", 3);
}

static int w_unpack(lua_State *L) { return w_range(L, "table.unpack", 2); }

/* sort a plain copy (its length is its own), then write it back */
static int w_sort(lua_State *L)
{
    lua_Integer n = bounded_len(L, 1, "table.sort");

    if (!lua_isnoneornil(L, 2))
        luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lua_createtable(L, (int)n, 0);                  /* t comp copy */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 1, i);
        lua_rawseti(L, 3, i);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 3, i);
        lua_seti(L, 1, i);
    }
    return 0;
}

/* Replace lib[name] (lib at the top of the stack) by f with the original as upvalue. */
static void wrap(lua_State *L, const char *name, lua_CFunction f)
{
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

/* Build the sandbox in the state's global table. */
static int setup_sandbox(lua_State *L)
{
    static const char *const keep[] = {
        "assert", "error", "ipairs", "next", "pairs", "select", "tonumber",
        "tostring", "type", "setmetatable", "getmetatable", "rawequal",
        "rawget", "rawlen", "rawset", "_G", "_VERSION", NULL
    };
    static const struct { const char *name; lua_CFunction open; } libs[] = {
        { LUA_STRLIBNAME, luaopen_string }, { LUA_TABLIBNAME, luaopen_table },
        { LUA_MATHLIBNAME, luaopen_math }, { LUA_UTF8LIBNAME, luaopen_utf8 },
    };
    size_t i;

    luaL_requiref(L, "_G", luaopen_base, 0);                   /* G */
    /* drop everything but the safe subset */
    lua_getfield(L, -1, "load");                               /* G load */
    lua_newtable(L);                                           /* G load drop */
    lua_pushnil(L);
    while (lua_next(L, -4)) {
        int ok = 0;
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING)
            for (const char *const *k = keep; *k; k++)
                if (!strcmp(*k, lua_tostring(L, -1)))
                    ok = 1;
        if (!ok) {
            lua_pushvalue(L, -1);
            lua_pushboolean(L, 1);
            lua_rawset(L, -4);
        }
    }
    lua_pushnil(L);
    while (lua_next(L, -2)) {                                  /* G load drop k v */
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, -6);
    }
    lua_pop(L, 1);                                             /* G load */
    lua_pushcclosure(L, sb_load, 1);
    lua_setfield(L, -2, "load");
    lua_getfield(L, -1, "setmetatable");
    lua_pushcclosure(L, sb_setmetatable, 1);
    lua_setfield(L, -2, "setmetatable");
    lua_pushcfunction(L, sb_pcall);
    lua_setfield(L, -2, "pcall");
    lua_pushcfunction(L, sb_xpcall);
    lua_setfield(L, -2, "xpcall");
    lua_pushcfunction(L, sb_require);
    lua_setfield(L, -2, "require");

    for (i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].open, 0);
        lua_setfield(L, -2, libs[i].name);
    }
    lua_getfield(L, -1, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");                               /* no bytecode */
    wrap(L, "rep", w_rep);
    wrap(L, "find", w_find);
    wrap(L, "match", w_match);
    wrap(L, "gmatch", w_gmatch);
    wrap(L, "gsub", w_gsub);
    lua_pop(L, 1);
    lua_getfield(L, -1, LUA_TABLIBNAME);
    wrap(L, "insert", w_insert);
    wrap(L, "remove", w_remove);
    wrap(L, "move", w_move);
    wrap(L, "sort", w_sort);
    wrap(L, "concat", w_concat);
    wrap(L, "unpack", w_unpack);
    lua_getfield(L, -1, "unpack");
    lua_setfield(L, -3, "unpack");                             /* 5.1 habit */
    lua_pop(L, 1);

    luaL_newlib(L, cosched_lib);
    lua_pushinteger(L, CS_POLICY_API);
    lua_setfield(L, -2, "api");
    lua_pushstring(L, PACKAGE_VERSION);
    lua_setfield(L, -2, "version");
    ro_wrap(L);
    lua_setfield(L, -2, "cosched");
    lua_pop(L, 1);

    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
    lua_newtable(L);                       /* a unique "being loaded" marker */
    lua_setfield(L, LUA_REGISTRYINDEX, LOADING_KEY);
    return 0;
}

static int cs_panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    cs_err("policy host: unprotected Lua error: %s", msg ? msg : "?");
    abort();
}

#if LUA_VERSION_NUM >= 504
static void cs_warnf(void *ud, const char *msg, int tocont)
{
    struct cs_policy *p = ud;
    size_t n = strlen(msg);

    if (p->warnlen == 0 && !tocont && msg[0] == '@')
        return;                            /* control message */
    if (n > sizeof p->warnbuf - 1 - p->warnlen)
        n = sizeof p->warnbuf - 1 - p->warnlen;
    memcpy(p->warnbuf + p->warnlen, msg, n);
    p->warnlen += n;
    p->warnbuf[p->warnlen] = 0;
    if (!tocont) {
        if (!p->quiet)
            cs_warn("policy %s: Lua warning: %s", p->name, p->warnbuf);
        p->warnlen = 0;
    }
}
#endif

/* --------------------------------------------------------------- load */

/* Check the table the file returned (stack top) and keep what we need. */
static int open_protected(lua_State *L)
{
    struct cs_policy *p = getp(L);
    static const char *const known[] = {
        "api", "name", "description", "params", "init", "plan", "shares_cpus", NULL
    };
    int status, t, ty;

    luaL_checkstack(L, 30, "policy table");
    if (cs_policy_trusted_only) {
        char why[PATH_MAX + 200];
        if (cs_path_trusted(p->file, why, sizeof why) < 0)
            return luaL_error(L, "policy file refused: %s", why);
    }
    status = luaL_loadfilex(L, p->file, "t");
    if (status != LUA_OK) {
        /* syntax or file errors carry their position already */
        return lua_error(L);
    }
    lua_call(L, 0, 1);
    t = lua_gettop(L);
    if (!lua_istable(L, t))
        return verror(L, "the file returns %s, not a policy table "
                      "(end it with: return { api = 1, name = \"%s\", plan = ... })",
                      luaL_typename(L, t), p->name);

    lua_getfield(L, t, "api");
    if (lua_isnil(L, -1))
        return verror(L, "the policy table has no api field (add api = %d)", CS_POLICY_API);
    if (!lua_isinteger(L, -1))
        return verror(L, "api must be an integer (this cosched supports policy API %d)",
                      CS_POLICY_API);
    if (lua_tointeger(L, -1) != CS_POLICY_API)
        return verror(L, "written for policy API %d, this cosched supports %d",
                      (int)lua_tointeger(L, -1), CS_POLICY_API);
    lua_pop(L, 1);

    lua_getfield(L, t, "name");
    if (lua_type(L, -1) != LUA_TSTRING)
        return verror(L, "the policy table has no name (add name = \"%s\")", p->name);
    if (strcmp(lua_tostring(L, -1), p->name))
        return verror(L, "the policy table says name = \"%s\" but the file is %s.lua "
                      "(the two must agree)", lua_tostring(L, -1), p->name);
    lua_pop(L, 1);

    lua_getfield(L, t, "description");
    if (!lua_isnil(L, -1)) {
        size_t n;
        const char *d;
        if (lua_type(L, -1) != LUA_TSTRING)
            return verror(L, "description must be a string");
        d = lua_tostring(L, -1);
        n = strcspn(d, "\n");
        free(p->description);
        p->description = strndup(d, n);
        if (!p->description)
            return luaL_error(L, "out of memory");
    }
    lua_pop(L, 1);

    lua_getfield(L, t, "shares_cpus");
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
        return verror(L, "shares_cpus must be true or false (it is %s)", luaL_typename(L, -1));
    p->shares_cpus = lua_toboolean(L, -1);
    lua_pop(L, 1);

    lua_getfield(L, t, "plan");
    if (!lua_isfunction(L, -1))
        return verror(L, "plan must be a function (it is %s)", luaL_typename(L, -1));
    p->plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    lua_getfield(L, t, "init");
    if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
        return verror(L, "init must be a function (it is %s)", luaL_typename(L, -1));
    if (lua_isfunction(L, -1))
        p->init_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    else
        lua_pop(L, 1);

    lua_getfield(L, t, "params");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
    } else if (!lua_istable(L, -1)) {
        return verror(L, "params must be a table { key = { default = ..., help = \"...\" } }");
    } else {
        int d = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, d)) {
            const char *k;
            int kt = lua_type(L, -2);
            if (kt != LUA_TSTRING || !valid_module_name(k = lua_tostring(L, -2)) || strchr(k, '.'))
                return verror(L, "params: keys must be names made of letters, digits, '_' and '-'");
            if (!lua_istable(L, -1))
                return verror(L, "params.%s must be a table { default = ..., help = \"...\" }", k);
            lua_getfield(L, -1, "default");
            ty = lua_type(L, -1);
            if (ty != LUA_TNIL && ty != LUA_TSTRING && ty != LUA_TNUMBER && ty != LUA_TBOOLEAN)
                return verror(L, "params.%s.default must be a string, number or boolean", k);
            lua_pop(L, 1);
            lua_getfield(L, -1, "help");
            if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
                return verror(L, "params.%s.help must be a string", k);
            lua_pop(L, 2);
        }
    }
    p->decl_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    if (!p->quiet) {
        lua_pushnil(L);
        while (lua_next(L, t)) {
            int ok = 0;
            lua_pop(L, 1);
            if (lua_type(L, -1) == LUA_TSTRING)
                for (const char *const *k = known; *k; k++)
                    if (!strcmp(*k, lua_tostring(L, -1)))
                        ok = 1;
            if (!ok)
                cs_warn("policy %s (%s): the policy table has an unknown field '%s' "
                        "(known: api, name, description, params, init, plan)",
                        p->name, p->file,
                        lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?");
        }
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct param_args { char **params; int nparams; };

/* Resolve "key=value" against the declaration: snap.params. */
static int params_protected(lua_State *L)
{
    struct cs_policy *p = getp(L);
    struct param_args *a = lua_touserdata(L, 1);
    int decl, res, i;

    lua_rawgeti(L, LUA_REGISTRYINDEX, p->decl_ref);
    decl = lua_gettop(L);
    lua_newtable(L);
    res = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, decl)) {
        lua_getfield(L, -1, "default");
        if (!lua_isnil(L, -1)) {
            lua_pushvalue(L, -3);
            luaL_tolstring(L, -2, NULL);
            lua_rawset(L, res);
        }
        lua_pop(L, 2);
    }
    for (i = 0; i < a->nparams; i++) {
        const char *kv = a->params[i], *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            return verror(L, "--policy-opt %s: expected key=value", kv);
        lua_pushlstring(L, kv, (size_t)(eq - kv));
        lua_pushvalue(L, -1);
        lua_rawget(L, decl);
        if (lua_isnil(L, -1)) {
            /* name the accepted keys, sorted */
            int n = 0;
            luaL_Buffer b;
            const char **keys;
            lua_pop(L, 1);
            lua_pushnil(L);
            while (lua_next(L, decl)) {
                lua_pop(L, 1);
                n++;
            }
            if (n == 0)
                return verror(L, "--policy-opt %s: unknown parameter '%s' "
                              "(this policy accepts no parameters)", kv, lua_tostring(L, -1));
            keys = lua_newuserdata(L, sizeof *keys * (size_t)n);
            n = 0;
            lua_pushnil(L);
            while (lua_next(L, decl)) {
                lua_pop(L, 1);
                keys[n++] = lua_tostring(L, -1);  /* anchored in decl */
            }
            qsort(keys, (size_t)n, sizeof *keys, cmp_str);
            luaL_buffinit(L, &b);
            for (i = 0; i < n; i++) {
                if (i)
                    luaL_addstring(&b, ", ");
                luaL_addstring(&b, keys[i]);
            }
            luaL_pushresult(&b);
            return verror(L, "--policy-opt %s: unknown parameter '%s' (accepted: %s)",
                          kv, lua_tostring(L, -3), lua_tostring(L, -1));
        }
        lua_pop(L, 1);
        lua_pushstring(L, eq + 1);
        lua_rawset(L, res);
    }
    lua_settop(L, res);
    ro_wrap(L);
    p->params_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static int init_protected(lua_State *L)
{
    struct cs_policy *p = getp(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->init_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->params_ref);
    lua_call(L, 1, 0);
    return 0;
}

void cs_policy_free(struct cs_policy *p)
{
    if (!p)
        return;
    if (p->L) {
        /* finalizers run now: bound them too */
        begin_call(p, LOAD_SECONDS);
        p->quiet = 1;
        lua_close(p->L);
    }
    hwloc_bitmap_free(p->tmp);
    hwloc_bitmap_free(p->used);
    hwloc_bitmap_free(p->nodes);
    free(p->name);
    free(p->file);
    free(p->dir);
    free(p->moddir);
    free(p->description);
    free(p->keybuf);
    free(p);
}

/* Create the state and run the file; NULL with *err set (malloc'd). */
static struct cs_policy *policy_open(const char *name, const char *file, int quiet, char **err)
{
    struct cs_policy *p = calloc(1, sizeof *p);
    char *slash;

    *err = NULL;
    if (!p)
        goto oom;
    p->quiet = quiet;
    p->mem_limit = limit_mem;
    p->insn_limit = limit_insns;
    p->seconds = limit_seconds;
    p->plan_ref = p->init_ref = p->decl_ref = p->params_ref = p->topo_ref = LUA_NOREF;
    p->name = strdup(name);
    p->file = strdup(file);
    p->dir = strdup(file);
    p->moddir = xprintf("%s/lua", datadir());
    p->tmp = hwloc_bitmap_alloc();
    p->used = hwloc_bitmap_alloc();
    p->nodes = hwloc_bitmap_alloc();
    if (!p->name || !p->file || !p->dir || !p->moddir || !p->tmp || !p->used || !p->nodes)
        goto oom;
    slash = strrchr(p->dir, '/');
    if (slash == p->dir)
        slash[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(p->dir, ".");

    p->L = lua_newstate(cs_lua_alloc, p);
    if (!p->L)
        goto oom;
    *(struct cs_policy **)lua_getextraspace(p->L) = p;
    lua_atpanic(p->L, cs_panic);
#if LUA_VERSION_NUM >= 504
    lua_setwarnf(p->L, cs_warnf, p);
#endif
    if (call_bounded(p, setup_sandbox, NULL, 0, LOAD_SECONDS, "setting up", err) < 0)
        goto fail;
    if (call_bounded(p, open_protected, NULL, 0, p->seconds > LOAD_SECONDS ? p->seconds : LOAD_SECONDS,
                     "loading", err) < 0)
        goto fail;
    return p;
oom:
    *err = xprintf("policy %s (%s): out of memory", name, file);
fail:
    cs_policy_free(p);
    if (!*err)
        *err = strdup("out of memory");
    return NULL;
}

/* Policies found in the search path, in search order. */
struct found { char *name, *file; int order; int shadowed_by; };

static int scan_one(const char *dir, struct found **v, int *n, int *cap)
{
    struct dirent **ents = NULL;
    int k, m = scandir(dir, &ents, NULL, alphasort);

    if (m < 0)
        return 0;                          /* missing dirs are normal */
    for (k = 0; k < m; k++) {
        const char *d = ents[k]->d_name;
        size_t len = strlen(d);
        char base[NAME_MAX_LEN + 1], *path;
        if (len > 4 && len - 4 <= NAME_MAX_LEN && !strcmp(d + len - 4, ".lua")) {
            memcpy(base, d, len - 4);
            base[len - 4] = 0;
            path = valid_policy_name(base) ? xprintf("%s/%s", dir, d) : NULL;
            if (path && is_regular_file(path)) {
                if (*n == *cap) {
                    int nc = *cap ? *cap * 2 : 16;
                    struct found *nv = realloc(*v, sizeof **v * (size_t)nc);
                    if (!nv) {
                        free(path);
                        break;
                    }
                    *v = nv;
                    *cap = nc;
                }
                (*v)[*n].name = strdup(base);
                (*v)[*n].file = path;
                (*v)[*n].order = *n;
                (*v)[*n].shadowed_by = -1;
                if ((*v)[*n].name)
                    (*n)++;
                else
                    free(path);
            } else {
                free(path);
            }
        }
        free(ents[k]);
    }
    for (; k < m; k++)
        free(ents[k]);
    free(ents);
    return 0;
}

static int cmp_found(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->order - y->order;
}

/* All policies, sorted by name then search order, shadowing marked. */
static int scan_all(char **search, int nsearch, struct found **out)
{
    struct found *v = NULL;
    int n = 0, cap = 0, i;

    for (i = 0; i < nsearch; i++)
        if (search[i] && *search[i])
            scan_one(search[i], &v, &n, &cap);
    if (n)
        qsort(v, (size_t)n, sizeof *v, cmp_found);
    for (i = 1; i < n; i++)
        if (!strcmp(v[i].name, v[i - 1].name))
            v[i].shadowed_by = v[i - 1].shadowed_by >= 0 ? v[i - 1].shadowed_by : i - 1;
    *out = v;
    return n;
}

static void free_found(struct found *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].file);
    }
    free(v);
}

/* The search path as "dir1:dir2:..." for messages (static buffer). */
static const char *search_list(char **search, int nsearch)
{
    static char buf[2048];
    size_t len = 0;

    buf[0] = '\0';
    for (int i = 0; i < nsearch && len < sizeof buf - 1; i++)
        len += snprintf(buf + len, sizeof buf - len, "%s%s", i ? ":" : "", search[i] ? search[i] : "");
    return buf;
}

struct cs_policy *cs_policy_load(const char *name, char **search, int nsearch,
                                 char **params, int nparams)
{
    struct cs_policy *p;
    struct param_args pa = { params, nparams };
    char *file = NULL, *err = NULL;
    int i;

    if (!name || !valid_policy_name(name)) {
        cs_err("invalid policy name '%s' (names are made of a-z, 0-9, '_' and '-')",
               name ? name : "");
        return NULL;
    }
    for (i = 0; i < nsearch && !file; i++) {
        if (!search[i] || !*search[i])
            continue;
        file = xprintf("%s/%s.lua", search[i], name);
        if (file && !is_regular_file(file)) {
            free(file);
            file = NULL;
        }
    }
    if (!file) {
        struct found *v;
        int n = scan_all(search, nsearch, &v), len = 0;
        char *known = NULL;
        size_t sz = 1;
        for (i = 0; i < n; i++)
            if (v[i].shadowed_by < 0)
                sz += strlen(v[i].name) + 2;
        known = malloc(sz);
        if (known) {
            known[0] = 0;
            for (i = 0; i < n; i++)
                if (v[i].shadowed_by < 0)
                    len += sprintf(known + len, "%s%s", len ? ", " : "", v[i].name);
        }
        const char **names = n > 0 ? calloc((size_t)n, sizeof *names) : NULL;
        const char *near = NULL;
        for (i = 0; names && i < n; i++)
            names[i] = v[i].shadowed_by < 0 ? v[i].name : NULL;
        if (names)
            near = cs_closest(name, names, (size_t)n);
        if (n && known)
            cs_err("unknown policy '%s' (%s%s%sknown: %s)", name, near ? "did you mean " : "", near ? near : "",
                   near ? "? " : "", known);
        else
            cs_err("unknown policy '%s': no policies found in the search path (%s; "
                   "set COSCHED_DATADIR or give --policy-path)", name, search_list(search, nsearch));
        for (i = 0; i < nsearch; i++)
            cs_debug("policy search path %d: %s", i + 1, search[i] ? search[i] : "(null)");
        free(known);
        free(names);
        free_found(v, n);
        return NULL;
    }

    p = policy_open(name, file, 0, &err);
    free(file);
    if (!p) {
        cs_err("%s", err);
        free(err);
        return NULL;
    }
    if (call_bounded(p, params_protected, &pa, 0, LOAD_SECONDS, "reading parameters", &err) < 0)
        goto fail;
    if (p->init_ref != LUA_NOREF &&
        call_bounded(p, init_protected, NULL, 0,
                     p->seconds > LOAD_SECONDS ? p->seconds : LOAD_SECONDS, "init()", &err) < 0)
        goto fail;
    cs_debug("policy %s: loaded from %s (%zu KiB in use)", p->name, p->file,
             p->mem_used >> 10);
    return p;
fail:
    cs_err("%s", err);
    free(err);
    cs_policy_free(p);
    return NULL;
}

const char *cs_policy_name(const struct cs_policy *p)
{
    return p->name;
}

const char *cs_policy_file(const struct cs_policy *p)
{
    return p->file;
}

const char *cs_policy_description(const struct cs_policy *p)
{
    return p->description ? p->description : "";
}

int cs_policy_shares_cpus(const struct cs_policy *p)
{
    return p && p->shares_cpus;
}

void cs_policy_limits(size_t mem_bytes, uint64_t instructions, double seconds)
{
    limit_mem = mem_bytes ? mem_bytes : MEM_DEFAULT;
    limit_insns = instructions ? instructions : INSNS_DEFAULT;
    limit_seconds = seconds > 0 ? seconds : 0;
}

int cs_policy_list(char **search, int nsearch, FILE *f)
{
    struct found *v;
    char **desc;
    int n = scan_all(search, nsearch, &v), i, wn = 0, wd = 0;

    if (n == 0) {
        free(v);
        cs_warn("no policies found in the search path (%s)", search_list(search, nsearch));
        return 0;
    }
    desc = calloc((size_t)n, sizeof *desc);
    if (!desc) {
        free_found(v, n);
        cs_err("out of memory");
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (v[i].shadowed_by >= 0) {
            desc[i] = xprintf("(shadowed by %s)", v[v[i].shadowed_by].file);
        } else {
            char *err = NULL;
            struct cs_policy *p = policy_open(v[i].name, v[i].file, 1, &err);
            if (p) {
                desc[i] = strdup(p->description && *p->description ? p->description : "-");
                cs_policy_free(p);
            } else {
                /* err is "policy NAME (FILE): what"; keep "what" */
                const char *what = err ? strstr(err, "): ") : NULL;
                desc[i] = xprintf("(cannot load: %s)", what ? what + 3 : err ? err : "?");
                free(err);
            }
        }
        if (!desc[i]) {
            desc[i] = strdup("?");
        }
        if ((int)strlen(v[i].name) > wn)
            wn = (int)strlen(v[i].name);
        if (desc[i] && (int)strlen(desc[i]) > wd)
            wd = (int)strlen(desc[i]);
    }
    for (i = 0; i < n; i++) {
        fprintf(f, "%-*s  %-*s  %s\n", wn, v[i].name, wd, desc[i] ? desc[i] : "?", v[i].file);
        free(desc[i]);
    }
    free(desc);
    free_found(v, n);
    return fflush(f) == 0 ? 0 : -1;
}

/* ----------------------------------------------------------- snapshot */

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
    ro_wrap(L);
}

/* Push a read-only list of the set bits of a (& b if b): the cached one
 * when push_snapshot() is under way. */
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
static struct cs_job **live_jobs(lua_State *L, struct cs_engine *e, int *n)
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
        ro_wrap(L);
        lua_rawseti(L, -2, k);
    }
    ro_wrap(L);
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
        ro_wrap(L);
        lua_rawseti(L, -2, i + 1);
    }
    ro_wrap(L);
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
        ro_wrap(L);
        lua_rawseti(L, -2, k);
    }
    ro_wrap(L);
    lua_setfield(L, -2, "cores");
    ro_wrap(L);
    lua_remove(L, -2);                     /* llcmap */
}

/* snap.topology: the cached tables while topology and managed set stay. */
static void push_topology(lua_State *L, struct cs_policy *p, struct cs_engine *e)
{
    uint64_t fp;

    if (!e->topo) {
        lua_newtable(L);
        ro_wrap(L);
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
    ro_wrap(L);
    lua_setfield(L, -2, "nodes");
    ro_wrap(L);
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
    ro_wrap(L);
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
    ro_wrap(L);
    lua_setfield(L, -2, "bw");
    if (r->cores_standalone > 0)
        set_int(L, "cores_standalone", r->cores_standalone);
    if (r->cores_folded > 0)
        set_int(L, "cores_folded", r->cores_folded);
    lua_pushboolean(L, r->gang_only);
    lua_setfield(L, -2, "gang_only");
    set_num(L, "age", stored_age(r, now));
    lua_pushvalue(L, -1);
    ro_wrap(L);                            /* data proxy */
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
    set_int(L, "runs", j->runs_done);
    set_num(L, "waited", j->waited);
    set_int(L, "quanta_run", (long long)j->quanta_run);
    set_int(L, "quanta_frozen", (long long)j->quanta_frozen);
    set_num(L, "cpu_time", (double)j->cpu_ns / 1e9);
    if (j->omp && j->omp_team > 0)   /* its OpenMP page (engine/omppage.c) */
        set_int(L, "team", j->omp_team);
    lua_pushboolean(L, j->frozen);
    lua_setfield(L, -2, "frozen");
    push_cpulist(L, p, j->cpus, NULL);
    lua_setfield(L, -2, "cpus");
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
        ro_wrap(L);
        lua_setfield(L, -2, "last");
    }
    ro_wrap(L);
}

static void push_snapshot(lua_State *L, struct cs_policy *p, struct cs_engine *e,
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
    ro_wrap(L);
    lua_setfield(L, -2, "jobs");
    ro_wrap(L);
    p->cpu_cur = p->cpu_prev = p->st_cur = p->st_prev = 0;
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
}

/* --------------------------------------------------------------- plan */

/* Describe the value at idx for a message (pushes it; returns it). */
static const char *describe(lua_State *L, int idx)
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
static long long int_at(lua_State *L, int idx, int *ok)
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
static void check_fields(lua_State *L, int t, const char *const *known, const char *where,
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
                verror(L, "%sunknown field '%s' (fields: %s)", where, lua_tostring(L, -1), list);
            if (lua_type(L, -1) != LUA_TNUMBER)
                verror(L, "%sunknown field %s (fields: %s)", where, describe(L, -1), list);
            /* integer keys: someone wrote a list where a table was due */
            verror(L, "%sholds list items, expected only the fields %s", where, list);
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
static int plain_at(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE && lua_getmetatable(L, idx)) {
        lua_pushliteral(L, "__newindex");
        lua_rawget(L, -2);
        if (lua_tocfunction(L, -1) == ro_newindex) {
            lua_pushliteral(L, "__index");
            lua_rawget(L, -3);
            lua_replace(L, idx);
        }
        lua_pop(L, 2);
    }
    return idx;
}

static int rawfield(lua_State *L, int t, const char *k)
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
        verror(L, "step %d: job %d: %s must be a list of numbers (it is %s)", step, id, field,
               luaL_typename(L, idx));
    idx = plain_at(L, idx);
    n = (lua_Integer)lua_rawlen(L, idx);
    for (i = 1; i <= n; i++) {
        int ok;
        long long v;
        lua_rawgeti(L, idx, i);
        v = int_at(L, -1, &ok);
        if (!ok)
            verror(L, "step %d: job %d: %s[%d] = %s is not an integer", step, id, field, (int)i,
                   describe(L, -1));
        if (is_cpus) {
            if (v < 0 || v > INT_MAX || !hwloc_bitmap_isset(e->managed, (unsigned)v)) {
                managed_str(e, buf, sizeof buf);
                verror(L, "step %d: job %d: cpu %d is not managed (managed: %s)", step, id,
                       (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v), buf);
            }
        } else {
            if (v < 0 || v > INT_MAX || !hwloc_bitmap_isset(p->nodes, (unsigned)v)) {
                if (hwloc_bitmap_list_snprintf(buf, sizeof buf, p->nodes) < 0)
                    buf[0] = 0;
                verror(L, "step %d: job %d: mems: %d is not a NUMA node (nodes: %s)", step, id,
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
    ok = lua_tocfunction(L, -1) == ro_newindex;
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

    hwloc_bitmap_zero(p->nodes);
    for (i = 0; e->topo && i < e->topo->nnumas; i++)
        if (e->topo->numas[i].os_index >= 0)
            hwloc_bitmap_set(p->nodes, (unsigned)e->topo->numas[i].os_index);

    if (!lua_istable(L, res))
        verror(L, "plan() returned %s, expected a list of steps", luaL_typename(L, res));
    res = plain_at(L, res);
    n = (lua_Integer)lua_rawlen(L, res);
    if (n < 1)
        verror(L, "plan() returned no steps (at least one is needed)");
    if (n > PLAN_MAX_STEPS)
        verror(L, "plan() returned %d steps, at most %d are allowed", (int)n, PLAN_MAX_STEPS);
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
        stp = plain_at(L, -1);
        if (!lua_istable(L, stp))
            verror(L, "step %d is %s, expected a table { duration = ..., jobs = {...} }", s,
                   luaL_typename(L, stp));
        check_fields(L, stp, step_fields, lua_pushfstring(L, "step %d: ", s),
                     "duration, jobs, shared");
        lua_pop(L, 1);

        rawfield(L, stp, "duration");
        if (lua_isnil(L, -1)) {
            st->duration = e->quantum;
        } else if (lua_type(L, -1) != LUA_TNUMBER) {
            verror(L, "step %d: duration must be a number of seconds (it is %s)", s,
                   luaL_typename(L, -1));
        } else {
            st->duration = lua_tonumber(L, -1);
            if (!(st->duration >= STEP_MIN && st->duration <= STEP_MAX))
                verror(L, "step %d: duration %f s is out of range [%f, %f]", s,
                       st->duration, STEP_MIN, STEP_MAX);
        }
        lua_pop(L, 1);

        rawfield(L, stp, "shared");
        shared = lua_toboolean(L, -1);
        lua_pop(L, 1);

        rawfield(L, stp, "jobs");
        jl = plain_at(L, -1);
        if (!lua_istable(L, jl))
            verror(L, "step %d: jobs must be a list of { id = ..., cpus = {...} } (it is %s)", s,
                   luaL_typename(L, jl));
        nj = (lua_Integer)lua_rawlen(L, jl);
        if (nj == 0 && nlive > 0)
            verror(L, "step %d: no jobs, but %d job%s live (a step must run at least one)", s,
                   nlive, nlive == 1 ? " is" : "s are");
        /* more entries than live jobs: the check of ids below fails first */
        st->njobs = nj < nlive ? (int)nj : nlive;
        if (st->njobs > 0) {
            st->jobs = calloc((size_t)st->njobs, sizeof *st->jobs);
            if (!st->jobs)
                luaL_error(L, "out of memory");
        }
        hwloc_bitmap_zero(p->used);

        for (k = 1; k <= (int)nj; k++) {
            struct cs_plan_job *pj = &st->jobs[k - 1];
            int ent, ok, id;
            long long v;

            lua_rawgeti(L, jl, k);
            ent = plain_at(L, -1);
            if (!lua_istable(L, ent))
                verror(L, "step %d: jobs[%d] is %s, expected { id = ..., cpus = {...} }", s, k,
                       luaL_typename(L, ent));
            rawfield(L, ent, "id");
            v = int_at(L, -1, &ok);
            if (lua_isnil(L, -1))
                verror(L, "step %d: jobs[%d] has no id", s, k);
            if (!ok)
                verror(L, "step %d: jobs[%d]: id %s is not an integer", s, k, describe(L, -1));
            if (v < 0 || v > maxid || seen[v] < 0) {
                char ids[256];
                int len = 0;
                ids[0] = 0;
                for (i = 0; i < nlive && len < (int)sizeof ids - 16; i++)
                    len += snprintf(ids + len, sizeof ids - (size_t)len, "%s%d", i ? ", " : "",
                                    live[i]->id);
                verror(L, "step %d: job %d is not a live job (live: %s)", s,
                       (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v),
                       nlive ? ids : "none");
            }
            id = (int)v;
            lua_pop(L, 1);
            if (seen[id] == s)
                verror(L, "step %d: job %d appears twice", s, id);
            seen[id] = s;
            pj->job = id;
            check_fields(L, ent, job_fields, lua_pushfstring(L, "step %d: job %d: ", s, id),
                         "id, cpus, mems");
            lua_pop(L, 1);

            pj->cpus = hwloc_bitmap_alloc();
            pj->mems = hwloc_bitmap_alloc();
            if (!pj->cpus || !pj->mems)
                luaL_error(L, "out of memory");
            rawfield(L, ent, "cpus");
            if (lua_isnil(L, -1))
                verror(L, "step %d: job %d: cpus is missing", s, id);
            read_cpus(L, p, lua_gettop(L), pj->cpus, s, id, lcache);
            if (hwloc_bitmap_iszero(pj->cpus))
                verror(L, "step %d: job %d: cpus is empty", s, id);
            lua_pop(L, 1);
            if ((!shared || (!p->shares_cpus && !p->overlap_warned))
                && hwloc_bitmap_intersects(p->used, pj->cpus)) {
                int cpu, other = -1, m;
                hwloc_bitmap_and(p->tmp, p->used, pj->cpus);
                cpu = hwloc_bitmap_first(p->tmp);
                for (m = 0; m < k - 1; m++)
                    if (hwloc_bitmap_isset(st->jobs[m].cpus, (unsigned)cpu))
                        other = st->jobs[m].job;
                if (!shared)
                    verror(L, "step %d: job %d: cpu %d is also given to job %d "
                           "(set shared = true in the step to let jobs share cpus)",
                           s, id, cpu, other);
                /* allowed, but the engine gave OpenMP jobs the shim and
                 * their runtime's spinning on the word of shares_cpus */
                p->overlap_warned = 1;
                cs_warn("policy %s: step %d runs jobs %d and %d on cpu %d at once, but the policy "
                        "does not declare shares_cpus = true: OpenMP jobs given the shim keep "
                        "spinning there (cosched-policy(7), shares_cpus)", p->name, s, other, id, cpu);
            }
            hwloc_bitmap_or(p->used, p->used, pj->cpus);

            rawfield(L, ent, "mems");
            if (!lua_isnil(L, -1))
                read_set(L, p, lua_gettop(L), pj->mems, s, id, "mems");
            lua_settop(L, ent - 1);
        }
        lua_settop(L, stp - 1);
    }
}

/* A number field of a result: NaN when absent; lo: lowest value (or -HUGE_VAL). */
static double result_num(lua_State *L, int t, const char *k, double lo, int i, int id, const char *f)
{
    double v;
    rawfield(L, t, k);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return NAN;
    }
    if (lua_type(L, -1) != LUA_TNUMBER)
        verror(L, "characterized[%d] (job %d): %s%s must be a number (it is %s)", i, id, f, k,
               luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
    if (!isfinite(v) || v < lo)
        verror(L, "characterized[%d] (job %d): %s%s = %f must be finite%s", i, id, f, k, v,
               lo > -HUGE_VAL ? " and >= 0" : "");
    lua_pop(L, 1);
    return v;
}

/* plan()'s optional second result: { { id =, class =, ipc_standalone =, ...}, ... } */
static void convert_results(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive)
{
    static const char *const fields[] = { "id", "class", "ipc_standalone", "ipc_folded", "fp", "mpki", "bw",
                                          "gang_only", "degraded", "cores_standalone", "cores_folded", NULL };
    static const char *const bw_fields[] = { "l1", "l2", "llc", NULL };
    const char *list = "id, class, ipc_standalone, ipc_folded, fp, mpki, bw, gang_only, degraded, "
                       "cores_standalone, cores_folded";
    struct cs_plan *out = p->out;
    lua_Integer n, i;

    if (lua_isnil(L, res))
        return;
    if (!lua_istable(L, res))
        verror(L, "plan() returned %s as its second value, expected a list of characterization "
               "results { { id = ..., class = ... }, ... }", luaL_typename(L, res));
    res = plain_at(L, res);
    n = (lua_Integer)lua_rawlen(L, res);
    if (n > nlive)
        verror(L, "plan() returned %d characterization results for %d live job%s", (int)n, nlive,
               nlive == 1 ? "" : "s");
    /* the plan's own: a verror() below leaves it to cs_policy_plan()'s cs_plan_free() */
    out->results = calloc((size_t)n + 1, sizeof *out->results);
    if (!out->results)
        luaL_error(L, "out of memory");
    for (i = 1; i <= n; i++) {
        struct cs_stored *r = &out->results[i - 1].r;
        int t, ok, id = -1, k;
        long long v;

        memset(r, 0, sizeof *r);
        lua_rawgeti(L, res, i);
        t = plain_at(L, -1);
        if (!lua_istable(L, t))
            verror(L, "characterized[%d] is %s, expected { id = ..., class = ..., ... }", (int)i,
                   luaL_typename(L, t));
        rawfield(L, t, "id");
        v = int_at(L, -1, &ok);
        if (lua_isnil(L, -1))
            verror(L, "characterized[%d] has no id", (int)i);
        if (!ok)
            verror(L, "characterized[%d]: id %s is not an integer", (int)i, describe(L, -1));
        for (k = 0; k < nlive; k++)
            if (live[k]->id == v)
                id = (int)v;
        if (id < 0)
            verror(L, "characterized[%d]: job %d is not a live job", (int)i,
                   (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v));
        for (k = 0; k < i - 1; k++)
            if (out->results[k].job == id)
                verror(L, "characterized[%d]: job %d appears twice", (int)i, id);
        lua_pop(L, 1);
        out->results[i - 1].job = id;
        check_fields(L, t, fields, lua_pushfstring(L, "characterized[%d] (job %d): ", (int)i, id), list);
        lua_pop(L, 1);

        rawfield(L, t, "class");
        if (lua_type(L, -1) != LUA_TSTRING)
            verror(L, "characterized[%d] (job %d): class must be \"S\", \"C\", \"N\" or \"unknown\" (it is %s)",
                   (int)i, id, luaL_typename(L, -1));
        const char *c = lua_tostring(L, -1);
        if (!strcmp(c, "S") || !strcmp(c, "C") || !strcmp(c, "N"))
            r->cls = c[0];
        else if (strcmp(c, "unknown") != 0)
            verror(L, "characterized[%d] (job %d): class '%s' is not \"S\", \"C\", \"N\" or \"unknown\"",
                   (int)i, id, c);
        lua_pop(L, 1);
        r->ipc_standalone = result_num(L, t, "ipc_standalone", 0, (int)i, id, "");
        r->ipc_folded = result_num(L, t, "ipc_folded", 0, (int)i, id, "");
        r->fp = result_num(L, t, "fp", -HUGE_VAL, (int)i, id, "");
        r->mpki = result_num(L, t, "mpki", 0, (int)i, id, "");
        r->bw_l1 = r->bw_l2 = r->bw_llc = NAN;
        rawfield(L, t, "bw");
        if (!lua_isnil(L, -1)) {
            int b = plain_at(L, -1);
            if (!lua_istable(L, b))
                verror(L, "characterized[%d] (job %d): bw must be a table { l1 =, l2 =, llc = } (it is %s)",
                       (int)i, id, luaL_typename(L, b));
            check_fields(L, b, bw_fields, lua_pushfstring(L, "characterized[%d] (job %d): bw: ", (int)i, id),
                         "l1, l2, llc");
            lua_pop(L, 1);
            r->bw_l1 = result_num(L, b, "l1", 0, (int)i, id, "bw.");
            r->bw_l2 = result_num(L, b, "l2", 0, (int)i, id, "bw.");
            r->bw_llc = result_num(L, b, "llc", 0, (int)i, id, "bw.");
        }
        lua_pop(L, 1);
        const char *flags[2] = { "gang_only", "degraded" };
        int *fv[2] = { &r->gang_only, &r->degraded };
        for (k = 0; k < 2; k++) {
            rawfield(L, t, flags[k]);
            if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
                verror(L, "characterized[%d] (job %d): %s must be true or false (it is %s)", (int)i, id,
                       flags[k], luaL_typename(L, -1));
            *fv[k] = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
        const char *cores[2] = { "cores_standalone", "cores_folded" };
        int *cv[2] = { &r->cores_standalone, &r->cores_folded };
        for (k = 0; k < 2; k++) {
            rawfield(L, t, cores[k]);
            if (!lua_isnil(L, -1)) {
                v = int_at(L, -1, &ok);
                if (!ok || v < 1 || v > 1000000)
                    verror(L, "characterized[%d] (job %d): %s must be an integer >= 1 (it is %s)", (int)i,
                           id, cores[k], describe(L, -1));
                *cv[k] = (int)v;
            }
            lua_pop(L, 1);
        }
        lua_settop(L, t - 1);
    }
    out->nresults = (int)n;
}

/* plan()'s optional third value: { [job id] = { key = scalar, ... } }, what
 * the policy says about a job (class, age and its terms, why it waits) for
 * `cosched status`.  Kept as one JSON object per job, at most 2 KiB. */
static void convert_info(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive)
{
    struct cs_plan *out = p->out;

    if (lua_isnoneornil(L, res))
        return;
    if (!lua_istable(L, res))
        verror(L, "plan() returned %s as its third value, expected { [job id] = { key = value, ... } }",
               luaL_typename(L, res));
    res = plain_at(L, res);
    out->info = calloc((size_t)nlive + 1, sizeof *out->info);
    if (!out->info)
        luaL_error(L, "out of memory");
    for (int k = 0; k < nlive; k++) {
        size_t n = 2;              /* the object's size as written, kept under 2 KiB */
        json_t *o;
        lua_rawgeti(L, res, live[k]->id);
        plain_at(L, -1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            continue;
        }
        if (!lua_istable(L, -1))
            verror(L, "info[%d] is %s, expected a table of key = value", live[k]->id, luaL_typename(L, -1));
        /* kept in the plan before it is filled: a verror() below leaves it to cs_plan_free() */
        out->info[out->ninfo].job = live[k]->id;
        out->info[out->ninfo++].json = o = json_object();
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING)
                verror(L, "info[%d]: keys must be strings", live[k]->id);
            const char *key = lua_tostring(L, -2);
            json_t *v = NULL;
            size_t len = 0;
            for (const char *c = key; *c; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_'))
                    verror(L, "info[%d]: key '%s' is not a name (letters, digits, _)", live[k]->id, key);
            switch (lua_type(L, -1)) {
            case LUA_TNUMBER:
                v = cs_json_sig(lua_tonumber(L, -1), 6);
                len = 16;
                break;
            case LUA_TBOOLEAN:
                v = json_boolean(lua_toboolean(L, -1));
                len = 5;
                break;
            case LUA_TSTRING: {
                /* at most 300 bytes of it (a cut UTF-8 character becomes U+FFFD) */
                char cut[301];
                snprintf(cut, sizeof cut, "%s", lua_tostring(L, -1));
                v = cs_json_text(cut);
                len = strlen(cut) + 2;
                break;
            }
            default:
                verror(L, "info[%d].%s is %s, expected a number, string or boolean", live[k]->id, key,
                       luaL_typename(L, -1));
            }
            n += strlen(key) + 4 + len;
            if (n < 2048)
                json_object_set_new(o, key, v);
            else
                json_decref(v);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
}

static int plan_protected(lua_State *L)
{
    struct cs_policy *p = getp(L);
    struct cs_job **live;
    int nlive, res;

    luaL_checkstack(L, 40, "snapshot");
    live = live_jobs(L, p->e, &nlive);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->plan_ref);
    push_snapshot(L, p, p->e, live, nlive);
    lua_call(L, 1, 3);
    res = lua_gettop(L) - 2;
    convert_plan(L, p, res, live, nlive);
    convert_results(L, p, res + 1, live, nlive);
    convert_info(L, p, res + 2, live, nlive);
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
    int rc = call_bounded(p, plan_protected, NULL, 0, limit, "plan()", &err);
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

char **cs_policy_search_path(char **extra, int nextra, int *n)
{
    char **v = calloc(nextra + 64, sizeof *v);
    const char *env = getenv("COSCHED_POLICY_PATH");
    const char *home = getenv("HOME");
    int k = 0;

    for (int i = 0; i < nextra; i++)
        v[k++] = strdup(extra[i]);
    if (env && *env) {
        char *copy = strdup(env), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d && k < nextra + 60; d = strtok_r(NULL, ":", &save))
            v[k++] = strdup(d);
        free(copy);
    }
    if (home && *home)
        v[k++] = cs_strdup_printf("%s/.config/cosched/policies", home);
    v[k++] = cs_strdup_printf("%s/policies", COSCHED_SYSCONFDIR);
    v[k++] = cs_strdup_printf("%s/lua/policies", cs_datadir());
    *n = k;
    return v;
}
