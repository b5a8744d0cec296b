/*
 * bounds.c - the limits of every call into a policy's Lua state: the capped
 * allocator, the count hook (instruction budget, CPU time, wall-clock
 * backstop, a pending signal), the messages of a call that failed, and
 * pol_call_bounded(), through which every entry into Lua goes.
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
 *
 * Part of the policy host (internal.h); uses Lua and core/ only.
 */
#include "policy/internal.h"

#include <signal.h>

#define WALL_FLOOR      2.0      /* the wall-clock backstop is at least this */

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

void *pol_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
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

void pol_begin_call(struct cs_policy *p, double seconds)
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
int pol_verror(lua_State *L, const char *fmt, ...)
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
        out = pol_xprintf("policy %s (%s): %s exceeded its time limit of %s s of CPU time (at %s)",
                      p->name, p->file, what, lim, p->where[0] ? p->where : "?");
        break;
    case OVER_WALL: {
        char wall[32];
        fmt_seconds(lim, sizeof lim, p->call_limit);
        fmt_seconds(wall, sizeof wall, wall_backstop(p->call_limit));
        out = pol_xprintf("policy %s (%s): %s did not end within %s s of wall-clock time, although it used less than "
                      "its time limit of %s s of CPU time: cosched got too little CPU (an overloaded machine?) "
                      "(at %s)",
                      p->name, p->file, what, wall, lim, p->where[0] ? p->where : "?");
        break;
    }
    case OVER_INSNS:
        out = pol_xprintf("policy %s (%s): %s exceeded its budget of %llu instructions (at %s)",
                      p->name, p->file, what, (unsigned long long)p->insn_limit,
                      p->where[0] ? p->where : "?");
        break;
    case OVER_MEM:
        fmt_bytes(lim, sizeof lim, p->mem_limit);
        out = pol_xprintf("policy %s (%s): %s exceeded its memory limit of %s (at %s)",
                      p->name, p->file, what, lim, p->where[0] ? p->where : "?");
        break;
    case OVER_MEM_HARD:
        fmt_bytes(lim, sizeof lim, p->mem_limit);
        out = pol_xprintf("policy %s (%s): %s exceeded its memory limit of %s",
                      p->name, p->file, what, lim);
        break;
    case OVER_SIGNAL:
        out = pol_xprintf("policy %s (%s): %s stopped: cosched received a signal to stop (at %s)",
                      p->name, p->file, what, p->where[0] ? p->where : "?");
        break;
    default:
        if (p->verr)
            out = pol_xprintf("policy %s (%s): %s", p->name, p->file, first);
        else
            out = pol_xprintf("policy %s (%s): %s failed: %s", p->name, p->file, what, first);
    }
    free(first);
    lua_settop(L, 0);
    return out;
}

/* Run f (a lua_CFunction) protected and bounded; nres results stay on the
 * stack on success.  On failure *err holds the message. */
int pol_call_bounded(struct cs_policy *p, lua_CFunction f, void *arg, int nres,
                        double seconds, const char *what, char **err)
{
    lua_State *L = p->L;
    int status, base;

    lua_settop(L, 0);
    lua_pushcfunction(L, cs_msgh);
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, arg);
    base = 1;
    pol_begin_call(p, seconds);
    status = lua_pcall(L, 1, nres, base);
    if (status != LUA_OK) {
        *err = failure(p, what, status);
        if (!*err)
            *err = strdup("out of memory");
        /* a lingering huge garbage pile would fail the next call early */
        if (p->why == OVER_MEM || p->why == OVER_MEM_HARD) {
            pol_begin_call(p, LOAD_SECONDS);
            lua_gc(L, LUA_GCCOLLECT, 0);
        }
        p->why = OVER_NONE;
        return -1;
    }
    lua_remove(L, base);
    p->why = OVER_NONE;
    return 0;
}

