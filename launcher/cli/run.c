/*
 * run.c - `cosched run`, `cosched classify`, `cosched topology`, `cosched policies`.
 *
 * All checking happens here, before anything is started: options, job files,
 * commands (found and executable), cores, topology, policy, control backend.
 * A bad input gives one message naming it and exit status 2; nothing runs.
 *
 * Options are one declarative table (letter, name, argument, help) from which
 * getopt_long's tables and --help are made (opts.c).  `cosched classify` takes the run
 * options listed in classify_ids plus its own, and shares run's parser.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
#include "local/local.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "shared/ompinject.h"

enum {
    O_POLICY = 256, O_POLICY_OPT, O_POLICY_PATH, O_QUANTUM, O_JOBS, O_TRACE, O_WINDOW, O_CPUS, O_CONTROL,
    O_TOPOLOGY, O_THREADS, O_OUTPUT, O_COUNTERS, O_PROFILE, O_PROFILE_PATH, O_RECORD, O_OMP_ENV, O_OMP_SHIM, O_KILL_TIMEOUT, O_PROGRESS, O_JSON, O_VERBOSE, O_QUIET, O_HELP,
    O_STORE, O_STORE_TTL, O_REPROFILE, O_TO_END,
};

static const struct cs_opt run_opts[] = {
    { 'p', "policy", 1, O_POLICY, "NAME", "scheduling policy (default tft; `cosched policies` lists them)" },
    { 0, "policy-opt", 1, O_POLICY_OPT, "KEY=VALUE", "parameter for the policy (repeatable)" },
    { 0, "policy-path", 1, O_POLICY_PATH, "DIR", "look for policies in DIR first (repeatable)" },
    { 't', "quantum", 1, O_QUANTUM, "DURATION", "time quantum, 10ms to 60s (default 1s; e.g. 250ms, 2s)" },
    { 0, "jobs", 1, O_JOBS, "FILE", "read jobs from FILE, one per line (see JOB FILES in cosched(1))" },
    { 0, "trace", 1, O_TRACE, "FILE", "write one JSON object per step and per job event to FILE" },
    { 'w', "window", 1, O_WINDOW, "DURATION", "restart every job that ends until DURATION has passed (e.g. 20s, 5m); count completions" },
    { 'c', "cpus", 1, O_CPUS, "LIST", "manage only these cpus: 0-3,8 or numa:1, core:0-3, llc:0+core:8 (default: the cpus cosched may run on)" },
    { 0, "control", 1, O_CONTROL, "MECH", "auto, cgroup2, cgroup1 or signals (default auto)" },
    { 0, "topology", 1, O_TOPOLOGY, "SPEC", "synthetic:DESC or an hwloc XML file instead of this machine" },
    { 0, "threads", 1, O_THREADS, "N", "threads per job without threads= (default: managed core count)" },
    { 'o', "output", 1, O_OUTPUT, "MODE", "prefix (default: job output with [name] prefixes), inherit, or a directory for NAME.out/NAME.err" },
    { 0, "counters", 1, O_COUNTERS, "SPEC", "auto (default), likwid, perf, replay:FILE or none (see cosched-counters(5))" },
    { 0, "profile", 1, O_PROFILE, "NAME|FILE", "counter profile (default: the one matching this CPU; cosched profiles)" },
    { 0, "profile-path", 1, O_PROFILE_PATH, "DIR", "look for profiles in DIR first (repeatable)" },
    { 0, "record-counters", 1, O_RECORD, "FILE", "write every job's counts per step to FILE (replayable)" },
    { 0, "omp-env", 1, O_OMP_ENV, "on|off", "set OMP_NUM_THREADS for jobs, and passive OpenMP waiting where the shim cannot apply (default on)" },
    { 0, "omp-shim", 1, O_OMP_SHIM, "on|off", "preload libcosched-omp.so into jobs: OpenMP teams follow the job's cores (default on)" },
    { 0, "kill-timeout", 1, O_KILL_TIMEOUT, "DURATION", "after forwarding SIGINT/SIGTERM, SIGKILL jobs after this (default 10s)" },
    { 0, "progress", 1, O_PROGRESS, "auto|on|off", "live one-line progress on stderr (default auto: on a terminal, not with -q)" },
    { 0, "store", 1, O_STORE, "DIR|none", "profile store (default $XDG_CACHE_HOME/cosched/profiles or ~/.cache/cosched/profiles)" },
    { 0, "store-ttl", 1, O_STORE_TTL, "DURATION", "ignore stored profiles older than this (default 30d; e.g. 12h, 90m)" },
    { 0, "reprofile", 0, O_REPROFILE, NULL, "ignore stored profiles (new results still replace them)" },
    { 'v', "verbose", 0, O_VERBOSE, NULL, "debug messages too (each plan, each counter backend's answer)" },
    { 'q', "quiet", 0, O_QUIET, NULL, "only warnings and errors (no progress line, no summary)" },
    { 'h', "help", 0, O_HELP, NULL, "this text" },
    { 0 },
};

/* The run options that make sense for classify, then its own. */
static const int classify_ids[] = {
    O_POLICY_OPT, O_QUANTUM, O_CPUS, O_CONTROL, O_THREADS, O_COUNTERS, O_PROFILE, O_PROFILE_PATH, O_OMP_ENV,
    O_OMP_SHIM, O_KILL_TIMEOUT, O_STORE, O_STORE_TTL, O_REPROFILE, O_VERBOSE, O_QUIET, 0,
};
static const struct cs_opt classify_own[] = {
    { 0, "to-end", 0, O_TO_END, NULL, "let the program run to its end (default: stop it once characterized)" },
    { 0, "json", 0, O_JSON, NULL, "print the result as JSON on stdout" },
    { 'h', "help", 0, O_HELP, NULL, "this text" },
    { 0 },
};

static struct cs_opt *classify_table(void)
{
    static struct cs_opt t[sizeof run_opts / sizeof run_opts[0] + sizeof classify_own / sizeof classify_own[0]];
    int n = 0;
    for (const struct cs_opt *o = run_opts; o->name; o++)
        for (const int *id = classify_ids; *id; id++)
            if (o->id == *id)
                t[n++] = *o;
    for (const struct cs_opt *o = classify_own; o->name; o++)
        t[n++] = *o;
    t[n] = (struct cs_opt){ 0 };
    return t;
}

static const struct cs_opt topo_opts[] = {
    { 0, "json", 0, O_JSON, NULL, "print JSON" },
    { 0, "topology", 1, O_TOPOLOGY, "SPEC", "synthetic:DESC or an hwloc XML file instead of this machine" },
    { 'c', "cpus", 1, O_CPUS, "LIST", "mark only these cpus as managed" },
    { 'h', "help", 0, O_HELP, NULL, "this text" },
    { 0 },
};

static const struct cs_opt pol_opts[] = {
    { 0, "policy-path", 1, O_POLICY_PATH, "DIR", "look for policies in DIR first (repeatable)" },
    { 'h', "help", 0, O_HELP, NULL, "this text" },
    { 0 },
};

/* "cosched run: --quantum 0: must be ..." */
#define BAD(...) do { cs_err(__VA_ARGS__); goto bad; } while (0)

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

/* A hint for a command that was not found: "; ..." or "".  The two
 * mistakes seen most: a job line without " -- " (its option became the
 * command), and a plain name that lives beside the job file, or here, but
 * not on PATH. */
static void command_hint(const struct cs_job *j, char *out, size_t len)
{
    static const char *keys[] = { "name=", "threads=", "class=", "priority=", "cwd=" };
    const char *cmd = j->argv[0];
    char dir[PATH_MAX], cand[PATH_MAX + 300];

    out[0] = '\0';
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (strncmp(cmd, keys[k], strlen(keys[k])) == 0) {
            snprintf(out, len, " (a job line's options end with ' -- ' before the command: %.*s ... -- COMMAND)",
                     (int)strcspn(cmd, " "), cmd);
            return;
        }
    if (strchr(cmd, '/'))
        return;
    /* the job file's directory ("FILE:LINE" origins), then the current one */
    const char *colon = strrchr(j->origin, ':');
    if (colon && strncmp(j->origin, "command line", 12) != 0 && (size_t)(colon - j->origin) < sizeof dir) {
        snprintf(dir, sizeof dir, "%.*s", (int)(colon - j->origin), j->origin);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    if (snprintf(cand, sizeof cand, "%s/%s", dir, cmd) < (int)sizeof cand && access(cand, X_OK) == 0 &&
        snprintf(out, len, " (there is %.1024s: a plain name is looked up in PATH only; write %.1024s, or run "
                 "with PATH=%.1024s:$PATH)", cand, strcmp(dir, ".") == 0 ? cand : "its path", dir) >= (int)len)
        out[0] = '\0';
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
        char why[256];
        if (cs_topo_cpus_parse(t, list, m, why, sizeof why) < 0) {
            cs_err("--cpus '%s': %s", list, why);
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

/* `cosched classify` state (NULL for `cosched run`). */
struct classify {
    int to_end, json;
    int from_store;                /* the result is the stored entry: nothing ran */
    char counting[512];            /* why nothing can be counted ("" if something can) */
    const char *backend;
    const struct cs_profile *profile;
};

static int classify_report(struct cs_engine *e, struct classify *cl, int status);
static void classify_on_plan(struct cs_engine *e);
static int run_or_classify(int argc, char **argv, struct classify *cl);

/* A hardware PMU is registered with perf_event. */
static int have_pmu(void)
{
    static const char *const d[] = { "cpu", "cpu_core", "cpu_atom", "armv8_pmuv3", "armv8_pmuv3_0", NULL };
    for (int i = 0; d[i]; i++) {
        char *p = cs_strdup_printf("/sys/bus/event_source/devices/%s", d[i]);
        int ok = access(p, F_OK) == 0;
        free(p);
        if (ok)
            return 1;
    }
    return 0;
}

int cs_cmd_run(int argc, char **argv)
{
    return run_or_classify(argc, argv, NULL);
}

int cs_cmd_classify(int argc, char **argv)
{
    struct classify cl = { 0 };
    return run_or_classify(argc, argv, &cl);
}

/* libcosched-omp.so (issue 14): $COSCHED_OMP_SHIM if set (empty: none),
 * else the installed one, else - for a cosched run from its build tree - the
 * one built there; NULL if none of them exists. */
static const char *omp_shim_path(void)
{
    const char *s = getenv("COSCHED_OMP_SHIM");

    if (s)
        return *s ? s : NULL;
    if (access(COSCHED_PKGLIBDIR "/libcosched-omp.so", R_OK) == 0)
        return COSCHED_PKGLIBDIR "/libcosched-omp.so";
    if (cs_from_build_tree() && access(COSCHED_BUILDDIR "/launcher/omp/libcosched-omp.so", R_OK) == 0)
        return COSCHED_BUILDDIR "/launcher/omp/libcosched-omp.so";
    return NULL;
}

static int run_or_classify(int argc, char **argv, struct classify *cl)
{
    const struct cs_opt *table = cl ? classify_table() : run_opts;
    struct cs_getopt g;
    struct cs_engine e = { .quantum = 1.0, .omp_env = 1, .output = CS_OUT_PREFIX, .kill_timeout = 10.0 };
    const char *policy = cl ? "classify" : "tft", *control = "auto", *topospec = NULL, *cpus = NULL,
               *jobfile = NULL, *tracefile = NULL, *counters = "auto", *profspec = NULL, *recordfile = NULL,
               *storedir = NULL, *cmd = cl ? "classify" : "run";
    char **popts = NULL, **ppath = NULL, **search = NULL, **prpath = NULL, **exes = NULL;
    struct cs_profile *profile = NULL;
    int npopts = 0, nppath = 0, nsearch = 0, nprpath = 0, recording = 0, threads = 0, progress = 2, c, status = 2;
    int reprofile = 0, saved_stdout = -1, omp_shim = 1;
    double store_ttl = 30 * 86400.0;
    long v;

    cs_opt_start(&g, table, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
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
            if (cs_opt_quantum(optarg, &e.quantum) < 0)
                goto bad;
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
        case O_OMP_SHIM:
            if (parse_onoff("omp-shim", optarg, -1, &omp_shim) < 0)
                goto bad;
            break;
        case O_KILL_TIMEOUT:
            if (cs_parse_duration(optarg, &e.kill_timeout) < 0 || e.kill_timeout > 3600)
                BAD("--kill-timeout '%s': expected a duration from 0 to 1 hour", optarg);
            break;
        case O_PROGRESS:
            if (parse_onoff("progress", optarg, 2, &progress) < 0)     /* 2: auto */
                goto bad;
            break;
        case O_VERBOSE:
            cs_verbosity++;
            break;
        case O_QUIET:
            cs_verbosity = CS_LOG_WARN;
            break;
        case O_STORE:
            if (!*optarg)
                BAD("--store '': expected a directory or none");
            storedir = optarg;
            break;
        case O_STORE_TTL:
            if (cs_parse_duration(optarg, &store_ttl) < 0 || store_ttl > 3650 * 86400.0)
                BAD("--store-ttl '%s': expected a duration up to 3650 days (e.g. 30d, 12h, 90m, 1s)", optarg);
            break;
        case O_REPROFILE:
            reprofile = 1;
            break;
        case O_TO_END:
            cl->to_end = 1;
            break;
        case O_JSON:
            cl->json = 1;
            break;
        case O_HELP:
            if (cl)
                cs_opt_usage("cosched classify [options] -- COMMAND [ARGS]", table);
            else
                cs_opt_usage("cosched run [options] (--jobs FILE | -- COMMAND [ARGS] [::: COMMAND [ARGS]]...)", run_opts);
            status = 0;
            goto bad;
        case ':':
        default:
            cs_opt_refuse(&g, c, NULL, cmd);
            goto bad;
        }
    }
    /* auto: on a terminal, unless the jobs write to it themselves (--output
     * inherit), where nothing could keep the line off their output, or
     * --quiet asked for warnings and errors only (as quiet does in other
     * tools; --progress on still draws it) */
    if (progress == 2)
        progress = isatty(2) && e.output != CS_OUT_INHERIT && cs_verbosity > CS_LOG_WARN;
    e.progress = cl ? 0 : progress;
    if (cl) {
        if (optind < argc && strcmp(argv[optind], "--") == 0)
            optind++;
        if (optind >= argc)
            BAD("classify: no command: give the program to classify after '--' "
                "(cosched classify [options] -- COMMAND [ARGS])");
        for (int i = optind; i < argc; i++)
            if (strcmp(argv[i], ":::") == 0)
                BAD("classify: one program at a time (':::' separates jobs of cosched run)");
    }

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
    exes = calloc((size_t)(e.njobs > 0 ? e.njobs : 1), sizeof *exes);
    for (int i = 0; i < e.njobs; i++) {
        const char *why = NULL;
        char *p = resolve_command(e.jobs[i], &why);
        if (p == NULL) {
            char hint[3 * PATH_MAX];
            command_hint(e.jobs[i], hint, sizeof hint);
            BAD("job %d (%s, %s): command '%s' %s%s", e.jobs[i]->id, e.jobs[i]->name, e.jobs[i]->origin,
                e.jobs[i]->argv[0], why, hint);
        }
        exes[i] = p;
        e.jobs[i]->preloadable = cs_exe_preloadable(p);
        if (e.jobs[i]->cwd && access(e.jobs[i]->cwd, X_OK) < 0)
            BAD("job %d (%s, %s): cwd=%s: %s", e.jobs[i]->id, e.jobs[i]->name, e.jobs[i]->origin,
                e.jobs[i]->cwd, strerror(errno));
    }

    if (e.omp_env && omp_shim && (e.omp_shim = omp_shim_path()) == NULL)
        cs_warn("libcosched-omp.so is not installed (%s/libcosched-omp.so): OpenMP jobs wait passively "
                "instead of following their cores (--omp-shim, cosched(1))", COSCHED_PKGLIBDIR);

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

    /* profile store: key every job, look up what it holds */
    e.store = cs_store_open(storedir, store_ttl, reprofile, topospec ? NULL : e.topo->h);
    for (int i = 0; e.store && i < e.njobs; i++)
        cs_store_job(e.store, e.jobs[i], exes[i]);
    if (cl && e.jobs[0]->stored) {
        /* known already: print it without running the program */
        struct cs_job *j = e.jobs[0];
        cl->backend = "not used";
        cl->from_store = 1;
        j->result = malloc(sizeof *j->result);
        *j->result = *j->stored;
        j->runs_started = 1;
        status = classify_report(&e, cl, 0);
        goto bad;
    }

    /* counters: a profile (named, or the one for this CPU) and a backend */
    if (cl && strcmp(counters, "none") == 0)
        snprintf(cl->counting, sizeof cl->counting, "counting disabled by --counters none");
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
        if (cl && profile == NULL)
            snprintf(cl->counting, sizeof cl->counting, "%s", why);
        else if (cl && e.cnt == &cs_counters_none)
            snprintf(cl->counting, sizeof cl->counting, "%s", cs_counters_none_why());
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

    /* the engine: the node, policy and counters chosen above, the mechanism
     * by name, the trace; the jobs are this machine's processes (local/) */
    if (cs_engine_assemble(&e, &(struct cs_engine_parts){ .topo = e.topo, .managed = e.managed, .policy = e.policy,
                                                          .control = control, .cnt = e.cnt, .cnt_arg = e.cnt_arg,
                                                          .profile = profile, .trace = tracefile,
                                                          .host = &cs_local_host }) < 0)
        goto bad;

    {
        char *m = cs_bitmap_list(e.managed);
        char win[48] = "";
        if (e.window > 0)
            snprintf(win, sizeof win, ", window %g s", e.window);
        cs_info("%d job(s), policy %s, quantum %g s, cpus %s (%d core(s)), control %s%s", e.njobs,
                cs_policy_name(e.policy), e.quantum, m, ncores, e.ctl->name, win);
        free(m);
    }
    if (cl) {
        cl->backend = e.cnt ? e.cnt->name : "none";
        cl->profile = profile;
        e.on_plan = classify_on_plan;
        e.on_plan_arg = cl;
        /* stdout is for the result: the program's output goes to stderr */
        fflush(stdout);
        saved_stdout = fcntl(1, F_DUPFD_CLOEXEC, 3);
        if (saved_stdout >= 0)
            dup2(2, 1);
    }
    status = cs_engine_run(&e);
    if (cl) {
        fflush(stdout);
        if (saved_stdout >= 0) {
            dup2(saved_stdout, 1);
            close(saved_stdout);
        }
        status = classify_report(&e, cl, status);
    }

bad:
    if (recording)
        cs_counters_record_close();
    if (profile)
        cs_profile_free(profile);
    free(prpath);
    for (int i = 0; i < e.njobs; i++) {
        if (exes)
            free(exes[i]);
        cs_store_job_free(e.jobs[i]);
        cs_job_free(e.jobs[i]);
    }
    free(exes);
    cs_store_close(e.store);
    free(e.jobs);
    cs_engine_disassemble(&e, 0);
    cs_strv_free(search, nsearch);
    free(popts);
    free(ppath);
    cs_opt_end(&g);
    return status;
}

/* ------------------------------------------------------------- classify */

/* After every plan: once the job has a result, stop it (SIGTERM, SIGKILL
 * after --kill-timeout) unless --to-end. */
static void classify_on_plan(struct cs_engine *e)
{
    struct classify *cl = e->on_plan_arg;
    struct cs_job *j = e->jobs[0];

    if (cl->to_end || !j->result || j->state != CS_JOB_LIVE || j->stop_deadline > 0)
        return;
    cs_info("classify: job %s characterized: stopping it (--to-end lets it finish)", j->name);
    cs_engine_stop_job(e, j);
}

static void print_num(FILE *f, const char *label, double v, const char *unit)
{
    if (isfinite(v))
        fprintf(f, "%-16s %.4g%s\n", label, v, unit);
    else
        fprintf(f, "%-16s -  (not measured)\n", label);
}

/* Print the result; the exit status of cosched classify. */
static int classify_report(struct cs_engine *e, struct classify *cl, int status)
{
    struct cs_job *j = e->jobs[0];
    const struct cs_stored *r = j->result;
    const char *file = cs_store_job_file(j);
    int nothing, stopped = j->stop_deadline > 0;
    char cls[8], why[700] = "";

    if (j->runs_started == 0)
        return status ? status : 1;
    if (!r) {
        char st[64] = "ended";
        if (WIFEXITED(j->last_status))
            snprintf(st, sizeof st, "exited with status %d", WEXITSTATUS(j->last_status));
        else if (WIFSIGNALED(j->last_status))
            snprintf(st, sizeof st, "was killed by signal %d", WTERMSIG(j->last_status));
        cs_err("classify: %s %s after %.1f s, before its characterization completed: no result "
               "(it needs a few quanta of %g s: standalone, then folded)", j->name, st, j->wall, e->quantum);
        return 1;
    }
    nothing = r->degraded && !isfinite(r->ipc_standalone) && !r->cls;
    snprintf(cls, sizeof cls, "%s", r->cls ? (char[2]){ r->cls, 0 } : "unknown");
    if (r->degraded) {
        const char *c = cl->counting[0] ? cl->counting : "no step of the program was counted";
        if (!have_pmu() && !strstr(c, "no hardware PMU"))
            snprintf(why, sizeof why, "no hardware PMU: %s", c);
        else
            snprintf(why, sizeof why, "%s", c);
    }
    if (cl->json) {
        json_t *cmd = json_array(), *o;
        for (int i = 0; j->argv[i]; i++)
            json_array_append_new(cmd, cs_json_text(j->argv[i]));
        o = json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:{s:o, s:o, s:o}, s:b, s:o, s:o, s:b, s:o, s:o, s:o, s:b, "
                      "s:o, s:b}",
                      "command", cmd, "class", cls, "ipc_standalone", cs_json_exact(r->ipc_standalone), "ipc_folded",
                      cs_json_exact(r->ipc_folded), "fp", cs_json_exact(r->fp), "mpki", cs_json_exact(r->mpki), "bw",
                      "l1", cs_json_exact(r->bw_l1), "l2", cs_json_exact(r->bw_l2), "llc", cs_json_exact(r->bw_llc),
                      "gang_only", r->gang_only, "cores_standalone",
                      r->cores_standalone ? json_integer(r->cores_standalone) : json_null(), "cores_folded",
                      r->cores_folded ? json_integer(r->cores_folded) : json_null(), "degraded", r->degraded,
                      "degraded_reason", cs_json_text(r->degraded ? why : NULL), "counters",
                      cs_json_text(cl->backend), "profile", cs_json_text(cl->profile ? cl->profile->name : NULL),
                      "test_profile", cl->profile && cl->profile->test, "stored",
                      cs_json_text(r->written || cl->from_store ? file : NULL), "from_store", cl->from_store);
        if (o && cl->from_store)
            json_object_set_new(o, "age", json_integer((json_int_t)((double)time(NULL) - r->created)));
        if (o)
            json_object_set_new(o, "stopped", json_boolean(stopped));
        cs_json_put(stdout, o, CS_JSON_EXACT);
    } else if (nothing) {
        printf("class unknown: nothing could be counted (%s); give class= in job files\n", why);
    } else {
        printf("%-16s %s\n", "class", cls);
        print_num(stdout, "ipc_standalone", r->ipc_standalone, "");
        print_num(stdout, "ipc_folded", r->ipc_folded, "");
        print_num(stdout, "fp", r->fp, "");
        print_num(stdout, "bw_l1", r->bw_l1, " GB/s");
        print_num(stdout, "bw_l2", r->bw_l2, " GB/s");
        print_num(stdout, "bw_llc", r->bw_llc, " GB/s");
        print_num(stdout, "mpki", r->mpki, "");
        printf("%-16s %s\n", "gang_only", r->gang_only ? "yes" : "no");
        if (r->degraded)
            printf("%-16s yes: part of the characterization could not be counted (%s)\n", "degraded", why);
        else
            printf("%-16s no\n", "degraded");
    }
    if (!cl->json) {
        if (cl->profile)
            printf("%-16s %s, profile %s%s\n", "counters", cl->backend, cl->profile->name,
                   cl->profile->test ? " (a test profile: the numbers mean nothing, see its CAVEAT)" : "");
        else
            printf("%-16s %s\n", "counters", cl->from_store ? "not used (stored profile)" : "none");
        if (cl->from_store) {
            printf("%-16s %s (%.0f s old; --reprofile measures again)\n", "stored", file,
                   (double)time(NULL) - r->created);
            printf("%-16s not run: its profile was in the store\n", "program");
        } else {
            printf("%-16s %s\n", "stored", r->written ? file : !e->store ? "no (--store none)"
                   : r->degraded ? "no (a degraded result is never stored)" : "no (see the warning above)");
            printf("%-16s %s\n", "program", stopped ? "stopped once characterized" : "ran to its end");
        }
    }
    fflush(stdout);
    return 0;
}

int cs_cmd_topology(int argc, char **argv)
{
    struct cs_getopt g;
    const char *spec = NULL, *cpus = NULL;
    int json = 0, c, status = 2;
    struct cs_topo *t = NULL;
    hwloc_bitmap_t m = NULL;

    cs_opt_start(&g, topo_opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
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
        case O_HELP:
            cs_opt_usage("cosched topology [--json] [--topology SPEC] [-c LIST]", topo_opts);
            status = 0;
            goto bad;
        case ':':
        default:
            cs_opt_refuse(&g, c, NULL, "topology");
            goto bad;
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
    cs_opt_end(&g);
    return status;
}

int cs_cmd_policies(int argc, char **argv)
{
    struct cs_getopt g;
    char **ppath = NULL, **search = NULL;
    int nppath = 0, nsearch = 0, c, status = 2;

    cs_opt_start(&g, pol_opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case O_POLICY_PATH:
            ppath = realloc(ppath, (nppath + 1) * sizeof *ppath);
            ppath[nppath++] = optarg;
            break;
        case O_HELP:
            cs_opt_usage("cosched policies [--policy-path DIR]", pol_opts);
            status = 0;
            goto bad;
        case ':':
        default:
            cs_opt_refuse(&g, c, NULL, "policies");
            goto bad;
        }
    }
    search = cs_policy_search_path(ppath, nppath, &nsearch);
    status = cs_policy_list(search, nsearch, stdout) < 0 ? 1 : 0;
bad:
    cs_strv_free(search, nsearch);
    free(ppath);
    cs_opt_end(&g);
    return status;
}
