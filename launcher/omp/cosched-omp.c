/*
 * libcosched-omp.so - size OpenMP teams to the CPUs a process holds now
 * (issue 14; the idea is BSC DLB's DROM, done here without changing the program).
 *
 * cosched folds a job's threads onto fewer cores while it runs (cpuset or
 * affinity).  An OpenMP team that keeps its size then has two threads per core,
 * and with the runtime's default (spinning) wait policy a barrier costs a
 * scheduler time slice: > 2,000x slower (BENCHMARKS.md section 2).  Preloaded
 * into a job (LD_PRELOAD), this library makes each new team as large as the
 * CPUs the process may run on at the moment the team is formed, so no two
 * threads of a team share a core and the runtime may keep spinning.
 *
 * The rule.  For each new *outermost* parallel region (omp_get_level() == 0)
 * without a num_threads clause, the team size asked for is
 *
 *      min(nthreads ICV, CPUs in the calling thread's affinity mask now)
 *
 * where the nthreads ICV is what the user asked for (OMP_NUM_THREADS,
 * omp_set_num_threads) or the runtime's default, read from the runtime itself
 * (its own omp_get_max_threads), never cached.  When the CPUs are not fewer
 * than the ICV the call is forwarded unchanged.
 *
 * Long regions (issue 26).  A team formed on few CPUs keeps its size for the
 * region's whole life, however many CPUs the job gets meanwhile.  So for the
 * libgomp entry points that run a whole region (GOMP_parallel*, not the old
 * *_start ones) the shim times outermost regions on the coarse clock and
 * keeps, per call site (the fn pointer; a table of 512), whether the last
 * one timed lasted LONG_MS (100 ms) or more.  A long call site, and one not
 * seen yet (unknown length), gets the ICV even on fewer CPUs; a short one gets
 * the min() above.  Timed are a call site's first region, every region that
 * starts while its team would be smaller than the ICV (the answer decides
 * the team's size), and else one region of the site per LONG_MS (a clock
 * read saved per region; a site whose regions grew long while the job held
 * all its CPUs is known long by its next fold).  libomp's regions (the stub
 * below jumps, it cannot time) and the old ABI are sized by the min() always.
 *
 * CPUs held, without a system call per region (issue 26).  cosched gives each
 * job a page (shared/omppage.h: a sealed memfd named in COSCHED_OMP_PAGE;
 * `cosched run` to the jobs it forks, the node engine through the SPANK
 * plugin to each co-scheduled Slurm step, shared by the step's tasks)
 * whose generation it bumps after every change of the job's CPUs.  Each
 * thread caches its CPU count and re-reads it (sched_getaffinity) only when
 * the generation moved, when the program called sched_setaffinity or
 * pthread_setaffinity_np itself (both wrapped: they bump a counter), or after
 * PAGE_REVALIDATE_MS (100 ms: changes cosched did not make, taskset from
 * outside).  Without a page (a program run outside cosched) the
 * count is re-read at most once per millisecond of CLOCK_MONOTONIC_COARSE,
 * i.e. once per kernel tick.  A team's size (short call sites) therefore
 * changes at most once per change of CPUs.
 *
 * The reverse channel.  With a page the shim writes into it the outermost
 * team size it last asked for (a region with a num_threads clause: that
 * count) and counts outermost regions completed (libomp and the old ABI:
 * begun); cosched reads both at the end of each step (job.team,
 * job.last.regions, cosched-policy(7)).  Each thread counts in a slot of
 * the page of its own, claimed at its first region (a plain load and store
 * per region: a locked add would drain the store buffer at every region's
 * end); a child after fork claims its own; threads beyond the page's slots
 * share one count with a locked add.  Loop chunks are not counted: they
 * would cost a wrapper around every GOMP_loop_*_next.  A region with a num_threads
 * clause, a nested region (level > 0; `if(false)` regions count as levels),
 * and a process that never enters OpenMP are left exactly as they are.
 * The runtime still applies its own limits (dyn-var, thread-limit-var,
 * max-active-levels) on top: the shim only passes a num_threads value where
 * the program passed none, which the runtimes treat exactly like the ICV
 * (libgomp: gomp_resolve_num_threads; libomp: __kmp_reserve_threads), and
 * the ICVs of the team's implicit tasks do not depend on it.
 *
 * omp_get_max_threads() (C and Fortran: omp_get_max_threads_) called at level
 * 0 answers the same min(), and that answer is a promise: the next outermost
 * region without a clause of the same thread gets exactly that many threads
 * (unless the ICV changed in between), even if the CPUs changed meanwhile.
 * A program that does  n = omp_get_max_threads(); <split work in n parts>;
 * #pragma omp parallel  therefore stays correct.  Before the process's first
 * outermost region it answers the ICV (that region's length is unknown, as
 * for a call site not seen yet): a program that sizes per-thread storage at
 * its start, the usual place, and a program whose one long region encloses
 * its whole run, get their full count whatever CPUs they held when they
 * started.  What cannot be kept: a program that sizes per-thread storage
 * from omp_get_max_threads() after its first region, while it holds few
 * CPUs, and indexes it by omp_get_thread_num() in later regions after it got
 * more CPUs, sees more threads than it was told.  Such a
 * fixed-count program must opt out (below); so must any program that relies on
 * getting exactly OMP_NUM_THREADS threads.  At level > 0 the answer is the
 * runtime's own.
 *
 * Opt-out, read once per process from the environment:
 *   COSCHED_OMP=off (or 0, no, false)   the shim forwards everything unchanged;
 *   COSCHED_OMP=on, 1, yes, true, unset the shim works;
 *   any other COSCHED_OMP value         one line on stderr, then off;
 *   OMP_DYNAMIC=false set explicitly    off: the OpenMP way to say "give me
 *                                       exactly the threads I asked for"
 *                                       (unset, the runtimes' default is also
 *                                       false; that does not turn the shim off);
 *   a thread binding in force           off for that region: when
 *     (omp_get_proc_bind() != false: OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY)
 *                                       the runtime has pinned the calling thread
 *                                       to one place, so its mask is not the
 *                                       process's CPUs.
 *
 * ABI entry points covered (each forwarded to the next definition, found with
 * dlsym(RTLD_NEXT) or, for a runtime loaded by a dlopen()ed library with
 * RTLD_LOCAL, in the already-loaded libgomp.so.1 / libomp.so.5 / libiomp5.so):
 *   GCC libgomp (GOMP_1.0 .. GOMP_5.0, as in Debian 12's libgomp1 12.2;
 *   num_threads == 0 means "no clause"; `if(false)` arrives as 1):
 *     GOMP_parallel, GOMP_parallel_reductions, GOMP_parallel_start (old ABI),
 *     GOMP_parallel_loop_{static,dynamic,guided,runtime}[_start],
 *     GOMP_parallel_loop_nonmonotonic_{dynamic,guided,runtime},
 *     GOMP_parallel_loop_maybe_nonmonotonic_runtime,
 *     GOMP_parallel_sections[_start].
 *   Not covered: GOMP_teams_reg (host teams: the team count is unchanged; a
 *   parallel region inside a host team is level 0 and is sized as above),
 *   offloading (GOMP_target*), OpenACC.  libomp also implements these GOMP_*
 *   entry points, so a GCC-compiled program run on libomp is covered too.
 *   LLVM libomp / Intel libiomp5 (clang, icx): __kmpc_fork_call, plus
 *   __kmpc_push_num_threads and __kmpc_serialized_parallel, wrapped only to
 *   know whether the program gave a num_threads clause for the next fork.
 *   __kmpc_fork_call(loc, argc, microtask, ...) is variadic with one pointer
 *   per shared variable, any number of them; C cannot forward such a call.
 *   So on x86-64 the entry point is an 18-instruction assembly stub: it saves
 *   the argument registers, calls cs_kmpc_prefork(loc) (C: if the region is
 *   to be resized, the real __kmpc_push_num_threads(loc, gtid, n), the very
 *   call clang emits for a num_threads clause), restores the registers and
 *   jumps (not calls) to the real __kmpc_fork_call.  The stack and the return
 *   address are the program's own, so every argument arrives as it left, and
 *   libomp's OMPT code pointer (the return address) still names the program,
 *   not the shim.  Rejected: a switch over argc (a bound on captured variables;
 *   libomp's own C fallback has one and exits beyond 15), __builtin_apply
 *   (documented as unreliable), OMPT (parallel_begin reports the team size, it
 *   cannot change it), omp_set_num_threads before the fork (it would overwrite
 *   the user's ICV, which the rule above must keep reading).  Other
 *   architectures: the libomp entry points are not built (no stub written),
 *   libomp programs run unchanged; libgomp is covered everywhere.
 *   __kmpc_fork_teams (host teams) is not covered.
 *
 * Static binaries: the dynamic linker never runs, LD_PRELOAD does nothing and
 * the shim cannot apply.  The same holds for setuid programs and for programs
 * whose runtime is linked statically.  That is why cosched keeps
 * OMP_WAIT_POLICY=passive where the shim cannot apply (cosched(1)).
 *
 * Thread safety.  The shared state is the opt-out decision and the page
 * (pthread_once), the addresses of the real functions (atomic pointers: two
 * threads that resolve one at the same time store the same value), the call
 * site table (atomic words: a site is claimed by compare-and-swap, its kind
 * stored whole), the affinity counter (atomic) and the page's slot claims
 * (fetch-add).  The CPU count cache, the last call site, the slot, the
 * promise of omp_get_max_threads() and the "num_threads was pushed" mark of
 * libomp are thread-local.  Any thread may start outermost regions (each pthread is its
 * own contention group); each is sized by its own affinity mask.
 *
 * Cost per region (BENCHMARKS.md section 12 measures it).  A nested region
 * costs one call into the runtime (omp_get_level).  An outermost region adds
 * a call to the runtime's omp_get_max_threads, one read of the coarse clock
 * (vDSO), an acquire load of the page's generation, a compare with the
 * thread's last call site and its last timing and, with a page, a load and
 * a store to its slot; for a region timed (above) a second read of the
 * clock; when the CPUs are fewer than the ICV, one call to
 * omp_get_proc_bind and, for libomp, __kmpc_global_thread_num and
 * __kmpc_push_num_threads.  A region that omp_get_max_threads() answered
 * for reads no clock and no generation (the answer stands).  No system call but when the cached count must
 * be re-read (above).  All of it is inlined into each entry point (32 KB of
 * text in all): a call less is 2 ns less per region; what runs once (a
 * function's resolution, a re-read, a slot's claim) is not.
 *
 * Installed as $(pkglibdir)/libcosched-omp.so: a private object loaded by
 * path (LD_PRELOAD), not a library anything links with, so not in $(libdir).
 * It links with libc only and exports only the entry points above.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "../shared/envword.h"   /* a static function: nothing exported */
#include "../shared/omppage.h"

#define CS_EXPORT __attribute__((visibility("default")))
#define CS_HIDDEN __attribute__((visibility("hidden")))
#define CS_TLS __attribute__((tls_model("initial-exec")))

/* ---------------------------------------------------------------- real functions */

enum real_fn {
    R_GET_LEVEL, R_GET_MAX_THREADS, R_GET_MAX_THREADS_F, R_GET_PROC_BIND,
    R_PARALLEL, R_PARALLEL_REDUCTIONS, R_PARALLEL_START,
    R_LOOP_STATIC, R_LOOP_DYNAMIC, R_LOOP_GUIDED, R_LOOP_RUNTIME,
    R_LOOP_NM_DYNAMIC, R_LOOP_NM_GUIDED, R_LOOP_NM_RUNTIME, R_LOOP_MNM_RUNTIME,
    R_LOOP_STATIC_START, R_LOOP_DYNAMIC_START, R_LOOP_GUIDED_START, R_LOOP_RUNTIME_START,
    R_SECTIONS, R_SECTIONS_START,
    R_KMPC_FORK_CALL, R_KMPC_PUSH_NUM_THREADS, R_KMPC_SERIALIZED, R_KMPC_GTID,
    R_SCHED_SETAFFINITY, R_PTHREAD_SETAFFINITY,
    R_COUNT
};

static const char *const real_name[R_COUNT] = {
    [R_GET_LEVEL] = "omp_get_level",
    [R_GET_MAX_THREADS] = "omp_get_max_threads",
    [R_GET_MAX_THREADS_F] = "omp_get_max_threads_",
    [R_GET_PROC_BIND] = "omp_get_proc_bind",
    [R_PARALLEL] = "GOMP_parallel",
    [R_PARALLEL_REDUCTIONS] = "GOMP_parallel_reductions",
    [R_PARALLEL_START] = "GOMP_parallel_start",
    [R_LOOP_STATIC] = "GOMP_parallel_loop_static",
    [R_LOOP_DYNAMIC] = "GOMP_parallel_loop_dynamic",
    [R_LOOP_GUIDED] = "GOMP_parallel_loop_guided",
    [R_LOOP_RUNTIME] = "GOMP_parallel_loop_runtime",
    [R_LOOP_NM_DYNAMIC] = "GOMP_parallel_loop_nonmonotonic_dynamic",
    [R_LOOP_NM_GUIDED] = "GOMP_parallel_loop_nonmonotonic_guided",
    [R_LOOP_NM_RUNTIME] = "GOMP_parallel_loop_nonmonotonic_runtime",
    [R_LOOP_MNM_RUNTIME] = "GOMP_parallel_loop_maybe_nonmonotonic_runtime",
    [R_LOOP_STATIC_START] = "GOMP_parallel_loop_static_start",
    [R_LOOP_DYNAMIC_START] = "GOMP_parallel_loop_dynamic_start",
    [R_LOOP_GUIDED_START] = "GOMP_parallel_loop_guided_start",
    [R_LOOP_RUNTIME_START] = "GOMP_parallel_loop_runtime_start",
    [R_SECTIONS] = "GOMP_parallel_sections",
    [R_SECTIONS_START] = "GOMP_parallel_sections_start",
    [R_KMPC_FORK_CALL] = "__kmpc_fork_call",
    [R_KMPC_PUSH_NUM_THREADS] = "__kmpc_push_num_threads",
    [R_KMPC_SERIALIZED] = "__kmpc_serialized_parallel",
    [R_KMPC_GTID] = "__kmpc_global_thread_num",
    [R_SCHED_SETAFFINITY] = "sched_setaffinity",
    [R_PTHREAD_SETAFFINITY] = "pthread_setaffinity_np",
};

static void *_Atomic real_ptr[R_COUNT];

/* The next definition of a symbol: after this object in the global scope, or
 * in a runtime that a dlopen()ed library brought in with RTLD_LOCAL (not in
 * the global scope, so RTLD_NEXT misses it; its callers still bind to us). */
static __attribute__((noinline)) void *real_slow(enum real_fn f)
{
    static const char *const runtimes[] = { "libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so" };
    void *p = dlsym(RTLD_NEXT, real_name[f]);
    for (size_t i = 0; !p && i < sizeof runtimes / sizeof runtimes[0]; i++) {
        void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, real_name[f]);
            dlclose(h);
        }
    }
    if (p)
        atomic_store_explicit(&real_ptr[f], p, memory_order_release);
    return p;
}

/* the hot path: one acquire load once resolved */
static inline __attribute__((always_inline)) void *real(enum real_fn f)
{
    void *p = atomic_load_explicit(&real_ptr[f], memory_order_acquire);
    return __builtin_expect(p != NULL, 1) ? p : real_slow(f);
}

/* An entry point the program called has no definition after ours: nothing can
 * run the region.  Cannot happen unless the shim is preloaded into a program
 * whose OpenMP runtime is neither in the global scope nor one we know. */
static __attribute__((noinline, noreturn)) void no_runtime(enum real_fn f)
{
    fprintf(stderr, "cosched-omp: the program called %s but no OpenMP runtime "
            "(libgomp.so.1, libomp.so.5, libiomp5.so) defines it; "
            "run it with COSCHED_OMP=off or without libcosched-omp.so in LD_PRELOAD\n",
            real_name[f]);
    abort();
}

static inline __attribute__((always_inline)) void *need(enum real_fn f)
{
    void *p = real(f);
    if (__builtin_expect(p == NULL, 0))
        no_runtime(f);
    return p;
}

/* ---------------------------------------------------------------- the page */

/* The job's page (shared/omppage.h), when cosched gave one: mapped once,
 * before the first region (decide_enabled), never unmapped. */
static struct cs_omppage *page;

/* This thread's count of regions completed in the page: a slot of its own
 * (plain load and store), else the shared count (fetch-add); NULL until the
 * thread's first region ends, and again in a child after fork (its slot is
 * its parent's thread's). */
static _Thread_local CS_TLS uint64_t *my_count;

static __attribute__((noinline)) void claim_slot(void)
{
    unsigned i = atomic_fetch_add_explicit((_Atomic uint32_t *)&page->nslots, 1, memory_order_relaxed);
    my_count = i < CS_OMPPAGE_SLOTS ? &page->slot[i].regions : &page->regions;
}

static void forget_slot(void)
{
    my_count = NULL;
}

static inline __attribute__((always_inline)) void count_region(void)
{
    if (__builtin_expect(my_count == NULL, 0))
        claim_slot();
    _Atomic uint64_t *c = (_Atomic uint64_t *)my_count;
    if (__builtin_expect(my_count != &page->regions, 1))
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void map_page(void)
{
    const char *v = getenv(CS_OMPPAGE_ENV);
    char *end, path[64], link[128];
    struct stat st;
    if (v == NULL || *v == '\0')
        return;
    long fd = strtol(v, &end, 10);
    if (*end != '\0' || fd < 0 || fd > 1 << 20)
        return;
    /* only cosched's memfd: a descriptor of that number may be anything in a
     * process that inherited the environment but not the descriptor */
    snprintf(path, sizeof path, "/proc/self/fd/%ld", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return;
    link[n] = '\0';
    if (strncmp(link, "/memfd:" CS_OMPPAGE_NAME, strlen("/memfd:" CS_OMPPAGE_NAME)) != 0 ||
        fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)CS_OMPPAGE_SIZE)
        return;
    void *p = mmap(NULL, CS_OMPPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (p == MAP_FAILED)
        return;
    struct cs_omppage *pg = p;
    if (pg->magic != CS_OMPPAGE_MAGIC || pg->version != CS_OMPPAGE_VERSION) {
        munmap(p, CS_OMPPAGE_SIZE);
        return;
    }
    page = pg;
    pthread_atfork(NULL, NULL, forget_slot);
}

/* ---------------------------------------------------------------- opt-out */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int shim_enabled;

static void decide_enabled(void)
{
    static const char *const off[] = { "off", "0", "no", "false", NULL };
    static const char *const on[] = { "on", "1", "yes", "true", "", NULL };
    static const char *const dyn_false[] = { "false", NULL };
    const char *v = getenv("COSCHED_OMP");
    shim_enabled = 1;
    if (v && cs_env_word(v, off))
        shim_enabled = 0;
    else if (v && !cs_env_word(v, on)) {
        fprintf(stderr, "cosched-omp: COSCHED_OMP='%s' is not on or off; "
                "OpenMP teams keep their sizes (the shim is off)\n", v);
        shim_enabled = 0;
    }
    v = getenv("OMP_DYNAMIC");
    if (v && cs_env_word(v, dyn_false))
        shim_enabled = 0;
    if (shim_enabled)
        map_page();
}

/* 0 until decided, then 1 (on) or 2 (off): the hot path's one load */
static _Atomic int decided;

static void decide_once(void)
{
    decide_enabled();
    atomic_store_explicit(&decided, shim_enabled ? 1 : 2, memory_order_release);
}

static int enabled(void)
{
    int d = atomic_load_explicit(&decided, memory_order_acquire);
    if (__builtin_expect(d != 0, 1))
        return d == 1;
    pthread_once(&once, decide_once);
    return shim_enabled;
}

/* ---------------------------------------------------------------- CPUs held, cached */

/* CPUs in the calling thread's affinity mask; 0 when unknown (more than 8192
 * CPUs, or the call is refused): then nothing is resized. */
static unsigned cpus_now(void)
{
    unsigned long mask[8192 / (8 * sizeof(unsigned long))];
    long got = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (got <= 0)
        return 0;
    unsigned n = 0;
    for (size_t i = 0; i < (size_t)got / sizeof mask[0]; i++)
        n += (unsigned)__builtin_popcountl(mask[i]);
    return n;
}

/* milliseconds on the coarse clock (the vDSO: no system call; it moves once
 * a kernel tick, 1-10 ms) */
static inline uint64_t coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* bumped after each of the program's own affinity calls (below) */
static _Atomic unsigned aff_epoch;

/* With a page, a count is also re-read after this many ms: a change of the
 * CPUs that cosched did not make (taskset from outside) shows within it. */
#define PAGE_REVALIDATE_MS 100

/* The last count of this thread, and what it was read under: the page's
 * generation (0 without a page), aff_epoch, the coarse millisecond. */
static _Thread_local CS_TLS struct { uint64_t gen, ms; unsigned epoch, cpus; int valid; } aff;

static __attribute__((noinline)) unsigned cpus_reread(uint64_t gen, unsigned epoch, uint64_t now)
{
    aff.cpus = cpus_now();
    aff.gen = gen;
    aff.epoch = epoch;
    aff.ms = now;
    aff.valid = 1;
    return aff.cpus;
}

/* cpus_now(), re-read only when the engine changed the job's CPUs since
 * (the page's generation moved), when the program changed an affinity
 * itself, or once the coarse clock moved past the cached read: by
 * PAGE_REVALIDATE_MS with a page, by 1 ms (a tick) without.  The hot path:
 * two loads, the clock (vDSO, its reading left in *now_ms) and three
 * compares. */
static inline __attribute__((always_inline)) unsigned cpus_cached(uint64_t *now_ms)
{
    uint64_t gen = page ? atomic_load_explicit((_Atomic uint64_t *)&page->gen, memory_order_acquire) : 0;
    unsigned epoch = atomic_load_explicit(&aff_epoch, memory_order_acquire);
    uint64_t now = *now_ms = coarse_ms();
    if (__builtin_expect(aff.valid && aff.gen == gen && aff.epoch == epoch &&
                         now - aff.ms < (page ? PAGE_REVALIDATE_MS : 1), 1))
        return aff.cpus;
    return cpus_reread(gen, epoch, now);
}

CS_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    int (*f)(pid_t, size_t, const cpu_set_t *) = need(R_SCHED_SETAFFINITY);
    int r = f(pid, size, set);
    atomic_fetch_add_explicit(&aff_epoch, 1, memory_order_release);
    return r;
}

CS_EXPORT int pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set)
{
    int (*f)(pthread_t, size_t, const cpu_set_t *) = need(R_PTHREAD_SETAFFINITY);
    int r = f(t, size, set);
    atomic_fetch_add_explicit(&aff_epoch, 1, memory_order_release);
    return r;
}

/* ---------------------------------------------------------------- call sites */

/* What the shim learned of the regions of each call site (the fn passed to
 * GOMP_parallel*): the last one's length, long or short.  Open addressing,
 * lock-free (two threads that learn the same site at once store the same
 * kind of value); a full table leaves new sites unknown... as short. */
#define SITES 512
#define SITE_PROBES 8
#define LONG_MS 100     /* a region of this many ms or more is long (cosched(1)) */
enum { SITE_UNKNOWN, SITE_SHORT, SITE_LONG };
static struct site { _Atomic uintptr_t fn; _Atomic uint32_t last_ms; _Atomic unsigned char kind; } sites[SITES];

static struct site *site_of(const void *fn)
{
    uintptr_t key = (uintptr_t)fn;
    size_t h = (size_t)((key >> 4) * 0x9E3779B97F4A7C15ULL >> 55) % SITES;
    for (int i = 0; i < SITE_PROBES; i++, h = (h + 1) % SITES) {
        uintptr_t cur = atomic_load_explicit(&sites[h].fn, memory_order_relaxed);
        if (cur == key)
            return &sites[h];
        if (cur == 0) {
            if (atomic_compare_exchange_strong_explicit(&sites[h].fn, &cur, key, memory_order_relaxed,
                                                        memory_order_relaxed) || cur == key)
                return &sites[h];
        }
    }
    return NULL;
}

/* site_of(), remembered for the thread's last fn (a loop of one region
 * looks its site up once); a site is never removed from the table */
static _Thread_local CS_TLS struct { const void *fn; struct site *site; } site_last;

static inline __attribute__((always_inline)) struct site *site_cached(const void *fn)
{
    if (__builtin_expect(site_last.fn != fn, 0)) {
        site_last.site = site_of(fn);
        site_last.fn = fn;
    }
    return site_last.site;
}

/* ---------------------------------------------------------------- the rule */

/* what omp_get_max_threads() last told this thread at level 0 */
static _Thread_local CS_TLS struct { int valid; unsigned n, icv; } promise;

/* set once the process began its first outermost region: before it,
 * omp_get_max_threads() answers the ICV (the first region's length is
 * unknown, and a program sizing per-thread data at its start is then
 * never told fewer threads than a later region may have) */
static _Atomic int outer_seen;

static inline __attribute__((always_inline)) int at_level0(void)
{
    int (*get_level)(void) = real(R_GET_LEVEL);
    return get_level && get_level() == 0;
}

/* The team size for CPUs held now, given the ICV; icv when not fewer.
 * *now_ms: the coarse clock's reading. */
static inline __attribute__((always_inline)) unsigned rule(unsigned icv, uint64_t *now_ms)
{
    unsigned cpus = cpus_cached(now_ms);
    if (cpus == 0 || cpus >= icv)
        return icv;
    int (*proc_bind)(void) = real(R_GET_PROC_BIND);
    if (proc_bind && proc_bind() != 0)
        return icv;
    return cpus;
}

/* One outermost region as the shim sees it: its site (NULL: not learned)
 * and when it began (coarse ms); outer: it is outermost (level 0). */
struct region { struct site *site; uint64_t t0; int outer; };

static void publish_team(unsigned n)
{
    if (page && atomic_load_explicit((_Atomic uint32_t *)&page->team, memory_order_relaxed) != n)
        atomic_store_explicit((_Atomic uint32_t *)&page->team, n, memory_order_relaxed);
}

/* For a new region of fn (NULL: lengths are not learned for this entry
 * point) whose num_threads argument is `asked` (0: no clause): the
 * num_threads to pass on, `asked` itself when the shim has nothing to do. */
static inline __attribute__((always_inline)) unsigned region_begin(struct region *r, const void *fn, unsigned asked)
{
    r->site = NULL;
    r->outer = 0;
    if (!enabled() || !at_level0())
        return asked;
    r->outer = 1;
    if (!atomic_load_explicit(&outer_seen, memory_order_relaxed))
        atomic_store_explicit(&outer_seen, 1, memory_order_relaxed);
    if (asked != 0) {
        publish_team(asked);
        return asked;
    }
    int (*max_threads)(void) = real(R_GET_MAX_THREADS);
    if (!max_threads)
        return asked;
    int icv_i = max_threads();
    unsigned icv = icv_i > 0 ? (unsigned)icv_i : 1;
    int promised = promise.valid && promise.icv == icv;
    uint64_t now = 0;
    unsigned n = promised ? promise.n : rule(icv, &now);
    promise.valid = 0;
    struct site *site = fn ? site_cached(fn) : NULL;
    unsigned char kind = site ? atomic_load_explicit(&site->kind, memory_order_relaxed) : SITE_SHORT;
    /* timed: every region while the CPUs held are fewer than the ICV (its
     * team's size depends on what was learned), a site's first region, and
     * else one region of a site per LONG_MS (a site whose regions grew long
     * while the job held all its CPUs is known long at its next fold) */
    if (site && (n < icv || kind == SITE_UNKNOWN ||
                 (!promised && (uint32_t)now - atomic_load_explicit(&site->last_ms, memory_order_relaxed) >= LONG_MS))) {
        r->site = site;
        r->t0 = promised ? coarse_ms() : now;
        atomic_store_explicit(&site->last_ms, (uint32_t)r->t0, memory_order_relaxed);
        /* a long region, or one of unknown length, starts with the full
         * team: it may get the cores back before it ends */
        if (n < icv && !promised && kind != SITE_SHORT)
            n = icv;
    }
    publish_team(n);
    return n < icv ? n : 0;
}

static inline __attribute__((always_inline)) void region_end(struct region *r)
{
    if (!r->outer)
        return;
    if (page)
        count_region();
    if (r->site) {
        unsigned char kind = coarse_ms() - r->t0 >= LONG_MS ? SITE_LONG : SITE_SHORT;
        if (atomic_load_explicit(&r->site->kind, memory_order_relaxed) != kind)
            atomic_store_explicit(&r->site->kind, kind, memory_order_relaxed);
    }
}

/* the old ABI's regions (GOMP_parallel*_start): they end in
 * GOMP_parallel_end, not here; sized by the CPUs held, counted as begun */
static unsigned team_for(unsigned asked)
{
    struct region r;
    unsigned n = region_begin(&r, NULL, asked);
    region_end(&r);
    return n;
}

static int max_threads_via(enum real_fn f)
{
    int (*max_threads)(void) = need(f);
    int icv_i = max_threads();
    if (icv_i <= 0 || !enabled() || !at_level0())
        return icv_i;
    unsigned icv = (unsigned)icv_i;
    uint64_t now;
    unsigned n = atomic_load_explicit(&outer_seen, memory_order_relaxed) ? rule(icv, &now) : icv;
    promise.valid = 1;
    promise.n = n;
    promise.icv = icv;
    return (int)n;
}

CS_EXPORT int omp_get_max_threads(void)
{
    return max_threads_via(R_GET_MAX_THREADS);
}

/* gfortran and flang call the Fortran binding, which the runtimes define
 * separately (and call their C function internally, past this shim) */
CS_EXPORT int omp_get_max_threads_(void)
{
    return max_threads_via(R_GET_MAX_THREADS_F);
}

/* ---------------------------------------------------------------- GCC libgomp */

typedef void (*gomp_fn)(void *);

CS_EXPORT void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    void (*f)(gomp_fn, void *, unsigned, unsigned) = need(R_PARALLEL);
    struct region r;
    f(fn, data, region_begin(&r, (const void *)fn, num_threads), flags);
    region_end(&r);
}

CS_EXPORT unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    unsigned (*f)(gomp_fn, void *, unsigned, unsigned) = need(R_PARALLEL_REDUCTIONS);
    struct region r;
    unsigned ret = f(fn, data, region_begin(&r, (const void *)fn, num_threads), flags);
    region_end(&r);
    return ret;
}

CS_EXPORT void GOMP_parallel_start(gomp_fn fn, void *data, unsigned num_threads)
{
    void (*f)(gomp_fn, void *, unsigned) = need(R_PARALLEL_START);
    f(fn, data, team_for(num_threads));
}

/* combined parallel loops with a chunk size: static, dynamic, guided */
#define CS_LOOP_CHUNK(name, id)                                                            \
    CS_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
                        long incr, long chunk, unsigned flags)                             \
    {                                                                                      \
        void (*f)(gomp_fn, void *, unsigned, long, long, long, long, unsigned) = need(id); \
        struct region r;                                                                   \
        f(fn, data, region_begin(&r, (const void *)fn, num_threads), start, end, incr,     \
          chunk, flags);                                                                   \
        region_end(&r);                                                                    \
    }
/* schedule(runtime): no chunk size */
#define CS_LOOP_RUNTIME(name, id)                                                          \
    CS_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
                        long incr, unsigned flags)                                         \
    {                                                                                      \
        void (*f)(gomp_fn, void *, unsigned, long, long, long, unsigned) = need(id);       \
        struct region r;                                                                   \
        f(fn, data, region_begin(&r, (const void *)fn, num_threads), start, end, incr,     \
          flags);                                                                          \
        region_end(&r);                                                                    \
    }
/* the GOMP_1.0 ABI: the master then calls fn itself and GOMP_parallel_end */
#define CS_LOOP_CHUNK_START(name, id)                                                      \
    CS_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
                        long incr, long chunk)                                             \
    {                                                                                      \
        void (*f)(gomp_fn, void *, unsigned, long, long, long, long) = need(id);           \
        f(fn, data, team_for(num_threads), start, end, incr, chunk);                       \
    }

CS_LOOP_CHUNK(GOMP_parallel_loop_static, R_LOOP_STATIC)
CS_LOOP_CHUNK(GOMP_parallel_loop_dynamic, R_LOOP_DYNAMIC)
CS_LOOP_CHUNK(GOMP_parallel_loop_guided, R_LOOP_GUIDED)
CS_LOOP_CHUNK(GOMP_parallel_loop_nonmonotonic_dynamic, R_LOOP_NM_DYNAMIC)
CS_LOOP_CHUNK(GOMP_parallel_loop_nonmonotonic_guided, R_LOOP_NM_GUIDED)
CS_LOOP_RUNTIME(GOMP_parallel_loop_runtime, R_LOOP_RUNTIME)
CS_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime, R_LOOP_NM_RUNTIME)
CS_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime, R_LOOP_MNM_RUNTIME)
CS_LOOP_CHUNK_START(GOMP_parallel_loop_static_start, R_LOOP_STATIC_START)
CS_LOOP_CHUNK_START(GOMP_parallel_loop_dynamic_start, R_LOOP_DYNAMIC_START)
CS_LOOP_CHUNK_START(GOMP_parallel_loop_guided_start, R_LOOP_GUIDED_START)

CS_EXPORT void GOMP_parallel_loop_runtime_start(gomp_fn fn, void *data, unsigned num_threads,
                                                long start, long end, long incr)
{
    void (*f)(gomp_fn, void *, unsigned, long, long, long) = need(R_LOOP_RUNTIME_START);
    f(fn, data, team_for(num_threads), start, end, incr);
}

CS_EXPORT void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned num_threads,
                                      unsigned count, unsigned flags)
{
    void (*f)(gomp_fn, void *, unsigned, unsigned, unsigned) = need(R_SECTIONS);
    struct region r;
    f(fn, data, region_begin(&r, (const void *)fn, num_threads), count, flags);
    region_end(&r);
}

CS_EXPORT void GOMP_parallel_sections_start(gomp_fn fn, void *data, unsigned num_threads,
                                            unsigned count)
{
    void (*f)(gomp_fn, void *, unsigned, unsigned) = need(R_SECTIONS_START);
    f(fn, data, team_for(num_threads), count);
}

/* ---------------------------------------------------------------- LLVM libomp */
#if defined(__x86_64__) && defined(__ELF__)

/* set by the program's __kmpc_push_num_threads (a num_threads clause), taken
 * by its next fork or serialized region */
static _Thread_local int kmpc_pushed;

CS_EXPORT void __kmpc_push_num_threads(void *loc, int gtid, int num_threads)
{
    void (*f)(void *, int, int) = need(R_KMPC_PUSH_NUM_THREADS);
    kmpc_pushed = 1;
    f(loc, gtid, num_threads);
}

CS_EXPORT void __kmpc_serialized_parallel(void *loc, int gtid)
{
    void (*f)(void *, int) = need(R_KMPC_SERIALIZED);
    kmpc_pushed = 0;
    f(loc, gtid);
}

/* Called by the stub below with the program's `loc`; returns the real
 * __kmpc_fork_call, to which the stub jumps with the program's arguments. */
CS_HIDDEN void *cs_kmpc_prefork(void *loc);
CS_HIDDEN __attribute__((used)) void *cs_kmpc_prefork(void *loc)
{
    void *fork = need(R_KMPC_FORK_CALL);
    if (kmpc_pushed) {
        kmpc_pushed = 0;
        return fork;
    }
    unsigned n = team_for(0);
    if (n) {
        int (*gtid)(void *) = need(R_KMPC_GTID);
        void (*push)(void *, int, int) = need(R_KMPC_PUSH_NUM_THREADS);
        push(loc, gtid(loc), (int)n);
    }
    return fork;
}

/* __kmpc_fork_call(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...):
 * save the six integer argument registers and %rax (the vector register count
 * of a variadic call), call the C part (7 pushes leave %rsp 16-byte aligned),
 * restore them and jump to the real entry point through %r11 (not an argument
 * register), leaving the stack arguments and the return address untouched. */
__asm__(
    "	.text\n"
    "	.globl __kmpc_fork_call\n"
    "	.type __kmpc_fork_call, @function\n"
    "__kmpc_fork_call:\n"
    "	.cfi_startproc\n"
    "	endbr64\n"
    "	pushq %rdi\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %rsi\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %rdx\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %rcx\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %r8\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %r9\n	.cfi_adjust_cfa_offset 8\n"
    "	pushq %rax\n	.cfi_adjust_cfa_offset 8\n"
    "	call cs_kmpc_prefork\n"
    "	movq %rax, %r11\n"
    "	popq %rax\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %r9\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %r8\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %rcx\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %rdx\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %rsi\n	.cfi_adjust_cfa_offset -8\n"
    "	popq %rdi\n	.cfi_adjust_cfa_offset -8\n"
    "	jmp *%r11\n"
    "	.cfi_endproc\n"
    "	.size __kmpc_fork_call, .-__kmpc_fork_call\n");

#endif
