/*
 * fairlp.c - cosched.fair_lp(rates, floor), the policy library's linear
 * program (cosched-policy(7) LIBRARY):
 *
 *   rates  a list of nc configurations, each a list of nj rates >= 0 (job
 *          j's progress per second in configuration c, against alone)
 *   floor  a number, or a list of nj numbers >= 0: each job's least
 *          progress per second
 *
 * returns the time fractions x[1..nc] (>= 0, summing to 1) that maximise
 * the sum over jobs of sum_c rates[c][j] x[c] with every job at its floor
 * or above; or nil and why ("infeasible": no mix of the configurations gives
 * every job its floor; "failed": the solver did not finish).
 *
 * The solver is the one cs_policy_set_lp() was given (GLPK's simplex,
 * sim/lp.c, set by cosched's main); without one the function is not in the
 * library and a policy falls back to its own rule.  The arguments are a
 * policy's own tables, read raw (no metamethods) and checked: sizes bounded
 * (the solve is one C call the count hook cannot interrupt: at most
 * FAIR_MAX_JOBS jobs and FAIR_MAX_CELLS rates; GLPK's presolver slows down
 * sharply on many alike columns - 16384 rates of one job took 3.6 s, 1024
 * at most 9 ms), every number finite and in range; a bad argument raises an
 * error naming it.
 *
 * Part of the policy host (internal.h); uses Lua only.
 */
#include "policy/internal.h"
#include <math.h>
#include <stdlib.h>

#define FAIR_MAX_JOBS  64
#define FAIR_MAX_CELLS 1024
#define FAIR_MAX_RATE  1e6

static cs_policy_lp_fn lp_solver;

void cs_policy_set_lp(cs_policy_lp_fn fn)
{
    lp_solver = fn;
}

static int arg_error(lua_State *L, const char *fmt, ...)
{
    va_list ap;

    pol_push_where(L);
    lua_pushliteral(L, "cosched.fair_lp: ");
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    lua_concat(L, 3);
    return lua_error(L);
}

/* The number at t[i] (t at index t, a plain list), in [0, FAIR_MAX_RATE]. */
static double rate_at(lua_State *L, int t, lua_Integer i, const char *name, lua_Integer c)
{
    int type = lua_rawgeti(L, t, i);
    double v = lua_tonumber(L, -1);

    lua_pop(L, 1);
    if (type != LUA_TNUMBER || !isfinite(v) || v < 0 || v > FAIR_MAX_RATE) {
        if (c)
            arg_error(L, "%s[%I][%I] is %s, expected a number from 0 to 1e6", name, (LUA_INTEGER)c,
                      (LUA_INTEGER)i, type == LUA_TNUMBER ? "out of range" : lua_typename(L, type));
        else
            arg_error(L, "%s[%I] is %s, expected a number from 0 to 1e6", name, (LUA_INTEGER)i,
                      type == LUA_TNUMBER ? "out of range" : lua_typename(L, type));
    }
    return v;
}

static int fair_lp(lua_State *L)
{
    lua_Integer nc, nj = 0;
    double *r, *floor_, *x;
    int rc;

    if (!lua_istable(L, 1))
        return arg_error(L, "rates is %s, expected a list of configurations", luaL_typename(L, 1));
    nc = (lua_Integer)lua_rawlen(L, 1);
    if (nc < 1)
        return arg_error(L, "rates is empty, expected at least one configuration");
    if (lua_rawgeti(L, 1, 1) != LUA_TTABLE)
        return arg_error(L, "rates[1] is %s, expected a list of rates, one per job", luaL_typename(L, -1));
    nj = (lua_Integer)lua_rawlen(L, -1);
    lua_pop(L, 1);
    if (nj < 1 || nj > FAIR_MAX_JOBS || nc > FAIR_MAX_CELLS / nj)
        return arg_error(L, "%I configurations of %I jobs, expected 1 to %d jobs and at most %d rates in all",
                         (LUA_INTEGER)nc, (LUA_INTEGER)nj, FAIR_MAX_JOBS, FAIR_MAX_CELLS);
    if (lua_type(L, 2) != LUA_TNUMBER && !lua_istable(L, 2))
        return arg_error(L, "floor is %s, expected a number or a list of %I numbers", luaL_typename(L, 2),
                         (LUA_INTEGER)nj);
    r = lua_newuserdatauv(L, sizeof *r * (size_t)(nc * nj + nj + nc), 0);    /* freed with the state's GC */
    floor_ = r + nc * nj;
    x = floor_ + nj;
    for (lua_Integer c = 1; c <= nc; c++) {
        if (lua_rawgeti(L, 1, c) != LUA_TTABLE || (lua_Integer)lua_rawlen(L, -1) != nj)
            return arg_error(L, "rates[%I] is %s, expected a list of %I rates like rates[1]", (LUA_INTEGER)c,
                             lua_istable(L, -1) ? "a list of another length" : luaL_typename(L, -1),
                             (LUA_INTEGER)nj);
        for (lua_Integer j = 1; j <= nj; j++)
            r[(c - 1) * nj + (j - 1)] = rate_at(L, lua_gettop(L), j, "rates", c);
        lua_pop(L, 1);
    }
    if (lua_istable(L, 2)) {
        if ((lua_Integer)lua_rawlen(L, 2) != nj)
            return arg_error(L, "floor has %I numbers, expected %I (one per job)", (LUA_INTEGER)lua_rawlen(L, 2),
                             (LUA_INTEGER)nj);
        for (lua_Integer j = 1; j <= nj; j++)
            floor_[j - 1] = rate_at(L, 2, j, "floor", 0);
    } else {
        double f = lua_tonumber(L, 2);
        if (!isfinite(f) || f < 0 || f > FAIR_MAX_RATE)
            return arg_error(L, "floor is out of range, expected a number from 0 to 1e6");
        for (lua_Integer j = 0; j < nj; j++)
            floor_[j] = f;
    }
    rc = lp_solver((int)nj, (int)nc, r, floor_, x);
    if (rc < 0) {
        lua_pushnil(L);
        lua_pushstring(L, rc == -1 ? "infeasible" : "failed");
        return 2;
    }
    lua_createtable(L, (int)nc, 0);
    for (lua_Integer c = 0; c < nc; c++) {
        lua_pushnumber(L, x[c] > 0 ? x[c] : 0);
        lua_rawseti(L, -2, c + 1);
    }
    return 1;
}

void pol_add_fair_lp(lua_State *L)
{
    if (!lp_solver)
        return;
    lua_pushcfunction(L, fair_lp);
    lua_setfield(L, -2, "fair_lp");
}
