/*
 * files.c - the simulated node's model files (sim.h; share/sim/README.md
 * has the formats): a node file (cs_sim_node_load, and the synthetic hwloc
 * topology it describes) and an apps file (cs_sim_apps_load: applications,
 * their phases and the empirical co-run matrix).  Every error is one
 * "FILE:LINE: what was expected" message.
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "core/util.h"
#include "sim/sim.h"

/* ================================================================ parsing */

struct lines {
    const char *file;
    FILE *f;
    int lineno;
    char *buf;
    size_t cap;
    char *w[512];
    int nw;
};

static int perr(const struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(const struct lines *l, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cs_err("%s:%d: %s", l->file, l->lineno, msg);
    return -1;
}

/* Next line with words; 0 at EOF.  A '#' starting a word starts a comment. */
static int next_line(struct lines *l)
{
    for (;;) {
        ssize_t n = getline(&l->buf, &l->cap, l->f);
        if (n < 0)
            return 0;
        l->lineno++;
        l->nw = 0;
        char *p = l->buf;
        for (;;) {
            while (*p && isspace((unsigned char)*p))
                p++;
            if (!*p || *p == '#')
                break;
            if (l->nw == (int)(sizeof l->w / sizeof l->w[0]))
                return perr(l, "too many words (at most %d)", (int)(sizeof l->w / sizeof l->w[0])), -1;
            l->w[l->nw++] = p;
            while (*p && !isspace((unsigned char)*p))
                p++;
            if (*p)
                *p++ = '\0';
        }
        if (l->nw)
            return 1;
    }
}

/* The rest of the line after word k, as written (for descriptions). */
static char *rest_of(struct lines *l, int k)
{
    size_t len = 0;
    for (int i = k; i < l->nw; i++)
        len += strlen(l->w[i]) + 1;
    char *s = calloc(1, len + 1);
    for (int i = k; i < l->nw; i++) {
        if (i > k)
            strcat(s, " ");
        strcat(s, l->w[i]);
    }
    return s;
}

static int num_unit(const char *s, double *out, const char *const *units, const double *scale)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v))
        return -1;
    for (int i = 0; units[i]; i++)
        if (strcmp(end, units[i]) == 0) {
            *out = v * scale[i];
            return 0;
        }
    return -1;
}

static int parse_plain(const char *s, double *out)
{
    static const char *const u[] = { "", NULL };
    static const double k[] = { 1 };
    return num_unit(s, out, u, k);
}

static int parse_size(const char *s, double *out)
{
    static const char *const u[] = { "", "B", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB", NULL };
    static const double k[] = { 1, 1, 1024.0, 1024.0, 1048576.0, 1048576.0, 1073741824.0, 1073741824.0,
                                1099511627776.0, 1099511627776.0 };
    return num_unit(s, out, u, k);
}

static int parse_ns(const char *s, double *out)
{
    static const char *const u[] = { "", "ns", "us", NULL };
    static const double k[] = { 1, 1, 1000 };
    return num_unit(s, out, u, k);
}

enum kind { K_INT, K_NUM, K_SIZE, K_NS, K_STR };

struct field {
    const char *name;
    enum kind kind;
    size_t off;
    double lo, hi;
    int required;
    double def;
    const char *help;           /* what a value is, for messages */
};

static int set_field(struct lines *l, const struct field *f, void *base, const char *val)
{
    double v;
    int ok;
    switch (f->kind) {
    case K_STR:
        *(char **)((char *)base + f->off) = strdup(val);
        return 0;
    case K_SIZE:
        ok = parse_size(val, &v) == 0;
        break;
    case K_NS:
        ok = parse_ns(val, &v) == 0;
        break;
    default:
        ok = parse_plain(val, &v) == 0;
        if (ok && f->kind == K_INT && v != floor(v))
            ok = 0;
        break;
    }
    if (!ok || v < f->lo || v > f->hi)
        return perr(l, "%s '%s': expected %s from %g to %g", f->name, val, f->help, f->lo, f->hi);
    if (f->kind == K_INT)
        *(int *)((char *)base + f->off) = (int)v;
    else
        *(double *)((char *)base + f->off) = v;
    return 0;
}

static int header(struct lines *l, const char *what)
{
    int r = next_line(l);
    if (r < 0)
        return -1;
    if (r == 0) {
        l->lineno = l->lineno ? l->lineno : 1;
        return perr(l, "empty file: expected the header 'cosched-sim %s 1'", what);
    }
    if (l->nw != 3 || strcmp(l->w[0], "cosched-sim") != 0 || strcmp(l->w[1], what) != 0)
        return perr(l, "expected the header 'cosched-sim %s 1' (format, kind, version)", what);
    if (strcmp(l->w[2], "1") != 0)
        return perr(l, "version '%s': this cosched reads version 1 of the %s format", l->w[2], what);
    return 0;
}

static int open_lines(struct lines *l, const char *path)
{
    memset(l, 0, sizeof *l);
    l->file = path;
    if ((l->f = fopen(path, "re")) == NULL) {
        cs_err("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void close_lines(struct lines *l)
{
    if (l->f)
        fclose(l->f);
    free(l->buf);
}

/* ================================================================ node */

#define NF(name, kind, member, lo, hi, req, def, help) \
    { name, kind, offsetof(struct cs_sim_node, member), lo, hi, req, def, help }
static const struct field node_fields[] = {
    NF("name", K_STR, name, 0, 0, 1, 0, "a name"),
    NF("description", K_STR, description, 0, 0, 0, 0, "text"),
    NF("packages", K_INT, packages, 1, 64, 1, 0, "an integer"),
    NF("numa_per_package", K_INT, numa_per_package, 1, 16, 1, 0, "an integer"),
    NF("llc_per_numa", K_INT, llc_per_numa, 1, 64, 1, 0, "an integer"),
    NF("cores_per_llc", K_INT, cores_per_llc, 1, 256, 1, 0, "an integer"),
    NF("llc_size", K_SIZE, llc_size, 65536, 1e12, 1, 0, "a size (16MB)"),
    NF("memory_per_numa", K_SIZE, memory_per_numa, 1048576, 1e15, 1, 0, "a size (64GB)"),
    NF("mem_bw", K_NUM, mem_bw, 0.1, 10000, 1, 0, "GB/s per memory controller"),
    NF("interconnect_bw", K_NUM, interconnect_bw, 0, 10000, 0, 0, "GB/s"),
    NF("freq", K_NUM, freq, 0.1, 10, 1, 0, "GHz"),
    NF("mem_latency", K_NS, mem_latency, 1, 10000, 1, 0, "a latency (80ns)"),
    NF("remote_latency", K_NS, remote_latency, 0, 10000, 0, 0, "a latency (50ns)"),
    NF("queue", K_NUM, queue, 0, 100, 0, 0.5, "a number"),
    NF("mlp", K_NUM, mlp, 0.1, 1000, 0, 4, "outstanding misses per thread"),
    NF("pollution", K_NUM, pollution, 0.001, 10000, 0, 3, "GB/s"),
    NF("sq_size", K_NUM, sq_size, 1, 1000, 0, 16, "entries"),
    NF("cpi_floor", K_NUM, cpi_floor, 0.01, 10, 0, 0.25, "cycles per instruction"),
    NF("cfs_imbalance", K_NUM, cfs_imbalance, 0, 10, 0, 0.1, "a number"),
};
#define NNODE_FIELDS (sizeof node_fields / sizeof node_fields[0])
#define CS_SIM_MAX_CORES 4096       /* cores of a node, all packages (share/sim/README.md) */

static const struct field *find_field(const struct field *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

static void known_list(const struct field *t, size_t n, char *buf, size_t len)
{
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", t[i].name);
}

void cs_sim_node_free(struct cs_sim_node *n)
{
    if (!n)
        return;
    free(n->file);
    free(n->name);
    free(n->description);
    free(n);
}

struct cs_sim_node *cs_sim_node_load(const char *path)
{
    struct lines l;
    struct cs_sim_node *n = calloc(1, sizeof *n);
    int seen[NNODE_FIELDS] = { 0 }, r;
    char known[1024];

    if (open_lines(&l, path) < 0) {
        free(n);
        return NULL;
    }
    if (header(&l, "node") < 0)
        goto fail;
    for (size_t i = 0; i < NNODE_FIELDS; i++)
        if (node_fields[i].kind != K_STR && node_fields[i].kind != K_INT)
            *(double *)((char *)n + node_fields[i].off) = node_fields[i].def;
    while ((r = next_line(&l)) > 0) {
        const struct field *f = find_field(node_fields, NNODE_FIELDS, l.w[0]);
        if (!f) {
            known_list(node_fields, NNODE_FIELDS, known, sizeof known);
            perr(&l, "unknown key '%s' (expected one of: %s)", l.w[0], known);
            goto fail;
        }
        if (seen[f - node_fields]) {
            perr(&l, "%s given twice (first on line %d)", f->name, seen[f - node_fields]);
            goto fail;
        }
        seen[f - node_fields] = l.lineno;
        if (l.nw < 2) {
            perr(&l, "%s: expected a value (%s)", f->name, f->help);
            goto fail;
        }
        if (f->kind == K_STR) {
            char *v = rest_of(&l, 1);
            *(char **)((char *)n + f->off) = v;
            if (f == &node_fields[0] && (l.nw != 2 || strpbrk(v, "/"))) {
                perr(&l, "name: expected one word without '/'");
                goto fail;
            }
            continue;
        }
        if (l.nw > 2) {
            perr(&l, "%s: expected one value, got '%s' after it", f->name, l.w[2]);
            goto fail;
        }
        if (set_field(&l, f, n, l.w[1]) < 0)
            goto fail;
    }
    if (r < 0)
        goto fail;
    for (size_t i = 0; i < NNODE_FIELDS; i++)
        if (node_fields[i].required && !seen[i]) {
            l.lineno++;
            perr(&l, "end of file: %s is missing (%s)", node_fields[i].name, node_fields[i].help);
            goto fail;
        }
    if ((double)n->packages * n->numa_per_package * n->llc_per_numa * n->cores_per_llc > CS_SIM_MAX_CORES) {
        /* the engine builds the hwloc topology of every core: a node at the
         * bounds of each key (16M cores) took minutes and gigabytes */
        l.lineno = seen[find_field(node_fields, NNODE_FIELDS, "cores_per_llc") - node_fields];
        perr(&l, "a node of %d x %d x %d x %d = %.0f cores (packages x numa_per_package x llc_per_numa x "
             "cores_per_llc): expected at most %d", n->packages, n->numa_per_package, n->llc_per_numa,
             n->cores_per_llc, (double)n->packages * n->numa_per_package * n->llc_per_numa * n->cores_per_llc,
             CS_SIM_MAX_CORES);
        goto fail;
    }
    if (n->packages * n->numa_per_package > 1 && n->interconnect_bw <= 0) {
        l.lineno = seen[find_field(node_fields, NNODE_FIELDS, "packages") - node_fields];
        perr(&l, "a node with %d NUMA nodes needs interconnect_bw (GB/s) > 0",
             n->packages * n->numa_per_package);
        goto fail;
    }
    n->file = strdup(path);
    close_lines(&l);
    return n;
fail:
    close_lines(&l);
    cs_sim_node_free(n);
    return NULL;
}

char *cs_sim_node_synthetic(const struct cs_sim_node *n)
{
    return cs_strdup_printf("synthetic:pack:%d numa:%d(memory=%.0f) l3:%d(size=%.0f) core:%d pu:1", n->packages,
                            n->numa_per_package, n->memory_per_numa, n->llc_per_numa, n->llc_size,
                            n->cores_per_llc);
}

/* ================================================================ apps */

#define AF(name, kind, member, lo, hi, req, def, help) \
    { name, kind, offsetof(struct cs_sim_app, member), lo, hi, req, def, help }
static const struct field app_fields[] = {
    AF("threads", K_INT, threads, 1, 4096, 1, 0, "an integer"),
    AF("work", K_NUM, work, 1, 1e18, 0, 0, "instructions per run"),
    AF("time", K_NUM, time, 1e-3, 1e7, 0, 0, "standalone seconds per run"),
    AF("ipc", K_NUM, ipc, 1e-3, 16, 1, 0, "instructions per cycle"),
    AF("bw_l1", K_NUM, bw_l1, 0, 1e5, 1, 0, "GB/s"),
    AF("bw_l2", K_NUM, bw_l2, 0, 1e5, 1, 0, "GB/s"),
    AF("bw_llc", K_NUM, bw_llc, 0, 1e5, 1, 0, "GB/s"),
    AF("footprint", K_SIZE, footprint, 0, 1e15, 0, 1073741824.0, "a size (512MB)"),
    AF("home", K_INT, home, -1, 1023, 0, -1, "a NUMA node number, -1 for first touch"),
    AF("scaling", K_NUM, scaling, 0, 1, 0, 1, "a parallel fraction"),
    AF("fold_loss", K_NUM, fold_loss, 0, 0.9, 0, 0.05, "a fraction"),
    AF("mlp", K_NUM, mlp, 0, 1000, 0, 0, "outstanding misses per thread (0: the node's)"),
    AF("llc_ws", K_SIZE, llc_ws, 0, 1e15, 0, 0, "a size"),
    AF("sensitivity", K_NUM, sensitivity, 0, 10, 0, 1, "a number"),
    AF("sync", K_NUM, sync, 0, 100, 0, 1, "a number"),
    AF("orb", K_NUM, orb, -1, 1, 0, -1, "a fraction of cycles, -1 for the model's"),
    AF("class", K_STR, cls, 0, 0, 0, 0, "S, C or N"),
};
#define NAPP_FIELDS (sizeof app_fields / sizeof app_fields[0])

void cs_sim_apps_free(struct cs_sim_apps *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->napps; i++) {
        free(a->apps[i].name);
        free(a->apps[i].phases);
    }
    free(a->apps);
    free(a->perf);
    free(a->file);
    free(a->name);
    free(a->description);
    free(a);
}

const struct cs_sim_app *cs_sim_app_find(const struct cs_sim_apps *a, const char *name)
{
    for (int i = 0; i < a->napps; i++)
        if (strcmp(a->apps[i].name, name) == 0)
            return &a->apps[i];
    return NULL;
}

static int app_index(const struct cs_sim_apps *a, const char *name)
{
    const struct cs_sim_app *p = cs_sim_app_find(a, name);
    return p ? (int)(p - a->apps) : -1;
}

static int parse_app(struct lines *l, struct cs_sim_apps *a)
{
    struct cs_sim_app *p;
    int seen[NAPP_FIELDS] = { 0 };
    char known[1024];

    if (l->nw < 2)
        return perr(l, "app: expected a name, then key=value pairs");
    for (const char *c = l->w[1]; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-+", *c))
            return perr(l, "app name '%s': expected letters, digits, '.', '_', '-', '+'", l->w[1]);
    if (app_index(a, l->w[1]) >= 0)
        return perr(l, "app %s is defined twice (first on line %d)", l->w[1],
                    cs_sim_app_find(a, l->w[1])->line);
    a->apps = realloc(a->apps, (a->napps + 1) * sizeof *a->apps);
    p = &a->apps[a->napps];
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < NAPP_FIELDS; i++)
        if (app_fields[i].kind == K_NUM || app_fields[i].kind == K_SIZE)
            *(double *)((char *)p + app_fields[i].off) = app_fields[i].def;
    p->home = -1;
    p->name = strdup(l->w[1]);
    p->line = l->lineno;
    a->napps++;
    for (int k = 2; k < l->nw; k++) {
        char *eq = strchr(l->w[k], '=');
        if (!eq || eq == l->w[k])
            return perr(l, "app %s: '%s': expected key=value", p->name, l->w[k]);
        *eq = '\0';
        const struct field *f = find_field(app_fields, NAPP_FIELDS, l->w[k]);
        if (!f) {
            known_list(app_fields, NAPP_FIELDS, known, sizeof known);
            return perr(l, "app %s: unknown key '%s' (expected one of: %s)", p->name, l->w[k], known);
        }
        if (seen[f - app_fields]++)
            return perr(l, "app %s: %s given twice", p->name, f->name);
        if (f->kind == K_STR) {
            const char *v = eq + 1;
            if (strlen(v) != 1 || !strchr("SCN", v[0]))
                return perr(l, "app %s: class '%s': expected S, C or N", p->name, v);
            p->cls = v[0];
            continue;
        }
        if (set_field(l, f, p, eq + 1) < 0)
            return -1;
    }
    for (size_t i = 0; i < NAPP_FIELDS; i++)
        if (app_fields[i].required && !seen[i])
            return perr(l, "app %s: %s= is missing (%s)", p->name, app_fields[i].name, app_fields[i].help);
    int has_work = seen[find_field(app_fields, NAPP_FIELDS, "work") - app_fields];
    int has_time = seen[find_field(app_fields, NAPP_FIELDS, "time") - app_fields];
    if (has_work == has_time)
        return perr(l, "app %s: expected exactly one of work= (instructions per run) or time= (standalone "
                    "seconds per run)", p->name);
    return 0;
}

static int parse_phase(struct lines *l, struct cs_sim_apps *a)
{
    int i;
    if (l->nw < 3 || (i = app_index(a, l->w[1])) < 0)
        return perr(l, "phase: expected an app defined above, then work=FRACTION [ipc=FACTOR] [bw=FACTOR]");
    struct cs_sim_app *p = &a->apps[i];
    struct cs_sim_phase ph = { 0, 1, 1 };
    int got_work = 0;
    for (int k = 2; k < l->nw; k++) {
        char *eq = strchr(l->w[k], '=');
        double v;
        if (!eq)
            return perr(l, "phase %s: '%s': expected key=value (work, ipc, bw)", p->name, l->w[k]);
        *eq = '\0';
        if (parse_plain(eq + 1, &v) < 0 || v <= 0 || v > 1000)
            return perr(l, "phase %s: %s '%s': expected a positive number", p->name, l->w[k], eq + 1);
        if (strcmp(l->w[k], "work") == 0) {
            if (v > 1)
                return perr(l, "phase %s: work '%s': expected a fraction of the run in (0, 1]", p->name, eq + 1);
            ph.work = v;
            got_work = 1;
        } else if (strcmp(l->w[k], "ipc") == 0) {
            ph.ipc = v;
        } else if (strcmp(l->w[k], "bw") == 0) {
            ph.bw = v;
        } else {
            return perr(l, "phase %s: unknown key '%s' (expected work, ipc, bw)", p->name, l->w[k]);
        }
    }
    if (!got_work)
        return perr(l, "phase %s: work=FRACTION is missing", p->name);
    double sum = ph.work;
    for (int k = 0; k < p->nphases; k++)
        sum += p->phases[k].work;
    if (sum > 1 + 1e-9)
        return perr(l, "phase %s: the phases' work adds up to %g, more than 1", p->name, sum);
    p->phases = realloc(p->phases, (p->nphases + 1) * sizeof *p->phases);
    p->phases[p->nphases++] = ph;
    return 0;
}

struct cs_sim_apps *cs_sim_apps_load(const char *path)
{
    struct lines l;
    struct cs_sim_apps *a = calloc(1, sizeof *a);
    int r, ncols = 0, *cols = NULL, *row_seen = NULL, cols_line = 0;

    if (open_lines(&l, path) < 0) {
        free(a);
        return NULL;
    }
    if (header(&l, "apps") < 0)
        goto fail;
    while ((r = next_line(&l)) > 0) {
        const char *k = l.w[0];
        if (strcmp(k, "name") == 0) {
            if (a->name || l.nw != 2 || strchr(l.w[1], '/')) {
                perr(&l, a->name ? "name given twice" : "name: expected one word without '/'");
                goto fail;
            }
            a->name = strdup(l.w[1]);
        } else if (strcmp(k, "description") == 0) {
            free(a->description);
            a->description = rest_of(&l, 1);
        } else if (strcmp(k, "app") == 0) {
            if (ncols) {
                perr(&l, "app: apps come before 'columns' (the matrix names apps defined above)");
                goto fail;
            }
            if (parse_app(&l, a) < 0)
                goto fail;
        } else if (strcmp(k, "phase") == 0) {
            if (parse_phase(&l, a) < 0)
                goto fail;
        } else if (strcmp(k, "columns") == 0) {
            if (ncols) {
                perr(&l, "columns given twice (first on line %d)", cols_line);
                goto fail;
            }
            if (l.nw < 2) {
                perr(&l, "columns: expected the names of the apps of the matrix");
                goto fail;
            }
            ncols = l.nw - 1;
            cols_line = l.lineno;
            cols = calloc(ncols, sizeof *cols);
            for (int c = 0; c < ncols; c++) {
                if ((cols[c] = app_index(a, l.w[c + 1])) < 0) {
                    perr(&l, "columns: '%s' is no app defined above", l.w[c + 1]);
                    goto fail;
                }
                for (int d = 0; d < c; d++)
                    if (cols[d] == cols[c]) {
                        perr(&l, "columns: %s named twice", l.w[c + 1]);
                        goto fail;
                    }
            }
            a->perf = malloc((size_t)a->napps * a->napps * sizeof *a->perf);
            for (int i = 0; i < a->napps * a->napps; i++)
                a->perf[i] = NAN;
            row_seen = calloc(a->napps, sizeof *row_seen);
        } else if (strcmp(k, "influence") == 0) {
            int row;
            if (!ncols) {
                perr(&l, "influence: expected 'columns APP...' before the matrix rows");
                goto fail;
            }
            if (l.nw < 2 || (row = app_index(a, l.w[1])) < 0) {
                perr(&l, "influence: expected an app defined above, then %d percentages", ncols);
                goto fail;
            }
            if (row_seen[row]) {
                perr(&l, "influence %s: row given twice (first on line %d)", l.w[1], row_seen[row]);
                goto fail;
            }
            row_seen[row] = l.lineno;
            if (l.nw - 2 != ncols) {
                perr(&l, "influence %s: expected %d percentages (one per column), got %d", l.w[1], ncols,
                     l.nw - 2);
                goto fail;
            }
            for (int c = 0; c < ncols; c++) {
                double v;
                if (parse_plain(l.w[c + 2], &v) < 0 || v <= 0 || v > 200) {
                    perr(&l, "influence %s: column %d (%s) '%s': expected a percentage in (0, 200]", l.w[1],
                         c + 1, a->apps[cols[c]].name, l.w[c + 2]);
                    goto fail;
                }
                a->perf[row * a->napps + cols[c]] = v / 100.0;
            }
            a->have_matrix = 1;
        } else {
            perr(&l, "unknown line '%s' (expected name, description, app, phase, columns or influence)", k);
            goto fail;
        }
    }
    if (r < 0)
        goto fail;
    if (!a->name) {
        l.lineno++;
        perr(&l, "end of file: 'name NAME' is missing");
        goto fail;
    }
    if (a->napps == 0) {
        l.lineno++;
        perr(&l, "end of file: no app defined ('app NAME threads=.. ipc=.. bw_l1=.. bw_l2=.. bw_llc=.. time=..')");
        goto fail;
    }
    for (int i = 0; i < a->napps; i++) {
        struct cs_sim_app *p = &a->apps[i];
        double sum = 0;
        for (int k = 0; k < p->nphases; k++)
            sum += p->phases[k].work;
        if (p->nphases && fabs(sum - 1) > 1e-6) {
            l.lineno = p->line;
            perr(&l, "app %s: its phases' work adds up to %g; expected 1", p->name, sum);
            goto fail;
        }
    }
    if (ncols)
        for (int c = 0; c < ncols; c++)
            if (!row_seen[cols[c]]) {
                l.lineno = cols_line;
                perr(&l, "columns: %s has no 'influence' row", a->apps[cols[c]].name);
                goto fail;
            }
    a->file = strdup(path);
    free(cols);
    free(row_seen);
    close_lines(&l);
    return a;
fail:
    free(cols);
    free(row_seen);
    close_lines(&l);
    cs_sim_apps_free(a);
    return NULL;
}
