/*
 * simulate.c - `cosched simulate`: the real engine and the real Lua policies
 * on a simulated node (sim.c), in virtual time; per policy the summary of
 * `cosched run` plus per-application throughput, or one JSON document.
 *
 *   cosched simulate --node FILE|NAME --apps FILE|NAME (--workload FILE | --mix APP,APP,...)
 *                    --policy P1,P2,... [--model analytic|empirical] [--window SECONDS]
 *                    [--quantum DUR] [--seed N] [--noise FRACTION] [--trace FILE] [--json] [--bound]
 *
 * Everything is checked before the first policy runs; a bad input is one
 * message and exit status 2.  Each policy gets a fresh model (same seed), a
 * fresh set of jobs and a fresh policy state, so the results of one policy
 * never depend on the others that ran before it.
 *
 * JSON (--json; the contract of share/eval/evaluate):
 *   {"node": NAME, "apps": NAME, "model": M, "seed": N, "window": S, "quantum": Q,
 *    "results": [{"policy": P, "virtual_s": .., "wall_s": .., "steps": ..,
 *                 "jobs": [{"id": .., "app": .., "completions": .., "throughput": .., "cpu_s": ..
 *                           [, "class": "S|C|N" when the policy characterized it]}],
 *                 "idle_frozen": {"nobody": .., "held": ..}
 *                 [, "configurations": N, "recorded_total": ..]}],
 *    "bound": {"configurations": N, "recorded": N, "standalone": {"ID": ..}, "floor": 1/n,
 *              "total"|"fair"|"maxmin": {"value": .., "sum": .., "normalised": {"ID": ..}, "schedule": ".."}}}
 * completions = finished runs + the fraction of the run cut by the window;
 * throughput = completions per virtual second; idle_frozen = the CPU-seconds
 * the node's cores sat idle while some job was frozen, on cores the plan
 * gave to no running job and on cores of a running job with fewer busy
 * threads (the model's) than cores (engine.c, idle_frozen()).  With --bound (sim/bound.c
 * says what the programs are): "standalone" = each job's runs/s alone on the
 * node, the unit of every normalised throughput; "value" = the program's
 * optimum (total, fair: a sum of normalised throughputs; maxmin: the least
 * job's), "sum" = the sum at that optimum; per result "recorded_total" = the
 * run's own total normalised throughput from the configurations it went
 * through (equal to its completions' up to rounding: the check that the
 * bound saw the run).
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"
#include "core/json.h"
#include "engine/engine.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "sim/sim.h"
#include "sim/bound.h"

enum {
    O_NODE = 256, O_APPS, O_WORKLOAD, O_MIX, O_POLICY, O_MODEL, O_WINDOW, O_QUANTUM, O_SEED, O_NOISE,
    O_TRACE, O_JSON, O_BOUND, O_ORACLE, O_POLICY_PATH, O_VERBOSE, O_QUIET, O_HELP, O_CALIBRATE,
};

static const struct cs_opt opts[] = {
    { 0, "node", 1, O_NODE, "FILE|NAME", "node model (NAME: share/sim/NAME.node; see " COSCHED_DOCDIR "/sim/README.md)" },
    { 0, "apps", 1, O_APPS, "FILE|NAME", "application models (NAME: share/sim/NAME.apps)" },
    { 0, "workload", 1, O_WORKLOAD, "FILE", "jobs, one app per line: APP [threads=N]" },
    { 0, "mix", 1, O_MIX, "APP,APP,...", "jobs given on the command line (one per app named)" },
    { 'p', "policy", 1, O_POLICY, "P1,P2,...", "policies to run, one after the other (default tft); P may be NAME:KEY=VALUE[:...]" },
    { 0, "model", 1, O_MODEL, "MODEL", "interference model: analytic (default) or empirical" },
    { 'w', "window", 1, O_WINDOW, "DURATION", "virtual time window, e.g. 60s, 10m; jobs restart until it closes (default: each runs once)" },
    { 't', "quantum", 1, O_QUANTUM, "DURATION", "time quantum, 10ms to 60s (default 1s)" },
    { 0, "seed", 1, O_SEED, "N", "seed of the model's random draws (default 1)" },
    { 0, "noise", 1, O_NOISE, "FRACTION", "relative noise on every simulated count, 0 to 1 (default 0)" },
    { 0, "trace", 1, O_TRACE, "FILE", "trace as cosched run writes it (several policies: FILE.POLICY)" },
    { 0, "json", 0, O_JSON, NULL, "print one JSON document on stdout" },
    { 0, "bound", 0, O_BOUND, NULL, "also the upper bounds of the LP over configurations (at most 64 jobs; needs GLPK)" },
    { 0, "oracle", 0, O_ORACLE, NULL, "the old name of --bound (the pairing oracle it replaced was no bound)" },
    { 0, "calibrate", 0, O_CALIBRATE, NULL, "print the model's calibration tables for the apps (no policy runs)" },
    { 0, "policy-path", 1, O_POLICY_PATH, "DIR", "look for policies in DIR first (repeatable)" },
    { 'v', "verbose", 0, O_VERBOSE, NULL, "more messages (repeat for debug)" },
    { 'q', "quiet", 0, O_QUIET, NULL, "only warnings and errors" },
    { 'h', "help", 0, O_HELP, NULL, "this text" },
    { 0 },
};

#define BAD(...) do { cs_err(__VA_ARGS__); goto out; } while (0)

/* --bound needs GLPK: say so in its help line when it is missing. */
static const char *help_note(int id)
{
    char why[160];

    return id == O_BOUND && !cs_lp_available(why, sizeof why) ? " (unavailable: built without GLPK)" : "";
}

static void help(void)
{
    printf("usage: cosched simulate --node FILE|NAME --apps FILE|NAME (--workload FILE | --mix APP,...) "
           "--policy P1,P2,... [options]\n\noptions:\n");
    cs_opt_help(stdout, opts, help_note);
}

/* A model file: a path (has a '/' or exists), else NAME.EXT in the data directory. */
static char *model_path(const char *spec, const char *ext)
{
    struct stat st;
    if (strchr(spec, '/') || stat(spec, &st) == 0)
        return strdup(spec);
    const char *d = cs_datadir();
    char *p = cs_strdup_printf("%s/sim/%s.%s", d, spec, ext);
    if (access(p, R_OK) == 0)
        return p;
    free(p);
    p = cs_strdup_printf("%s/share/sim/%s.%s", d, spec, ext);
    if (access(p, R_OK) == 0)
        return p;
    free(p);
    return NULL;
}

/* The message for a model NAME that was not found: the folders that exist,
 * the NAMEs they hold, and the closest one. */
static void model_missing(const char *opt, const char *spec, const char *ext)
{
    const char *d = cs_datadir();
    char *dirs[2] = { cs_strdup_printf("%s/sim", d), cs_strdup_printf("%s/share/sim", d) };
    char known[1024] = "", where[2 * PATH_MAX] = "";
    const char *names[64];
    char *owned[64];
    size_t n = 0;

    for (int k = 0; k < 2; k++) {
        DIR *dir = dirs[k] ? opendir(dirs[k]) : NULL;
        struct dirent *de;
        if (!dir)
            continue;
        snprintf(where + strlen(where), sizeof where - strlen(where), "%s%s", where[0] ? " and " : "", dirs[k]);
        while ((de = readdir(dir)) != NULL && n < 64) {
            size_t l = strlen(de->d_name), e = strlen(ext);
            if (l > e + 1 && de->d_name[l - e - 1] == '.' && strcmp(de->d_name + l - e, ext) == 0) {
                owned[n] = cs_strdup_printf("%.*s", (int)(l - e - 1), de->d_name);
                names[n] = owned[n];
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", n ? ", " : "", owned[n]);
                n++;
            }
        }
        closedir(dir);
    }
    const char *near = cs_closest(spec, names, n);
    if (n)
        cs_err("%s %s: no such file, and no %s.%s in %s (%s%s%sknown: %s)", opt, spec, spec, ext, where,
               near ? "did you mean " : "", near ? near : "", near ? "? " : "", known);
    else
        cs_err("%s %s: no such file, and no model folder (%s/sim or %s/share/sim; set COSCHED_DATADIR)", opt, spec,
               d, d);
    for (size_t i = 0; i < n; i++)
        free(owned[i]);
    free(dirs[0]);
    free(dirs[1]);
}

struct wjob { const struct cs_sim_app *app; int threads, explicit_threads, home; };

static int add_wjob(struct wjob **w, int *n, const struct cs_sim_apps *a, const char *name, const char *where)
{
    const struct cs_sim_app *app = cs_sim_app_find(a, name);
    if (!app) {
        char known[2048] = "";
        const char **names = calloc(a->napps ? a->napps : 1, sizeof *names);
        for (int i = 0; i < a->napps; i++) {
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     a->apps[i].name);
            if (names)
                names[i] = a->apps[i].name;
        }
        const char *near = names ? cs_closest(name, names, a->napps) : NULL;
        cs_err("%s: unknown app '%s' (%s%s%sapps of %s: %s)", where, name, near ? "did you mean " : "",
               near ? near : "", near ? "? " : "", a->file, known);
        free(names);
        return -1;
    }
    *w = realloc(*w, (*n + 1) * sizeof **w);
    (*w)[*n] = (struct wjob){ app, app->threads, 0, -2 };
    (*n)++;
    return 0;
}

static int load_workload(const char *path, const struct cs_sim_apps *a, struct wjob **w, int *n)
{
    FILE *f = fopen(path, "re");
    char *line = NULL, where[4200];
    size_t cap = 0;
    int lineno = 0, rc = 0;

    if (!f) {
        cs_err("--workload %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    while (getline(&line, &cap, f) >= 0) {
        char *save = NULL, *tok[8];
        int nt = 0;
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
            if (nt == 3) {
                cs_err("%s:%d: expected APP [threads=N] [home=NODE], got more after '%s'", path, lineno, tok[2]);
                rc = -1;
                goto done;
            }
            tok[nt++] = t;
        }
        if (!nt)
            continue;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (add_wjob(w, n, a, tok[0], where) < 0) {
            rc = -1;
            goto done;
        }
        for (int k = 1; k < nt; k++) {
            long v;
            struct wjob *wj = &(*w)[*n - 1];
            if (strncmp(tok[k], "threads=", 8) == 0 && !wj->explicit_threads &&
                cs_parse_long(tok[k] + 8, 1, 4096, &v) == 0) {
                wj->threads = (int)v;
                wj->explicit_threads = 1;
            } else if (strncmp(tok[k], "home=", 5) == 0 && wj->home == -2 &&
                       cs_parse_long(tok[k] + 5, 0, 1023, &v) == 0) {
                wj->home = (int)v;
            } else {
                cs_err("%s:%d: '%s': expected threads=N (1 to 4096) or home=NODE (a NUMA node number), each "
                       "at most once", path, lineno, tok[k]);
                rc = -1;
                goto done;
            }
        }
    }
    if (*n == 0) {
        cs_err("%s:%d: no job: expected lines 'APP [threads=N]'", path, lineno + 1);
        rc = -1;
    }
done:
    free(line);
    fclose(f);
    return rc;
}

struct result {
    const char *policy;
    double virtual_s, wall_s;
    unsigned long long steps;
    int status;
    double *completions, *cpu_s;
    char *cls;                 /* per job: the class its characterization found, 0 none */
    struct cs_sim_config *cfgs;   /* the model configurations the run went through (the bound's columns) */
    int ncfgs;
    double idle_nobody, idle_held;   /* CPU-s idle while a job was frozen (the engine's idle_*_s) */
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct cs_job **make_jobs(const struct wjob *w, int n)
{
    struct cs_job **jobs = calloc(n, sizeof *jobs);
    for (int i = 0; i < n; i++) {
        struct cs_job *j = calloc(1, sizeof *j);
        int same = 0;
        for (int k = 0; k < i; k++)
            same += w[k].app == w[i].app;
        j->id = i + 1;
        j->name = same ? cs_strdup_printf("%s-%d", w[i].app->name, same + 1) : strdup(w[i].app->name);
        j->argv = calloc(2, sizeof *j->argv);
        j->argv[0] = strdup(w[i].app->name);
        j->threads = w[i].threads;
        j->threads_explicit = w[i].explicit_threads;
        j->origin = cs_strdup_printf("simulated job %d", i + 1);
        jobs[i] = j;
    }
    return jobs;
}

struct setup {
    const struct cs_sim_node *node;
    const struct cs_sim_apps *apps;
    enum cs_sim_model model;
    struct cs_topo *topo;
    hwloc_bitmap_t managed;
    const struct cs_profile *profile;
    struct wjob *w;
    int n;
    uint64_t seed;
    double noise, quantum, window;
    char **search;
    int nsearch;
    int record;                /* --bound: record each run's configurations (cs_sim_record) */
};

/* A policy of --policy: NAME, or a variant NAME:KEY=VALUE[:KEY=VALUE...]
 * that runs NAME with those parameters (as --policy-opt does in cosched
 * run).  Results are reported under the whole spec, so variants of one
 * policy can be compared in one run (and against one bound). */
static struct cs_policy *load_variant(const char *spec, char **search, int nsearch)
{
    char *copy = strdup(spec), *popts[32], *save = NULL, *name, *kv;
    struct cs_policy *p = NULL;
    int npopts = 0;

    if (!copy)
        return NULL;
    if (!(name = strtok_r(copy, ":", &save))) {
        cs_err("--policy: an empty policy name in the list");
        goto out;
    }
    while ((kv = strtok_r(NULL, ":", &save)) != NULL) {
        if (!strchr(kv, '=') || kv[0] == '=' || npopts == 32) {
            cs_err("--policy '%s': expected NAME or NAME:KEY=VALUE[:KEY=VALUE...] (at most 32), got '%s'", spec, kv);
            goto out;
        }
        popts[npopts++] = kv;
    }
    p = cs_policy_load(name, search, nsearch, popts, npopts);
out:
    free(copy);
    return p;
}

static int run_policy(struct setup *su, const char *policy, const char *tracefile, struct result *r)
{
    struct cs_sim *sim = NULL;
    struct cs_policy *pol;
    struct cs_engine e = { .quantum = su->quantum, .window = su->window, .output = CS_OUT_INHERIT,
                           .kill_timeout = 0 };
    int rc = -1;

    e.jobs = make_jobs(su->w, su->n);
    e.njobs = su->n;
    e.run_id = strdup("sim");
    sim = cs_sim_new(su->node, su->apps, su->model, su->seed, su->noise, su->topo);
    if (su->record)
        cs_sim_record(sim);
    for (int i = 0; i < su->n; i++)
        if (cs_sim_add_job(sim, e.jobs[i], su->w[i].app, su->w[i].home) < 0)
            goto out;
    /* the engine: the model's node (shared by every policy's run: kept),
     * its control and counter backends, the policy, the trace */
    pol = load_variant(policy, su->search, su->nsearch);
    if (pol == NULL)
        goto out;
    if (cs_engine_assemble(&e, &(struct cs_engine_parts){ .topo = su->topo, .managed = su->managed, .policy = pol,
                                                          .ctl = &cs_control_sim, .cnt = &cs_counters_sim,
                                                          .profile = su->profile, .trace = tracefile,
                                                          .host = &cs_sim_host, .host_arg = sim }) < 0)
        goto out;
    double t0 = wall_now();
    r->status = cs_engine_run(&e);
    r->wall_s = wall_now() - t0;
    r->policy = policy;
    r->virtual_s = cs_now() - e.t0;
    r->steps = (unsigned long long)e.step_seq;
    r->idle_nobody = e.idle_nobody_s;
    r->idle_held = e.idle_held_s;
    r->completions = calloc(su->n, sizeof *r->completions);
    r->cpu_s = calloc(su->n, sizeof *r->cpu_s);
    r->cls = calloc(su->n, 1);
    for (int i = 0; i < su->n; i++) {
        struct cs_job *j = e.jobs[i];
        r->completions[i] = j->runs_done + (j->failed ? 0 : cs_sim_fraction(sim, j));
        r->cpu_s[i] = j->cpu_ns * 1e-9;
        r->cls[i] = j->result ? j->result->cls : 0;
    }
    r->cfgs = cs_sim_take_configs(sim, &r->ncfgs);
    rc = 0;
out:
    cs_engine_disassemble(&e, 1);
    cs_jobs_free(e.jobs, su->n);
    cs_sim_free(sim);
    return rc;
}

/* ------------------------------------------------------ bound, calibration */

/* --bound and --calibrate (sim/bound.c) on this invocation's model and jobs. */
static struct cs_job **bench_jobs(void *arg)
{
    const struct setup *su = arg;
    return make_jobs(su->w, su->n);
}

static struct cs_sim_bench bench_of(struct setup *su, struct cs_sim_bench_job *bj)
{
    for (int i = 0; i < su->n; i++)
        bj[i] = (struct cs_sim_bench_job){ su->w[i].app, su->w[i].threads, su->w[i].home };
    return (struct cs_sim_bench){ .node = su->node, .apps = su->apps, .model = su->model, .seed = su->seed,
                                  .topo = su->topo, .managed = su->managed, .n = su->n, .w = bj,
                                  .make_jobs = bench_jobs, .arg = su };
}

static int compute_bound(struct setup *su, struct result *res, int npols, struct cs_sim_bound *bd)
{
    struct cs_sim_bench_job bj[su->n > 0 ? su->n : 1];
    struct cs_sim_run runs[npols > 0 ? npols : 1];
    struct cs_sim_bench b = bench_of(su, bj);

    for (int p = 0; p < npols; p++)
        runs[p] = (struct cs_sim_run){ res[p].policy, res[p].cfgs, res[p].ncfgs, res[p].virtual_s };
    return cs_sim_bound(&b, runs, npols, bd);
}

static double recorded_total(const struct result *r, const struct cs_sim_bound *bd)
{
    struct cs_sim_run run = { r->policy, r->cfgs, r->ncfgs, r->virtual_s };
    return cs_sim_recorded_total(&run, bd);
}

static int calibrate(struct setup *su)
{
    struct cs_sim_bench_job bj[su->n > 0 ? su->n : 1];
    struct cs_sim_bench b = bench_of(su, bj);
    return cs_sim_calibrate(&b);
}

/* ---------------------------------------------------------------- output */

int cs_cmd_simulate(int argc, char **argv)
{
    struct cs_getopt g;
    const char *nodespec = NULL, *appspec = NULL, *workload = NULL, *mix = NULL, *policies = "tft",
               *tracefile = NULL, *model = "analytic";
    char **ppath = NULL, *nodefile = NULL, *appsfile = NULL, *synth = NULL, *polcopy = NULL;
    char **pols = NULL;
    int nppath = 0, npols = 0, json = 0, want_bound = 0, c, status = 2, quiet = 0, calib = 0;
    struct setup su = { .seed = 1, .quantum = 1.0 };
    struct cs_sim_node *node = NULL;
    struct cs_sim_apps *apps = NULL;
    struct cs_profile *profile = NULL;
    struct result *res = NULL;
    struct cs_sim_bound bd = { 0 };
    long v;

    cs_opt_start(&g, opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case O_NODE: nodespec = optarg; break;
        case O_APPS: appspec = optarg; break;
        case O_WORKLOAD: workload = optarg; break;
        case O_MIX: mix = optarg; break;
        case O_POLICY: policies = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_TRACE: tracefile = optarg; break;
        case O_JSON: json = 1; break;
        case O_BOUND: want_bound = 1; break;
        case O_ORACLE:
            cs_warn("--oracle is now --bound (an LP upper bound over configurations; " COSCHED_DOCDIR "/sim/README.md)");
            want_bound = 1;
            break;
        case O_CALIBRATE: calib = 1; break;
        case O_WINDOW:
            if (cs_parse_duration(optarg, &su.window) < 0 || su.window < 0.1 || su.window > 1e8)
                BAD("--window '%s': expected a duration from 0.1 s to 1e8 s (plain numbers are seconds)", optarg);
            break;
        case O_QUANTUM:
            if (cs_opt_quantum(optarg, &su.quantum) < 0)
                goto out;
            break;
        case O_SEED:
            if (cs_parse_long(optarg, 0, 0x7fffffffffffffffL, &v) < 0)
                BAD("--seed '%s': expected a non-negative integer", optarg);
            su.seed = (uint64_t)v;
            break;
        case O_NOISE: {
            char *end;
            errno = 0;
            su.noise = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(su.noise >= 0 && su.noise <= 1))
                BAD("--noise '%s': expected a fraction from 0 to 1 (0.05 = 5 %% relative noise)", optarg);
            break;
        }
        case O_POLICY_PATH:
            ppath = realloc(ppath, (nppath + 1) * sizeof *ppath);
            ppath[nppath++] = optarg;
            break;
        case O_VERBOSE: cs_verbosity++; break;
        case O_QUIET: cs_verbosity = CS_LOG_WARN; quiet = 1; break;
        case O_HELP:
            help();
            status = 0;
            goto out;
        case ':':
        default:
            cs_opt_refuse(&g, c, NULL, "simulate");
            goto out;
        }
    }
    (void)quiet;
    if (optind < argc)
        BAD("cosched simulate takes no arguments ('%s'); jobs come from --workload or --mix", argv[optind]);
    if (!nodespec)
        BAD("--node FILE|NAME is missing (e.g. --node paper001; " COSCHED_DOCDIR "/sim/README.md)");
    if (!appspec)
        BAD("--apps FILE|NAME is missing (e.g. --apps table2; " COSCHED_DOCDIR "/sim/README.md)");
    if (workload && mix)
        BAD("give --workload or --mix, not both");
    if (!workload && !mix && !calib)
        BAD(workload ? "give --workload or --mix, not both" : "no jobs: give --workload FILE or --mix APP,APP,...");
    if (strcmp(model, "analytic") == 0)
        su.model = CS_SIM_ANALYTIC;
    else if (strcmp(model, "empirical") == 0)
        su.model = CS_SIM_EMPIRICAL;
    else
        BAD("--model '%s': expected analytic or empirical", model);

    if (!(nodefile = model_path(nodespec, "node"))) {
        model_missing("--node", nodespec, "node");
        goto out;
    }
    if (!(appsfile = model_path(appspec, "apps"))) {
        model_missing("--apps", appspec, "apps");
        goto out;
    }
    if (!(node = cs_sim_node_load(nodefile)) || !(apps = cs_sim_apps_load(appsfile)))
        goto out;
    su.node = node;
    su.apps = apps;
    synth = cs_sim_node_synthetic(node);
    if (!(su.topo = cs_topo_load(synth)))
        BAD("%s: hwloc cannot build the node's topology (%s)", nodefile, synth);
    su.managed = hwloc_bitmap_dup(su.topo->all_pus);

    if (workload) {
        if (load_workload(workload, apps, &su.w, &su.n) < 0)
            goto out;
    } else if (!mix) {
        for (int i = 0; i < apps->napps; i++)
            add_wjob(&su.w, &su.n, apps, apps->apps[i].name, "--calibrate");
    } else {
        char *copy = strdup(mix), *save = NULL;
        int bad = 0;
        for (char *t = strtok_r(copy, ",", &save); t && !bad; t = strtok_r(NULL, ",", &save))
            bad = add_wjob(&su.w, &su.n, apps, t, "--mix") < 0;
        free(copy);
        if (bad)
            goto out;
        if (su.n == 0)
            BAD("--mix '%s': expected APP,APP,...", mix);
    }
    int ncores = su.topo->ncores;
    for (int i = 0; i < su.n; i++) {
        if (su.w[i].threads > ncores) {
            if (su.w[i].explicit_threads)
                BAD("job %d (%s): %d threads but node %s has %d cores", i + 1, su.w[i].app->name, su.w[i].threads,
                    node->name, ncores);
            su.w[i].threads = ncores;
        }
    }
    if (calib) {
        status = calibrate(&su) < 0 ? 1 : 0;
        goto out;
    }
    if (want_bound) {
        char why[160];
        if (!cs_lp_available(why, sizeof why))
            BAD("--bound: %s", why);
        if (su.n > CS_SIM_BOUND_MAX_JOBS)
            BAD("--bound: at most %d jobs (%d given): the LP has a column per pair", CS_SIM_BOUND_MAX_JOBS, su.n);
        su.record = 1;
    }

    /* policies: every one must load before any runs */
    su.search = cs_policy_search_path(ppath, nppath, &su.nsearch);
    polcopy = strdup(policies);
    {
        char *save = NULL;
        for (char *t = strtok_r(polcopy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            for (int k = 0; k < npols; k++)
                if (strcmp(pols[k], t) == 0)
                    BAD("--policy: %s is named twice", t);
            struct cs_policy *p = load_variant(t, su.search, su.nsearch);
            if (!p)
                goto out;
            cs_policy_free(p);
            pols = realloc(pols, (npols + 1) * sizeof *pols);
            pols[npols++] = t;
        }
    }
    if (npols == 0)
        BAD("--policy '%s': expected P1,P2,... (`cosched policies` lists them)", policies);
    if (!(profile = cs_profile_find("sim", NULL, 0)))
        goto out;
    su.profile = profile;
    {
        /* the model must be able to run every job before any policy runs */
        struct cs_job **jobs = make_jobs(su.w, su.n);
        struct cs_sim *s = cs_sim_new(node, apps, su.model, su.seed, 0, su.topo);
        int bad = 0;
        for (int i = 0; i < su.n && !bad; i++)
            bad = cs_sim_add_job(s, jobs[i], su.w[i].app, su.w[i].home) < 0;
        cs_sim_free(s);
        cs_jobs_free(jobs, su.n);
        if (bad)
            goto out;
    }
    if (tracefile) {
        FILE *t = cs_fopen_write(tracefile);
        if (!t)
            BAD("--trace %s: %s", tracefile, strerror(errno));
        fclose(t);
    }

    char win[48] = "";
    if (su.window > 0)
        snprintf(win, sizeof win, ", window %g s", su.window);
    cs_info("simulate: node %s, apps %s, model %s, %d job(s), %d polic%s, quantum %g s%s", node->name, apps->name,
            model, su.n, npols, npols == 1 ? "y" : "ies", su.quantum, win);
    res = calloc(npols, sizeof *res);
    status = 0;
    for (int k = 0; k < npols; k++) {
        char *tf = tracefile ? (npols == 1 ? strdup(tracefile) : cs_strdup_printf("%s.%s", tracefile, pols[k])) : NULL;
        int rc = run_policy(&su, pols[k], tf, &res[k]);
        free(tf);
        if (rc < 0) {
            status = 1;
            goto out;
        }
        if (res[k].status && !status)
            status = res[k].status;
    }
    if (want_bound && compute_bound(&su, res, npols, &bd) < 0) {
        status = 1;
        goto out;
    }

    if (json) {
        /* reals with 10 significant digits, as "%.10g" wrote them */
        json_t *results = json_array();
        for (int k = 0; k < npols; k++) {
            struct result *r = &res[k];
            json_t *jobs = json_array(), *o;
            for (int i = 0; i < su.n; i++) {
                json_t *jo = json_pack("{s:i, s:o, s:o, s:o, s:o}", "id", i + 1, "app",
                                       cs_json_text(su.w[i].app->name), "completions",
                                       cs_json_sig(r->completions[i], 10), "throughput",
                                       cs_json_sig(r->virtual_s > 0 ? r->completions[i] / r->virtual_s : 0, 10),
                                       "cpu_s", cs_json_sig(r->cpu_s[i], 10));
                if (jo && r->cls[i])
                    json_object_set_new(jo, "class", json_stringn(&r->cls[i], 1));
                json_array_append_new(jobs, jo);
            }
            o = json_pack("{s:o, s:o, s:o, s:I, s:o}", "policy", cs_json_text(r->policy), "virtual_s",
                          cs_json_sig(r->virtual_s, 10), "wall_s", cs_json_sig(r->wall_s, 10), "steps",
                          (json_int_t)r->steps, "jobs", jobs);
            if (o)
                json_object_set_new(o, "idle_frozen", json_pack("{s:o, s:o}", "nobody", cs_json_sig(r->idle_nobody, 10),
                                                                 "held", cs_json_sig(r->idle_held, 10)));
            if (o && want_bound) {
                json_object_set_new(o, "configurations", json_integer(r->ncfgs));
                json_object_set_new(o, "recorded_total", cs_json_sig(recorded_total(r, &bd), 10));
            }
            json_array_append_new(results, o);
        }
        json_t *doc = json_pack("{s:o, s:o, s:o, s:I, s:o, s:o, s:o}", "node", cs_json_text(node->name), "apps",
                                cs_json_text(apps->name), "model", cs_json_text(model), "seed",
                                (json_int_t)su.seed, "window", cs_json_sig(su.window, 10), "quantum",
                                cs_json_sig(su.quantum, 10), "results", results);
        if (doc && want_bound) {
            json_t *st = json_object(), *b;
            char key[16];
            for (int i = 0; i < su.n; i++) {
                snprintf(key, sizeof key, "%d", i + 1);
                json_object_set_new(st, key, cs_json_sig(bd.standalone[i], 10));
            }
            b = json_pack("{s:i, s:i, s:o, s:o}", "configurations", bd.ncols, "recorded", bd.nrecorded, "standalone",
                          st, "floor", cs_json_sig(bd.floor, 10));
            for (int k = 0; b && k < 3; k++) {
                json_t *y = json_object();
                for (int i = 0; i < su.n; i++) {
                    snprintf(key, sizeof key, "%d", i + 1);
                    json_object_set_new(y, key, cs_json_sig(bd.lp[k].y[i], 10));
                }
                json_object_set_new(b, cs_sim_lp_name[k],
                                    json_pack("{s:o, s:o, s:o, s:o}", "value", cs_json_sig(bd.lp[k].value, 10), "sum",
                                              cs_json_sig(bd.lp[k].sum, 10), "normalised", y, "schedule",
                                              cs_json_text(bd.lp[k].schedule)));
            }
            json_object_set_new(doc, "bound", b);
        }
        cs_json_put(stdout, doc, 0);
    } else {
        printf("simulated node %s (%s), apps %s, model %s, seed %llu, quantum %g s, ", node->name, synth,
               apps->name, model, (unsigned long long)su.seed, su.quantum);
        if (su.window > 0)
            printf("window %g s\n", su.window);
        else
            printf("no window (each job runs once)\n");
        printf("%-10s %10s %8s %7s  %4s %-16s %11s %11s %9s %5s\n", "policy", "virtual_s", "wall_s", "steps", "id",
               "app", "completions", "runs/s", "cpu_s", "class");
        for (int k = 0; k < npols; k++)
            for (int i = 0; i < su.n; i++) {
                struct result *r = &res[k];
                printf("%-10s %10.2f %8.3f %7llu  %4d %-16s %11.3f %11.5f %9.2f %5c\n", i ? "" : r->policy,
                       r->virtual_s, r->wall_s, r->steps, i + 1, su.w[i].app->name, r->completions[i],
                       r->virtual_s > 0 ? r->completions[i] / r->virtual_s : 0, r->cpu_s[i],
                       r->cls[i] ? r->cls[i] : '-');
            }
        printf("idle while a job was frozen, CPU-s: on cpus given to nobody + on cpus of a running job\n");
        for (int k = 0; k < npols; k++)
            printf("%-10s %10.2f = %.2f + %.2f\n", res[k].policy, res[k].idle_nobody + res[k].idle_held,
                   res[k].idle_nobody, res[k].idle_held);
        if (want_bound) {
            static const char *const what[3] = { "no constraint", "every job >= 1/n", "the least job" };
            printf("bound: LP over %d configurations (%d recorded from the runs); normalised throughput = runs/s "
                   "/ runs/s alone on the node\n", bd.ncols, bd.nrecorded);
            for (int k = 0; k < 3; k++)
                printf("  %-6s (%s): %.4f (sum %.4f)\n    %s\n", cs_sim_lp_name[k], what[k], bd.lp[k].value, bd.lp[k].sum,
                       bd.lp[k].schedule);
            printf("  %4s %-16s %9s %9s %9s\n", "id", "app", "total", "fair", "maxmin");
            for (int i = 0; i < su.n; i++)
                printf("  %4d %-16s %9.4f %9.4f %9.4f\n", i + 1, su.w[i].app->name, bd.lp[0].y[i], bd.lp[1].y[i],
                       bd.lp[2].y[i]);
            for (int k = 0; k < npols; k++)
                printf("  %-10s total %.4f = %.4f of the bound\n", res[k].policy, recorded_total(&res[k], &bd),
                       recorded_total(&res[k], &bd) / bd.lp[0].value);
        }
    }
    fflush(stdout);

out:
    if (res)
        for (int k = 0; k < npols; k++) {
            free(res[k].completions);
            free(res[k].cpu_s);
            free(res[k].cls);
            cs_sim_configs_free(res[k].cfgs, res[k].ncfgs);
        }
    free(res);
    free(bd.standalone);
    for (int k = 0; k < 3; k++) {
        free(bd.lp[k].y);
        free(bd.lp[k].schedule);
    }
    free(pols);
    free(polcopy);
    cs_strv_free(su.search, su.nsearch);
    free(su.w);
    if (su.managed)
        hwloc_bitmap_free(su.managed);
    cs_topo_free(su.topo);
    cs_profile_free(profile);
    cs_sim_node_free(node);
    cs_sim_apps_free(apps);
    free(nodefile);
    free(appsfile);
    free(synth);
    free(ppath);
    cs_opt_end(&g);
    return status;
}
