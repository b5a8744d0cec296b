/*
 * clib.c - the bounded C library: the functions of Lua's string and table
 * libraries that can loop for long inside one call, wrapped (see below).
 *
 * Part of the policy host (internal.h); uses Lua only.
 */
#include "policy/internal.h"

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

    pol_push_where(L);
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

/* Wrap the functions above in the string and table libraries of the global
 * table G (stack top), as the sandbox sets it up; G.unpack = table.unpack. */
void pol_bound_clib(lua_State *L)
{
    lua_getfield(L, -1, LUA_STRLIBNAME);
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
}
