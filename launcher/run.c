/*
 * run.c - `cosched run`, `cosched topology`, `cosched policies`.
 *
 * All checking happens here, before anything is started: options, job files,
 * commands (found and executable), cores, topology, policy, control backend.
 * A bad input gives one message naming it and exit status 2; nothing runs.
 *
 * Options are one declarative table (name, argument, help) from which both
 * getopt_long's table and --help are made.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cosched.h"
#include "cli.h"
#include "counters.h"
#include "profile.h"

enum {
    O_POLICY = 256, O_POLICY_OPT, O_POLICY_PATH, O_QUANTUM, O_JOBS, O_TRACE, O_WINDOW, O_CPUS, O_CONTROL,
    O_TOPOLOGY, O_THREADS, O_OUTPUT, O_COUNTERS, O_PROFILE, O_PROFILE_PATH, O_RECORD, O_OMP_ENV, O_KILL_TIMEOUT, O_PROGRESS, O_JSON, O_VERBOSE, O_QUIET, O_HELP,
};

struct opt {
    const char *name;
    int has_arg;
    int id;
    const char *arg;
    const char *help;
};

static const struct opt run_opts[] = {
    { "policy", 1, O_POLICY, "NAME", "scheduling policy (default tft; `cosched policies` lists them)" },
    { "policy-opt", 1, O_POLICY_OPT, "KEY=VALUE", "parameter for the policy (repeatable)" },
    { "policy-path", 1, O_POLICY_PATH, "DIR", "look for policies in DIR first (repeatable)" },
    { "quantum", 1, O_QUANTUM, "DURATION", "time quantum, 10ms to 60s (default 1s; e.g. 250ms, 2s)" },
    { "jobs", 1, O_JOBS, "FILE", "read jobs from FILE, one per line (see JOB FILES in cosched(1))" },
    { "trace", 1, O_TRACE, "FILE", "write one JSON object per step and per job event to FILE" },
    { "window", 1, O_WINDOW, "SECONDS", "restart every job that ends until SECONDS have passed; count completions" },
    { "cpus", 1, O_CPUS, "LIST", "manage only these cpus (default: the cpus cosched may run on)" },
    { "control", 1, O_CONTROL, "MECH", "auto, cgroup2, cgroup1 or signals (default auto)" },
    { "topology", 1, O_TOPOLOGY, "SPEC", "synthetic:DESC or an hwloc XML file instead of this machine" },
    { "threads", 1, O_THREADS, "N", "threads per job without threads= (default: managed core count)" },
    { "output", 1, O_OUTPUT, "MODE", "prefix (default: job output with [name] prefixes), inherit, or a directory for NAME.out/NAME.err" },
    { "counters", 1, O_COUNTERS, "SPEC", "auto (default), likwid, perf, replay:FILE or none (see cosched-counters(5))" },
    { "profile", 1, O_PROFILE, "NAME|FILE", "counter profile (default: the one matching this CPU; cosched profiles)" },
    { "profile-path", 1, O_PROFILE_PATH, "DIR", "look for profiles in DIR first (repeatable)" },
    { "record-counters", 1, O_RECORD, "FILE", "write every job's counts per step to FILE (replayable)" },
    { "omp-env", 1, O_OMP_ENV, "on|off", "set OMP_NUM_THREADS and passive OpenMP waiting for jobs (default on)" },
    { "kill-timeout", 1, O_KILL_TIMEOUT, "DURATION", "after forwarding SIGINT/SIGTERM, SIGKILL jobs after this (default 10s)" },
    { "progress", 1, O_PROGRESS, "auto|on|off", "live one-line progress on stderr (default auto: on a terminal)" },
    { "verbose", 0, O_VERBOSE, NULL, "more messages (repeat for debug)" },
    { "quiet", 0, O_QUIET, NULL, "only warnings and errors" },
    { "help", 0, O_HELP, NULL, "this text" },
    { NULL, 0, 0, NULL, NULL },
};

static const struct opt topo_opts[] = {
    { "json", 0, O_JSON, NULL, "print JSON" },
    { "topology", 1, O_TOPOLOGY, "SPEC", "synthetic:DESC or an hwloc XML file instead of this machine" },
    { "cpus", 1, O_CPUS, "LIST", "mark only these cpus as managed" },
    { "help", 0, O_HELP, NULL, "this text" },
    { NULL, 0, 0, NULL, NULL },
};

static const struct opt pol_opts[] = {
    { "policy-path", 1, O_POLICY_PATH, "DIR", "look for policies in DIR first (repeatable)" },
    { "help", 0, O_HELP, NULL, "this text" },
    { NULL, 0, 0, NULL, NULL },
};

static struct option *getopt_table(const struct opt *o)
{
    int n = 0;
    while (o[n].name)
        n++;
    struct option *t = calloc(n + 1, sizeof *t);
    for (int i = 0; i < n; i++)
        t[i] = (struct option){ o[i].name, o[i].has_arg ? required_argument : no_argument, NULL, o[i].id };
    return t;
}

static void print_help(const char *usage, const struct opt *o)
{
    printf("usage: %s\n\noptions:\n", usage);
    for (; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        printf("  %-26s %s\n", left, o->help);
    }
}

/* "cosched run: --quantum 0: must be ..." */
#define BAD(...) do { cs_err(__VA_ARGS__); goto bad; } while (0)

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

/* Where the command would be found; NULL and a message if nowhere. */
static char *resolve_command(const struct cs_job *j, const char **why)
{
    const char *cmd = j->argv[0];
    struct stat st;

    if (strchr(cmd, '/')) {
        char *p = (cmd[0] != '/' && j->cwd) ? cs_strdup_printf("%s/%s", j->cwd, cmd) : strdup(cmd);
        if (stat(p, &st) < 0)
            *why = "does not exist";
        else if (!S_ISREG(st.st_mode))
            *why = "is not a regular file";
        else if (access(p, X_OK) < 0)
            *why = "is not executable";
        else
            return p;
        free(p);
        return NULL;
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char *p = cs_strdup_printf("%s/%s", *d ? d : ".", cmd);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
            free(copy);
            return p;
        }
        free(p);
    }
    free(copy);
    *why = "was not found in PATH";
    return NULL;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Names must be unique (they name output files and trace entries). */
static int name_jobs(struct cs_job **jobs, int n)
{
    for (int i = 0; i < n; i++) {
        struct cs_job *j = jobs[i];
        j->id = i + 1;
        if (j->name) {
            for (int k = 0; k < i; k++)
                if (strcmp(jobs[k]->name, j->name) == 0) {
                    cs_err("%s: name '%s' is already used by job %d (%s); job names must be unique", j->origin,
                           j->name, k + 1, jobs[k]->origin);
                    return -1;
                }
            continue;
        }
        char *cand = strdup(base_name(j->argv[0]));
        for (int suffix = 2;; suffix++) {
            int clash = 0;
            for (int k = 0; k < n; k++)
                if (k != i && jobs[k]->name && strcmp(jobs[k]->name, cand) == 0)
                    clash = 1;
            if (!clash)
                break;
            free(cand);
            cand = cs_strdup_printf("%s-%d", base_name(j->argv[0]), suffix);
        }
        j->name = cand;
    }
    return 0;
}

/* Managed cpus: --cpus (checked) or what cosched may run on, within the topology. */
static hwloc_bitmap_t managed_cpus(struct cs_topo *t, const char *list, int synthetic)
{
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc(), m = hwloc_bitmap_alloc();

    if (synthetic || hwloc_get_cpubind(t->h, allowed, HWLOC_CPUBIND_PROCESS) < 0)
        hwloc_bitmap_copy(allowed, t->all_pus);
    hwloc_bitmap_and(allowed, allowed, t->all_pus);
    if (list) {
        if (hwloc_bitmap_list_sscanf(m, list) < 0 || hwloc_bitmap_iszero(m) || hwloc_bitmap_weight(m) < 0) {
            cs_err("--cpus '%s': expected a cpu list such as 0-3,8", list);
            goto fail;
        }
        if (!hwloc_bitmap_isincluded(m, allowed)) {
            hwloc_bitmap_t extra = hwloc_bitmap_alloc();
            hwloc_bitmap_andnot(extra, m, allowed);
            char *x = cs_bitmap_list(extra), *a = cs_bitmap_list(allowed);
            cs_err("--cpus %s: cpus %s are not available to cosched (available: %s)", list, x, a);
            free(x);
            free(a);
            hwloc_bitmap_free(extra);
            goto fail;
        }
    } else {
        hwloc_bitmap_copy(m, allowed);
    }
    if (hwloc_bitmap_iszero(m)) {
        cs_err("no cpu of %s is available to cosched", t->source);
        goto fail;
    }
    hwloc_bitmap_free(allowed);
    return m;
fail:
    hwloc_bitmap_free(allowed);
    hwloc_bitmap_free(m);
    return NULL;
}

static int managed_cores(const struct cs_topo *t, hwloc_const_bitmap_t m)
{
    int n = 0;
    for (int i = 0; i < t->ncores; i++)
        n += hwloc_bitmap_intersects(t->cores[i].pus, m);
    return n;
}

/* Jobs from the command line: words after "--", separated by ":::". */
static int cli_jobs(char **w, int n, struct cs_job ***jobs, int *njobs)
{
    int start = 0;
    for (int i = 0; i <= n; i++) {
        if (i < n && strcmp(w[i], ":::") != 0)
            continue;
        if (i == start) {
            cs_err("command line job %d is empty: expected a command between ':::' separators", *njobs + 1);
            return -1;
        }
        struct cs_job *j = calloc(1, sizeof *j);
        j->argv = calloc(i - start + 1, sizeof *j->argv);
        for (int k = start; k < i; k++)
            j->argv[k - start] = strdup(w[k]);
        j->origin = cs_strdup_printf("command line job %d", *njobs + 1);
        *jobs = realloc(*jobs, (*njobs + 1) * sizeof **jobs);
        (*jobs)[(*njobs)++] = j;
        start = i + 1;
    }
    return 0;
}

static int parse_onoff(const char *opt, const char *v, int autoval, int *out)
{
    if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0)
        *out = 1;
    else if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0)
        *out = 0;
    else if (autoval >= 0 && strcmp(v, "auto") == 0)
        *out = autoval;
    else {
        cs_err("--%s '%s': expected %s", opt, v, autoval >= 0 ? "auto, on or off" : "on or off");
        return -1;
    }
    return 0;
}

int cs_cmd_run(int argc, char **argv)
{
    struct option *lo = getopt_table(run_opts);
    struct cs_engine e = { .quantum = 1.0, .omp_env = 1, .output = CS_OUT_PREFIX, .kill_timeout = 10.0 };
    const char *policy = "tft", *control = "auto", *topospec = NULL, *cpus = NULL, *jobfile = NULL,
               *tracefile = NULL, *counters = "auto", *profspec = NULL, *recordfile = NULL;
    char **popts = NULL, **ppath = NULL, **search = NULL, **prpath = NULL;
    struct cs_profile *profile = NULL;
    int npopts = 0, nppath = 0, nsearch = 0, nprpath = 0, recording = 0, threads = 0, progress = isatty(2), c, status = 2;
    long v;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:vqh", lo, NULL)) != -1) {
        switch (c) {
        case O_POLICY:
            policy = optarg;
            break;
        case O_POLICY_OPT:
            if (!strchr(optarg, '=') || optarg[0] == '=')
                BAD("--policy-opt '%s': expected KEY=VALUE", optarg);
            popts = realloc(popts, (npopts + 1) * sizeof *popts);
            popts[npopts++] = optarg;
            break;
        case O_POLICY_PATH:
            ppath = realloc(ppath, (nppath + 1) * sizeof *ppath);
            ppath[nppath++] = optarg;
            break;
        case O_QUANTUM:
            if (cs_parse_duration(optarg, &e.quantum) < 0 || e.quantum < 0.010 || e.quantum > 60.0)
                BAD("--quantum '%s': expected a duration from 10ms to 60s (e.g. 250ms, 1s)", optarg);
            break;
        case O_JOBS:
            jobfile = optarg;
            break;
        case O_TRACE:
            tracefile = optarg;
            break;
        case O_WINDOW:
            if (cs_parse_duration(optarg, &e.window) < 0 || e.window < 0.1 || e.window > 7 * 86400.0)
                BAD("--window '%s': expected a duration from 0.1 s to 7 days (plain numbers are seconds)", optarg);
            break;
        case O_CPUS:
            cpus = optarg;
            break;
        case O_CONTROL:
            control = optarg;
            break;
        case O_TOPOLOGY:
            topospec = optarg;
            break;
        case O_THREADS:
            if (cs_parse_long(optarg, 1, 4096, &v) < 0)
                BAD("--threads '%s': expected an integer from 1 to 4096", optarg);
            threads = (int)v;
            break;
        case O_OUTPUT:
            if (strcmp(optarg, "prefix") == 0)
                e.output = CS_OUT_PREFIX;
            else if (strcmp(optarg, "inherit") == 0)
                e.output = CS_OUT_INHERIT;
            else {
                struct stat st;
                if (stat(optarg, &st) < 0 || !S_ISDIR(st.st_mode) || access(optarg, W_OK) < 0)
                    BAD("--output '%s': expected prefix, inherit or a writable directory", optarg);
                e.output = CS_OUT_FILES;
                e.output_dir = optarg;
            }
            break;
        case O_COUNTERS:
            counters = optarg;
            break;
        case O_PROFILE:
            profspec = optarg;
            break;
        case O_PROFILE_PATH:
            prpath = realloc(prpath, (nprpath + 1) * sizeof *prpath);
            prpath[nprpath++] = optarg;
            break;
        case O_RECORD:
            recordfile = optarg;
            break;
        case O_OMP_ENV:
            if (parse_onoff("omp-env", optarg, -1, &e.omp_env) < 0)
                goto bad;
            break;
        case O_KILL_TIMEOUT:
            if (cs_parse_duration(optarg, &e.kill_timeout) < 0 || e.kill_timeout > 3600)
                BAD("--kill-timeout '%s': expected a duration from 0 to 1 hour", optarg);
            break;
        case O_PROGRESS:
            if (parse_onoff("progress", optarg, isatty(2), &progress) < 0)
                goto bad;
            break;
        case 'v':
        case O_VERBOSE:
            cs_verbosity++;
            break;
        case 'q':
        case O_QUIET:
            cs_verbosity = CS_LOG_WARN;
            break;
        case 'h':
        case O_HELP:
            print_help("cosched run [options] (--jobs FILE | -- COMMAND [ARGS] [::: COMMAND [ARGS]]...)", run_opts);
            status = 0;
            goto bad;
        case ':':
            BAD("option %s needs an argument", argv[optind - 1]);
        default:
            BAD("unknown option '%s' (see cosched run --help)", argv[optind - 1]);
        }
    }
    e.progress = progress;

    /* jobs: from the file, then the command line */
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (jobfile && cs_jobfile_load(jobfile, &e.jobs, &e.njobs) < 0)
        goto bad;
    if (optind < argc && cli_jobs(argv + optind, argc - optind, &e.jobs, &e.njobs) < 0)
        goto bad;
    if (e.njobs == 0)
        BAD("no jobs: give --jobs FILE or commands after '--' separated by ':::' (see cosched run --help)");
    if (name_jobs(e.jobs, e.njobs) < 0)
        goto bad;
    for (int i = 0; i < e.njobs; i++) {
        const char *why = NULL;
        char *p = resolve_command(e.jobs[i], &why);
        if (p == NULL)
            BAD("job %d (%s, %s): command '%s' %s", e.jobs[i]->id, e.jobs[i]->name, e.jobs[i]->origin,
                e.jobs[i]->argv[0], why);
        free(p);
        if (e.jobs[i]->cwd && access(e.jobs[i]->cwd, X_OK) < 0)
            BAD("job %d (%s, %s): cwd=%s: %s", e.jobs[i]->id, e.jobs[i]->name, e.jobs[i]->origin,
                e.jobs[i]->cwd, strerror(errno));
    }

    /* node, cores */
    if ((e.topo = cs_topo_load(topospec)) == NULL)
        goto bad;
    if ((e.managed = managed_cpus(e.topo, cpus, topospec != NULL)) == NULL)
        goto bad;
    if (topospec) {
        hwloc_topology_t real;
        hwloc_bitmap_t here = hwloc_bitmap_alloc();
        hwloc_topology_init(&real);
        hwloc_topology_load(real);
        if (hwloc_get_cpubind(real, here, HWLOC_CPUBIND_PROCESS) < 0)
            hwloc_bitmap_copy(here, hwloc_topology_get_topology_cpuset(real));
        int ok = hwloc_bitmap_isincluded(e.managed, here);
        char *m = cs_bitmap_list(e.managed), *h = cs_bitmap_list(here);
        hwloc_bitmap_free(here);
        hwloc_topology_destroy(real);
        if (!ok) {
            cs_err("--topology %s: its cpus %s are not all cpus of this machine that cosched may use (%s); "
                   "give --cpus within both, or use `cosched topology --topology` to plan only",
                   topospec, m, h);
            free(m);
            free(h);
            goto bad;
        }
        free(m);
        free(h);
    }
    int ncores = managed_cores(e.topo, e.managed), npus = hwloc_bitmap_weight(e.managed);
    for (int i = 0; i < e.njobs; i++) {
        struct cs_job *j = e.jobs[i];
        if (!j->threads_explicit)
            j->threads = threads ? threads : ncores;
        if (j->threads > npus)
            BAD("job %d (%s, %s): %d threads but only %d cpus are managed (%s); give threads= or --threads "
                "at most %d, or manage more cpus", j->id, j->name, j->origin, j->threads, npus,
                cpus ? cpus : "all available", npus);
    }

    /* policy */
    search = cs_policy_search_path(ppath, nppath, &nsearch);
    if ((e.policy = cs_policy_load(policy, search, nsearch, popts, npopts)) == NULL)
        goto bad;

    /* counters: a profile (named, or the one for this CPU) and a backend */
    if (strcmp(counters, "none") != 0) {
        char why[256] = "";
        if (profspec)
            profile = cs_profile_find(profspec, prpath, nprpath);
        else
            profile = cs_profile_for_this_cpu(prpath, nprpath, why, sizeof why);
        if (profile == NULL && profspec)
            goto bad;
        if (profile == NULL && strcmp(counters, "auto") != 0)
            BAD("--counters %s needs a counter profile: %s; give --profile NAME|FILE", counters, why);
        if (profile == NULL)
            cs_info("counters: none: %s", why);
        else if ((e.cnt = cs_counters_select(counters, profile, &e.cnt_arg)) == NULL)
            goto bad;
        if (e.cnt == &cs_counters_none) {
            cs_profile_free(profile);
            profile = NULL;
        }
    }
    e.profile = profile;
    if (recordfile) {
        if (profile == NULL)
            BAD("--record-counters %s: nothing is counted (no counter profile or backend; see --counters)",
                recordfile);
        if (cs_counters_record_open(recordfile, profile) < 0)
            goto bad;
        recording = 1;
    }

    /* mechanism */
    if ((e.ctl = cs_control_select(control)) == NULL)
        goto bad;

    if (tracefile && (e.trace = fopen(tracefile, "w")) == NULL)
        BAD("--trace %s: %s", tracefile, strerror(errno));

    {
        char *m = cs_bitmap_list(e.managed);
        cs_info("%d job(s), policy %s, quantum %g s, cpus %s (%d core(s)), control %s%s", e.njobs,
                cs_policy_name(e.policy), e.quantum, m, ncores, e.ctl->name, e.window > 0 ? ", window" : "");
        free(m);
    }
    status = cs_engine_run(&e);

bad:
    if (recording)
        cs_counters_record_close();
    if (profile)
        cs_profile_free(profile);
    free(prpath);
    if (e.trace)
        fclose(e.trace);
    if (e.policy)
        cs_policy_free(e.policy);
    for (int i = 0; i < e.njobs; i++)
        cs_job_free(e.jobs[i]);
    free(e.jobs);
    if (e.managed)
        hwloc_bitmap_free(e.managed);
    cs_topo_free(e.topo);
    for (int i = 0; i < nsearch; i++)
        free(search[i]);
    free(search);
    free(popts);
    free(ppath);
    free(lo);
    free(e.run_id);
    return status;
}

int cs_cmd_topology(int argc, char **argv)
{
    struct option *lo = getopt_table(topo_opts);
    const char *spec = NULL, *cpus = NULL;
    int json = 0, c, status = 2;
    struct cs_topo *t = NULL;
    hwloc_bitmap_t m = NULL;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
        switch (c) {
        case O_JSON:
            json = 1;
            break;
        case O_TOPOLOGY:
            spec = optarg;
            break;
        case O_CPUS:
            cpus = optarg;
            break;
        case 'h':
        case O_HELP:
            print_help("cosched topology [--json] [--topology SPEC] [--cpus LIST]", topo_opts);
            status = 0;
            goto bad;
        case ':':
            BAD("option %s needs an argument", argv[optind - 1]);
        default:
            BAD("unknown option '%s' (see cosched topology --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        BAD("cosched topology takes no arguments ('%s')", argv[optind]);
    if ((t = cs_topo_load(spec)) == NULL || (m = managed_cpus(t, cpus, spec != NULL)) == NULL)
        goto bad;
    cs_topo_print(t, m, stdout, json);
    status = 0;
bad:
    if (m)
        hwloc_bitmap_free(m);
    cs_topo_free(t);
    free(lo);
    return status;
}

int cs_cmd_policies(int argc, char **argv)
{
    struct option *lo = getopt_table(pol_opts);
    char **ppath = NULL, **search = NULL;
    int nppath = 0, nsearch = 0, c, status = 2;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
        switch (c) {
        case O_POLICY_PATH:
            ppath = realloc(ppath, (nppath + 1) * sizeof *ppath);
            ppath[nppath++] = optarg;
            break;
        case 'h':
        case O_HELP:
            print_help("cosched policies [--policy-path DIR]", pol_opts);
            status = 0;
            goto bad;
        case ':':
            BAD("option %s needs an argument", argv[optind - 1]);
        default:
            BAD("unknown option '%s' (see cosched policies --help)", argv[optind - 1]);
        }
    }
    search = cs_policy_search_path(ppath, nppath, &nsearch);
    status = cs_policy_list(search, nsearch, stdout) < 0 ? 1 : 0;
bad:
    for (int i = 0; i < nsearch; i++)
        free(search[i]);
    free(search);
    free(ppath);
    free(lo);
    return status;
}
