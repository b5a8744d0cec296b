/*
 * sandbox.c - the global table a policy runs in: the safe subset of the base
 * library, string, table, math and utf8 (their looping functions bounded by
 * clib.c), a read-only `cosched` library, read-only proxies for the snapshot,
 * and our own require, load, setmetatable, pcall and xpcall (which never
 * catch a limit).  Also the state's panic and warning functions.
 *
 * Part of the policy host (internal.h); uses Lua and core/ only.
 */
#include "policy/internal.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* Position of the nearest Lua code on the stack (table.sort(snap.cpus) is
 * reported where the policy called table.sort). */
void pol_push_where(lua_State *L)
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
int pol_ro_newindex(lua_State *L)
{
    pol_push_where(L);
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
void pol_ro_wrap(lua_State *L)
{
    lua_newtable(L);                    /* data proxy */
    lua_createtable(L, 0, 5);           /* data proxy mt */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, pol_ro_newindex);
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

int pol_valid_module_name(const char *s)
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

int pol_require(lua_State *L)
{
    struct cs_policy *p = getp(L);
    const char *name = luaL_checkstring(L, 1);
    const char *roots[2] = { p->moddir, p->dir };
    char rel[160], path[PATH_MAX];
    int i, found = 0, status;

    if (!pol_valid_module_name(name))
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
        found = pol_is_regular_file(path);
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

/* Build the sandbox in the state's global table. */
int pol_setup_sandbox(lua_State *L)
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
    lua_pushcfunction(L, pol_require);
    lua_setfield(L, -2, "require");

    for (i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].open, 0);
        lua_setfield(L, -2, libs[i].name);
    }
    lua_getfield(L, -1, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");                               /* no bytecode */
    lua_pop(L, 1);
    pol_bound_clib(L);

    luaL_newlib(L, cosched_lib);
    pol_add_fair_lp(L);
    lua_pushinteger(L, CS_POLICY_API);
    lua_setfield(L, -2, "api");
    lua_pushstring(L, PACKAGE_VERSION);
    lua_setfield(L, -2, "version");
    pol_ro_wrap(L);
    lua_setfield(L, -2, "cosched");
    lua_pop(L, 1);

    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
    lua_newtable(L);                       /* a unique "being loaded" marker */
    lua_setfield(L, LUA_REGISTRYINDEX, LOADING_KEY);
    return 0;
}

int pol_panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    cs_err("policy host: unprotected Lua error: %s", msg ? msg : "?");
    abort();
}

#if LUA_VERSION_NUM >= 504
void pol_warnf(void *ud, const char *msg, int tocont)
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

