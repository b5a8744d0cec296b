/*
 * binds.c - the CPU bindings a job's threads chose for themselves (Slurm's
 * --cpu-bind through task/affinity, OMP_PROC_BIND, taskset), kept across the
 * engine's core moves.
 *
 * Why.  Writing a cpuset's cpuset.cpus (v1, and v2 with the cpuset
 * controller) sets the affinity of every task inside to the whole new set
 * on kernels before 6.2, and cosched's affinity fallback (v2 without the
 * controller) does the same on every kernel.  Without this file a step
 * started with `srun --cpu-bind=map_cpu:0,1 -n2` ran with both tasks on
 * both cores once cosched had moved its cores once - also after cosched
 * gave the step its cores back.  Linux 6.2 keeps a "user requested" mask
 * itself (the kernel measured on this machine, 6.18, does: a task bound to
 * CPU 1 is back on CPU 1 when its cpuset grows again); this file gives the
 * same rule to every kernel and to the affinity path:
 *
 *     after a move to the set S, a thread bound to B runs on B & S, or on
 *     the whole of S when B & S is empty (what the kernel does then).
 *
 * The other half of the rule: a thread that is not bound runs on all of S.
 * The kernel's own mask cannot tell "bound to all it had" from "bound":
 * GROMACS and LLVM's OpenMP runtime set every thread's affinity to the mask
 * it started with (strace: mdrun 2022 and libomp 14 at their first region),
 * so a job started folded on one core of two stayed on it when its cpuset
 * grew back to both (Linux 6.18, BENCHMARKS.md 8d run 7: GROMACS alone at
 * the end of the mix at one CPU, under tft and flca).  Such a thread had
 * what its job was given and is not bound: apply() widens it.
 *
 * How a binding is learnt: before each move the owner (slurm.c; cgroup1.c
 * and cgroup2.c with a cpuset for cosched run's jobs, through
 * cs_binds_look) hands the threads it finds in the job's cgroups and the
 * set they had; a thread
 * whose affinity is not what it had after the last move (or, for a thread
 * not seen before, not the whole set) chose it itself.  A thread first
 * seen with exactly what its thread group leader was given inherits the
 * leader's binding (a thread created by a bound task).  Threads that are
 * gone are forgotten at the next look.  A guardian's rescue has no look,
 * only the bindings its record kept (adopt()): every other thread it finds
 * is taken as unbound (its leader's binding, when the record has one) and
 * gets all of the set the step is given back - a thread that pinned itself
 * to the half it ran on (GROMACS, libomp) after the last move would stay
 * there otherwise (Linux >= 6.2 keeps a requested mask when a cpuset
 * grows).  A thread created during a move, after the look listed its
 * creator and before apply() set the creator's affinity, copies the
 * creator's requested mask - the smaller set, on Linux >= 6.2 - and is in
 * no list: after a move that grows the set, the owner lists the threads
 * again and latecomers() adopts and widens those it had not seen - and
 * again while a pass widened some (a latecomer may have made a thread
 * before it was widened), CS_BINDS_PASSES passes at most
 * (tests/progs/binds_race puts such a birth in the window; without the
 * second look the thread stayed on the first CPU and the next look learnt
 * that as its own binding).  Nothing is ever widened beyond the
 * set the owner passes, and only the threads the owner lists are touched:
 * the list comes from the step's own cgroups.
 *
 * Cost per move of a step (not per quantum: nothing when nothing moves, as
 * under gang): one more walk of the step's tree to list its threads (of
 * the job's cgroup, for cosched run's jobs; two for a move that grows the
 * set, the second with a lookup per thread and nothing more for the
 * threads already seen), two
 * sched_getaffinity per thread (before and after; the second only for bound
 * threads when the mover vouches for the rest, apply's all = 0), a
 * sched_setaffinity only where the kernel left something else than binding
 * & cores.  Counted with strace on a fake v2 step of 4 threads: 8
 * sched_getaffinity per move, as written.  Timed for cosched run's cgroup1
 * jobs (BENCHMARKS.md section 1): about 30 us per job and 2 us per thread
 * moved, on the 2-vCPU VM.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc/glibc-sched.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

#define AFF_CPUS 8192              /* CPUs an affinity mask is read for */

struct bind {
    pid_t tid;
    hwloc_bitmap_t own;            /* the thread's own binding, NULL: none */
    hwloc_bitmap_t given;          /* what it had after the last move, NULL: not seen then */
    int seen;
};

struct cs_binds {
    struct bind *v;
    size_t n, cap;
};

struct cs_binds *cs_binds_new(void)
{
    return calloc(1, sizeof(struct cs_binds));
}

static void bind_clear(struct bind *b)
{
    if (b->own)
        hwloc_bitmap_free(b->own);
    if (b->given)
        hwloc_bitmap_free(b->given);
    b->own = b->given = NULL;
}

void cs_binds_free(struct cs_binds *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        bind_clear(&s->v[i]);
    free(s->v);
    free(s);
}

static struct bind *find(const struct cs_binds *s, pid_t tid)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].tid == tid)
            return &s->v[mid];
        if (s->v[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static struct bind *insert(struct cs_binds *s, pid_t tid)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n && s->v[lo].tid == tid)
        return &s->v[lo];
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct bind *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
    s->n++;
    memset(&s->v[lo], 0, sizeof s->v[lo]);
    s->v[lo].tid = tid;
    return &s->v[lo];
}

/* The CPUs an affinity mask is read for: the least power of two from 64
 * that the kernel's mask fits in (sched_getaffinity fails with EINVAL on a
 * smaller buffer), found once; AFF_CPUS when none fits below it.  A mask of
 * 8192 CPUs read and converted for every thread at every move cost about
 * 0.5 us more per thread here (switchbench, cgroup1, 8 jobs x 64 threads). */
static int aff_cpus(void)
{
    static int n;

    for (int c = 64; !n && c < AFF_CPUS; c *= 2) {
        cpu_set_t *set = CPU_ALLOC(c);
        int r = set ? sched_getaffinity(0, CPU_ALLOC_SIZE(c), set) : -1;
        CPU_FREE(set);
        if (r == 0)
            n = c;
        else if (errno != EINVAL)
            break;
    }
    if (!n)
        n = AFF_CPUS;
    return n;
}

/* The affinity of one thread; -1 if it is gone (or unreadable). */
static int affinity_of(pid_t tid, hwloc_bitmap_t out)
{
    int c = aff_cpus();
    size_t size = CPU_ALLOC_SIZE(c);
    cpu_set_t *set = CPU_ALLOC(c);
    int r = -1;

    if (set && sched_getaffinity(tid, size, set) == 0)
        r = hwloc_cpuset_from_glibc_sched_affinity(NULL, out, set, size);
    CPU_FREE(set);
    return r < 0 ? -1 : 0;
}

static int set_affinity(pid_t tid, hwloc_const_bitmap_t cpus)
{
    int c = aff_cpus();
    size_t size;
    cpu_set_t *set;
    int r = -1;

    if (hwloc_bitmap_last(cpus) >= c)
        c = AFF_CPUS;
    size = CPU_ALLOC_SIZE(c);
    set = CPU_ALLOC(c);
    if (set && hwloc_bitmap_last(cpus) < c &&
        hwloc_cpuset_to_glibc_sched_affinity(NULL, cpus, set, size) == 0)
        r = sched_setaffinity(tid, size, set);
    CPU_FREE(set);
    return r;
}

/* The thread group of tid, from /proc/TID/status; 0 if unknown. */
static pid_t tgid_of(pid_t tid)
{
    char path[64], buf[1024], *p;

    snprintf(path, sizeof path, "/proc/%ld/status", (long)tid);
    if (cs_read_file(path, buf, sizeof buf) <= 0 || !(p = strstr(buf, "\nTgid:")))
        return 0;
    return (pid_t)strtol(p + 6, NULL, 10);
}

/* The entry of tid's thread group leader when s knows the leader as bound
 * (a thread the leader creates inherits its binding), else NULL. */
static struct bind *bound_leader(const struct cs_binds *s, pid_t tid)
{
    pid_t leader = tgid_of(tid);
    struct bind *l = leader && leader != tid ? find(s, leader) : NULL;

    return l && l->own ? l : NULL;
}

void cs_binds_note(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t cur)
{
    hwloc_bitmap_t m = hwloc_bitmap_alloc();

    for (size_t i = 0; i < s->n; i++)
        s->v[i].seen = 0;
    for (size_t i = 0; m && i < n; i++) {
        struct bind *b = find(s, tids[i]);
        if (affinity_of(tids[i], m) < 0)
            continue;                               /* gone */
        if (b && b->given && hwloc_bitmap_isequal(m, b->given)) {
            b->seen = 1;                            /* as the last move left it */
            continue;
        }
        if (!b) {
            /* new: a thread of a bound task, created with what the task had? */
            struct bind *l = bound_leader(s, tids[i]);
            hwloc_bitmap_t inherit = l && l->given && hwloc_bitmap_isequal(m, l->given)
                                         ? hwloc_bitmap_dup(l->own) : NULL;
            if (!(b = insert(s, tids[i]))) {
                if (inherit)
                    hwloc_bitmap_free(inherit);
                break;
            }
            b->seen = 1;
            if (inherit) {
                b->own = inherit;
                continue;
            }
        }
        b->seen = 1;
        if (b->own)
            hwloc_bitmap_free(b->own);
        b->own = hwloc_bitmap_isequal(m, cur) ? NULL : hwloc_bitmap_dup(m);
    }
    /* forget the threads that are gone */
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].seen)
            s->v[k++] = s->v[i];
        else
            bind_clear(&s->v[i]);
    }
    s->n = k;
    if (m)
        hwloc_bitmap_free(m);
}

void cs_binds_adopt(struct cs_binds *s, const pid_t *tids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (find(s, tids[i]))
            continue;
        struct bind *l = bound_leader(s, tids[i]);
        hwloc_bitmap_t inherit = l ? hwloc_bitmap_dup(l->own) : NULL;
        struct bind *b = insert(s, tids[i]);
        if (!b) {
            if (inherit)
                hwloc_bitmap_free(inherit);
            return;
        }
        b->own = inherit;
        b->seen = 1;
    }
}

int cs_binds_apply(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t now, int all)
{
    hwloc_bitmap_t want = hwloc_bitmap_alloc(), m = hwloc_bitmap_alloc();
    int rebound = 0;

    for (size_t i = 0; want && m && i < n; i++) {
        struct bind *b = find(s, tids[i]);
        if (!b)
            continue;                               /* learnt at the next look */
        if (!b->own && !all) {
            /* the mover left it on now (see cs_binds_apply in internal.h) */
            if (!b->given)
                b->given = hwloc_bitmap_alloc();
            if (b->given)
                hwloc_bitmap_copy(b->given, now);
            continue;
        }
        if (b->own)
            hwloc_bitmap_and(want, b->own, now);
        if (!b->own || hwloc_bitmap_iszero(want))
            hwloc_bitmap_copy(want, now);
        if (affinity_of(tids[i], m) < 0)
            continue;
        if (!hwloc_bitmap_isequal(m, want)) {
            if (set_affinity(tids[i], want) < 0) {
                if (errno != ESRCH)
                    cs_warn("affinity: cannot give thread %ld back its own CPU binding: %s",
                            (long)tids[i], strerror(errno));
                continue;
            }
            rebound++;
        }
        if (b->given)
            hwloc_bitmap_free(b->given);
        b->given = hwloc_bitmap_dup(want);
    }
    if (want)
        hwloc_bitmap_free(want);
    if (m)
        hwloc_bitmap_free(m);
    return rebound;
}

int cs_binds_latecomers(struct cs_binds *s, pid_t *tids, size_t n, hwloc_const_bitmap_t now)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (!find(s, tids[i]))
            tids[k++] = tids[i];
    if (!k)
        return 0;
    cs_binds_adopt(s, tids, k);
    return cs_binds_apply(s, tids, k, now, 1);
}

int cs_binds_look_again(struct cs_binds *s, const char *dir, int v2, int depth, size_t bound, hwloc_const_bitmap_t now)
{
    int r = 0, w = 1;

    for (int pass = 0; w > 0 && pass < CS_BINDS_PASSES; pass++) {
        pid_t *tids = NULL;
        size_t n = cs_cgtree_tids(dir, v2, depth, bound, &tids);
        w = n ? cs_binds_latecomers(s, tids, n, now) : 0;
        r += w > 0 ? w : 0;
        free(tids);
    }
    return r;
}

void cs_binds_moved(struct cs_binds *s, const char *dir, int v2, const pid_t *tids, size_t n,
                    hwloc_const_bitmap_t cur, hwloc_const_bitmap_t now)
{
    int grew = !hwloc_bitmap_isincluded(now, cur);

    cs_binds_apply(s, tids, n, now, grew);
    if (grew)
        cs_binds_look_again(s, dir, v2, 0, CS_BINDS_TIDS, now);
}

size_t cs_binds_look(struct cs_binds **s, const char *dir, int v2, hwloc_const_bitmap_t cur, pid_t **tids)
{
    size_t n;

    *tids = NULL;
    if (!cur || hwloc_bitmap_iszero(cur) || (!*s && !(*s = cs_binds_new())))
        return 0;
    n = cs_cgtree_tids(dir, v2, 0, CS_BINDS_TIDS, tids);
    if (n)
        cs_binds_note(*s, *tids, n, cur);
    return n;
}

int cs_binds_count(const struct cs_binds *s)
{
    int c = 0;

    for (size_t i = 0; s && i < s->n; i++)
        c += s->v[i].own != NULL;
    return c;
}

/* "TID=LIST;TID=LIST" of the threads with a binding ("" for none). */
int cs_binds_format(const struct cs_binds *s, char *out, size_t len)
{
    size_t used = 0;

    if (len)
        out[0] = '\0';
    for (size_t i = 0; s && i < s->n; i++) {
        char *list = NULL;
        int w;
        if (!s->v[i].own)
            continue;
        if (hwloc_bitmap_list_asprintf(&list, s->v[i].own) < 0)
            return -1;
        w = snprintf(out + used, len - used, "%s%ld=%s", used ? ";" : "", (long)s->v[i].tid, list);
        free(list);
        if (w < 0 || (size_t)w >= len - used) {
            out[used] = '\0';
            errno = ENAMETOOLONG;
            return -1;
        }
        used += (size_t)w;
    }
    return 0;
}

int cs_binds_parse(struct cs_binds *s, const char *text)
{
    char *copy = strdup(text), *save = NULL, *t;
    int r = 0;

    if (!copy)
        return -1;
    for (t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(t, '='), *end;
        long tid = strtol(t, &end, 10);
        hwloc_bitmap_t own;
        struct bind *b;
        if (!eq || end != eq || tid <= 0 || !(own = hwloc_bitmap_alloc())) {
            r = -1;
            continue;
        }
        if (hwloc_bitmap_list_sscanf(own, eq + 1) < 0 || hwloc_bitmap_iszero(own) ||
            !(b = insert(s, (pid_t)tid))) {
            hwloc_bitmap_free(own);
            r = -1;
            continue;
        }
        bind_clear(b);
        b->own = own;
    }
    free(copy);
    return r;
}
