/*
 * profile_eval - unit tests of launcher/counters/profile.c, printed as TAP.
 *
 *   profile_eval [PROFILES_DIR]
 *
 * Writes small profiles to a temporary directory and checks the formula
 * compiler and evaluator on known counts (IPC 2.0 from FIXC0=2e9 and
 * FIXC1=1e9, bandwidths over 1 s, precedence, division by zero gives inf or
 * NaN, unavailable metrics, references to metrics above).  With PROFILES_DIR
 * (the source tree's profiles/) it also loads every shipped profile, checks the
 * required metrics, evaluates IPC and the bandwidths on synthetic counts and
 * checks which profile cs_profile_match() picks for known CPUs.
 * Parse errors land on stderr (tests/25-profiles.bats checks their text).
 * Exit status 0 when every test passed.
 */
#include "config.h"
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "counters/counters.h"

static int ntest, nfail;
static char tmpdir[] = "/tmp/profile_eval.XXXXXX";

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++ntest);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!cond)
        nfail++;
}

static int near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
}

/* write text to tmpdir/name, return the path (static buffer) */
static const char *put(const char *name, const char *text)
{
    static char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    return path;
}

/* evaluate metric `name` of p on counts given per slot name */
static double eval_named(const struct cs_profile *p, const char *name, const char *const *slots,
                         const double *vals, int nvals, double seconds, int ncores, int *rc)
{
    double *counts = calloc((size_t)p->nevents + 1, sizeof *counts), out;
    for (int i = 0; i < p->nevents; i++)
        for (int k = 0; k < nvals; k++)
            if (strcmp(p->events[i].slot, slots[k]) == 0)
                counts[i] = vals[k];
    *rc = cs_profile_eval(p, cs_profile_find_metric(p, name), counts, seconds, ncores, &out);
    free(counts);
    return out;
}

static const char *head =
    "# a test profile\n"
    "SHORT  unit test\n"
    "ARCH   intel 6 0x55 0x30-0x3f\n"
    "SOURCE tests/progs/profile_eval.c\n"
    "CAVEAT none\n"
    "EVENTSET\n"
    "FIXC0 INST_RETIRED.ANY perf=hw:instructions likwid=INSTR_RETIRED_ANY:FIXC0\n"
    "FIXC1 CPU_CLK_UNHALTED.THREAD perf=hw:cycles\n"
    "PMC0  L1D.REPLACEMENT perf=raw:event=0x51,umask=0x01 likwid=L1D_REPLACEMENT:PMC0\n"
    "PMC1  L2_LINES_IN.ALL perf=raw:0x1ff1\n"
    "PMC2  OFFCORE perf=raw:event=0xb7,umask=0x01,config1=0x3fb80008fff\n"
    "PMC3  XQ.FULL perf=raw:event=0x2d,umask=0x01,cmask=1,inv,edge\n"
    "PMC4  DF perf=pmu:amd_df:event=0x107,umask=0x38 scope=socket\n"
    "UNC0  CAS_RD perf=pmu:uncore_imc_*:event=0x04,umask=0x03 scope=socket likwid=CAS_COUNT_RD:MBOX*C0\n"
    "SW0   TASK_CLOCK perf=sw:task-clock\n"
    "C0    LLC_MISS perf=cache:LLC-load-misses\n"
    "C1    L1D_LOADS perf=cache:L1-dcache-loads\n"
    "METRICS\n";

static const char *required_tail =
    "cycles       [cycles] FIXC1\n"
    "bw_l2        [GB/s]   1.0E-09*PMC1*clsize/time\n"
    "bw_llc       [GB/s]   1.E-09*PMC2*64/time\n"
    "mem_bw       [GB/s]   1.0E-09*UNC0*clsize/time\n"
    "llc_misses   [lines]  C0\n"
    "llc_refs     [lines]  C1\n"
    "mpki                  1000*llc_misses/instructions\n"
    "orb_full     [cycles] PMC3\n"
    "remote_accesses - unavailable: not in this test\n"
    "local_accesses  [loads] SW0 + PMC4\n";

/* metrics of test_formulas' profile that evaluate to a number: the metric,
 * the seconds, the value wanted and the test's name */
struct near_case { const char *metric; double seconds, want; const char *what; };
static const struct near_case near_cases[] = {
    { "ipc", 1.0, 2.0, "ipc = 2.0 for FIXC0=2e9, FIXC1=1e9" },
    { "bw_l1", 1.0, 64.0, "bw_l1 = 64 GB/s for 1e9 L1D replacements in 1 s" },
    { "bw_l1", 2.0, 32.0, "bw_l1 = 32 GB/s over 2 s" },
    { "percore", 1.0, 8.0, "a metric above and the variable cores: 64 GB/s / 8 cores = 8" },
    { "bw_llc", 1.0, 6.4, "1.E-09 parses: bw_llc = 6.4" },
    { "mpki", 1.0, 1.0, "mpki = 1000*2e6/2e9 = 1" },
    { "prec", 1.0, 11.0, "precedence 2+3*4-6/2 = 11" },
    { "paren", 1.0, -5.0, "parentheses (2+3)*(4-6)/2 = -5" },
    { "neg", 1.0, 7.0, "unary signs -PMC4*-2 + +1 = 7" },
    { "small", 1.0, 15.7, "numbers .5 1.5e+1 2E-1" },
    { "ratio", 1.0, 2.0, "metric references compose" },
};

static void test_formulas(void)
{
    char text[8192];
    const char *path;
    struct cs_profile *p;
    static const char *const slots[] = { "FIXC0", "FIXC1", "PMC0", "PMC1", "PMC2", "UNC0", "C0", "SW0", "PMC4" };
    double vals[] = { 2e9, 1e9, 1e9, 5e8, 1e8, 3e8, 2e6, 7, 3 };
    double v;
    int rc;

    snprintf(text, sizeof text, "%s%s%s", head,
             "instructions [instructions] FIXC0\n"
             "ipc          [instr/cycle]  FIXC0/FIXC1\n"
             "bw_l1        [GB/s] 1.0E-09*PMC0*clsize/time\n"
             "prec         2+3*4-6/2\n"
             "paren        (2+3)*(4-6)/2\n"
             "neg          -PMC4*-2 + +1\n"
             "percore      [GB/s] bw_l1/cores\n"
             "ratio        ipc*instructions/instructions\n"
             "zero         SW0/(FIXC0-FIXC0)\n"
             "negzero      -SW0/(FIXC0-FIXC0)\n"
             "nan          (FIXC0-FIXC0)/(FIXC0-FIXC0)\n"
             "small        .5 + 1.5e+1 + 2E-1\n",
             required_tail);
    path = put("unit.txt", text);
    p = cs_profile_load(path);
    ok(p != NULL, "a well-formed profile loads");
    if (p == NULL)
        return;
    ok(strcmp(p->name, "unit") == 0 && p->nevents == 11 && p->vendor == CS_VENDOR_INTEL && p->family == 6 &&
       p->nmodels == 2 && p->models[1].lo == 0x30 && p->models[1].hi == 0x3f && !p->test,
       "name, events, ARCH intel 6 0x55 0x30-0x3f parsed");
    for (size_t i = 0; i < sizeof near_cases / sizeof near_cases[0]; i++) {
        const struct near_case *c = &near_cases[i];
        v = eval_named(p, c->metric, slots, vals, 9, c->seconds, 8, &rc);
        ok(rc == 0 && near(v, c->want), "%s (got %g)", c->what, v);
    }
    v = eval_named(p, "zero", slots, vals, 9, 1.0, 8, &rc);
    ok(rc == 0 && isinf(v) && v > 0, "x/0 = +inf, no trap (got %g)", v);
    v = eval_named(p, "negzero", slots, vals, 9, 1.0, 8, &rc);
    ok(rc == 0 && isinf(v) && v < 0, "-x/0 = -inf (got %g)", v);
    v = eval_named(p, "nan", slots, vals, 9, 1.0, 8, &rc);
    ok(rc == 0 && isnan(v), "0/0 = NaN (got %g)", v);
    {
        static const char *const s2[] = { "FIXC0", "FIXC1" };
        double v2[] = { 0, 0 };
        v = eval_named(p, "ipc", s2, v2, 2, 1.0, 8, &rc);
        ok(rc == 0 && isnan(v), "ipc with no cycles and no instructions is NaN (got %g)", v);
        v = eval_named(p, "bw_l1", s2, v2, 2, 0.0, 8, &rc);
        ok(rc == 0 && isnan(v), "bandwidth over 0 s with no traffic is NaN (got %g)", v);
        v2[0] = NAN;
        v = eval_named(p, "ipc", s2, v2, 2, 1.0, 8, &rc);
        ok(rc == 0 && isnan(v), "an uncounted event (NAN) makes the metric NaN (got %g)", v);
    }
    v = eval_named(p, "remote_accesses", slots, vals, 9, 1.0, 8, &rc);
    ok(rc == -1 && isnan(v), "an unavailable metric evaluates to -1 and NaN");
    ok(cs_profile_eval(p, p->nmetrics, vals, 1.0, 1, &v) == -1 && isnan(v) &&
       cs_profile_eval(p, -1, vals, 1.0, 1, &v) == -1, "metric index out of range: -1");
    ok(cs_profile_find_metric(p, "no_such") == -1 && cs_profile_find_metric(p, "ipc") >= 0, "find_metric");
    {
        int i = cs_profile_find_metric(p, "remote_accesses");
        ok(i >= 0 && !p->metrics[i].available && strcmp(p->metrics[i].reason, "not in this test") == 0,
           "'- unavailable: reason' is kept");
        i = cs_profile_find_metric(p, "mem_bw");
        ok(p->metrics[i].scope == CS_SCOPE_SOCKET && strcmp(p->metrics[i].unit, "GB/s") == 0,
           "mem_bw uses a socket event: its scope is socket");
        i = cs_profile_find_metric(p, "mpki");
        ok(p->metrics[i].scope == CS_SCOPE_CORE && strcmp(p->metrics[i].unit, "") == 0, "no unit: empty string");
    }
    {
        const struct cs_event *e = p->events;
        ok(e[0].perf_kind == CS_PERF_HW && e[0].perf_type == 0 && e[0].perf_config == 1 &&
           e[0].likwid && strcmp(e[0].likwid, "INSTR_RETIRED_ANY:FIXC0") == 0, "hw:instructions, likwid string");
        ok(e[1].likwid == NULL, "no likwid= : not countable through likwid");
        ok(e[2].perf_kind == CS_PERF_RAW && e[2].perf_type == 4 && e[2].perf_config == 0x0151 &&
           e[2].perf_terms && strcmp(e[2].perf_terms, "event=0x51,umask=0x01") == 0, "raw terms encode to 0x0151");
        ok(e[3].perf_config == 0x1ff1 && e[3].perf_terms == NULL, "raw:0x1ff1");
        ok(e[4].perf_config == 0x01b7 && e[4].perf_config1 == 0x3fb80008fffULL, "offcore: config1 kept");
        ok(e[5].perf_config == ((1ULL << 24) | (1ULL << 23) | (1ULL << 18) | 0x012d), "cmask, inv, edge bits");
        ok(e[6].perf_kind == CS_PERF_PMU && strcmp(e[6].perf_pmu, "amd_df") == 0 && !e[6].perf_pmu_all &&
           e[6].perf_config == ((1ULL << 32) | 0x3807) && e[6].scope == CS_SCOPE_SOCKET,
           "AMD extended event 0x107 goes to bits 32-35");
        ok(strcmp(e[7].perf_pmu, "uncore_imc") == 0 && e[7].perf_pmu_all && e[7].perf_type == CS_PERF_TYPE_DYNAMIC &&
           strcmp(e[7].likwid, "CAS_COUNT_RD:MBOX*C0") == 0, "pmu:uncore_imc_* is every uncore_imc_<n>");
        ok(e[8].perf_kind == CS_PERF_SW && e[8].perf_type == 1 && e[8].perf_config == 1, "sw:task-clock");
        ok(e[9].perf_kind == CS_PERF_CACHE && e[9].perf_type == 3 && e[9].perf_config == (2 | (0 << 8) | (1 << 16)),
           "cache:LLC-load-misses");
        ok(e[10].perf_config == 0, "cache:L1-dcache-loads");
    }
    ok(cs_profile_matches(p, "GenuineIntel", 6, 0x55) && cs_profile_matches(p, "intel", 6, 0x3a) &&
       !cs_profile_matches(p, "GenuineIntel", 6, 0x56) && !cs_profile_matches(p, "AuthenticAMD", 6, 0x55) &&
       !cs_profile_matches(p, "GenuineIntel", 0x19, 0x55), "ARCH matching: vendor, family, models and ranges");
    cs_profile_free(p);
}

/* bad profiles: load must fail (the message is checked by the bats test) */
static void test_errors(void)
{
    static const struct { const char *name, *body; } bad[] = {
        { "paren.txt", "bw_l1 [GB/s] 1.0E-09*(PMC0*clsize/time\n" },
        { "extra.txt", "bw_l1 [GB/s] 1.0E-09*PMC0)*clsize/time\n" },
        { "slot.txt", "bw_l1 [GB/s] 1.0E-09*PMC9*clsize/time\n" },
        { "number.txt", "bw_l1 [GB/s] 1.0E*PMC0\n" },
        { "trail.txt", "bw_l1 [GB/s] 1.0E-09*PMC0*\n" },
        { "unit.txt", "bw_l1 [MB/s] PMC0\n" },
        { "self.txt", "bw_l1 [GB/s] bw_l1\n" },
    };
    char text[8192];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s%s%s", head, "instructions FIXC0\nipc FIXC0/FIXC1\n", bad[i].body,
                 required_tail);
        ok(cs_profile_load(put(bad[i].name, text)) == NULL, "%s is refused", bad[i].name);
    }
    ok(cs_profile_load("/nonexistent/x.txt") == NULL, "a missing file is refused");
}

static const char *const known[][4] = {
    /* vendor, family, model, profile cs_profile_match() must pick (or "-") */
    { "GenuineIntel", "6", "0x2d", "sandybridgeEP" },
    { "GenuineIntel", "6", "0x3e", "ivybridgeEP" },
    { "GenuineIntel", "6", "0x3f", "haswellEP" },
    { "GenuineIntel", "6", "0x4f", "haswellEP" },
    { "GenuineIntel", "6", "0x56", "haswellEP" },
    { "GenuineIntel", "6", "0x55", "skylakeX" },
    { "GenuineIntel", "6", "0x6a", "icelakeX" },
    { "GenuineIntel", "6", "0x6c", "icelakeX" },
    { "GenuineIntel", "6", "0x8f", "sapphirerapids" },
    { "AuthenticAMD", "0x17", "0x31", "zen2" },
    { "AuthenticAMD", "0x17", "0x71", "zen2" },
    { "AuthenticAMD", "0x19", "0x01", "zen3" },
    { "AuthenticAMD", "0x19", "0x21", "zen3" },
    { "AuthenticAMD", "0x19", "0x50", "zen3" },
    { "AuthenticAMD", "0x19", "0x11", "zen4" },
    { "AuthenticAMD", "0x19", "0x61", "zen4" },
    { "AuthenticAMD", "0x19", "0xa0", "zen4" },
    { "GenuineIntel", "6", "0xa7", "-" },     /* Rocket Lake (a development VM) */
    { "GenuineIntel", "6", "0x9e", "-" },     /* a client Skylake */
    { "AuthenticAMD", "0x17", "0x01", "-" },  /* Zen 1 */
    { "AuthenticAMD", "0x1a", "0x02", "zen5" },  /* Turin (a development VM) */
    { "AuthenticAMD", "0x1a", "0x44", "zen5" },
    { "AuthenticAMD", "0x1a", "0x50", "-" },  /* Zen 6 */
    { "HygonGenuine", "0x18", "0x00", "-" },
};

static void test_shipped(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int nprof = 0;

    ok(d != NULL, "profiles directory %s opens", dir);
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char path[1024];
        struct cs_profile *p;
        size_t l = strlen(de->d_name);
        int missing = 0, i;

        if (l < 5 || strcmp(de->d_name + l - 4, ".txt") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        p = cs_profile_load(path);
        ok(p != NULL, "shipped %s loads", de->d_name);
        if (p == NULL)
            continue;
        nprof++;
        for (i = 0; cs_required_metrics[i]; i++)
            missing += cs_profile_find_metric(p, cs_required_metrics[i]) < 0;
        ok(missing == 0, "%s: all %d required metrics present or declared unavailable", p->name, i);
        ok(p->nsources > 0, "%s: names its sources", p->name);
        /* every event counts 1e9 in 1 s: ipc 1, bandwidths 64 GB/s times the number of events summed */
        {
            double *counts = malloc((size_t)p->nevents * sizeof *counts), v;
            int bad = 0;
            for (int e = 0; e < p->nevents; e++)
                counts[e] = 1e9;
            for (int m = 0; m < p->nmetrics; m++) {
                int rc = cs_profile_eval(p, m, counts, 1.0, 4, &v);
                if (p->metrics[m].available ? (rc != 0 || !isfinite(v) || v <= 0) : rc != -1) {
                    printf("# %s: %s = %g (rc %d)\n", p->name, p->metrics[m].name, v, rc);
                    bad++;
                }
            }
            ok(bad == 0, "%s: every available metric is finite and positive on equal counts", p->name);
            if ((i = cs_profile_find_metric(p, "ipc")) >= 0 && p->metrics[i].available) {
                cs_profile_eval(p, i, counts, 1.0, 4, &v);
                ok(near(v, 1.0), "%s: ipc = 1 when instructions = cycles (got %g)", p->name, v);
            }
            if ((i = cs_profile_find_metric(p, "bw_l1")) >= 0 && p->metrics[i].available && !p->test) {
                cs_profile_eval(p, i, counts, 1.0, 4, &v);
                ok(near(v, 64.0), "%s: bw_l1 = 64 GB/s for 1e9 lines in 1 s (got %g)", p->name, v);
            }
            free(counts);
        }
        cs_profile_free(p);
    }
    closedir(d);
    ok(nprof >= 10, "%d profiles shipped (want at least 10)", nprof);

    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        const char *dirs[] = { dir };
        struct cs_profile *p = cs_profile_match(dirs, 1, known[k][0], (int)strtol(known[k][1], NULL, 0),
                                                (int)strtol(known[k][2], NULL, 0));
        const char *got = p ? p->name : "-";
        ok(strcmp(got, known[k][3]) == 0, "%s family %s model %s -> %s (got %s)", known[k][0], known[k][1],
           known[k][2], known[k][3], got);
        cs_profile_free(p);
    }
}

int main(int argc, char **argv)
{
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_formulas();
    test_errors();
    if (argc > 1)
        test_shipped(argv[1]);
    printf("1..%d\n", ntest);
    {
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        char path[1024];
        while (d && (de = readdir(d)) != NULL)
            if (de->d_name[0] != '.') {
                snprintf(path, sizeof path, "%s/%s", tmpdir, de->d_name);
                unlink(path);
            }
        if (d)
            closedir(d);
        rmdir(tmpdir);
    }
    return nfail ? 1 : 0;
}
