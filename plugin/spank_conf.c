/*
 * spank_conf.c - plugstack.conf arguments and --cosched values (see spank_conf.h).
 * libc only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spank_conf.h"
#include "shared/proto.h"
#include "shared/duration.h"

#ifndef COSCHED_BINDIR
#define COSCHED_BINDIR "/usr/local/bin"
#endif
#ifndef COSCHED_PKGLIBDIR
#define COSCHED_PKGLIBDIR "/usr/local/lib/cosched"
#endif
#ifndef COSCHED_DATADIR
#define COSCHED_DATADIR "/usr/local/share/cosched"
#endif

/* K_MS: a duration (duration.h) kept in milliseconds, rounded; lo and hi in
 * ms; `plain` is the unit of a plain number in ms (1000: seconds, 1: the old
 * *_ms keys, which read as before). */
enum ktype { K_POLICY, K_INT, K_LIST, K_BOOL, K_PATH, K_PATH_NONE, K_START, K_MS };

/* The configuration, declared once: key, type, where, bounds, default, help. */
static const struct key {
    const char *name;
    enum ktype type;
    size_t off, size;
    long lo, hi;
    const char *def;
    const char *help;
    long plain;                   /* K_MS */
} keys[] = {
#define F(m) offsetof(struct cs_conf, m), sizeof(((struct cs_conf *)0)->m)
    { "default", K_POLICY, F(default_policy), 0, 0, "none",
      "policy of steps that ask without naming one, and of steps enforce=yes takes in" },
    { "quantum", K_MS, F(quantum_ms), 10, 60000, "1s", "the engine's time quantum, 10ms to 60s (plain number: seconds)",
      1000 },
    { "allowed", K_LIST, F(allowed), 0, 0, "all", "policies users may ask for (comma-separated)" },
    { "optout", K_BOOL, F(optout), 0, 1, "yes", "users may say --cosched=off" },
    { "enforce", K_BOOL, F(enforce), 0, 1, "no", "co-schedule steps that did not ask, under the default policy" },
    { "socket", K_PATH, F(socket), 0, 0, CS_PROTO_SOCKET, "the engine's socket" },
    { "start", K_START, F(start), 0, 0, "ondemand", "how the engine starts: ondemand, systemd or none" },
    { "cosched", K_PATH, F(cosched), 0, 0, COSCHED_BINDIR "/cosched", "the cosched binary (start=ondemand)" },
    { "idle_exit", K_MS, F(idle_exit_ms), 0, 86400000, "5m",
      "how long an on-demand engine stays without steps, up to 1d (0: stays; plain number: seconds)", 1000 },
    { "policydir", K_PATH, F(policydir), 0, 0, COSCHED_DATADIR "/lua/policies",
      "where the installed policies are (for --cosched=help and checks)" },
    { "timeout", K_MS, F(timeout_ms), 100, 3000, "2s",
      "most time a step waits for the engine (start included), 100ms to 3s (plain number: seconds)", 1000 },
    { "omp_shim", K_PATH_NONE, F(omp_shim), 0, 0, COSCHED_PKGLIBDIR "/libcosched-omp.so",
      "the OpenMP shim preloaded into co-scheduled tasks (none: they wait passively)" },
    { "extend_time", K_BOOL, F(extend_time), 0, 1, "yes",
      "extend a job's time limit by the time the engine held all its steps frozen" },
    /* the names before issue 16, still read: a plain number is milliseconds */
    { "quantum_ms", K_MS, F(quantum_ms), 10, 60000, "1000", "old name of quantum (plain number: milliseconds)", 1 },
    { "timeout_ms", K_MS, F(timeout_ms), 100, 3000, "2000", "old name of timeout (plain number: milliseconds)", 1 },
#undef F
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* "10ms", "60s", "1d": a bound for a message */
static void ms_text(long ms, char *buf, size_t len)
{
    if (ms >= 86400000 && ms % 86400000 == 0)
        snprintf(buf, len, "%ldd", ms / 86400000);
    else if (ms >= 1000 && ms % 1000 == 0)
        snprintf(buf, len, "%lds", ms / 1000);
    else
        snprintf(buf, len, "%ldms", ms);
}

static const char *start_names[] = { "ondemand", "systemd", "none" };

/* ------------------------------------------------------------------ names */

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= CS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

int cs_names_has(const struct cs_names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return 1;
    return 0;
}

void cs_names_join(const struct cs_names *s, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < s->n; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s->name[i]);
        if (w < 0 || (size_t)w >= len - used) {
            if (len > 4)
                strcpy(buf + len - 4, "...");
            return;
        }
        used += (size_t)w;
    }
    if (s->n == 0)
        snprintf(buf, len, "none");
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

int cs_policies_scan(const char *dir, struct cs_names *out)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    out->n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL && out->n < CS_MAX_POLICIES) {
        size_t n = strlen(e->d_name);
        if (n <= 4 || strcmp(e->d_name + n - 4, ".lua") != 0 || !name_ok(e->d_name, n - 4))
            continue;
        memcpy(out->name[out->n], e->d_name, n - 4);
        out->name[out->n++][n - 4] = '\0';
    }
    closedir(d);
    qsort(out->name, (size_t)out->n, CS_NAME_MAX, cmp_names);
    return 0;
}

void cs_policy_description(const char *dir, const char *name, char *buf, size_t len)
{
    char path[CS_PATH_MAX + CS_NAME_MAX + 8], line[1024];
    FILE *f;

    snprintf(buf, len, "(no description)");
    snprintf(path, sizeof path, "%s/%s.lua", dir, name);
    if ((f = fopen(path, "re")) == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        char *p = line + strspn(line, " \t"), *q;
        if (strncmp(p, "description", 11) != 0)
            continue;
        p += 11;
        p += strspn(p, " \t");
        if (*p != '=')
            continue;
        p++;
        p += strspn(p, " \t");
        if (*p != '"' && *p != '\'')
            continue;
        q = strchr(p + 1, *p);
        if (q == NULL)
            continue;
        snprintf(buf, len, "%.*s", (int)(q - p - 1), p + 1);
        break;
    }
    fclose(f);
}

/* ------------------------------------------------------------------ plugstack.conf */

static int parse_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "true")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "false")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* Parse a comma-separated list of policy names into s. */
static int parse_list(const char *v, struct cs_names *s, char *err, size_t errlen, const char *what)
{
    s->n = 0;
    while (*v) {
        size_t n = strcspn(v, ",");
        if (!name_ok(v, n)) {
            snprintf(err, errlen, "%s: '%.*s' is not a policy name (expected letters, digits, '_' or '-', "
                     "at most %d)", what, (int)(n > 64 ? 64 : n), v, CS_NAME_MAX - 1);
            return -1;
        }
        if (s->n == CS_MAX_POLICIES) {
            snprintf(err, errlen, "%s: more than %d policies", what, CS_MAX_POLICIES);
            return -1;
        }
        memcpy(s->name[s->n], v, n);
        s->name[s->n][n] = '\0';
        if (!cs_names_has(s, s->name[s->n]))
            s->n++;
        v += n;
        if (*v == ',' && *++v == '\0') {
            snprintf(err, errlen, "%s: empty policy name after the last ','", what);
            return -1;
        }
    }
    if (s->n == 0) {
        snprintf(err, errlen, "%s: expected a comma-separated list of policies, got nothing", what);
        return -1;
    }
    return 0;
}

static int set_key(struct cs_conf *c, const struct key *k, const char *v, char *err, size_t errlen)
{
    char *dst = (char *)c + k->off;
    long x;
    int b;

    switch (k->type) {
    case K_POLICY:
        if (!strcmp(v, "none")) {
            dst[0] = '\0';
            return 0;
        }
        if (!name_ok(v, strlen(v))) {
            snprintf(err, errlen, "key '%s': expected a policy name or none, got '%.64s'", k->name, v);
            return -1;
        }
        snprintf(dst, k->size, "%s", v);
        return 0;
    case K_INT:
        if (parse_long(v, k->lo, k->hi, &x) < 0) {
            snprintf(err, errlen, "key '%s': expected an integer between %ld and %ld, got '%.64s'", k->name,
                     k->lo, k->hi, v);
            return -1;
        }
        *(int *)dst = (int)x;
        return 0;
    case K_MS: {
        double s;
        char lo[32], hi[32];
        if (cs_duration_parse(v, k->plain / 1000.0, &s) < 0 || s * 1000 < k->lo - 0.5 || s * 1000 > k->hi + 0.5) {
            ms_text(k->lo, lo, sizeof lo);
            ms_text(k->hi, hi, sizeof hi);
            snprintf(err, errlen, "key '%s': expected a duration from %s to %s (e.g. 500ms, 2s, 5m; a plain number "
                     "is %s), got '%.64s'", k->name, lo, hi, k->plain == 1 ? "milliseconds" : "seconds", v);
            return -1;
        }
        *(int *)dst = (int)(s * 1000 + 0.5);
        return 0;
    }
    case K_BOOL:
        if (parse_bool(v, &b) < 0) {
            snprintf(err, errlen, "key '%s': expected yes or no, got '%.64s'", k->name, v);
            return -1;
        }
        *(int *)dst = b;
        return 0;
    case K_LIST: {
        char what[64];
        if (!strcmp(v, "all")) {
            ((struct cs_names *)dst)->n = 0;
            return 0;
        }
        snprintf(what, sizeof what, "key '%s'", k->name);
        return parse_list(v, (struct cs_names *)dst, err, errlen, what);
    }
    case K_PATH_NONE:
        if (!strcmp(v, "none")) {
            dst[0] = '\0';
            return 0;
        }
        /* fall through */
    case K_PATH:
        if (v[0] != '/' || strlen(v) >= k->size) {
            snprintf(err, errlen, "key '%s': expected an absolute path shorter than %zu bytes, got '%.64s'",
                     k->name, k->size, v);
            return -1;
        }
        snprintf(dst, k->size, "%s", v);
        return 0;
    case K_START:
        for (int i = 0; i < 3; i++)
            if (!strcmp(v, start_names[i])) {
                *(int *)dst = i;
                return 0;
            }
        snprintf(err, errlen, "key '%s': expected ondemand, systemd or none, got '%.64s'", k->name, v);
        return -1;
    }
    return -1;
}

void cs_conf_defaults(struct cs_conf *c)
{
    char err[256];
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS; i++)
        if (set_key(c, &keys[i], keys[i].def, err, sizeof err) < 0)
            abort();    /* a default that does not parse is a bug in the table */
}

static void key_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", keys[i].name);
}

int cs_conf_parse(struct cs_conf *c, int ac, char **av, char *err, size_t errlen)
{
    for (int i = 0; i < ac; i++) {
        const char *eq = strchr(av[i], '=');
        size_t n = eq ? (size_t)(eq - av[i]) : strlen(av[i]);
        const struct key *k = NULL;

        for (size_t j = 0; j < NKEYS; j++)
            if (strlen(keys[j].name) == n && !strncmp(keys[j].name, av[i], n))
                k = &keys[j];
        if (k == NULL) {
            char known[512];
            key_names(known, sizeof known);
            snprintf(err, errlen, "unknown key '%.*s' (known: %s)", (int)(n > 64 ? 64 : n), av[i], known);
            return -1;
        }
        if (eq == NULL) {
            snprintf(err, errlen, "key '%s' without a value (expected %s=VALUE)", k->name, k->name);
            return -1;
        }
        if (set_key(c, k, eq + 1, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int cs_conf_check(const struct cs_conf *c, const struct cs_names *installed, char *err, size_t errlen)
{
    char list[512];

    if (c->enforce && c->default_policy[0] == '\0') {
        snprintf(err, errlen, "key 'enforce': enforce=yes needs a default policy (default=POLICY)");
        return -1;
    }
    if (c->default_policy[0] && c->allowed.n > 0 && !cs_names_has(&c->allowed, c->default_policy)) {
        cs_names_join(&c->allowed, list, sizeof list);
        snprintf(err, errlen, "key 'default': policy '%s' is not in allowed (%s)", c->default_policy, list);
        return -1;
    }
    if (installed == NULL || installed->n == 0)
        return 0;
    cs_names_join(installed, list, sizeof list);
    if (c->default_policy[0] && !cs_names_has(installed, c->default_policy)) {
        snprintf(err, errlen, "key 'default': no policy '%s' in %s (installed: %s)", c->default_policy,
                 c->policydir, list);
        return -1;
    }
    for (int i = 0; i < c->allowed.n; i++)
        if (!cs_names_has(installed, c->allowed.name[i])) {
            snprintf(err, errlen, "key 'allowed': no policy '%s' in %s (installed: %s)", c->allowed.name[i],
                     c->policydir, list);
            return -1;
        }
    return 0;
}

void cs_conf_describe(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s=%s  %s\n", keys[i].name, keys[i].def, keys[i].help);
}

const struct cs_names *cs_conf_usable(const struct cs_conf *c, const struct cs_names *installed)
{
    return c->allowed.n > 0 ? &c->allowed : installed;
}

/* ------------------------------------------------------------------ --cosched=VALUE */

#define REQ_KEYS "priority=INT (-1000..1000), class=S|C|N, omp_shim=yes|no"

static int req_key(struct cs_req *r, const char *kv, size_t n, char *err, size_t errlen)
{
    const char *eq = memchr(kv, '=', n);
    size_t kn = eq ? (size_t)(eq - kv) : n;
    char v[64];

    if (eq == NULL || eq + 1 == kv + n) {
        snprintf(err, errlen, "--cosched: '%.*s' is not key=value (keys: " REQ_KEYS ")", (int)(n > 64 ? 64 : n),
                 kv);
        return -1;
    }
    if ((size_t)(kv + n - eq - 1) >= sizeof v) {
        snprintf(err, errlen, "--cosched: the value of '%.*s' is too long", (int)(kn > 64 ? 64 : kn), kv);
        return -1;
    }
    snprintf(v, sizeof v, "%.*s", (int)(kv + n - eq - 1), eq + 1);
    if (kn == 8 && !strncmp(kv, "priority", 8)) {
        if (parse_long(v, -1000, 1000, &r->priority) < 0) {
            snprintf(err, errlen, "--cosched: priority must be an integer between -1000 and 1000, got '%s'", v);
            return -1;
        }
        r->has_priority = 1;
        return 0;
    }
    if (kn == 5 && !strncmp(kv, "class", 5)) {
        if (strlen(v) != 1 || !strchr("SCN", v[0])) {
            snprintf(err, errlen, "--cosched: class must be S, C or N (streaming, cache-sensitive, "
                     "not sensitive), got '%s'", v);
            return -1;
        }
        r->cls = v[0];
        return 0;
    }
    if (kn == 8 && !strncmp(kv, "omp_shim", 8)) {
        int b;
        if (parse_bool(v, &b) < 0) {
            snprintf(err, errlen, "--cosched: omp_shim must be yes or no, got '%s'", v);
            return -1;
        }
        r->omp_shim_off = !b;
        return 0;
    }
    if (kn == 10 && !strncmp(kv, "quantum_ms", 10)) {
        snprintf(err, errlen, "--cosched: quantum_ms is not a step option: the quantum is the node's, set by "
                 "the administrator (valid keys: " REQ_KEYS ")");
        return -1;
    }
    snprintf(err, errlen, "--cosched: unknown key '%.*s' (valid keys: " REQ_KEYS ")", (int)(kn > 64 ? 64 : kn), kv);
    return -1;
}

int cs_req_parse(struct cs_req *r, const char *value, const struct cs_conf *c,
                 const struct cs_names *installed, char *err, size_t errlen)
{
    const struct cs_names *usable = cs_conf_usable(c, installed);
    const char *colon, *p;
    char list[512];
    size_t n;

    memset(r, 0, sizeof *r);
    r->given = 1;
    if (value == NULL)
        value = "";
    colon = strchr(value, ':');
    n = colon ? (size_t)(colon - value) : strlen(value);

    if (n == 4 && !strncmp(value, "help", 4) && !colon) {
        r->help = 1;
        return 0;
    }
    if (n == 3 && !strncmp(value, "off", 3)) {
        if (colon) {
            snprintf(err, errlen, "--cosched: 'off' takes no options (got '%.64s')", value);
            return -1;
        }
        if (!c->optout) {
            snprintf(err, errlen, "--cosched: 'off' is not allowed on this cluster: the administrator "
                     "co-schedules every step (optout=no)");
            return -1;
        }
        r->off = 1;
        return 0;
    }
    if (usable != NULL && usable->n > 0)
        cs_names_join(usable, list, sizeof list);
    else
        snprintf(list, sizeof list, "see --cosched=help");
    if (n == 0) {
        if (!colon) {
            snprintf(err, errlen, "--cosched: expected POLICY[:key=value,...], help or off (policies: %s)", list);
            return -1;
        }
        if (c->default_policy[0] == '\0') {
            snprintf(err, errlen, "--cosched: no policy named and this cluster has no default policy "
                     "(policies: %s)", list);
            return -1;
        }
    } else {
        if (!name_ok(value, n)) {
            snprintf(err, errlen, "--cosched: '%.*s' is not a policy name (policies: %s)", (int)(n > 64 ? 64 : n),
                     value, list);
            return -1;
        }
        memcpy(r->policy, value, n);
        r->policy[n] = '\0';
        if (installed != NULL && installed->n > 0 && !cs_names_has(installed, r->policy)) {
            snprintf(err, errlen, "--cosched: unknown policy '%s' (policies: %s)", r->policy, list);
            return -1;
        }
        if (c->allowed.n > 0 && !cs_names_has(&c->allowed, r->policy)) {
            snprintf(err, errlen, "--cosched: policy '%s' is not allowed on this cluster (policies: %s)",
                     r->policy, list);
            return -1;
        }
    }
    if (colon == NULL)
        return 0;
    p = colon + 1;
    if (*p == '\0') {
        snprintf(err, errlen, "--cosched: nothing after ':' (keys: " REQ_KEYS ")");
        return -1;
    }
    while (*p) {
        size_t kn = strcspn(p, ",");
        if (req_key(r, p, kn, err, errlen) < 0)
            return -1;
        p += kn;
        if (*p == ',' && *++p == '\0') {
            snprintf(err, errlen, "--cosched: nothing after the last ',' (keys: " REQ_KEYS ")");
            return -1;
        }
    }
    return 0;
}

int cs_decide(const struct cs_conf *c, const struct cs_req *r, char *policy)
{
    policy[0] = '\0';
    if (r != NULL && r->given) {
        if (r->off || r->help)
            return 0;
        snprintf(policy, CS_NAME_MAX, "%s", r->policy[0] ? r->policy : c->default_policy);
        return policy[0] != '\0';
    }
    if (c->enforce && c->default_policy[0]) {
        snprintf(policy, CS_NAME_MAX, "%s", c->default_policy);
        return 1;
    }
    return 0;
}
