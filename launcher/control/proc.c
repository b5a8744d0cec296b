/*
 * proc.c - what the control backends read from /proc: processes (scan,
 * stat, members of a job's process group), CPU time counted from /proc for
 * backends without cgroup accounting, and the cpus' idle time
 * (/proc/stat).  Affinity is affinity.c, cgroup files are cgroupfs.c.
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
 * May use: core/, control/internal.h.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/engine_state.h"

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

int cs_proc_digits(const char *s)
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
        if (!cs_proc_digits(de->d_name))
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
        if (!cs_proc_digits(de->d_name))
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
