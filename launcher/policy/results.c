/*
 * results.c - plan()'s second and third values, read into the struct cs_plan
 * the call fills: characterization results (class, IPC, bandwidth, cores ...,
 * one per live job at most) and what the policy says of each job (a small
 * JSON object for `cosched status` and the trace).  cosched-policy(7).
 *
 * Part of the policy host (internal.h); uses Lua, core/ and core/json.h.
 */
#include "policy/internal.h"

#include <ctype.h>

#include "core/json.h"

/* A number field of a result: NaN when absent; lo: lowest value (or -HUGE_VAL). */
static double result_num(lua_State *L, int t, const char *k, double lo, int i, int id, const char *f)
{
    double v;
    pol_rawfield(L, t, k);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return NAN;
    }
    if (lua_type(L, -1) != LUA_TNUMBER)
        pol_verror(L, "characterized[%d] (job %d): %s%s must be a number (it is %s)", i, id, f, k,
               luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
    if (!isfinite(v) || v < lo)
        pol_verror(L, "characterized[%d] (job %d): %s%s = %f must be finite%s", i, id, f, k, v,
               lo > -HUGE_VAL ? " and >= 0" : "");
    lua_pop(L, 1);
    return v;
}

/* plan()'s optional second result: { { id =, class =, ipc_standalone =, ...}, ... } */
void pol_convert_results(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive)
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
        pol_verror(L, "plan() returned %s as its second value, expected a list of characterization "
               "results { { id = ..., class = ... }, ... }", luaL_typename(L, res));
    res = pol_plain_at(L, res);
    n = (lua_Integer)lua_rawlen(L, res);
    if (n > nlive)
        pol_verror(L, "plan() returned %d characterization results for %d live job%s", (int)n, nlive,
               nlive == 1 ? "" : "s");
    /* the plan's own: a pol_verror() below leaves it to cs_policy_plan()'s cs_plan_free() */
    out->results = calloc((size_t)n + 1, sizeof *out->results);
    if (!out->results)
        luaL_error(L, "out of memory");
    for (i = 1; i <= n; i++) {
        struct cs_stored *r = &out->results[i - 1].r;
        int t, ok, id = -1, k;
        long long v;

        memset(r, 0, sizeof *r);
        lua_rawgeti(L, res, i);
        t = pol_plain_at(L, -1);
        if (!lua_istable(L, t))
            pol_verror(L, "characterized[%d] is %s, expected { id = ..., class = ..., ... }", (int)i,
                   luaL_typename(L, t));
        pol_rawfield(L, t, "id");
        v = pol_int_at(L, -1, &ok);
        if (lua_isnil(L, -1))
            pol_verror(L, "characterized[%d] has no id", (int)i);
        if (!ok)
            pol_verror(L, "characterized[%d]: id %s is not an integer", (int)i, pol_describe(L, -1));
        for (k = 0; k < nlive; k++)
            if (live[k]->id == v)
                id = (int)v;
        if (id < 0)
            pol_verror(L, "characterized[%d]: job %d is not a live job", (int)i,
                   (int)(v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : v));
        for (k = 0; k < i - 1; k++)
            if (out->results[k].job == id)
                pol_verror(L, "characterized[%d]: job %d appears twice", (int)i, id);
        lua_pop(L, 1);
        out->results[i - 1].job = id;
        pol_check_fields(L, t, fields, lua_pushfstring(L, "characterized[%d] (job %d): ", (int)i, id), list);
        lua_pop(L, 1);

        pol_rawfield(L, t, "class");
        if (lua_type(L, -1) != LUA_TSTRING)
            pol_verror(L, "characterized[%d] (job %d): class must be \"S\", \"C\", \"N\" or \"unknown\" (it is %s)",
                   (int)i, id, luaL_typename(L, -1));
        const char *c = lua_tostring(L, -1);
        if (!strcmp(c, "S") || !strcmp(c, "C") || !strcmp(c, "N"))
            r->cls = c[0];
        else if (strcmp(c, "unknown") != 0)
            pol_verror(L, "characterized[%d] (job %d): class '%s' is not \"S\", \"C\", \"N\" or \"unknown\"",
                   (int)i, id, c);
        lua_pop(L, 1);
        r->ipc_standalone = result_num(L, t, "ipc_standalone", 0, (int)i, id, "");
        r->ipc_folded = result_num(L, t, "ipc_folded", 0, (int)i, id, "");
        r->fp = result_num(L, t, "fp", -HUGE_VAL, (int)i, id, "");
        r->mpki = result_num(L, t, "mpki", 0, (int)i, id, "");
        r->bw_l1 = r->bw_l2 = r->bw_llc = NAN;
        pol_rawfield(L, t, "bw");
        if (!lua_isnil(L, -1)) {
            int b = pol_plain_at(L, -1);
            if (!lua_istable(L, b))
                pol_verror(L, "characterized[%d] (job %d): bw must be a table { l1 =, l2 =, llc = } (it is %s)",
                       (int)i, id, luaL_typename(L, b));
            pol_check_fields(L, b, bw_fields, lua_pushfstring(L, "characterized[%d] (job %d): bw: ", (int)i, id),
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
            pol_rawfield(L, t, flags[k]);
            if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
                pol_verror(L, "characterized[%d] (job %d): %s must be true or false (it is %s)", (int)i, id,
                       flags[k], luaL_typename(L, -1));
            *fv[k] = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
        const char *cores[2] = { "cores_standalone", "cores_folded" };
        int *cv[2] = { &r->cores_standalone, &r->cores_folded };
        for (k = 0; k < 2; k++) {
            pol_rawfield(L, t, cores[k]);
            if (!lua_isnil(L, -1)) {
                v = pol_int_at(L, -1, &ok);
                if (!ok || v < 1 || v > 1000000)
                    pol_verror(L, "characterized[%d] (job %d): %s must be an integer >= 1 (it is %s)", (int)i,
                           id, cores[k], pol_describe(L, -1));
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
void pol_convert_info(lua_State *L, struct cs_policy *p, int res, struct cs_job **live, int nlive)
{
    struct cs_plan *out = p->out;

    if (lua_isnoneornil(L, res))
        return;
    if (!lua_istable(L, res))
        pol_verror(L, "plan() returned %s as its third value, expected { [job id] = { key = value, ... } }",
               luaL_typename(L, res));
    res = pol_plain_at(L, res);
    out->info = calloc((size_t)nlive + 1, sizeof *out->info);
    if (!out->info)
        luaL_error(L, "out of memory");
    for (int k = 0; k < nlive; k++) {
        size_t n = 2;              /* the object's size as written, kept under 2 KiB */
        json_t *o;
        lua_rawgeti(L, res, live[k]->id);
        pol_plain_at(L, -1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            continue;
        }
        if (!lua_istable(L, -1))
            pol_verror(L, "info[%d] is %s, expected a table of key = value", live[k]->id, luaL_typename(L, -1));
        /* kept in the plan before it is filled: a pol_verror() below leaves it to cs_plan_free() */
        out->info[out->ninfo].job = live[k]->id;
        out->info[out->ninfo++].json = o = json_object();
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING)
                pol_verror(L, "info[%d]: keys must be strings", live[k]->id);
            const char *key = lua_tostring(L, -2);
            json_t *v = NULL;
            size_t len = 0;
            for (const char *c = key; *c; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_'))
                    pol_verror(L, "info[%d]: key '%s' is not a name (letters, digits, _)", live[k]->id, key);
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
                pol_verror(L, "info[%d].%s is %s, expected a number, string or boolean", live[k]->id, key,
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

