/*
 * affinity.c - CPU affinity of a job's threads, for the backends that
 * cannot confine cores with a cpuset (signals.c: the process group;
 * cgroup2.c and slurm.c without a cpuset controller: the threads a cgroup
 * lists), and the CPUs cosched itself started with ("unconfined").
 *
 * Affinity is applied per thread (sched_setaffinity acts on one task).  A
 * thread created while a pass runs inherits its creator's mask, old or new,
 * so passes are repeated until one finds no task it had not handled yet.
 *
 * May use: core/, control/internal.h (proc.c's scan, cgroupfs.c's reads).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc/glibc-sched.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

#define MAX_PASSES 64          /* passes before giving up on a job that keeps making threads */

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}


/* --------------------------------------------------------------- affinity */

/* The CPUs cosched was allowed on when it started ("unconfined" for a job).
 * Taken in a constructor so that whatever the engine later does to its own
 * affinity (pinning itself to a housekeeping core, say) does not leak into
 * what the jobs get back. */
static hwloc_bitmap_t start_cpus;

static hwloc_bitmap_t own_affinity(void)
{
    hwloc_bitmap_t b = NULL;
    size_t ncpu;

    for (ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
        cpu_set_t *set = CPU_ALLOC(ncpu);
        size_t sz = CPU_ALLOC_SIZE(ncpu);
        if (!set)
            return NULL;
        if (sched_getaffinity(0, sz, set) == 0) {
            b = hwloc_bitmap_alloc();
            if (b)
                hwloc_cpuset_from_glibc_sched_affinity(NULL, b, set, sz);
            CPU_FREE(set);
            return b;
        }
        CPU_FREE(set);
        if (errno != EINVAL)
            return NULL;
    }
    return NULL;
}

__attribute__((constructor)) static void take_start_cpus(void)
{
    start_cpus = own_affinity();
}

hwloc_const_bitmap_t cs_proc_start_cpus(void)
{
    if (!start_cpus)
        start_cpus = own_affinity();
    return start_cpus;
}

/* A glibc CPU set for cpus, sized for its highest bit; reports. */
static cpu_set_t *glibc_set(hwloc_const_bitmap_t cpus, size_t *size)
{
    int last = hwloc_bitmap_last(cpus);
    cpu_set_t *set;

    if (hwloc_bitmap_iszero(cpus) || last < 0) {
        cs_err("affinity: refusing an empty or unbounded CPU set");
        errno = EINVAL;
        return NULL;
    }
    set = CPU_ALLOC((size_t)last + 1);
    if (!set) {
        cs_err("affinity: out of memory");
        return NULL;
    }
    *size = CPU_ALLOC_SIZE((size_t)last + 1);
    hwloc_cpuset_to_glibc_sched_affinity(NULL, cpus, set, *size);
    return set;
}

/* Sorted set of task ids already handled. */
struct tidset { pid_t *v; size_t n, cap; };

static int tidset_add(struct tidset *s, pid_t tid)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid] == tid)
            return 0;
        if (s->v[mid] < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        pid_t *p = realloc(s->v, nc * sizeof *p);
        if (!p)
            return -1;
        s->v = p;
        s->cap = nc;
    }
    memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
    s->v[lo] = tid;
    s->n++;
    return 1;
}

static int tidset_has(const struct tidset *s, pid_t tid)
{
    return s->n && bsearch(&tid, s->v, s->n, sizeof *s->v, cmp_pid) != NULL;
}

/* Bind one task; 1 if bound, 0 if it is gone, -1 after reporting. */
static int bind_task(pid_t tid, const cpu_set_t *set, size_t size,
                     hwloc_const_bitmap_t cpus, const char *where)
{
    char *list;

    if (sched_setaffinity(tid, size, set) == 0)
        return 1;
    if (errno == ESRCH)
        return 0;
    list = NULL;
    hwloc_bitmap_list_asprintf(&list, cpus);
    cs_err("affinity: cannot bind task %ld (%s) to CPUs %s: %s%s", (long)tid, where,
           list ? list : "?", strerror(errno),
           errno == EINVAL ? " (its cpuset allows none of them)" : "");
    free(list);
    return -1;
}

/* Bind the threads of process pid not yet in done; number bound or -1. */
static int bind_process(pid_t pid, pid_t pgid, const cpu_set_t *set, size_t size,
                        hwloc_const_bitmap_t cpus, struct tidset *done)
{
    char path[64], where[96];
    DIR *d;
    struct dirent *de;
    int fresh = 0;

    snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
    snprintf(where, sizeof where, "process %ld of group %ld", (long)pid, (long)pgid);
    d = opendir(path);
    if (!d)
        return 0;                           /* exited */
    while ((de = readdir(d))) {
        pid_t tid;
        int r;
        if (!cs_proc_digits(de->d_name))
            continue;
        tid = (pid_t)strtol(de->d_name, NULL, 10);
        if (tidset_has(done, tid))
            continue;
        r = bind_task(tid, set, size, cpus, where);
        if (r < 0 || tidset_add(done, tid) < 0) {
            fresh = -1;
            break;
        }
        fresh++;
    }
    closedir(d);
    return fresh;
}

/* One pass: bind the tasks not yet in done; how many it bound, or -1 after
 * reporting. */
typedef int bind_pass_fn(void *arg, const cpu_set_t *set, size_t size, hwloc_const_bitmap_t cpus,
                         struct tidset *done);

/* Run passes until one finds no new task (tasks may start threads while we
 * bind): the number bound, -1 after an error, -2 (not reported) when tasks
 * kept appearing through MAX_PASSES passes. */
static int bind_passes(hwloc_const_bitmap_t cpus, bind_pass_fn *pass_fn, void *arg)
{
    struct tidset done = { 0 };
    size_t size;
    cpu_set_t *set;
    int pass, total = 0, ret = -1;

    set = glibc_set(cpus, &size);
    if (!set)
        return -1;
    for (pass = 0; pass < MAX_PASSES; pass++) {
        int fresh = pass_fn(arg, set, size, cpus, &done);
        if (fresh < 0)
            goto out;
        if (!fresh)
            break;
        total += fresh;
    }
    ret = pass == MAX_PASSES ? -2 : total;
out:
    free(done.v);
    CPU_FREE(set);
    return ret;
}

static int pgrp_pass(void *arg, const cpu_set_t *set, size_t size, hwloc_const_bitmap_t cpus,
                     struct tidset *done)
{
    pid_t pgid = *(pid_t *)arg;
    struct cs_pstat *m = NULL;
    size_t nm, i;
    int fresh = 0;

    if (cs_proc_members(pgid, &m, &nm) < 0) {
        cs_err("affinity: cannot scan /proc for process group %ld: %s",
               (long)pgid, strerror(errno));
        return -1;
    }
    for (i = 0; i < nm && fresh >= 0; i++) {
        int r = bind_process(m[i].pid, pgid, set, size, cpus, done);
        fresh = r < 0 ? -1 : fresh + r;
    }
    free(m);
    return fresh;
}

int cs_affinity_pgrp(pid_t pgid, hwloc_const_bitmap_t cpus)
{
    int r = bind_passes(cpus, pgrp_pass, &pgid);

    if (r == -2) {
        cs_err("affinity: process group %ld kept creating tasks through %d passes; "
               "its affinity may be incomplete", (long)pgid, MAX_PASSES);
        return -1;
    }
    return r;
}

struct cgroup_pass {
    const char *who, *dir, *file;
    char where[PATH_MAX + 32];
    int first;
};

static int cgroup_pass(void *arg, const cpu_set_t *set, size_t size, hwloc_const_bitmap_t cpus,
                       struct tidset *done)
{
    struct cgroup_pass *c = arg;
    char *list, *p, *end;
    int fresh = 0;

    list = cs_cg_read_all(c->dir, c->file);
    if (!list && errno == ENOENT && c->first) {
        c->file = "tasks";                  /* cgroup v1 */
        list = cs_cg_read_all(c->dir, c->file);
    }
    c->first = 0;
    if (!list) {
        cs_err("%s: cannot read %s/%s: %s", c->who, c->dir, c->file, strerror(errno));
        return -1;
    }
    for (p = list; *p; p = end) {
        long tid = strtol(p, &end, 10);
        int r;
        if (end == p) {
            end = p + 1;
            continue;
        }
        if (tid <= 0 || tidset_has(done, (pid_t)tid))
            continue;
        r = bind_task((pid_t)tid, set, size, cpus, c->where);
        if (r < 0 || tidset_add(done, (pid_t)tid) < 0) {
            fresh = -1;
            break;
        }
        fresh++;
    }
    free(list);
    return fresh;
}

int cs_affinity_cgroup(const char *who, const char *dir, hwloc_const_bitmap_t cpus)
{
    struct cgroup_pass c = { .who = who, .dir = dir, .file = "cgroup.threads", .first = 1 };
    int r;

    snprintf(c.where, sizeof c.where, "in %s", dir);
    r = bind_passes(cpus, cgroup_pass, &c);
    if (r == -2) {
        cs_err("%s: %s kept gaining threads through %d passes; its affinity may be incomplete",
               who, dir, MAX_PASSES);
        return -1;
    }
    return r;
}

