/*
 * policy.c - the Lua policy host (policy.h): loading a policy into a state
 * of its own (policy_open: sandbox, file, its table checked, params, init()),
 * cs_policy_load() through the search path, the accessors and limits,
 * cs_policy_list(), cs_policy_search_path() and cs_policy_free().  The
 * other files of the host are named in internal.h, which says how a policy
 * is held.
 *
 * Part of the policy host (internal.h); uses Lua and core/ only.
 */
#include "policy/internal.h"

#include <dirent.h>
#include <sys/stat.h>

#ifndef COSCHED_DATADIR
#define COSCHED_DATADIR "/usr/local/share/cosched"
#endif

#define MEM_DEFAULT     ((size_t)64 << 20)
#define INSNS_DEFAULT   200000000ULL
#define NAME_MAX_LEN    64

/* cs_policy_limits(): for every policy loaded afterwards */
static size_t limit_mem = MEM_DEFAULT;
static uint64_t limit_insns = INSNS_DEFAULT;
static double limit_seconds;

char *pol_xprintf(const char *fmt, ...)
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

int pol_is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *datadir(void)
{
    return cs_datadir();
}

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
        return pol_verror(L, "the file returns %s, not a policy table "
                      "(end it with: return { api = 1, name = \"%s\", plan = ... })",
                      luaL_typename(L, t), p->name);

    lua_getfield(L, t, "api");
    if (lua_isnil(L, -1))
        return pol_verror(L, "the policy table has no api field (add api = %d)", CS_POLICY_API);
    if (!lua_isinteger(L, -1))
        return pol_verror(L, "api must be an integer (this cosched supports policy API %d)",
                      CS_POLICY_API);
    if (lua_tointeger(L, -1) != CS_POLICY_API)
        return pol_verror(L, "written for policy API %d, this cosched supports %d",
                      (int)lua_tointeger(L, -1), CS_POLICY_API);
    lua_pop(L, 1);

    lua_getfield(L, t, "name");
    if (lua_type(L, -1) != LUA_TSTRING)
        return pol_verror(L, "the policy table has no name (add name = \"%s\")", p->name);
    if (strcmp(lua_tostring(L, -1), p->name))
        return pol_verror(L, "the policy table says name = \"%s\" but the file is %s.lua "
                      "(the two must agree)", lua_tostring(L, -1), p->name);
    lua_pop(L, 1);

    lua_getfield(L, t, "description");
    if (!lua_isnil(L, -1)) {
        size_t n;
        const char *d;
        if (lua_type(L, -1) != LUA_TSTRING)
            return pol_verror(L, "description must be a string");
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
        return pol_verror(L, "shares_cpus must be true or false (it is %s)", luaL_typename(L, -1));
    p->shares_cpus = lua_toboolean(L, -1);
    lua_pop(L, 1);

    lua_getfield(L, t, "plan");
    if (!lua_isfunction(L, -1))
        return pol_verror(L, "plan must be a function (it is %s)", luaL_typename(L, -1));
    p->plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    lua_getfield(L, t, "init");
    if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
        return pol_verror(L, "init must be a function (it is %s)", luaL_typename(L, -1));
    if (lua_isfunction(L, -1))
        p->init_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    else
        lua_pop(L, 1);

    lua_getfield(L, t, "params");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
    } else if (!lua_istable(L, -1)) {
        return pol_verror(L, "params must be a table { key = { default = ..., help = \"...\" } }");
    } else {
        int d = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, d)) {
            const char *k;
            int kt = lua_type(L, -2);
            if (kt != LUA_TSTRING || !pol_valid_module_name(k = lua_tostring(L, -2)) || strchr(k, '.'))
                return pol_verror(L, "params: keys must be names made of letters, digits, '_' and '-'");
            if (!lua_istable(L, -1))
                return pol_verror(L, "params.%s must be a table { default = ..., help = \"...\" }", k);
            lua_getfield(L, -1, "default");
            ty = lua_type(L, -1);
            if (ty != LUA_TNIL && ty != LUA_TSTRING && ty != LUA_TNUMBER && ty != LUA_TBOOLEAN)
                return pol_verror(L, "params.%s.default must be a string, number or boolean", k);
            lua_pop(L, 1);
            lua_getfield(L, -1, "help");
            if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
                return pol_verror(L, "params.%s.help must be a string", k);
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
            return pol_verror(L, "--policy-opt %s: expected key=value", kv);
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
                return pol_verror(L, "--policy-opt %s: unknown parameter '%s' "
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
            return pol_verror(L, "--policy-opt %s: unknown parameter '%s' (accepted: %s)",
                          kv, lua_tostring(L, -3), lua_tostring(L, -1));
        }
        lua_pop(L, 1);
        lua_pushstring(L, eq + 1);
        lua_rawset(L, res);
    }
    lua_settop(L, res);
    pol_ro_wrap(L);
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
        pol_begin_call(p, LOAD_SECONDS);
        p->quiet = 1;
        lua_close(p->L);
    }
    hwloc_bitmap_free(p->tmp);
    hwloc_bitmap_free(p->used);
    hwloc_bitmap_free(p->kept);
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
    p->moddir = pol_xprintf("%s/lua", datadir());
    p->tmp = hwloc_bitmap_alloc();
    p->used = hwloc_bitmap_alloc();
    p->kept = hwloc_bitmap_alloc();
    p->nodes = hwloc_bitmap_alloc();
    if (!p->name || !p->file || !p->dir || !p->moddir || !p->tmp || !p->used || !p->kept || !p->nodes)
        goto oom;
    slash = strrchr(p->dir, '/');
    if (slash == p->dir)
        slash[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(p->dir, ".");

    p->L = lua_newstate(pol_lua_alloc, p);
    if (!p->L)
        goto oom;
    *(struct cs_policy **)lua_getextraspace(p->L) = p;
    lua_atpanic(p->L, pol_panic);
#if LUA_VERSION_NUM >= 504
    lua_setwarnf(p->L, pol_warnf, p);
#endif
    if (pol_call_bounded(p, pol_setup_sandbox, NULL, 0, LOAD_SECONDS, "setting up", err) < 0)
        goto fail;
    if (pol_call_bounded(p, open_protected, NULL, 0, p->seconds > LOAD_SECONDS ? p->seconds : LOAD_SECONDS,
                     "loading", err) < 0)
        goto fail;
    return p;
oom:
    *err = pol_xprintf("policy %s (%s): out of memory", name, file);
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
            path = valid_policy_name(base) ? pol_xprintf("%s/%s", dir, d) : NULL;
            if (path && pol_is_regular_file(path)) {
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
        file = pol_xprintf("%s/%s.lua", search[i], name);
        if (file && !pol_is_regular_file(file)) {
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
    if (pol_call_bounded(p, params_protected, &pa, 0, LOAD_SECONDS, "reading parameters", &err) < 0)
        goto fail;
    if (p->init_ref != LUA_NOREF &&
        pol_call_bounded(p, init_protected, NULL, 0,
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
            desc[i] = pol_xprintf("(shadowed by %s)", v[v[i].shadowed_by].file);
        } else {
            char *err = NULL;
            struct cs_policy *p = policy_open(v[i].name, v[i].file, 1, &err);
            if (p) {
                desc[i] = strdup(p->description && *p->description ? p->description : "-");
                cs_policy_free(p);
            } else {
                /* err is "policy NAME (FILE): what"; keep "what" */
                const char *what = err ? strstr(err, "): ") : NULL;
                desc[i] = pol_xprintf("(cannot load: %s)", what ? what + 3 : err ? err : "?");
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
