/*
 * sim.c - the simulated node: model files, the performance models, virtual
 * time (sim.h; share/sim/README.md for the formats and the calibration).
 *
 * A step of the engine is, for the model, a configuration: which instances
 * run (not frozen) on which cores.  For a configuration the model computes,
 * per running job, a constant rate of instructions and of every event; the
 * configuration changes only through the control backend (cores, freeze,
 * thaw), an instance starting or ending, or a phase boundary, so time is
 * advanced in closed form from one such event to the next.
 *
 * Rates, per running job j (T threads, cores C, app calibrated at r cores):
 *
 *   CPU (the "linux" layer, shared by both interference models): the threads
 *   of every job spread evenly over its cores; a core carrying `load`
 *   threads gives each min(1, 1/load) of its time.  e_j = CPU core-seconds
 *   per second (never more than |C|, so CPU time is conserved).  A team
 *   whose threads share cores with other jobs' threads waits at its
 *   barriers for preempted members: x 1/(1 + sync (1 - g + imbalance)),
 *   g = e_j / min(T, |C|).  Threads of its own folded onto fewer cores
 *   (T > |C|): x (1 - fold_loss).  Scaling: per CPU second, sp(l)/l over
 *   the team's lanes l = min(T, |C|) (Amdahl speedup sp with parallel
 *   fraction `scaling`), relative to sp(r)/r; not over e, since sharing a
 *   core slows the serial part (one thread) as much as the parallel part.
 *
 *   analytic: CPI = cpi0 + m' L / mlp per running thread; m' = memory lines
 *   per instruction = m + (1 - keep) h, h = LLC hit lines per instruction,
 *   keep = the share of its LLC hits left by co-runners (pollution by their
 *   memory fill rate, capacity shared by their reuse working sets); L = the
 *   memory latency, L0 (1 + queue rho/(1 - rho)) per controller, rho its
 *   load (a fixed point: found by bisection), plus a remote latency and an
 *   interconnect queue for memory on another NUMA node.  cpi0 and mlp are
 *   derived from the app's standalone IPC and bandwidth so that a job alone
 *   reproduces them exactly.
 *
 *   empirical: the standalone rate times, per LLC domain, the product over
 *   co-runners i of 1 - w_i (1 - perf[i][j]) (paper 004 Table 1), w_i the
 *   co-runner's CPU in the domain relative to the job's own (at most 1).
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "sim/sim.h"

const char *const cs_sim_event_names[CS_SIM_NEVENTS] = {
    "SIM.INSTRUCTIONS", "SIM.CYCLES", "SIM.L1_LINES_IN", "SIM.L2_LINES_IN", "SIM.LLC_MISSES",
    "SIM.LLC_REFERENCES", "SIM.ORB_FULL_CYCLES", "SIM.MEM_LINES", "SIM.LOCAL_LINES", "SIM.REMOTE_LINES",
};

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

/* ================================================================ model */

/* derived per app phase */
struct dphase {
    double work;                /* instructions in this phase */
    double ipc, cpi0, mlp;      /* standalone IPC, core CPI, memory-level parallelism */
    double l1, l2, m, h;        /* lines per instruction: into L1, into L2, from memory, LLC hits */
    double ls;                  /* standalone memory latency, cycles */
};

struct sjob {
    struct cs_job *job;
    const struct cs_sim_app *app;
    int appi;
    int threads;
    int home;                   /* NUMA node OS index of its memory, -1 first touch */
    double ref;                 /* cores the app was calibrated on */
    double work;
    int nph;
    struct dphase *ph;
    double llc_ws;

    int live, frozen, placed;
    hwloc_bitmap_t cpus;
    int phase;
    double left;                /* instructions left in the current phase */
    double last_frac;
    double cpu_s;
    double acc[CS_SIM_NEVENTS], acc_since;
    double *mem;                /* share of its memory per NUMA node index */

    /* rates of the current configuration */
    double e, rate, cr[CS_SIM_NEVENTS];
};

struct cs_sim {
    const struct cs_sim_node *n;
    const struct cs_sim_apps *a;
    enum cs_sim_model model;
    const struct cs_topo *topo;
    double noise;
    uint64_t rng[4];
    double now;
    int dirty;
    int nj;
    struct sjob *j;
    int ncores, nllc, nnuma;
    /* cs_sim_record: distinct configurations, the current one (-1 none) */
    int rec, ncfgs, cur;
    struct cs_sim_config *cfgs;
    /* per core: busy share in the current configuration, busy seconds so far */
    double *busy, *busy_s;
};

/* ---------------------------------------------------------------- PRNG */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro(uint64_t *s)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static double uniform(struct cs_sim *s)
{
    return (xoshiro(s->rng) >> 11) * 0x1.0p-53;
}

static double gauss(struct cs_sim *s)
{
    double u = uniform(s), v = uniform(s);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* ---------------------------------------------------------------- helpers */

static double cycles_per_ns(const struct cs_sim *s)
{
    return s->n->freq;
}

static double lat_mem(const struct cs_sim *s, double rho)
{
    if (rho > 0.999)
        rho = 0.999;
    return s->n->mem_latency * cycles_per_ns(s) * (1 + s->n->queue * rho / (1 - rho));
}

static double lat_remote(const struct cs_sim *s, double rho)
{
    if (rho > 0.999)
        rho = 0.999;
    return s->n->remote_latency * cycles_per_ns(s) * (1 + s->n->queue * rho / (1 - rho));
}

/* Index in topo->numas of the node with OS index os (0 if none). */
static int numa_index(const struct cs_sim *s, int os)
{
    for (int N = 0; N < s->nnuma && N < s->topo->nnumas; N++)
        if (s->topo->numas[N].os_index == os)
            return N;
    return 0;
}

/* Amdahl speedup on k cores (linear below one core). */
static double speedup(double p, double k)
{
    if (k <= 1)
        return k;
    return k / (1 + (1 - p) * (k - 1));
}

static struct sjob *sj_of(struct cs_sim *s, const struct cs_job *j)
{
    if (j->id < 1 || j->id > s->nj || s->j[j->id - 1].job != j)
        return NULL;
    return &s->j[j->id - 1];
}

static void derive(struct cs_sim *s, struct sjob *sj)
{
    const struct cs_sim_app *p = sj->app;
    const struct cs_sim_node *n = s->n;
    int nph = p->nphases ? p->nphases : 1;
    double f = n->freq * 1e9;

    sj->ref = p->threads < s->ncores ? p->threads : s->ncores;
    sj->nph = nph;
    sj->ph = calloc(nph, sizeof *sj->ph);
    double rate0 = p->ipc * f * sj->ref;     /* standalone instructions/s (phase multipliers 1) */
    double time_work = 0;                     /* work from time= : standalone seconds * rates */
    for (int k = 0; k < nph; k++) {
        struct dphase *d = &sj->ph[k];
        double wipc = p->nphases ? p->phases[k].ipc : 1, wbw = p->nphases ? p->phases[k].bw : 1;
        double frac = p->nphases ? p->phases[k].work : 1;
        double rate = rate0 * wipc;
        d->ipc = p->ipc * wipc;
        d->l1 = p->bw_l1 * wbw * 1e9 / 64 / rate;
        d->l2 = p->bw_l2 * wbw * 1e9 / 64 / rate;
        d->m = p->bw_llc * wbw * 1e9 / 64 / rate;
        d->h = d->l2 > d->m ? d->l2 - d->m : 0;
        d->ls = lat_mem(s, p->bw_llc * wbw / n->mem_bw);
        double cpi = 1 / d->ipc, floor_ = n->cpi_floor < 0.5 * cpi ? n->cpi_floor : 0.5 * cpi;
        d->mlp = p->mlp > 0 ? p->mlp : n->mlp;
        d->cpi0 = cpi - d->m * d->ls / d->mlp;
        if (d->cpi0 < floor_) {       /* more memory-bound than its CPI allows: more parallel misses */
            d->mlp = d->m * d->ls / (cpi - floor_);
            d->cpi0 = floor_;
        }
        d->work = frac;               /* fraction for now */
        time_work += frac / rate;     /* seconds per instruction of a run, weighted */
    }
    sj->work = p->work > 0 ? p->work : p->time / time_work;
    for (int k = 0; k < nph; k++)
        sj->ph[k].work *= sj->work;
    sj->llc_ws = p->llc_ws;
}

struct cs_sim *cs_sim_new(const struct cs_sim_node *n, const struct cs_sim_apps *a, enum cs_sim_model model,
                          uint64_t seed, double noise, const struct cs_topo *topo)
{
    struct cs_sim *s = calloc(1, sizeof *s);
    uint64_t x = seed;

    s->n = n;
    s->a = a;
    s->model = model;
    s->topo = topo;
    s->noise = noise;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    s->ncores = topo->ncores;
    s->nllc = topo->nllcs > 0 ? topo->nllcs : 1;
    s->nnuma = topo->nnumas > 0 ? topo->nnumas : 1;
    s->now = 0;
    s->dirty = 1;
    s->busy = calloc(s->ncores ? s->ncores : 1, sizeof *s->busy);
    s->busy_s = calloc(s->ncores ? s->ncores : 1, sizeof *s->busy_s);
    cs_set_virtual_clock(&s->now);
    return s;
}

void cs_sim_free(struct cs_sim *s)
{
    if (!s)
        return;
    cs_set_virtual_clock(NULL);
    for (int i = 0; i < s->nj; i++) {
        free(s->j[i].ph);
        free(s->j[i].mem);
        if (s->j[i].cpus)
            hwloc_bitmap_free(s->j[i].cpus);
    }
    free(s->j);
    cs_sim_configs_free(s->cfgs, s->ncfgs);
    free(s->busy);
    free(s->busy_s);
    free(s);
}

int cs_sim_add_job(struct cs_sim *s, struct cs_job *j, const struct cs_sim_app *app, int home)
{
    if (j->id != s->nj + 1) {
        cs_err("simulate: job %d added out of order", j->id);
        return -1;
    }
    int ai = (int)(app - s->a->apps);
    if (s->model == CS_SIM_EMPIRICAL) {
        if (!s->a->have_matrix) {
            cs_err("%s: the empirical model needs a slowdown matrix (columns/influence lines); this file has "
                   "none (use --model analytic)", s->a->file);
            return -1;
        }
        if (isnan(s->a->perf[ai * s->a->napps + ai])) {
            cs_err("%s: app %s is not in the slowdown matrix; the empirical model can only run the apps of "
                   "its columns", s->a->file, app->name);
            return -1;
        }
    }
    if (home == -2)
        home = app->home;
    int found = home < 0;
    for (int N = 0; N < s->nnuma && !found; N++)
        found = s->topo->numas[N].os_index == home;
    if (!found) {
        cs_err("job %d (%s): home=%d but node %s has %d NUMA node(s) (0-%d)", j->id, app->name, home, s->n->name,
               s->nnuma, s->nnuma - 1);
        return -1;
    }
    s->j = realloc(s->j, (s->nj + 1) * sizeof *s->j);
    struct sjob *sj = &s->j[s->nj++];
    memset(sj, 0, sizeof *sj);
    sj->job = j;
    sj->app = app;
    sj->appi = ai;
    sj->threads = j->threads;
    sj->home = home;
    sj->cpus = hwloc_bitmap_alloc();
    sj->mem = calloc(s->nnuma, sizeof *sj->mem);
    derive(s, sj);
    return 0;
}

double cs_sim_work(struct cs_sim *s, struct cs_job *j)
{
    struct sjob *sj = sj_of(s, j);
    return sj ? sj->work : 0;
}

/* ---------------------------------------------------------------- evaluation */

/*
 * One configuration: n jobs, job k with phase ph[k] on cores mask cpus[k].
 * Fills e[k] (CPU core-seconds/s), rate[k] (instructions/s) and cr[k][...]
 * (events/s).  Pure: draws no randomness, changes nothing.
 */
struct cfg {
    int n;
    struct sjob **sj;
    hwloc_const_bitmap_t *cpus;
    int *ph;
    double *e, *rate;
    double (*cr)[CS_SIM_NEVENTS];
    double *busy;     /* NULL, or per core: the share of its time some thread runs, min(1, load) */
};

struct work {
    double *cpu;      /* [k * ncores + c] */
    double *wl;       /* [k * nllc + D] share of its CPU in LLC domain D */
    double *wn;       /* [k * nnuma + N] share of its CPU on NUMA node N */
    double *par;      /* parallel efficiency x fold x sync */
    double *keep;     /* LLC hits kept */
    double *mprime;   /* memory lines per instruction */
    double *lat;      /* memory latency seen, cycles */
    double *rho;      /* per controller, then the interconnect at [nnuma] */
};

static int core_llc(const struct cs_sim *s, int c)
{
    int d = s->topo->cores[c].llc;
    return d >= 0 ? d : 0;
}

static int core_numa(const struct cs_sim *s, int c)
{
    int d = s->topo->cores[c].numa;
    return d >= 0 ? d : 0;
}

/* Memory latency of job k for controller loads rho[]. */
static double job_latency(const struct cs_sim *s, const struct work *w, const struct sjob *sj, int k,
                          const double *rho)
{
    double L = 0;
    for (int N = 0; N < s->nnuma; N++) {
        if (sj->mem[N] <= 0)
            continue;
        double local = w->wn[k * s->nnuma + N];
        L += sj->mem[N] * (lat_mem(s, rho[N]) + (1 - local) * lat_remote(s, rho[s->nnuma]));
    }
    return L > 0 ? L : lat_mem(s, rho[0]);
}

static void analytic_rates(struct cs_sim *s, struct cfg *c, struct work *w, const double *rho)
{
    double f = s->n->freq * 1e9;
    for (int k = 0; k < c->n; k++) {
        const struct dphase *d = &c->sj[k]->ph[c->ph[k]];
        if (c->e[k] <= 0) {
            c->rate[k] = 0;
            continue;
        }
        w->lat[k] = job_latency(s, w, c->sj[k], k, rho);
        double cpi = d->cpi0 + w->mprime[k] * w->lat[k] / d->mlp;
        c->rate[k] = f * c->e[k] * w->par[k] / cpi;
    }
}

/* Loads the rates put on the controllers and the interconnect (GB/s / capacity). */
static void loads(struct cs_sim *s, struct cfg *c, struct work *w, double *out)
{
    for (int N = 0; N <= s->nnuma; N++)
        out[N] = 0;
    for (int k = 0; k < c->n; k++) {
        double gbs = c->rate[k] * w->mprime[k] * 64 / 1e9;
        for (int N = 0; N < s->nnuma; N++) {
            double t = gbs * c->sj[k]->mem[N];
            out[N] += t / s->n->mem_bw;
            if (s->n->interconnect_bw > 0)
                out[s->nnuma] += t * (1 - w->wn[k * s->nnuma + N]) / s->n->interconnect_bw;
        }
    }
}

/* Controller loads consistent with the rates they cause: rho = load(rho),
 * one controller at a time (the load a controller sees falls as its own
 * rho rises: bisection), a few sweeps. */
static void solve_memory(struct cs_sim *s, struct cfg *c, struct work *w)
{
    int nr = s->nnuma + 1;
    double ld[nr];
    for (int sweep = 0; sweep < (nr > 2 ? 6 : 1); sweep++)
        for (int N = 0; N < nr; N++) {
            if (N == s->nnuma && s->n->interconnect_bw <= 0)
                continue;
            double lo = 0, hi = 0.999;
            for (int it = 0; it < 40; it++) {
                w->rho[N] = 0.5 * (lo + hi);
                analytic_rates(s, c, w, w->rho);
                loads(s, c, w, ld);
                if (ld[N] > w->rho[N])
                    lo = w->rho[N];
                else
                    hi = w->rho[N];
            }
            w->rho[N] = 0.5 * (lo + hi);
        }
    analytic_rates(s, c, w, w->rho);
}

static void evaluate(struct cs_sim *s, struct cfg *c)
{
    const struct cs_sim_node *nd = s->n;
    int n = c->n, nc = s->ncores, nl = s->nllc, nn = s->nnuma;
    double load[nc], f = nd->freq * 1e9;
    struct work w;
    int *ncores = calloc(n ? n : 1, sizeof *ncores);
    int *foreign = calloc(n ? n : 1, sizeof *foreign);

    w.cpu = calloc((size_t)(n ? n : 1) * nc, sizeof *w.cpu);
    w.wl = calloc((size_t)(n ? n : 1) * nl, sizeof *w.wl);
    w.wn = calloc((size_t)(n ? n : 1) * nn, sizeof *w.wn);
    w.par = calloc(n ? n : 1, sizeof *w.par);
    w.keep = calloc(n ? n : 1, sizeof *w.keep);
    w.mprime = calloc(n ? n : 1, sizeof *w.mprime);
    w.lat = calloc(n ? n : 1, sizeof *w.lat);
    w.rho = calloc(nn + 1, sizeof *w.rho);

    /* CPU: threads spread over their cores, cores time-shared */
    for (int x = 0; x < nc; x++)
        load[x] = 0;
    for (int k = 0; k < n; k++) {
        for (int x = 0; x < nc; x++)
            if (hwloc_bitmap_intersects(s->topo->cores[x].pus, c->cpus[k]))
                ncores[k]++;
        if (!ncores[k])
            continue;
        double d = (double)c->sj[k]->threads / ncores[k];
        for (int x = 0; x < nc; x++)
            if (hwloc_bitmap_intersects(s->topo->cores[x].pus, c->cpus[k]))
                load[x] += d;
    }
    /* a core is busy while some thread runs on it: min(1, load); a job of T
     * threads alone on C > T cores leaves C - T of them idle */
    for (int x = 0; c->busy && x < nc; x++)
        c->busy[x] = load[x] < 1 ? load[x] : 1;
    for (int k = 0; k < n; k++) {
        struct sjob *sj = c->sj[k];
        const struct cs_sim_app *p = sj->app;
        c->e[k] = 0;
        if (!ncores[k])
            continue;
        double d = (double)sj->threads / ncores[k];
        for (int x = 0; x < nc; x++)
            if (hwloc_bitmap_intersects(s->topo->cores[x].pus, c->cpus[k])) {
                double share = load[x] > 1 ? 1 / load[x] : 1;
                double cpu = d * share;
                w.cpu[k * nc + x] = cpu;
                c->e[k] += cpu;
                if (load[x] - d > 1e-9)
                    foreign[k] = 1;
                w.wl[k * nl + core_llc(s, x)] += cpu;
                w.wn[k * nn + core_numa(s, x)] += cpu;
            }
        for (int D = 0; D < nl; D++)
            w.wl[k * nl + D] /= c->e[k];
        for (int N = 0; N < nn; N++)
            w.wn[k * nn + N] /= c->e[k];
        /* Amdahl per unit of CPU over the team's lanes (threads that can run
         * at once), not over e: time slicing stretches the serial part (one
         * thread, one lane's share of the CPU) as much as the parallel part,
         * so a share of many cores is worth no more per CPU second than the
         * same CPU as whole cores (README "linux"). */
        double lanes = sj->threads < ncores[k] ? sj->threads : ncores[k];
        double g = c->e[k] / lanes;
        double par = (speedup(p->scaling, lanes) / lanes) / (speedup(p->scaling, sj->ref) / sj->ref);
        if (sj->threads > ncores[k]) {
            double over = (double)sj->threads / ncores[k] - 1;
            par *= 1 - p->fold_loss * (over < 1 ? over : 1);
        }
        if (foreign[k])
            par /= 1 + p->sync * ((1 - g) + nd->cfs_imbalance);
        w.par[k] = par;
        w.keep[k] = 1;
        w.mprime[k] = sj->ph[c->ph[k]].m;
    }

    if (s->model == CS_SIM_ANALYTIC) {
        double fill[n ? n : 1], wsum[nl];
        for (int it = 0; it < 8; it++) {
            for (int k = 0; k < n; k++) {
                const struct dphase *d = &c->sj[k]->ph[c->ph[k]];
                w.mprime[k] = d->m + (1 - w.keep[k]) * d->h;
            }
            solve_memory(s, c, &w);
            if (n < 2)
                break;
            /* LLC: co-runners' fill rates pollute, reuse working sets share the capacity */
            for (int k = 0; k < n; k++)
                fill[k] = c->rate[k] * w.mprime[k] * 64 / 1e9;
            for (int D = 0; D < nl; D++) {
                wsum[D] = 0;
                for (int k = 0; k < n; k++)
                    wsum[D] += c->sj[k]->llc_ws * w.wl[k * nl + D];
            }
            double size = nd->llc_size;
            for (int k = 0; k < n; k++) {
                struct sjob *sj = c->sj[k];
                double keep = 0;
                for (int D = 0; D < nl; D++) {
                    double wk = w.wl[k * nl + D];
                    if (wk <= 0)
                        continue;
                    double other = 0;
                    for (int i = 0; i < n; i++)
                        if (i != k)
                            other += fill[i] * w.wl[i * nl + D];
                    double cap = 1;
                    if (sj->llc_ws > 0 && wsum[D] > size) {
                        double own = sj->llc_ws * wk > size ? size / (sj->llc_ws * wk) : 1;
                        cap = (size / wsum[D]) / own;
                        if (cap > 1)
                            cap = 1;
                    }
                    keep += wk * cap / (1 + sj->app->sensitivity * other / nd->pollution);
                }
                w.keep[k] = 0.5 * w.keep[k] + 0.5 * keep;
            }
        }
    } else {
        /* empirical: pairwise performance, multiplied over co-runners */
        for (int k = 0; k < n; k++) {
            struct sjob *sj = c->sj[k];
            const struct dphase *d = &sj->ph[c->ph[k]];
            double perf = 0;
            for (int D = 0; D < nl; D++) {
                double wk = w.wl[k * nl + D];
                if (wk <= 0)
                    continue;
                double own = c->e[k] * wk, pf = 1;
                for (int i = 0; i < n; i++) {
                    if (i == k || w.wl[i * nl + D] <= 0)
                        continue;
                    double wi = c->e[i] * w.wl[i * nl + D] / own;
                    if (wi > 1)
                        wi = 1;
                    pf *= 1 - wi * (1 - s->a->perf[c->sj[i]->appi * s->a->napps + sj->appi]);
                }
                perf += wk * pf;
            }
            c->rate[k] = f * c->e[k] * w.par[k] * d->ipc * perf;
            w.lat[k] = d->ls / (perf > 0.05 ? perf : 0.05);
        }
    }

    /* events per second */
    for (int k = 0; k < n; k++) {
        struct sjob *sj = c->sj[k];
        const struct dphase *d = &sj->ph[c->ph[k]];
        double *r = c->cr[k], R = c->rate[k];
        double mp = w.mprime[k];
        r[CS_SIM_INSTRUCTIONS] = R;
        r[CS_SIM_CYCLES] = c->e[k] * f;
        r[CS_SIM_L1_LINES] = R * d->l1;
        r[CS_SIM_L2_LINES] = R * d->l2;
        r[CS_SIM_LLC_MISSES] = R * mp;
        r[CS_SIM_LLC_REFS] = R * d->l2;
        r[CS_SIM_MEM_LINES] = R * mp;
        double local = 0;
        for (int N = 0; N < nn; N++)
            local += sj->mem[N] * w.wn[k * nn + N];
        r[CS_SIM_LOCAL_LINES] = R * mp * local;
        r[CS_SIM_REMOTE_LINES] = R * mp * (1 - local);
        double orb = sj->app->orb;
        if (orb < 0) {
            /* Little: misses in flight per thread = misses per cycle x latency */
            double ipc_t = r[CS_SIM_CYCLES] > 0 ? R / r[CS_SIM_CYCLES] : 0;
            double x = ipc_t * mp * w.lat[k] / nd->sq_size;
            orb = x * x * x * x / (1 + x * x * x * x);
        }
        r[CS_SIM_ORB_FULL] = orb * r[CS_SIM_CYCLES];
    }

    free(ncores);
    free(foreign);
    free(w.cpu);
    free(w.wl);
    free(w.wn);
    free(w.par);
    free(w.keep);
    free(w.mprime);
    free(w.lat);
    free(w.rho);
}

/* ---------------------------------------------------------------- recording */

/* Look the configuration of the n running jobs up (or add it); it is current
 * from now on.  The key has everything evaluate() reads of a job: cores,
 * phase, memory distribution (printed exactly, %a). */
static void record_config(struct cs_sim *s, struct sjob **sjs, int n)
{
    size_t klen = 0, dlen = 0;
    char *key = NULL, *desc = NULL;
    FILE *kf = open_memstream(&key, &klen), *df = open_memstream(&desc, &dlen);

    for (int k = 0; k < n; k++) {
        char *cpus = NULL;
        hwloc_bitmap_list_asprintf(&cpus, sjs[k]->cpus);
        fprintf(kf, "%d@%s/p%d/m", sjs[k]->job->id, cpus ? cpus : "?", sjs[k]->phase);
        for (int N = 0; N < s->nnuma; N++)
            fprintf(kf, "%s%a", N ? "," : "", sjs[k]->mem[N]);
        fputc(';', kf);
        fprintf(df, "%s%s@%s", k ? " + " : "", sjs[k]->job->name, cpus ? cpus : "?");
        free(cpus);
    }
    fclose(kf);
    fclose(df);
    for (s->cur = 0; s->cur < s->ncfgs; s->cur++)
        if (strcmp(s->cfgs[s->cur].key, key) == 0) {
            free(key);
            free(desc);
            return;
        }
    s->cfgs = realloc(s->cfgs, (s->ncfgs + 1) * sizeof *s->cfgs);
    struct cs_sim_config *c = &s->cfgs[s->ncfgs++];
    c->key = key;
    c->desc = desc;
    c->seconds = 0;
    c->runs = calloc(s->nj ? s->nj : 1, sizeof *c->runs);
    for (int k = 0; k < n; k++)
        c->runs[sjs[k]->job->id - 1] = sjs[k]->work > 0 ? sjs[k]->rate / sjs[k]->work : 0;
}

void cs_sim_record(struct cs_sim *s)
{
    s->rec = 1;
    s->cur = -1;
    s->dirty = 1;
}

struct cs_sim_config *cs_sim_take_configs(struct cs_sim *s, int *n)
{
    struct cs_sim_config *c = s->cfgs;
    *n = s->ncfgs;
    s->cfgs = NULL;
    s->ncfgs = 0;
    s->cur = -1;
    return c;
}

void cs_sim_configs_free(struct cs_sim_config *c, int n)
{
    for (int i = 0; i < n; i++) {
        free(c[i].key);
        free(c[i].desc);
        free(c[i].runs);
    }
    free(c);
}

/* Rates of the engine's current configuration into the jobs. */
static void evaluate_now(struct cs_sim *s)
{
    int n = 0;
    struct sjob *sjs[s->nj + 1];
    hwloc_const_bitmap_t cpus[s->nj + 1];
    int ph[s->nj + 1];
    double e[s->nj + 1], rate[s->nj + 1], cr[s->nj + 1][CS_SIM_NEVENTS];

    for (int i = 0; i < s->nj; i++) {
        struct sjob *sj = &s->j[i];
        sj->e = sj->rate = 0;
        memset(sj->cr, 0, sizeof sj->cr);
        if (!sj->live || sj->frozen || hwloc_bitmap_iszero(sj->cpus))
            continue;
        sjs[n] = sj;
        cpus[n] = sj->cpus;
        ph[n] = sj->phase;
        n++;
    }
    struct cfg c = { n, sjs, cpus, ph, e, rate, cr, s->busy };
    evaluate(s, &c);
    for (int k = 0; k < n; k++) {
        sjs[k]->e = e[k];
        sjs[k]->rate = rate[k];
        memcpy(sjs[k]->cr, cr[k], sizeof cr[k]);
    }
    s->dirty = 0;
    if (s->rec)
        record_config(s, sjs, n);
}

int cs_sim_steady(struct cs_sim *s, const int *ids, hwloc_const_bitmap_t const *cpus, int n, double *rates)
{
    struct sjob *sjs[n + 1];
    int ph[n + 1];
    double e[n + 1], rate[n + 1], cr[n + 1][CS_SIM_NEVENTS];

    for (int k = 0; k < n; k++) {
        if (ids[k] < 1 || ids[k] > s->nj)
            return -1;
        sjs[k] = &s->j[ids[k] - 1];
        ph[k] = 0;
        if (!sjs[k]->placed) {   /* memory where the first touch would put it */
            int home = sjs[k]->home >= 0 ? numa_index(s, sjs[k]->home) : -1;
            if (home < 0) {
                int first = hwloc_bitmap_first(cpus[k]), core = first >= 0 ? cs_topo_core_of_pu(s->topo, first) : 0;
                home = core >= 0 ? core_numa(s, core) : 0;
            }
            for (int N = 0; N < s->nnuma; N++)
                sjs[k]->mem[N] = N == home;
        }
    }
    /* each job's run: phase by phase, the others in their first phase */
    for (int k = 0; k < n; k++) {
        double t = 0;
        for (int p = 0; p < sjs[k]->nph; p++) {
            ph[k] = p;
            struct cfg c = { n, sjs, (hwloc_const_bitmap_t *)cpus, ph, e, rate, cr };
            evaluate(s, &c);
            if (rate[k] <= 0) {
                t = INFINITY;
                break;
            }
            t += sjs[k]->ph[p].work / rate[k];
        }
        ph[k] = 0;
        rates[k] = isfinite(t) && t > 0 ? 1 / t : 0;
    }
    for (int k = 0; k < n; k++)
        if (!sjs[k]->placed)
            memset(sjs[k]->mem, 0, s->nnuma * sizeof *sjs[k]->mem);
    return 0;
}

/* ---------------------------------------------------------------- memory */

static void publish_memory(struct cs_sim *s, struct sjob *sj)
{
    struct cs_job *j = sj->job;
    int nnodes = 1;
    for (int N = 0; N < s->nnuma; N++)
        if (s->topo->numas[N].os_index + 1 > nnodes)
            nnodes = s->topo->numas[N].os_index + 1;
    if (!j->mem_bytes)
        j->mem_bytes = calloc(nnodes, sizeof *j->mem_bytes);
    memset(j->mem_bytes, 0, nnodes * sizeof *j->mem_bytes);
    for (int N = 0; N < s->nnuma; N++)
        j->mem_bytes[s->topo->numas[N].os_index] = sj->mem[N] * sj->app->footprint;
    j->mem_nnodes = nnodes;
    j->mem_sampled = s->now;
}

/* First touch: the instance's memory goes to its home node, or to the node
 * of the first core it runs on. */
static void place_memory(struct cs_sim *s, struct sjob *sj)
{
    int home = sj->home >= 0 ? numa_index(s, sj->home) : -1;
    if (home < 0) {
        int pu = hwloc_bitmap_first(sj->cpus), core = pu >= 0 ? cs_topo_core_of_pu(s->topo, pu) : -1;
        home = core >= 0 ? core_numa(s, core) : 0;
    }
    for (int N = 0; N < s->nnuma; N++)
        sj->mem[N] = N == home;
    sj->placed = 1;
    publish_memory(s, sj);
}

/* ---------------------------------------------------------------- control */

int cs_sim_set_cpus(struct cs_sim *s, struct cs_job *j, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj)
        return -1;
    hwloc_bitmap_copy(sj->cpus, cpus);
    /* memory nodes: pages outside the new set move into it, spread evenly
     * (cpuset.memory_migrate); all nodes or none moves nothing */
    if (mems && !hwloc_bitmap_iszero(mems) && sj->placed) {
        int in[s->nnuma], nin = 0;
        double out = 0;
        for (int N = 0; N < s->nnuma; N++) {
            in[N] = hwloc_bitmap_isset(mems, (unsigned)s->topo->numas[N].os_index);
            nin += in[N];
            if (!in[N]) {
                out += sj->mem[N];
                sj->mem[N] = 0;
            }
        }
        if (nin && out > 0) {
            for (int N = 0; N < s->nnuma; N++)
                if (in[N])
                    sj->mem[N] += out / nin;
            publish_memory(s, sj);
        }
    }
    s->dirty = 1;
    return 0;
}

int cs_sim_freeze(struct cs_sim *s, struct cs_job *j, int frozen)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj)
        return -1;
    if (sj->frozen != frozen)
        s->dirty = 1;
    sj->frozen = frozen;
    if (!frozen && sj->live && !sj->placed)
        place_memory(s, sj);
    return 0;
}

uint64_t cs_sim_cpu_ns(struct cs_sim *s, struct cs_job *j)
{
    struct sjob *sj = sj_of(s, j);
    return sj ? (uint64_t)llround(sj->cpu_s * 1e9) : 0;
}

int cs_sim_cpu_idle(struct cs_sim *s, hwloc_const_bitmap_t cpus, double *idle_s)
{
    int k = 0;
    for (int c = hwloc_bitmap_first(cpus); c >= 0; c = hwloc_bitmap_next(cpus, c), k++) {
        int x = cs_topo_core_of_pu(s->topo, c);
        if (x < 0 || x >= s->ncores)
            return -1;
        idle_s[k] = s->now - s->busy_s[x];
    }
    return 0;
}

/* ---------------------------------------------------------------- engine */

int cs_sim_start(struct cs_sim *s, struct cs_job *j)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj) {
        cs_err("simulate: job %d (%s) is not in the model", j->id, j->name);
        return -1;
    }
    sj->live = 1;
    sj->phase = 0;
    sj->left = sj->ph[0].work;
    sj->last_frac = 0;
    sj->placed = 0;
    s->dirty = 1;
    return 0;
}

void cs_sim_kill(struct cs_sim *s, struct cs_job *j)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj || !sj->live)
        return;
    sj->last_frac = cs_sim_fraction(s, j);
    sj->live = 0;
    s->dirty = 1;
}

double cs_sim_fraction(struct cs_sim *s, struct cs_job *j)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj)
        return 0;
    if (!sj->live)
        return sj->last_frac;
    double done = 0;
    for (int p = 0; p < sj->phase; p++)
        done += sj->ph[p].work;
    done += sj->ph[sj->phase].work - sj->left;
    double fr = done / sj->work;
    return fr < 0 ? 0 : fr > 1 ? 1 : fr;
}

int cs_sim_advance(struct cs_sim *s, double until, struct cs_job **ended)
{
    int nended = 0;

    while (s->now < until) {
        if (s->dirty)
            evaluate_now(s);
        double dt = until - s->now;
        for (int i = 0; i < s->nj; i++) {
            struct sjob *sj = &s->j[i];
            if (sj->live && sj->rate > 0 && sj->left / sj->rate < dt)
                dt = sj->left / sj->rate;
        }
        if (dt < 0)
            dt = 0;
        for (int i = 0; i < s->nj; i++) {
            struct sjob *sj = &s->j[i];
            if (!sj->live || sj->e <= 0)
                continue;
            sj->left -= sj->rate * dt;
            sj->cpu_s += sj->e * dt;
            for (int v = 0; v < CS_SIM_NEVENTS; v++)
                sj->acc[v] += sj->cr[v] * dt;
        }
        for (int x = 0; x < s->ncores; x++)
            s->busy_s[x] += s->busy[x] * dt;
        if (s->rec && s->cur >= 0)
            s->cfgs[s->cur].seconds += (until - s->now <= dt) ? until - s->now : dt;
        s->now = (until - s->now <= dt) ? until : s->now + dt;
        for (int i = 0; i < s->nj; i++) {
            struct sjob *sj = &s->j[i];
            if (!sj->live || sj->rate <= 0 || sj->left > 1e-9 * sj->work)
                continue;
            if (sj->phase + 1 < sj->nph) {
                sj->phase++;
                sj->left = sj->ph[sj->phase].work;
                s->dirty = 1;
                continue;
            }
            sj->live = 0;
            sj->left = 0;
            sj->last_frac = 0;
            s->dirty = 1;
            ended[nended++] = sj->job;
        }
        if (nended)
            break;
    }
    return nended;
}

int cs_sim_read(struct cs_sim *s, struct cs_job *j, double v[CS_SIM_NEVENTS], double *seconds)
{
    struct sjob *sj = sj_of(s, j);
    if (!sj)
        return -1;
    for (int k = 0; k < CS_SIM_NEVENTS; k++) {
        double x = sj->acc[k];
        if (s->noise > 0) {
            x *= 1 + s->noise * gauss(s);
            if (x < 0)
                x = 0;
        }
        v[k] = x;
        sj->acc[k] = 0;
    }
    *seconds = s->now - sj->acc_since;
    sj->acc_since = s->now;
    return 0;
}

/* ------------------------------------------------------ the engine's host */

static int host_start(struct cs_engine *e, struct cs_job *j, pid_t *pid)
{
    *pid = 0;
    return cs_sim_start(e->host_arg, j);
}

/* The model runs to `until` or to the first completion in the step; the
 * instances that completed end as reaped ones do (exit 0).  1 when some did. */
static int host_wait(struct cs_engine *e, double until)
{
    struct cs_job *ended[e->njobs + 1];
    int n = cs_sim_advance(e->host_arg, until, ended);

    for (int k = 0; k < n; k++)
        cs_engine_ended(e, ended[k], 0, NULL);
    return n > 0;
}

static void host_abandon(struct cs_engine *e, struct cs_job *j)
{
    cs_sim_kill(e->host_arg, j);
}

/* Only a kill ends a model's instance, at once (a --window's end, an aborted run). */
static int host_kill(struct cs_engine *e, struct cs_job *j, int sig)
{
    cs_sim_kill(e->host_arg, j);
    return 1;
}

static void host_end(struct cs_engine *e, int complete)
{
    if (complete && cs_verbosity >= CS_LOG_INFO)
        cs_engine_summary(e);
}

/* No signal handling, no guardian, no job output: the jobs are the model's. */
const struct cs_host_ops cs_sim_host = {
    .name = "simulated node",
    .command = "simulate",
    .end = host_end,
    .start = host_start,
    .abandon = host_abandon,
    .kill = host_kill,
    .wait = host_wait,
};

struct cs_sim *cs_sim_of(const struct cs_engine *e)
{
    return e->host == &cs_sim_host ? e->host_arg : NULL;
}
