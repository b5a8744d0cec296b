/*
 * perfspec.c - an event's perf=SPEC in a counter profile (hw:, sw:, cache:,
 * raw:, pmu:; the syntax is at the top of profile.c) turned into the
 * perf_event type and config the perf backend opens.
 */
#include "config.h"
#include <linux/perf_event.h>
#include <stdint.h>
#include "counters/profile_parse.h"

/* --------------------------------------------------------------- perf= */

struct named { const char *name; unsigned long long config; };

static const struct named hw_events[] = {
    { "cycles", PERF_COUNT_HW_CPU_CYCLES }, { "cpu-cycles", PERF_COUNT_HW_CPU_CYCLES },
    { "instructions", PERF_COUNT_HW_INSTRUCTIONS },
    { "cache-references", PERF_COUNT_HW_CACHE_REFERENCES },
    { "cache-misses", PERF_COUNT_HW_CACHE_MISSES },
    { "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
    { "branch-instructions", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
    { "branch-misses", PERF_COUNT_HW_BRANCH_MISSES },
    { "bus-cycles", PERF_COUNT_HW_BUS_CYCLES },
    { "stalled-cycles-frontend", PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
    { "stalled-cycles-backend", PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
    { "ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES },
    { NULL, 0 },
};

static const struct named sw_events[] = {
    { "cpu-clock", PERF_COUNT_SW_CPU_CLOCK }, { "task-clock", PERF_COUNT_SW_TASK_CLOCK },
    { "page-faults", PERF_COUNT_SW_PAGE_FAULTS }, { "faults", PERF_COUNT_SW_PAGE_FAULTS },
    { "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES }, { "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
    { "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS }, { "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
    { "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN }, { "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
    { "alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS },
    { "emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS },
    { "dummy", PERF_COUNT_SW_DUMMY },
    { "cgroup-switches", 11 },  /* PERF_COUNT_SW_CGROUP_SWITCHES, Linux >= 5.13 */
    { NULL, 0 },
};

static const struct named cache_ids[] = {
    { "L1-dcache", PERF_COUNT_HW_CACHE_L1D }, { "L1-icache", PERF_COUNT_HW_CACHE_L1I },
    { "LLC", PERF_COUNT_HW_CACHE_LL }, { "dTLB", PERF_COUNT_HW_CACHE_DTLB },
    { "iTLB", PERF_COUNT_HW_CACHE_ITLB }, { "branch", PERF_COUNT_HW_CACHE_BPU },
    { "node", PERF_COUNT_HW_CACHE_NODE }, { NULL, 0 },
};

static const struct named cache_ops[] = {
    { "load", PERF_COUNT_HW_CACHE_OP_READ }, { "loads", PERF_COUNT_HW_CACHE_OP_READ },
    { "store", PERF_COUNT_HW_CACHE_OP_WRITE }, { "stores", PERF_COUNT_HW_CACHE_OP_WRITE },
    { "prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH },
    { "prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH }, { NULL, 0 },
};

static const struct named *find_named(const struct named *t, const char *s, size_t len)
{
    for (; t->name; t++)
        if (word_is(s, len, t->name))
            return t;
    return NULL;
}

static void list_names(const struct named *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (; t->name && k + 2 < len; t++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? ", " : "", t->name);
}

/* "L1-dcache-load-misses" -> config */
static int parse_cache_name(struct parse *ps, const char *s, uint64_t *config)
{
    const char *dash, *op, *res;
    const struct named *id = NULL, *o;
    char names[200];

    /* the cache id may itself contain a dash (L1-dcache): try every prefix */
    for (dash = strchr(s, '-'); dash; dash = strchr(dash + 1, '-'))
        if ((id = find_named(cache_ids, s, (size_t)(dash - s))) != NULL)
            break;
    if (id == NULL) {
        list_names(cache_ids, names, sizeof names);
        return fail(ps, NULL, "perf=cache:%s: expected a cache (%s) followed by -load, -store or -prefetch", s, names);
    }
    op = dash + 1;
    res = strchr(op, '-');
    o = find_named(cache_ops, op, res ? (size_t)(res - op) : strlen(op));
    if (o == NULL)
        return fail(ps, NULL, "perf=cache:%s: expected -load(s), -store(s) or -prefetch(es) after '%.*s'",
                    s, (int)(dash - s), s);
    if (res && strcmp(res, "-misses") != 0)
        return fail(ps, NULL, "perf=cache:%s: expected nothing or -misses after '%.*s', got '%s'",
                    s, (int)(res - s), s, res);
    *config = id->config | (o->config << 8) |
              ((uint64_t)(res ? PERF_COUNT_HW_CACHE_RESULT_MISS : PERF_COUNT_HW_CACHE_RESULT_ACCESS) << 16);
    return 0;
}

/* "event=0x51,umask=0x01,cmask=1,inv,config1=0x3f" or "0x01b7[,config1=..]" */
static int parse_terms(struct parse *ps, const char *spec, const char *terms, int need_event,
                       uint64_t *config, uint64_t *config1, int *as_terms)
{
    unsigned long long event = 0, umask = 0, cmask = 0, v;
    int have_event = 0, have_raw = 0, inv = 0, edge = 0, any = 0;
    const char *t = terms;

    *config1 = 0;
    *as_terms = 0;
    if (*t == '\0')
        return fail(ps, NULL, "perf=%s: expected event=0xNN[,umask=0xNN...] or 0xCONFIG after ':'", spec);
    while (*t) {
        const char *end = strchr(t, ','), *eq;
        size_t len = end ? (size_t)(end - t) : strlen(t), klen;

        eq = memchr(t, '=', len);
        klen = eq ? (size_t)(eq - t) : len;
        if (len == 0)
            return fail(ps, NULL, "perf=%s: empty term (two commas?)", spec);
        if (t == terms && eq == NULL && isdigit((unsigned char)*t)) {
            if (parse_uint(t, len, UINT64_MAX, &v) < 0)
                return fail(ps, NULL, "perf=%s: '%.*s' is not a number (0x hex or decimal)", spec, (int)len, t);
            *config = v;
            have_raw = 1;
        } else if (eq == NULL && (word_is(t, len, "inv") || word_is(t, len, "edge") || word_is(t, len, "any"))) {
            if (word_is(t, len, "inv"))
                inv = 1;
            else if (word_is(t, len, "edge"))
                edge = 1;
            else
                any = 1;
            *as_terms = 1;
        } else if (eq == NULL) {
            return fail(ps, NULL, "perf=%s: expected KEY=VALUE (event, umask, cmask, config1) or inv/edge/any, got '%.*s'",
                        spec, (int)len, t);
        } else {
            const char *val = eq + 1;
            size_t vlen = len - klen - 1;
            unsigned long long max = word_is(t, klen, "event") ? 0xfff
                                   : word_is(t, klen, "config1") ? UINT64_MAX : 0xff;
            if (!word_is(t, klen, "event") && !word_is(t, klen, "umask") && !word_is(t, klen, "cmask") &&
                !word_is(t, klen, "config1") && !word_is(t, klen, "inv") && !word_is(t, klen, "edge") &&
                !word_is(t, klen, "any"))
                return fail(ps, NULL, "perf=%s: unknown term '%.*s' (expected event, umask, cmask, inv, edge, any, config1)",
                            spec, (int)klen, t);
            if (parse_uint(val, vlen, max, &v) < 0)
                return fail(ps, NULL, "perf=%s: %.*s= expects a number from 0 to 0x%llx (0x hex or decimal), got '%.*s'",
                            spec, (int)klen, t, max, (int)vlen, val);
            if (word_is(t, klen, "event")) {
                event = v;
                have_event = 1;
            } else if (word_is(t, klen, "umask"))
                umask = v;
            else if (word_is(t, klen, "cmask"))
                cmask = v;
            else if (word_is(t, klen, "config1"))
                *config1 = v;
            else if (word_is(t, klen, "inv"))
                inv = v != 0;
            else if (word_is(t, klen, "edge"))
                edge = v != 0;
            else
                any = v != 0;
            if (!word_is(t, klen, "config1"))
                *as_terms = 1;
        }
        t = end ? end + 1 : t + len;
        if (end && *t == '\0')
            return fail(ps, NULL, "perf=%s: expected a term after the last ','", spec);
    }
    if (have_raw && *as_terms)
        return fail(ps, NULL, "perf=%s: give either a raw 0xCONFIG or event=/umask= terms, not both", spec);
    if (!have_raw && !have_event && (need_event || *as_terms))
        return fail(ps, NULL, "perf=%s: expected event=0xNN among the terms", spec);
    if (have_event)
        *config = (event & 0xff) | (((event >> 8) & 0xf) << 32) | (umask << 8) | ((uint64_t)edge << 18) |
                  ((uint64_t)any << 21) | ((uint64_t)inv << 23) | (cmask << 24);
    return 0;
}

int cs_profile_parse_perf(struct parse *ps, struct cs_event *ev, const char *spec)
{
    const char *colon = strchr(spec, ':'), *arg;
    char names[400];
    int as_terms = 0;

    ev->perf_spec = xstrdup(spec);
    if (colon == NULL)
        return fail(ps, NULL, "perf=%s: expected hw:NAME, sw:NAME, cache:NAME, raw:... or pmu:NAME:...", spec);
    arg = colon + 1;
    if (word_is(spec, (size_t)(colon - spec), "hw") || word_is(spec, (size_t)(colon - spec), "sw")) {
        int hw = spec[0] == 'h';
        const struct named *n = find_named(hw ? hw_events : sw_events, arg, strlen(arg));
        if (n == NULL) {
            list_names(hw ? hw_events : sw_events, names, sizeof names);
            return fail(ps, NULL, "perf=%s: unknown %s event '%s' (known: %s)", spec,
                        hw ? "hardware" : "software", arg, names);
        }
        ev->perf_kind = hw ? CS_PERF_HW : CS_PERF_SW;
        ev->perf_type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
        ev->perf_config = n->config;
        return 0;
    }
    if (word_is(spec, (size_t)(colon - spec), "cache")) {
        ev->perf_kind = CS_PERF_CACHE;
        ev->perf_type = PERF_TYPE_HW_CACHE;
        return parse_cache_name(ps, arg, &ev->perf_config);
    }
    if (word_is(spec, (size_t)(colon - spec), "raw")) {
        ev->perf_kind = CS_PERF_RAW;
        ev->perf_type = PERF_TYPE_RAW;
        if (parse_terms(ps, spec, arg, 1, &ev->perf_config, &ev->perf_config1, &as_terms) < 0)
            return -1;
        if (as_terms)
            ev->perf_terms = xstrdup(arg);
        return 0;
    }
    if (word_is(spec, (size_t)(colon - spec), "pmu")) {
        const char *c2 = strchr(arg, ':');
        size_t nlen = c2 ? (size_t)(c2 - arg) : 0;
        if (c2 == NULL || nlen == 0)
            return fail(ps, NULL, "perf=%s: expected pmu:NAME:TERMS (e.g. pmu:uncore_imc_*:event=0x04,umask=0x03)", spec);
        for (size_t i = 0; i < nlen; i++)
            if (!(isalnum((unsigned char)arg[i]) || arg[i] == '_' || (arg[i] == '*' && i == nlen - 1)))
                return fail(ps, NULL, "perf=%s: PMU name '%.*s' may hold letters, digits and _ and end in _*",
                            spec, (int)nlen, arg);
        if (arg[nlen - 1] == '*') {
            if (nlen < 3 || arg[nlen - 2] != '_')
                return fail(ps, NULL, "perf=%s: a PMU wildcard is written NAME_* (every NAME_<number>)", spec);
            ev->perf_pmu = xstrndup(arg, nlen - 2);
            ev->perf_pmu_all = 1;
        } else
            ev->perf_pmu = xstrndup(arg, nlen);
        ev->perf_kind = CS_PERF_PMU;
        ev->perf_type = CS_PERF_TYPE_DYNAMIC;
        if (parse_terms(ps, spec, c2 + 1, 1, &ev->perf_config, &ev->perf_config1, &as_terms) < 0)
            return -1;
        if (as_terms)
            ev->perf_terms = xstrdup(c2 + 1);
        return 0;
    }
    return fail(ps, NULL, "perf=%s: unknown kind '%.*s' (expected hw, sw, cache, raw or pmu)", spec,
                (int)(colon - spec), spec);
}
