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
 * than the ICV the call is forwarded unchanged.  A region with a num_threads
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
 * #pragma omp parallel  therefore stays correct.  What cannot be kept: a
 * program that sizes per-thread storage once from omp_get_max_threads() while
 * it holds few CPUs, and indexes it by omp_get_thread_num() in later regions
 * after it got more CPUs, sees more threads than it was told.  Such a
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
 * Thread safety.  The only shared state is the opt-out decision (pthread_once)
 * and the addresses of the real functions (atomic pointers: two threads that
 * resolve one at the same time store the same value).  The promise of
 * omp_get_max_threads() and the "num_threads was pushed" mark of libomp are
 * thread-local.  Any thread may start outermost regions (each pthread is its
 * own contention group); each is sized by its own affinity mask.
 *
 * Cost per region.  Nothing is measured.  A region with a num_threads clause
 * costs one comparison (libomp: one TLS read), a nested one one call into the
 * runtime (omp_get_level).  An outermost region without a clause adds one call to the
 * runtime's omp_get_max_threads and one system call, sched_getaffinity(2) on
 * the calling thread (a copy of the kernel's cpumask, no lock); when that
 * gives fewer CPUs than the ICV, one call to omp_get_proc_bind and, for
 * libomp, __kmpc_global_thread_num and __kmpc_push_num_threads.  Small next to
 * the wake-up of a team (futexes), which every region pays anyway.
 *
 * Installed as $(pkglibdir)/libcosched-omp.so: a private object loaded by
 * path (LD_PRELOAD), not a library anything links with, so not in $(libdir).
 * It links with libc only and exports only the entry points above.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../shared/envword.h"   /* a static function: nothing exported */

#define CS_EXPORT __attribute__((visibility("default")))
#define CS_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- real functions */

enum real_fn {
    R_GET_LEVEL, R_GET_MAX_THREADS, R_GET_MAX_THREADS_F, R_GET_PROC_BIND,
    R_PARALLEL, R_PARALLEL_REDUCTIONS, R_PARALLEL_START,
    R_LOOP_STATIC, R_LOOP_DYNAMIC, R_LOOP_GUIDED, R_LOOP_RUNTIME,
    R_LOOP_NM_DYNAMIC, R_LOOP_NM_GUIDED, R_LOOP_NM_RUNTIME, R_LOOP_MNM_RUNTIME,
    R_LOOP_STATIC_START, R_LOOP_DYNAMIC_START, R_LOOP_GUIDED_START, R_LOOP_RUNTIME_START,
    R_SECTIONS, R_SECTIONS_START,
    R_KMPC_FORK_CALL, R_KMPC_PUSH_NUM_THREADS, R_KMPC_SERIALIZED, R_KMPC_GTID,
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
};

static void *_Atomic real_ptr[R_COUNT];

/* The next definition of a symbol: after this object in the global scope, or
 * in a runtime that a dlopen()ed library brought in with RTLD_LOCAL (not in
 * the global scope, so RTLD_NEXT misses it; its callers still bind to us). */
static void *real(enum real_fn f)
{
    static const char *const runtimes[] = { "libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so" };
    void *p = atomic_load_explicit(&real_ptr[f], memory_order_acquire);
    if (p)
        return p;
    p = dlsym(RTLD_NEXT, real_name[f]);
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

/* An entry point the program called has no definition after ours: nothing can
 * run the region.  Cannot happen unless the shim is preloaded into a program
 * whose OpenMP runtime is neither in the global scope nor one we know. */
static void *need(enum real_fn f)
{
    void *p = real(f);
    if (!p) {
        fprintf(stderr, "cosched-omp: the program called %s but no OpenMP runtime "
                "(libgomp.so.1, libomp.so.5, libiomp5.so) defines it; "
                "run it with COSCHED_OMP=off or without libcosched-omp.so in LD_PRELOAD\n",
                real_name[f]);
        abort();
    }
    return p;
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
}

static int enabled(void)
{
    pthread_once(&once, decide_enabled);
    return shim_enabled;
}

/* ---------------------------------------------------------------- the rule */

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

/* what omp_get_max_threads() last told this thread at level 0 */
static _Thread_local struct { int valid; unsigned n, icv; } promise;

static int at_level0(void)
{
    int (*get_level)(void) = real(R_GET_LEVEL);
    return get_level && get_level() == 0;
}

/* The team size the rule gives now, given the ICV; icv when not fewer. */
static unsigned rule(unsigned icv)
{
    unsigned cpus = cpus_now();
    if (cpus == 0 || cpus >= icv)
        return icv;
    int (*proc_bind)(void) = real(R_GET_PROC_BIND);
    if (proc_bind && proc_bind() != 0)
        return icv;
    return cpus;
}

/* For a new region whose num_threads argument is `asked` (0: no clause): the
 * num_threads to pass on, `asked` itself when the shim has nothing to do. */
static unsigned team_for(unsigned asked)
{
    if (asked != 0 || !enabled() || !at_level0())
        return asked;
    int (*max_threads)(void) = real(R_GET_MAX_THREADS);
    if (!max_threads)
        return asked;
    int icv_i = max_threads();
    unsigned icv = icv_i > 0 ? (unsigned)icv_i : 1;
    unsigned n;
    if (promise.valid && promise.icv == icv)
        n = promise.n;
    else
        n = rule(icv);
    promise.valid = 0;
    return n < icv ? n : 0;
}

static int max_threads_via(enum real_fn f)
{
    int (*max_threads)(void) = need(f);
    int icv_i = max_threads();
    if (icv_i <= 0 || !enabled() || !at_level0())
        return icv_i;
    unsigned icv = (unsigned)icv_i;
    unsigned n = rule(icv);
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
    f(fn, data, team_for(num_threads), flags);
}

CS_EXPORT unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    unsigned (*f)(gomp_fn, void *, unsigned, unsigned) = need(R_PARALLEL_REDUCTIONS);
    return f(fn, data, team_for(num_threads), flags);
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
        f(fn, data, team_for(num_threads), start, end, incr, chunk, flags);                \
    }
/* schedule(runtime): no chunk size */
#define CS_LOOP_RUNTIME(name, id)                                                          \
    CS_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
                        long incr, unsigned flags)                                         \
    {                                                                                      \
        void (*f)(gomp_fn, void *, unsigned, long, long, long, unsigned) = need(id);       \
        f(fn, data, team_for(num_threads), start, end, incr, flags);                       \
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
    f(fn, data, team_for(num_threads), count, flags);
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
