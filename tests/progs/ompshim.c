/* ompshim - an OpenMP program whose results are checked, for
 * tests/57-omp-shim.bats (libcosched-omp.so, issue 14).
 *
 *   ompshim [-p PLAN] [-c CPUS]
 *   ompshim -l SECONDS
 *
 * PLAN is a comma-separated list of CPU counts (default "2,1,2"): before each
 * phase the process's affinity, all threads, is set to the first K of CPUS
 * (a comma-separated list of CPU numbers; default: the CPUs the main thread
 * may run on at start, which a runtime that binds threads has narrowed), by the real `taskset -a -p -c LIST PID` (what cosched's
 * affinity backend does to a running job), and checked with
 * sched_getaffinity.  Each phase runs the same regions; each prints one line
 *
 *   phase=P cpus=K region=NAME team=T [inner=I] [max=M] ok|BAD: what
 *
 * (-l: no phases; for SECONDS of wall time, regions split in
 * omp_get_max_threads() parts, each checked, while whoever runs the job moves
 * it; then one line "teams: 1=N1 2=N2 ... regions=N ok|BAD: what".)
 *
 * where team is omp_get_num_threads() inside the region (every thread must
 * agree), inner the team of a nested region, max what omp_get_max_threads()
 * said just before the region (region "promise": before the CPUs changed to
 * 1 if the phase has 2, to 2 if it has 1, and back after the region).  Every region's result is computed and
 * compared with the closed form; exit status 1 if any is wrong, 2 on bad
 * usage or when the affinity cannot be set.  Built with gcc (CS_GOMP_ABI:
 * also the GOMP_1.0 entry points, called directly) and with clang/libomp.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define N_LOOP 100000   /* a constant: gcc combines only loops with invariant bounds */
static int hits[N_LOOP];
static long vals[N_LOOP];
static const long n_items = N_LOOP;
static int failed;
static int phase, phase_cpus;
static int start_cpus[1024], n_start_cpus;

static void report(const char *region, int team, int inner, int max, const char *bad)
{
    printf("phase=%d cpus=%d region=%s team=%d", phase, phase_cpus, region, team);
    if (inner >= 0)
        printf(" inner=%d", inner);
    if (max >= 0)
        printf(" max=%d", max);
    if (bad) {
        printf(" BAD: %s\n", bad);
        failed = 1;
    } else
        printf(" ok\n");
    fflush(stdout);
}

/* every element hit exactly once; returns NULL or what went wrong */
static const char *check_hits(char *buf, size_t len)
{
    for (long i = 0; i < n_items; i++)
        if (hits[i] != 1) {
            snprintf(buf, len, "item %ld was done %d times (want 1)", i, hits[i]);
            return buf;
        }
    return NULL;
}

static const char *check_sum(char *buf, size_t len, long sum)
{
    long want = n_items * (n_items - 1) / 2;
    if (sum != want) {
        snprintf(buf, len, "sum %ld, want %ld", sum, want);
        return buf;
    }
    return NULL;
}

/* the team size seen by every thread of a region: -1 if they disagree */
static int team_merge(int *team, int t)
{
    int cur = __atomic_load_n(team, __ATOMIC_RELAXED);
    if (cur == 0 && __atomic_compare_exchange_n(team, &cur, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return t;
    if (cur != t)
        __atomic_store_n(team, -1, __ATOMIC_RELAXED);
    return t;
}

static void set_cpus(int k)
{
    char list[8192] = "", pid[32];
    if (k > n_start_cpus) {
        fprintf(stderr, "ompshim: the plan asks for %d CPUs, the process started with %d\n", k, n_start_cpus);
        exit(2);
    }
    for (int i = 0; i < k; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", start_cpus[i]);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *argv[] = { "taskset", "-a", "-p", "-c", list, pid, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1 /* O_WRONLY */, 0);
    pid_t child;
    int st = -1, tries;
    /* taskset -a walks /proc/PID/task: a thread the runtime ends meanwhile
     * (nested teams shrink) makes it fail ("No such process"): try again */
    for (tries = 0; tries < 5; tries++)
        if (posix_spawnp(&child, "taskset", &fa, NULL, argv, environ) == 0 && waitpid(child, &st, 0) == child &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0)
            break;
    if (tries == 5) {
        fprintf(stderr, "ompshim: `taskset -a -p -c %s %s` failed 5 times\n", list, pid);
        exit(2);
    }
    posix_spawn_file_actions_destroy(&fa);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != k) {
        fprintf(stderr, "ompshim: after taskset the process has %d CPUs, want %d\n",
                CPU_COUNT(&set), k);
        exit(2);
    }
    /* a change from outside the program, which cosched did not make: the
     * shim sees it within a clock tick without a page, within 100 ms with
     * one (cosched-omp.c, PAGE_REVALIDATE_MS) */
    struct timespec pause = { 0, 150 * 1000 * 1000 };
    while (nanosleep(&pause, &pause) != 0)
        ;
}

/* ---- the regions ---- */

static void r_reduce(void)   /* reduction, work split by omp_get_num_threads() */
{
    long sum = 0;
    int team = 0;
    char buf[200];
#pragma omp parallel reduction(+ : sum)
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
        team_merge(&team, nt);
        long lo = n_items * me / nt, hi = n_items * (me + 1) / nt;
        for (long i = lo; i < hi; i++)
            sum += i;
    }
    report("reduce", team, -1, -1, check_sum(buf, sizeof buf, sum));
}

static void r_split(void)    /* each thread writes its own block */
{
    int team = 0;
    char buf[200];
    memset(hits, 0, sizeof hits);
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
        team_merge(&team, nt);
        long lo = n_items * me / nt, hi = n_items * (me + 1) / nt;
        for (long i = lo; i < hi; i++)
            hits[i]++;
    }
    report("split", team, -1, -1, check_hits(buf, sizeof buf));
}

#define DO_PRAGMA(x) _Pragma(#x)
/* Worksharing loops: with a reduction clause gcc emits GOMP_parallel and the
 * loop inside, without one the combined GOMP_parallel_loop_* entry points
 * (firstprivate(sum): the sum is then taken from the per-item values). */
#define LOOP_REGION(fname, label, clauses)                                      \
    static void fname(void)                                                     \
    {                                                                           \
        long sum = 0;                                                           \
        int team = 0;                                                           \
        char buf[200];                                                          \
        memset(hits, 0, sizeof hits);                                           \
        memset(vals, 0, sizeof vals);                                           \
        DO_PRAGMA(omp parallel for clauses)                                     \
        for (long i = 0; i < N_LOOP; i++) {                                     \
            team_merge(&team, omp_get_num_threads());                           \
            hits[i]++;                                                          \
            vals[i] = i;                                                        \
            sum += i;                                                           \
        }                                                                       \
        if (sum == 0)                                                           \
            for (long i = 0; i < n_items; i++)                                  \
                sum += vals[i];                                                 \
        const char *bad = check_sum(buf, sizeof buf, sum);                      \
        report(label, team, -1, -1, bad ? bad : check_hits(buf, sizeof buf));   \
    }

LOOP_REGION(r_static, "static", reduction(+ : sum) schedule(static))
LOOP_REGION(r_dynred, "dynamic-reduction", reduction(+ : sum) schedule(dynamic, 13))
LOOP_REGION(r_static3, "static3", firstprivate(sum) schedule(static, 3))
LOOP_REGION(r_dynamic, "dynamic", firstprivate(sum) schedule(monotonic : dynamic, 7))
LOOP_REGION(r_nmdynamic, "nmdynamic", firstprivate(sum) schedule(dynamic, 5))
LOOP_REGION(r_guided, "guided", firstprivate(sum) schedule(monotonic : guided, 5))
LOOP_REGION(r_nmguided, "nmguided", firstprivate(sum) schedule(guided, 5))
LOOP_REGION(r_runtime, "runtime", firstprivate(sum) schedule(runtime))
LOOP_REGION(r_mruntime, "mruntime", firstprivate(sum) schedule(monotonic : runtime))
LOOP_REGION(r_nmruntime, "nmruntime", firstprivate(sum) schedule(nonmonotonic : runtime))

static void r_sections(void)
{
    int team = 0, done[3] = { 0, 0, 0 };
    char buf[200];
#pragma omp parallel sections
    {
#pragma omp section
        { team_merge(&team, omp_get_num_threads()); done[0]++; }
#pragma omp section
        { team_merge(&team, omp_get_num_threads()); done[1]++; }
#pragma omp section
        { team_merge(&team, omp_get_num_threads()); done[2]++; }
    }
    const char *bad = NULL;
    for (int i = 0; i < 3; i++)
        if (done[i] != 1) {
            snprintf(buf, sizeof buf, "section %d ran %d times (want 1)", i, done[i]);
            bad = buf;
        }
    report("sections", team, -1, -1, bad);
}

static void r_taskred(void)   /* parallel with a task reduction: GOMP_parallel_reductions */
{
    long sum = 0;
    int team = 0;
    char buf[200];
#pragma omp parallel reduction(task, + : sum)
    {
        team_merge(&team, omp_get_num_threads());
#pragma omp single
        for (long b = 0; b < 100; b++) {
#pragma omp task in_reduction(+ : sum)
            for (long i = n_items * b / 100; i < n_items * (b + 1) / 100; i++)
                sum += i;
        }
    }
    report("taskred", team, -1, -1, check_sum(buf, sizeof buf, sum));
}

static void r_nested(void)    /* the outer team follows the CPUs, the inner one keeps its ICV */
{
    long sum = 0;
    int team = 0, inner = 0;
    char buf[200];
    omp_set_max_active_levels(2);
#pragma omp parallel reduction(+ : sum)
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
        team_merge(&team, nt);
        omp_set_num_threads(2);
#pragma omp parallel reduction(+ : sum)
        {
            int ni = omp_get_num_threads(), mi = omp_get_thread_num();
            team_merge(&inner, ni);
            long lo = n_items * me / nt, hi = n_items * (me + 1) / nt;
            for (long i = lo + mi; i < hi; i += ni)
                sum += i;
        }
    }
    omp_set_max_active_levels(1);
    report("nested", team, inner, -1, check_sum(buf, sizeof buf, sum));
}

/* twelve shared variables: clang passes one pointer each to __kmpc_fork_call,
 * past the six argument registers, on the stack */
static void r_many(void)
{
    long a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8, a8 = 9, a9 = 10;
    long sum = 0, extra = 0;
    int team = 0;
    char buf[200];
#pragma omp parallel reduction(+ : sum, extra)
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
        team_merge(&team, nt);
        for (long i = n_items * me / nt; i < n_items * (me + 1) / nt; i++)
            sum += i;
        if (me == 0)
            extra = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
    }
    const char *bad = check_sum(buf, sizeof buf, sum);
    if (!bad && extra != 55) {
        snprintf(buf, sizeof buf, "the shared variables add up to %ld, want 55", extra);
        bad = buf;
    }
    report("many-args", team, -1, -1, bad);
}

static void r_clause(void)    /* num_threads(2) keeps 2 */
{
    long sum = 0;
    int team = 0;
    char buf[200];
#pragma omp parallel num_threads(2) reduction(+ : sum)
    {
        int nt = omp_get_num_threads(), me = omp_get_thread_num();
        team_merge(&team, nt);
        for (long i = me; i < n_items; i += nt)
            sum += i;
    }
    report("clause", team, -1, -1, check_sum(buf, sizeof buf, sum));
}

static void r_max(void)       /* work split in omp_get_max_threads() parts before the region */
{
    int max = omp_get_max_threads();
    long part[64] = { 0 };
    int team = 0;
    char buf[200];
    const char *bad = NULL;
    if (max < 1 || max > 64) {
        report("max", 0, -1, max, "omp_get_max_threads() out of 1..64");
        return;
    }
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        team_merge(&team, omp_get_num_threads());
        if (me < max)
            for (long i = n_items * me / max; i < n_items * (me + 1) / max; i++)
                part[me] += i;
    }
    long sum = 0;
    for (int i = 0; i < max; i++)
        sum += part[i];
    if (team != max) {
        snprintf(buf, sizeof buf, "omp_get_max_threads() said %d, the region had %d threads", max, team);
        bad = buf;
    } else
        bad = check_sum(buf, sizeof buf, sum);
    report("max", team, -1, max, bad);
}

/* omp_get_max_threads() is a promise for the next region: the CPUs change
 * between the call and the region, the team still has the size it said */
static void r_promise(void)
{
    if (n_start_cpus < 2)
        return;
    int max = omp_get_max_threads();
    int team = 0;
    long sum = 0, part[64] = { 0 };
    char buf[200];
    const char *bad;
    set_cpus(phase_cpus == 1 ? 2 : 1);
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        team_merge(&team, omp_get_num_threads());
        if (me < max && max <= 64)
            for (long i = n_items * me / max; i < n_items * (me + 1) / max; i++)
                part[me] += i;
    }
    set_cpus(phase_cpus);
    for (int i = 0; i < max && i < 64; i++)
        sum += part[i];
    if (team != max) {
        snprintf(buf, sizeof buf, "omp_get_max_threads() said %d, the region (after a CPU change) had %d threads", max, team);
        bad = buf;
    } else
        bad = check_sum(buf, sizeof buf, sum);
    report("promise", team, -1, max, bad);
}

#ifdef CS_GOMP_ABI
/* The GOMP_1.0 ABI (gcc < 4.9): GOMP_parallel*_start, the master runs the
 * body itself, GOMP_parallel_end.  Called directly: gcc 12 emits GOMP_parallel. */
void GOMP_parallel_start(void (*)(void *), void *, unsigned);
void GOMP_parallel_end(void);
void GOMP_parallel_loop_dynamic_start(void (*)(void *), void *, unsigned, long, long, long, long);
void GOMP_parallel_sections_start(void (*)(void *), void *, unsigned, unsigned);
_Bool GOMP_loop_dynamic_next(long *, long *);
void GOMP_loop_end_nowait(void);
unsigned GOMP_sections_next(void);
void GOMP_sections_end_nowait(void);

struct old { long sum; int team; };

static void old_body(void *p)
{
    struct old *o = p;
    int nt = omp_get_num_threads(), me = omp_get_thread_num();
    long s = 0;
    team_merge(&o->team, nt);
    for (long i = n_items * me / nt; i < n_items * (me + 1) / nt; i++)
        s += i;
    __atomic_add_fetch(&o->sum, s, __ATOMIC_RELAXED);
}

static void old_loop_body(void *p)
{
    struct old *o = p;
    long lo, hi, s = 0;
    team_merge(&o->team, omp_get_num_threads());
    while (GOMP_loop_dynamic_next(&lo, &hi))
        for (long i = lo; i < hi; i++) {
            hits[i]++;
            s += i;
        }
    GOMP_loop_end_nowait();
    __atomic_add_fetch(&o->sum, s, __ATOMIC_RELAXED);
}

static void old_sections_body(void *p)
{
    struct old *o = p;
    unsigned sec;
    team_merge(&o->team, omp_get_num_threads());
    while ((sec = GOMP_sections_next()) != 0)   /* sections 1..4: item blocks */
        for (long i = n_items * (sec - 1) / 4; i < n_items * sec / 4; i++) {
            hits[i]++;
            __atomic_add_fetch(&o->sum, i, __ATOMIC_RELAXED);
        }
    GOMP_sections_end_nowait();
}

static void r_oldabi(void)
{
    struct old o = { 0, 0 };
    char buf[200];
    const char *bad;
    GOMP_parallel_start(old_body, &o, 0);
    old_body(&o);
    GOMP_parallel_end();
    report("old-parallel", o.team, -1, -1, check_sum(buf, sizeof buf, o.sum));

    memset(hits, 0, sizeof hits);
    o = (struct old){ 0, 0 };
    GOMP_parallel_loop_dynamic_start(old_loop_body, &o, 0, 0, n_items, 1, 11);
    old_loop_body(&o);
    GOMP_parallel_end();
    bad = check_sum(buf, sizeof buf, o.sum);
    report("old-loop", o.team, -1, -1, bad ? bad : check_hits(buf, sizeof buf));

    memset(hits, 0, sizeof hits);
    o = (struct old){ 0, 0 };
    GOMP_parallel_sections_start(old_sections_body, &o, 0, 4);
    old_sections_body(&o);
    GOMP_parallel_end();
    bad = check_sum(buf, sizeof buf, o.sum);
    report("old-sections", o.team, -1, -1, bad ? bad : check_hits(buf, sizeof buf));
}
#endif

/* -l: regions for `seconds`, each split in the omp_get_max_threads() parts
 * the region must have (the promise), results checked, team sizes counted */
static int loop_regions(double seconds)
{
    long count[65] = { 0 }, regions = 0;
    char bad[200] = "";
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        int max = omp_get_max_threads(), team = 0;
        long sum = 0;
        if (max < 1 || max > 64) {
            snprintf(bad, sizeof bad, "omp_get_max_threads() said %d", max);
            break;
        }
#pragma omp parallel reduction(+ : sum)
        {
            int me = omp_get_thread_num();
            team_merge(&team, omp_get_num_threads());
            if (me < max)
                for (long i = 10000L * me / max; i < 10000L * (me + 1) / max; i++)
                    sum += i;
        }
        regions++;
        if (team != max) {
            snprintf(bad, sizeof bad, "region %ld: omp_get_max_threads() said %d, the region had %d threads",
                     regions, max, team);
            break;
        }
        if (sum != 10000L * 9999 / 2) {
            snprintf(bad, sizeof bad, "region %ld: sum %ld, want %ld", regions, sum, 10000L * 9999 / 2);
            break;
        }
        count[team]++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    printf("teams:");
    for (int i = 1; i <= 64; i++)
        if (count[i])
            printf(" %d=%ld", i, count[i]);
    printf(" regions=%ld %s%s\n", regions, bad[0] ? "BAD: " : "ok", bad);
    return bad[0] ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *plan = "2,1,2";
    int c;
    const char *cpus = NULL;
    while ((c = getopt(argc, argv, "p:c:l:")) != -1) {
        switch (c) {
        case 'p': plan = optarg; break;
        case 'c': cpus = optarg; break;
        case 'l': {
            char *end;
            double sec = strtod(optarg, &end);
            if (*end || !(sec > 0 && sec <= 60)) {
                fprintf(stderr, "ompshim: -l: '%s' is not a number of seconds (0 to 60)\n", optarg);
                return 2;
            }
            return loop_regions(sec);
        }
        default:
            fprintf(stderr, "usage: ompshim [-p COUNT,COUNT,...] [-c CPU,CPU,...] | -l SECONDS\n");
            return 2;
        }
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("ompshim: sched_getaffinity");
        return 2;
    }
    for (int i = 0; i < CPU_SETSIZE && n_start_cpus < 1024; i++)
        if (CPU_ISSET(i, &set))
            start_cpus[n_start_cpus++] = i;
    if (cpus) {
        char *end;
        n_start_cpus = 0;
        for (const char *q = cpus; *q && n_start_cpus < 1024; q = *end ? end + 1 : end) {
            long id = strtol(q, &end, 10);
            if (end == q || id < 0 || id >= CPU_SETSIZE || (*end && *end != ',')) {
                fprintf(stderr, "ompshim: -c: '%s' is not a comma-separated list of CPU numbers\n", cpus);
                return 2;
            }
            start_cpus[n_start_cpus++] = (int)id;
        }
    }

    char *copy = strdup(plan), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long k = strtol(tok, &end, 10);
        if (*end || k < 1 || k > 1024) {
            fprintf(stderr, "ompshim: -p: '%s' is not a CPU count (1..1024)\n", tok);
            return 2;
        }
        phase++;
        phase_cpus = (int)k;
        set_cpus(phase_cpus);
        r_reduce();
        r_split();
        r_static();
        r_dynred();
        r_static3();
        r_dynamic();
        r_nmdynamic();
        r_guided();
        r_nmguided();
        r_runtime();
        r_mruntime();
        r_nmruntime();
        r_sections();
        r_taskred();
        r_nested();
        r_many();
        r_clause();
        r_max();
        r_promise();
#ifdef CS_GOMP_ABI
        r_oldabi();
#endif
    }
    free(copy);
    return failed;
}
