/*
 * proc.c - /proc and cgroup file system helpers shared by the control
 * backends (control.c, cgroup1.c, cgroup2.c, signals.c) and their rescue
 * code in the guardian.
 *
 * Processes.  A job instance is the process group its leader creates with
 * setpgid(0,0) before exec.  "The job" is widened to the processes that
 * left the group but still hang below a member in the process tree (a helper
 * that called setsid(), say): member = pgrp == pgid, or parent is a member,
 * computed to a fixed point over one scan of /proc.  A process that leaves
 * the group *and* is reparented (the double-fork daemon idiom) is out of
 * reach: Linux keeps no other trace of where it came from.  The cgroup
 * backends do not have this hole, which is one reason they are preferred.
 * Linux has no "list the members of a process group" call, and this
 * kernel has no /proc/PID/task/TID/children, so every scan reads every
 * /proc/PID/stat: cost grows with the number of processes on the node
 * (tens of microseconds per hundred processes; see tests/bench).
 *
 * /proc/PID/stat: comm (field 2) is in parentheses and may itself contain
 * spaces and ')', so the fields after it are parsed from the *last* ')'.
 *
 * Affinity is applied per thread (sched_setaffinity acts on one task).  A
 * thread created while a pass runs inherits its creator's mask, old or new,
 * so passes are repeated until one finds no task it had not handled yet.
 *
 * Cgroups.  Both cgroup backends keep their run directories below the cgroup
 * cosched was started in (<own>/cosched/<pid>/job<N>), so a delegated
 * subtree works as well as the root.  Reclaiming a directory tree means:
 * thaw it, put its processes back into the origin cgroup, recurse, rmdir
 * children first; the same routine serves job_release, fini, leftovers from a
 * dead cosched and the guardian's rescue, so there is one way of undoing.
 *
 * Guardian records are space-separated fields; a field is escaped like
 * /proc/self/mountinfo (\040 for a space), which keeps any path safe.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hwloc/glibc-sched.h>

#include "control/control.h"
#include "core/log.h"
#include "core/engine_state.h"

#define MAX_PASSES 64          /* affinity / move passes before giving up */
#define MAX_DEPTH 16           /* cgroup tree depth we are willing to reclaim */

/* ------------------------------------------------------------ /proc scan */

static int read_stat(int procfd, const char *name, struct cs_pstat *st, char *comm, size_t commlen);

int cs_proc_stat(pid_t pid, struct cs_pstat *st)
{
    char name[32];
    int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

    if (procfd < 0)
        return -1;
    snprintf(name, sizeof name, "%d", (int)pid);
    r = read_stat(procfd, name, st, NULL, 0);
    close(procfd);
    return r;
}

/* Parse /proc/<name>/stat relative to the open /proc directory. */
static int read_stat(int procfd, const char *name, struct cs_pstat *st,
                     char *comm, size_t commlen)
{
    char path[64], buf[1024];
    ssize_t r;
    int fd;
    char *lp, *rp;
    unsigned long long ut, stt;
    long long cut, cst;
    int ppid, pgrp;
    char state;

    snprintf(path, sizeof path, "%s/stat", name);
    fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) {
        if (r == 0)
            errno = ESRCH;
        return -1;
    }
    buf[r] = '\0';
    lp = strchr(buf, '(');
    rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp) {
        errno = EINVAL;
        return -1;
    }
    /* fields 3..17: state ppid pgrp session tty_nr tpgid flags minflt
     * cminflt majflt cmajflt utime stime cutime cstime */
    if (sscanf(rp + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
               &state, &ppid, &pgrp, &ut, &stt, &cut, &cst) != 7) {
        errno = EINVAL;
        return -1;
    }
    if (comm && commlen) {
        size_t n = (size_t)(rp - lp - 1);
        if (n >= commlen)
            n = commlen - 1;
        memcpy(comm, lp + 1, n);
        comm[n] = '\0';
    }
    st->pid = (pid_t)strtol(name, NULL, 10);
    st->ppid = ppid;
    st->pgrp = pgrp;
    st->state = state;
    st->ticks = ut + stt + (uint64_t)(cut > 0 ? cut : 0) + (uint64_t)(cst > 0 ? cst : 0);
    return 0;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int cmp_pstat(const void *a, const void *b)
{
    pid_t x = ((const struct cs_pstat *)a)->pid, y = ((const struct cs_pstat *)b)->pid;
    return (x > y) - (x < y);
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int cs_proc_members(pid_t pgid, struct cs_pstat **out, size_t *nout)
{
    struct cs_pstat *all = NULL, *mem = NULL;
    unsigned char *in = NULL;
    size_t n = 0, cap = 0, nm = 0, i;
    DIR *d = NULL;
    struct dirent *de;
    int changed, ret = -1;

    *out = NULL;
    *nout = 0;
    if (pgid <= 1) {
        errno = EINVAL;
        return -1;
    }
    d = opendir("/proc");
    if (!d)
        goto out;
    while ((de = readdir(d))) {
        struct cs_pstat st;
        if (!all_digits(de->d_name))
            continue;
        if (read_stat(dirfd(d), de->d_name, &st, NULL, 0) < 0)
            continue;                       /* exited meanwhile */
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            struct cs_pstat *p = realloc(all, nc * sizeof *p);
            if (!p)
                goto out;
            all = p;
            cap = nc;
        }
        all[n++] = st;
    }
    qsort(all, n, sizeof *all, cmp_pstat);
    in = calloc(n ? n : 1, 1);
    if (!in)
        goto out;
    for (i = 0; i < n; i++)
        in[i] = all[i].pgrp == pgid;
    do {                                    /* children of members, to a fixed point */
        changed = 0;
        for (i = 0; i < n; i++) {
            struct cs_pstat key, *p;
            if (in[i])
                continue;
            key.pid = all[i].ppid;
            p = bsearch(&key, all, n, sizeof *all, cmp_pstat);
            if (p && in[p - all]) {
                in[i] = 1;
                changed = 1;
            }
        }
    } while (changed);
    for (i = 0; i < n; i++)
        nm += in[i];
    mem = malloc((nm ? nm : 1) * sizeof *mem);
    if (!mem)
        goto out;
    nm = 0;
    for (i = 0; i < n; i++)
        if (in[i])
            mem[nm++] = all[i];
    *out = mem;
    *nout = nm;
    mem = NULL;
    ret = 0;
out:
    if (d)
        closedir(d);
    free(all);
    free(in);
    free(mem);
    return ret;
}

int cs_proc_cputime_pgrp(pid_t pgid, uint64_t *ns)
{
    struct cs_pstat *m;
    size_t n, i;
    uint64_t ticks = 0;
    long hz = sysconf(_SC_CLK_TCK);

    if (hz <= 0)
        hz = 100;
    if (cs_proc_members(pgid, &m, &n) < 0) {
        cs_err("cannot read the CPU time of process group %ld from /proc: %s",
               (long)pgid, strerror(errno));
        return -1;
    }
    for (i = 0; i < n; i++)
        ticks += m[i].ticks;
    free(m);
    *ns = ticks / (uint64_t)hz * 1000000000ull + ticks % (uint64_t)hz * 1000000000ull / (uint64_t)hz;
    return 0;
}

int cs_proc_is_cosched(pid_t pid)
{
    struct cs_pstat st;
    char name[32], comm[64];
    int procfd, r;

    if (pid <= 0)
        return 0;
    procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return 0;
    snprintf(name, sizeof name, "%ld", (long)pid);
    r = read_stat(procfd, name, &st, comm, sizeof comm);
    close(procfd);
    return r == 0 && st.state != 'Z' && st.state != 'X' && strcmp(comm, "cosched") == 0;
}

int cs_proc_all_stopped(pid_t pid)
{
    char path[64];
    struct dirent *de;
    DIR *d;
    int ret = 1;

    snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
    d = opendir(path);
    if (!d)
        return 1;                           /* gone: nothing left to stop */
    while ((de = readdir(d))) {
        struct cs_pstat st;
        if (!all_digits(de->d_name))
            continue;
        if (read_stat(dirfd(d), de->d_name, &st, NULL, 0) < 0)
            continue;                       /* thread exited */
        if (!strchr("TtZX", st.state)) {
            ret = 0;
            break;
        }
    }
    closedir(d);
    return ret;
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
        if (!all_digits(de->d_name))
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

/* ------------------------------------------------------- mounts, cgroups */

/* Decode mountinfo / record escapes (\ooo) in place. */
static void unescape(char *s)
{
    char *w = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7'
            && s[3] >= '0' && s[3] <= '7') {
            *w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else
            *w++ = *s;
    }
    *w = '\0';
}

static int has_item(const char *list, const char *item)
{
    size_t n = strlen(item);
    const char *p = list;
    while (p && *p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

int cs_proc_cgroup(pid_t pid, const char *ctl, char *path, size_t len)
{
    char name[64];
    FILE *f;
    char line[PATH_MAX + 256];
    int found = -1;

    if (pid > 0)
        snprintf(name, sizeof name, "/proc/%d/cgroup", (int)pid);
    else
        snprintf(name, sizeof name, "/proc/self/cgroup");
    f = fopen(name, "re");

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl;
        if (!c2)
            continue;
        *c2 = '\0';
        if (ctl ? !has_item(c1 + 1, ctl) : (c1 != line + 1 || line[0] != '0' || c1[1]))
            continue;
        nl = strchr(c2 + 1, '\n');
        if (nl)
            *nl = '\0';
        if (strlen(c2 + 1) >= len)
            break;
        strcpy(path, c2 + 1);
        found = 0;
        break;
    }
    fclose(f);
    if (found < 0)
        errno = ENOENT;
    return found;
}

/* cosched's own cgroup path in the hierarchy of ctl (NULL: cgroup2). */
static int own_cgroup(const char *ctl, char *path, size_t len)
{
    return cs_proc_cgroup(0, ctl, path, len);
}

int cs_cgroup_locate(const char *ctl, char *mnt, size_t mntlen, char *dir, size_t dirlen,
                     char *why, size_t whylen)
{
    char own[PATH_MAX], line[3 * PATH_MAX];
    char seen_mnt[PATH_MAX] = "", seen_root[PATH_MAX] = "";
    const char *kind = ctl ? ctl : "cgroup2";
    FILE *f;
    int ret = -1;

    if (own_cgroup(ctl, own, sizeof own) < 0) {
        if (ctl)
            snprintf(why, whylen, "no cgroup v1 %s hierarchy (no '%s' line in /proc/self/cgroup)",
                     ctl, ctl);
        else
            snprintf(why, whylen, "no cgroup2 hierarchy (no '0::' line in /proc/self/cgroup)");
        return -1;
    }
    f = fopen("/proc/self/mountinfo", "re");
    if (!f) {
        snprintf(why, whylen, "cannot read /proc/self/mountinfo: %s", strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *tok[64], *save = NULL, *t;
        int n = 0, sep = -1;
        size_t rl;
        for (t = strtok_r(line, " \n", &save); t && n < 64; t = strtok_r(NULL, " \n", &save)) {
            if (sep < 0 && n >= 6 && strcmp(t, "-") == 0)
                sep = n;
            tok[n++] = t;
        }
        if (sep < 0 || n < sep + 4)
            continue;
        if (ctl ? strcmp(tok[sep + 1], "cgroup") || !has_item(tok[sep + 3], ctl)
                : strcmp(tok[sep + 1], "cgroup2"))
            continue;
        unescape(tok[3]);
        unescape(tok[4]);
        snprintf(seen_mnt, sizeof seen_mnt, "%s", tok[4]);
        snprintf(seen_root, sizeof seen_root, "%s", tok[3]);
        rl = strcmp(tok[3], "/") == 0 ? 0 : strlen(tok[3]);
        if (strncmp(own, tok[3], rl) || (own[rl] != '/' && own[rl] != '\0'))
            continue;                       /* this mount does not show our cgroup */
        if (strlen(tok[4]) >= mntlen
            || (size_t)snprintf(dir, dirlen, "%s%s", tok[4],
                                strcmp(own + rl, "/") ? own + rl : "") >= dirlen) {
            snprintf(why, whylen, "cgroup path too long under %s", tok[4]);
            goto out;
        }
        strcpy(mnt, tok[4]);
        ret = 0;
        goto out;
    }
    if (seen_mnt[0])
        snprintf(why, whylen, "the %s hierarchy is mounted at %s (root %s) but cosched's "
                 "cgroup %s is outside the mounted part", kind, seen_mnt, seen_root, own);
    else if (ctl)
        snprintf(why, whylen, "no cgroup v1 %s hierarchy is mounted (none in /proc/self/mountinfo)",
                 ctl);
    else
        snprintf(why, whylen, "no cgroup2 file system is mounted (none in /proc/self/mountinfo)");
out:
    fclose(f);
    return ret;
}

/* open DIR/FILE with FLAGS (O_CLOEXEC added); -1 with errno set, ENAMETOOLONG
 * when the path does not fit */
static int cg_open(const char *dir, const char *file, int flags)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, flags | O_CLOEXEC);
}

int cs_cg_write(const char *who, const char *dir, const char *file, const char *val)
{
    size_t len = strlen(val);
    ssize_t w;
    int fd, saved;

    fd = cg_open(dir, file, O_WRONLY);
    if (fd < 0)
        goto fail;
    w = write(fd, val, len);
    saved = errno;
    close(fd);
    errno = saved;
    if (w == (ssize_t)len)
        return 0;
    if (w >= 0)
        errno = EIO;
fail:
    if (who) {
        saved = errno;
        cs_err("%s: cannot write %s to %s/%s: %s", who, val, dir, file, strerror(saved));
        errno = saved;
    }
    return -1;
}

int cs_cg_read(const char *dir, const char *file, char *buf, size_t len)
{
    ssize_t r;
    int fd, saved;

    fd = cg_open(dir, file, O_RDONLY);
    if (fd < 0)
        return -1;
    r = read(fd, buf, len - 1);
    saved = errno;
    close(fd);
    errno = saved;
    if (r < 0)
        return -1;
    buf[r] = '\0';
    while (r > 0 && buf[r - 1] == '\n')
        buf[--r] = '\0';
    return (int)r;
}

char *cs_cg_read_all(const char *dir, const char *file)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int fd, saved;

    fd = cg_open(dir, file, O_RDONLY);
    if (fd < 0)
        return NULL;
    for (;;) {
        ssize_t r;
        if (cap - n < 4096) {
            char *p = realloc(buf, cap + 16384);
            if (!p)
                goto fail;
            buf = p;
            cap += 16384;
        }
        r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return buf;
fail:
    saved = errno;
    close(fd);
    free(buf);
    errno = saved;
    return NULL;
}

static int cg_write_set(const char *who, const char *dir, const char *file, hwloc_const_bitmap_t set)
{
    char *list = NULL;
    int ret;

    if (hwloc_bitmap_list_asprintf(&list, set) < 0) {
        cs_err("%s: out of memory", who);
        return -1;
    }
    ret = cs_cg_write(who, dir, file, list);
    free(list);
    return ret;
}

int cs_cg_write_cpuset(const char *who, const char *dir, hwloc_const_bitmap_t cpus,
                       hwloc_const_bitmap_t mems)
{
    if (cg_write_set(who, dir, "cpuset.cpus", cpus) < 0)
        return -1;
    if (mems && !hwloc_bitmap_iszero(mems) && cg_write_set(who, dir, "cpuset.mems", mems) < 0)
        return -1;
    return 0;
}

int cs_cgroup_move_procs(const char *who, const char *from, const char *to)
{
    char *list = NULL;
    int round, ret = -1;

    for (round = 0; round < MAX_PASSES; round++) {
        char *p, *end;
        int seen = 0;
        free(list);
        list = cs_cg_read_all(from, "cgroup.procs");
        if (!list) {
            if (errno == ENOENT) {
                ret = 0;                    /* directory already gone */
                goto out;
            }
            cs_err("%s: cannot read %s/cgroup.procs: %s", who, from, strerror(errno));
            goto out;
        }
        for (p = list; *p; p = end) {
            long pid = strtol(p, &end, 10);
            char num[24];
            if (end == p) {
                end = p + 1;
                continue;
            }
            seen++;
            snprintf(num, sizeof num, "%ld", pid);
            if (cs_cg_write(NULL, to, "cgroup.procs", num) < 0 && errno != ESRCH) {
                cs_err("%s: cannot move process %ld from %s back to %s: %s",
                       who, pid, from, to, strerror(errno));
                goto out;
            }
        }
        if (!seen) {
            ret = 0;
            goto out;
        }
    }
    cs_err("%s: %s still gains processes after %d attempts to empty it", who, from, MAX_PASSES);
out:
    free(list);
    return ret;
}

static int reclaim(const char *who, const char *dir, const char *origin,
                   hwloc_const_bitmap_t restore, int depth)
{
    struct stat sb;
    DIR *d;
    struct dirent *de;
    int ret = 0;

    if (stat(dir, &sb) < 0)
        return errno == ENOENT ? 0 : -1;
    if (depth > MAX_DEPTH) {
        cs_warn("%s: not reclaiming %s: deeper than %d levels", who, dir, MAX_DEPTH);
        return -1;
    }
    /* thaw first: a task frozen by the v1 freezer cannot even die */
    if (cs_cg_write(NULL, dir, "freezer.state", "THAWED") < 0 && errno != ENOENT)
        cs_warn("%s: cannot thaw %s/freezer.state: %s", who, dir, strerror(errno));
    if (cs_cg_write(NULL, dir, "cgroup.freeze", "0") < 0 && errno != ENOENT)
        cs_warn("%s: cannot thaw %s/cgroup.freeze: %s", who, dir, strerror(errno));
    if (restore && cs_affinity_cgroup(who, dir, restore) < 0)
        ret = -1;
    if (cs_cgroup_move_procs(who, dir, origin) < 0)
        ret = -1;
    d = opendir(dir);
    if (d) {
        while ((de = readdir(d))) {
            char sub[PATH_MAX];
            if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >= sizeof sub)
                continue;
            if (reclaim(who, sub, origin, restore, depth + 1) < 0)
                ret = -1;
        }
        closedir(d);
    }
    if (rmdir(dir) < 0 && errno != ENOENT) {
        /* a process forked between the move and the rmdir: one more round */
        if (errno == EBUSY && cs_cgroup_move_procs(who, dir, origin) == 0 && rmdir(dir) == 0)
            return ret;
        cs_warn("%s: cannot remove %s: %s", who, dir, strerror(errno));
        ret = -1;
    }
    return ret;
}

int cs_cgroup_reclaim(const char *who, const char *dir, const char *origin,
                      hwloc_const_bitmap_t restore)
{
    return reclaim(who, dir, origin, restore, 0);
}

void cs_cgroup_reclaim_leftovers(const char *who, const char *cosched_dir, const char *origin,
                                 hwloc_const_bitmap_t restore)
{
    DIR *d = opendir(cosched_dir);
    struct dirent *de;

    if (!d)
        return;
    while ((de = readdir(d))) {
        char sub[PATH_MAX];
        long pid;
        if (de->d_type != DT_DIR || !all_digits(de->d_name))
            continue;
        pid = strtol(de->d_name, NULL, 10);
        if (pid != (long)getpid() && cs_proc_is_cosched((pid_t)pid))
            continue;                       /* a live cosched owns it */
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", cosched_dir, de->d_name) >= sizeof sub)
            continue;
        if (pid == (long)getpid())
            cs_warn("%s: reclaiming %s, left by an earlier cosched that had this pid (%ld)",
                    who, sub, pid);
        else
            cs_warn("%s: reclaiming %s, left by cosched pid %ld, which is no longer running",
                    who, sub, pid);
        cs_cgroup_reclaim(who, sub, origin, restore);
    }
    closedir(d);
}

/* --------------------------------------------------------- record fields */

int cs_rec_add(char *rec, size_t len, const char *field)
{
    size_t n = strlen(rec);
    const char *s;

    if (n && n + 1 < len)
        rec[n++] = ' ';
    for (s = *field ? field : "-"; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\\' || (c == '-' && !s[1] && s == field)) {
            if (n + 4 >= len)
                goto full;
            snprintf(rec + n, 5, "\\%03o", c);
            n += 4;
        } else {
            if (n + 1 >= len)
                goto full;
            rec[n++] = (char)c;
        }
    }
    rec[n] = '\0';
    return 0;
full:
    rec[len ? len - 1 : 0] = '\0';
    errno = ENAMETOOLONG;
    return -1;
}

int cs_rec_split(char *rec, char **fields, int max)
{
    char *save = NULL, *t;
    int n = 0;

    for (t = strtok_r(rec, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        if (strcmp(t, "-") == 0)
            t[0] = '\0';                    /* an empty field */
        else
            unescape(t);
        fields[n++] = t;
    }
    return n;
}

/* ------------------------------------------------ CPU time from /proc */

uint64_t cs_proc_cpu_monotonic(struct cs_proc_cpu *a, uint64_t v)
{
    if (v < a->last_ns)
        v = a->last_ns;
    a->last_ns = v;
    return v;
}

int cs_proc_cpu_read(struct cs_proc_cpu *a, pid_t live_pgid, uint64_t *ns)
{
    uint64_t v = a->reaped_ns;

    if (live_pgid > 0) {
        uint64_t live;
        if (cs_proc_cputime_pgrp(live_pgid, &live) < 0)
            return -1;
        v += live;
    }
    *ns = cs_proc_cpu_monotonic(a, v);
    return 0;
}

void cs_proc_cpu_reaped(struct cs_proc_cpu *a, const struct rusage *ru)
{
    a->reaped_ns += (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull
                  + (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
}

/* ------------------------------------------------ idle time per cpu */

/*
 * /proc/stat: "cpuN user nice system idle iowait irq softirq steal ...",
 * cumulative USER_HZ ticks per cpu since boot; the cpuN lines follow the
 * "cpu" total and precede everything else.  Idle is idle + iowait (a cpu
 * waiting for I/O with nothing else to run is a cpu nobody uses); steal is
 * not idle (the hypervisor gave the time to someone else).  The counts move
 * in ticks (10 ms at USER_HZ 100): only steps much longer than a tick give
 * meaningful differences.
 */
int cs_proc_cpu_idle(struct cs_engine *e, hwloc_const_bitmap_t cpus, double *idle_s)
{
    FILE *f = fopen("/proc/stat", "re");
    long hz = sysconf(_SC_CLK_TCK);
    int n = hwloc_bitmap_weight(cpus), found = 0;
    char *line = NULL;
    size_t cap = 0;

    (void)e;
    if (f == NULL || n < 0 || hz <= 0) {
        if (f)
            fclose(f);
        return -1;
    }
    for (int k = 0; k < n; k++)
        idle_s[k] = -1;
    while (getline(&line, &cap, f) > 0) {
        char *p;
        if (strncmp(line, "cpu", 3) != 0)
            break;                       /* past the cpu lines */
        if (!isdigit((unsigned char)line[3]))
            continue;                    /* the total */
        unsigned long cpu = strtoul(line + 3, &p, 10);
        unsigned long long v[5];
        int k;
        for (k = 0; k < 5; k++) {
            char *q;
            errno = 0;
            v[k] = strtoull(p, &q, 10);
            if (q == p || errno)
                break;
            p = q;
        }
        if (k < 5 || cpu > (unsigned long)INT_MAX || !hwloc_bitmap_isset(cpus, (unsigned)cpu))
            continue;
        /* the cpu's position in cpus */
        int pos = 0;
        for (int c = hwloc_bitmap_first(cpus); c >= 0 && (unsigned long)c != cpu; c = hwloc_bitmap_next(cpus, c))
            pos++;
        if (idle_s[pos] < 0)
            found++;
        idle_s[pos] = (double)(v[3] + v[4]) / (double)hz;
    }
    free(line);
    fclose(f);
    return found == n ? 0 : -1;
}
