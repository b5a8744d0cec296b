/*
 * counters_perf.c - the perf_event backend (--counters perf).
 *
 * Core-scope events (hw:, sw:, cache:, raw:, and pmu: with scope=core) are
 * opened per job instance: pid = the instance's leader, forked and still
 * blocked before exec, cpu = -1, inherit = 1 (every thread and child process
 * it creates from then on is counted too; the counts of exited ones are folded
 * into the leader's counter by the kernel, and live children are added at
 * each read), enabled from the start.  Events are packed into as few groups as
 * the PMU accepts (one leader + members, scheduled together; an event the
 * group refuses starts a new group) and each group is read with one read()
 * (PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING).  A count
 * whose group was on the PMU for only part of the time it was enabled is
 * scaled by enabled/running and the read says CS_COUNTS_MULTIPLEXED; one that
 * was enabled but never on the PMU is NaN.
 *
 *   job_attach(pid)       open the groups on pid (last values = 0)
 *   step_begin            read every job's groups and drop the deltas: a
 *                         step's counts cover the step, as the engine's CPU
 *                         time does, not the planning and switching before it
 *   read(j)               read every group; deltas since step_begin;
 *                         remember the new cumulative values
 *   instance_ended(j)     read once more, keep the deltas as "pending", close:
 *                         the next read returns pending + what a new instance
 *                         (--window restarts the job: new fds) counted since
 *   job_release(j)        close, free
 *
 * Socket-scope and uncore-scope events (pmu:NAME:..., scope=socket|uncore)
 * count a whole package (memory controller, data fabric) or cache domain (an
 * AMD CCX's L3), whoever runs there.  They are opened at init once per domain
 * (pid = -1, cpu = the PMU's cpumask cpu in that domain; NAME_* sums every
 * NAME_<n> instance), marked at step_begin, and given to a job only when it
 * held every cpu of every such domain it ran on in that step
 * (CS_COUNTS_SOCKET_OWNED); otherwise - or when the job was frozen - those
 * slots are NaN.  Opening them once instead of at each step_begin costs
 * nothing per step and reports a refused open before any job starts.
 *
 * Permissions: events on our own children need no privilege when
 * kernel.perf_event_paranoid <= 2, but at 2 only user-mode counting is
 * allowed (exclude_kernel): the backend then counts user mode only, says so,
 * and reports NaN for the software events that fire in the kernel
 * (context-switches, cpu-migrations, cgroup-switches read 0 in user mode).
 * Cpu-wide (socket/uncore) events need paranoid <= 0 or CAP_PERFMON.
 *
 * The profile's encodings (profile.h) are used as they are, except pmu:
 * events written as terms (event=,umask=...): those are encoded through the
 * PMU's /sys/bus/event_source/devices/NAME/format/ files, the kernel's
 * documented interface for dynamic PMUs.
 */
#include "config.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"

#define EVSRC "/sys/bus/event_source/devices"


/* One PMU instance an event is opened on. */
struct target {
    struct perf_event_attr attr;
    char pmu[96];                 /* PMU name for messages ("" for the generic types) */
    hwloc_bitmap_t cpumask;       /* the PMU's cpumask (cpu-wide PMUs), else NULL */
};

/* A core-scope event as opened on every job instance. */
struct centry {
    int ev;                       /* profile event it adds to */
    struct perf_event_attr attr;
    int group, leader;            /* index of its group; 1 for the group's leader */
};

struct cgrp {
    int first, n;                 /* centries [first, first + n), leader first */
};

/* A socket or cache domain (scope=socket: a package, scope=uncore: an LLC). */
struct udom {
    enum cs_scope scope;
    int index;                    /* package or LLC index in e->topo */
    hwloc_bitmap_t cpus;
    struct cs_job *owner;         /* the job holding all of cpus in this step, or NULL */
};

/* A cpu-wide fd of a socket/uncore event. */
struct uentry {
    int ev, dom, fd;
    uint64_t mark[3];             /* value, enabled, running at step_begin */
};

static struct {
    const struct cs_profile *p;
    unsigned char countable[CS_COUNTS_MAX];
    int user_only;                /* exclude_kernel (perf_event_paranoid 2, unprivileged) */
    int group_format;             /* PERF_FORMAT_GROUP usable (else every event alone) */
    struct centry *ce;
    int nce;
    struct cgrp *grp;
    int ngrp;
    struct udom *dom;
    int ndom;
    struct uentry *ue;
    int nue;
    int uncore_used;              /* some countable event is socket/uncore scope */
} P;

struct pjob {
    int open;                     /* an instance's fds are open */
    int *fd;                      /* per centry */
    uint64_t (*last)[3];          /* per centry: value, enabled, running at the previous read */
    double pend[CS_COUNTS_MAX];   /* deltas of ended instances, not yet read */
    int pend_flags;               /* CS_COUNTS_MULTIPLEXED among them */
    int attached_once;
    double t_last;                /* time of the previous read (or first attach) */
    int owns[3];                  /* per cs_scope: its socket/uncore counts are its own this step */
    int warned;                   /* a read failed and was reported */
};

static long sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group_fd)
{
    return syscall(SYS_perf_event_open, a, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static int paranoid_level(void)
{
    char b[32];
    if (cs_read_file("/proc/sys/kernel/perf_event_paranoid", b, sizeof b) < 0)
        return 99;
    return atoi(b);
}

/* A hardware PMU registered with perf: "cpu" (Intel, AMD), "cpu_core"/"cpu_atom" (hybrid),
 * "armv8_pmuv3*" and friends show up as the owner of PERF_TYPE_RAW. */
static int have_core_pmu(void)
{
    return access(EVSRC "/cpu", F_OK) == 0 || access(EVSRC "/cpu_core", F_OK) == 0 ||
           access(EVSRC "/armv8_pmuv3", F_OK) == 0 || access(EVSRC "/armv8_pmuv3_0", F_OK) == 0;
}

/* "perf_event_open of SLOT (perf=SPEC): strerror: what it means and what to change" */
static void explain(int err, const struct cs_event *ev, const char *pmu, int cpuwide, int user_only, char *why,
                    size_t len)
{
    int para = paranoid_level();
    const char *hint = "";
    char h[400] = "";

    switch (err) {
    case ENOENT:
    case EOPNOTSUPP:
        if (ev->perf_kind == CS_PERF_PMU)
            snprintf(h, sizeof h, "PMU %s does not provide it", pmu);
        else if (ev->perf_kind != CS_PERF_SW && !have_core_pmu())
            hint = "no hardware PMU here (no " EVSRC "/cpu: a VM without a virtual PMU?); software events "
                   "(profile test-software) still work";
        else
            hint = "this CPU's PMU does not provide it";
        break;
    case EACCES:
    case EPERM:
        if (cpuwide && para > 0)
            snprintf(h, sizeof h,
                     "cpu-wide (scope=%s) events need kernel.perf_event_paranoid <= 0 or CAP_PERFMON, and it "
                     "is %d: as root, sysctl -w kernel.perf_event_paranoid=0 (or give cosched CAP_PERFMON)",
                     cs_scope_name(ev->scope), para);
        else if (para >= 3)
            snprintf(h, sizeof h,
                     "kernel.perf_event_paranoid is %d: unprivileged users may not use perf events at all; as "
                     "root, sysctl -w kernel.perf_event_paranoid=2 (or lower), or give cosched CAP_PERFMON",
                     para);
        else if (para == 2 && !user_only)
            snprintf(h, sizeof h, "kernel.perf_event_paranoid is 2: only user-mode counting is allowed");
        else
            snprintf(h, sizeof h,
                     "refused although kernel.perf_event_paranoid is %d: a seccomp filter (container runtimes "
                     "block perf_event_open by default) or a security module denies it",
                     para);
        break;
    case ENOSYS:
        hint = "this kernel has no perf events (CONFIG_PERF_EVENTS), or a seccomp filter hides the system call";
        break;
    case EINVAL:
        hint = "the PMU rejects this encoding (check the profile's perf= against `perf list` on this machine)";
        break;
    case EMFILE:
    case ENFILE:
        hint = "too many open files: raise the limit (ulimit -n) - every job needs one per event";
        break;
    case EBUSY:
        hint = "the counter is taken (another perf user, or the NMI watchdog: sysctl kernel.nmi_watchdog=0)";
        break;
    case ENODEV:
        hint = "this PMU cannot count per task or on that cpu";
        break;
    default:
        break;
    }
    snprintf(why, len, "perf_event_open of %s (perf=%s): %s%s%s", ev->slot, ev->perf_spec, strerror(err),
             h[0] || hint[0] ? ": " : "", h[0] ? h : hint);
}

/* ------------------------------------------------------------ encoding */

/* "config:0-7,32-35" -> where; scatter v over the bit ranges in order. */
static int apply_format(const char *fmt, uint64_t v, struct perf_event_attr *a, const char *term, const char *pmu,
                        char *why, size_t len)
{
    const char *colon = strchr(fmt, ':'), *s;
    __u64 *dst;
    int bit = 0;

    if (colon == NULL)
        goto bad;
    if (strncmp(fmt, "config:", 7) == 0)
        dst = &a->config;
    else if (strncmp(fmt, "config1:", 8) == 0)
        dst = &a->config1;
    else if (strncmp(fmt, "config2:", 8) == 0)
        dst = &a->config2;
    else
        goto bad;
    for (s = colon + 1; *s;) {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s || lo < 0 || lo > 63)
            goto bad;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            if (end == s + 1 || hi < lo || hi > 63)
                goto bad;
            s = end;
        }
        for (long b = lo; b <= hi; b++, bit++)
            if (bit < 64 && (v >> bit) & 1)
                *dst |= 1ULL << b;
        if (*s == ',')
            s++;
        else if (*s && !isspace((unsigned char)*s))
            goto bad;
        else
            break;
    }
    if (bit < 64 && (v >> bit) != 0) {
        snprintf(why, len, "%s=0x%llx does not fit PMU %s's %d-bit field %s", term, (unsigned long long)v, pmu,
                 bit, fmt);
        return -1;
    }
    return 0;
bad:
    snprintf(why, len, "cannot read PMU %s's format of %s: '%s'", pmu, term, fmt);
    return -1;
}

/* Encode "event=0x04,umask=0x03,inv,config1=0x.." through EVSRC/pmu/format/. */
static int encode_terms(const struct cs_event *ev, const char *pmu, struct perf_event_attr *a, char *why,
                        size_t len)
{
    char dir[300], path[400], fmt[128], *terms = strdup(ev->perf_terms), *save = NULL;
    int r = 0;

    snprintf(dir, sizeof dir, EVSRC "/%s/format", pmu);
    a->config = a->config1 = a->config2 = 0;
    for (char *t = strtok_r(terms, ",", &save); t && r == 0; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        uint64_t v = 1;
        if (eq) {
            *eq = '\0';
            v = strtoull(eq + 1, NULL, 0);
        }
        if (strcmp(t, "config1") == 0) {
            a->config1 = v;
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, t);
        if (cs_read_file(path, fmt, sizeof fmt) < 0) {
            char have[200] = "";
            DIR *d = opendir(dir);
            struct dirent *de;
            while (d && (de = readdir(d)))
                if (de->d_name[0] != '.' && strlen(have) + strlen(de->d_name) + 3 < sizeof have)
                    strcat(strcat(have, have[0] ? ", " : ""), de->d_name);
            if (d)
                closedir(d);
            snprintf(why, len, "perf=%s: PMU %s has no term '%s' (its format/ has: %s)", ev->perf_spec, pmu, t,
                     have[0] ? have : "nothing");
            r = -1;
            break;
        }
        fmt[strcspn(fmt, "\n")] = '\0';
        r = apply_format(fmt, v, a, t, pmu, why, len);
    }
    free(terms);
    return r;
}

static int read_type(const char *pmu, uint32_t *type)
{
    char path[300], b[32];
    snprintf(path, sizeof path, EVSRC "/%s/type", pmu);
    if (cs_read_file(path, b, sizeof b) < 0)
        return -1;
    *type = (uint32_t)strtoul(b, NULL, 10);
    return 0;
}

/* The PMU instances of pmu:NAME (one) or pmu:NAME_* (every NAME_<digits>), sorted. */
static int pmu_instances(const struct cs_event *ev, char ***names)
{
    int n = 0;

    *names = NULL;
    if (!ev->perf_pmu_all) {
        char path[300];
        snprintf(path, sizeof path, EVSRC "/%s", ev->perf_pmu);
        if (access(path, F_OK) < 0)
            return 0;
        *names = malloc(sizeof **names);
        (*names)[n++] = strdup(ev->perf_pmu);
        return n;
    }
    DIR *d = opendir(EVSRC);
    struct dirent *de;
    size_t pl = strlen(ev->perf_pmu);
    while (d && (de = readdir(d))) {
        const char *s = de->d_name;
        if (strncmp(s, ev->perf_pmu, pl) != 0 || s[pl] != '_' || !isdigit((unsigned char)s[pl + 1]))
            continue;
        if (strspn(s + pl + 1, "0123456789") != strlen(s + pl + 1))
            continue;
        *names = realloc(*names, (n + 1) * sizeof **names);
        (*names)[n++] = strdup(s);
    }
    if (d)
        closedir(d);
    for (int i = 1; i < n; i++)          /* insertion sort: a handful of names */
        for (int k = i; k > 0 && strcmp((*names)[k - 1], (*names)[k]) > 0; k--) {
            char *t = (*names)[k];
            (*names)[k] = (*names)[k - 1];
            (*names)[k - 1] = t;
        }
    return n;
}

static void free_targets(struct target *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i].cpumask)
            hwloc_bitmap_free(t[i].cpumask);
    free(t);
}

/* The perf_event_attr(s) of event ev: one, or one per PMU instance. */
static int resolve(const struct cs_event *ev, int user_only, struct target **out, int *n, char *why, size_t len)
{
    struct target *t;
    char **names = NULL;
    int k;

    *out = NULL;
    *n = 0;
    if (ev->perf_kind != CS_PERF_PMU) {
        t = calloc(1, sizeof *t);
        t->attr.type = ev->perf_type;
        t->attr.config = ev->perf_config;
        t->attr.config1 = ev->perf_config1;
        k = 1;
    } else {
        k = pmu_instances(ev, &names);
        if (k == 0) {
            snprintf(why, len, "perf=%s: no PMU %s%s in " EVSRC " (this CPU or kernel has no such unit%s)",
                     ev->perf_spec, ev->perf_pmu, ev->perf_pmu_all ? "_<n>" : "",
                     have_core_pmu() ? "; a missing driver module?" : "; no hardware PMU here at all");
            return -1;
        }
        t = calloc(k, sizeof *t);
        for (int i = 0; i < k; i++) {
            char path[300], fmtdir[300], mask[4096];
            snprintf(t[i].pmu, sizeof t[i].pmu, "%s", names[i]);
            if (read_type(names[i], &t[i].attr.type) < 0) {
                snprintf(why, len, "perf=%s: cannot read " EVSRC "/%s/type", ev->perf_spec, names[i]);
                goto fail;
            }
            snprintf(fmtdir, sizeof fmtdir, EVSRC "/%s/format", names[i]);
            if (ev->perf_terms && access(fmtdir, F_OK) == 0) {
                if (encode_terms(ev, names[i], &t[i].attr, why, len) < 0)
                    goto fail;
            } else {
                t[i].attr.config = ev->perf_config;   /* the x86 layout, as parsed */
                t[i].attr.config1 = ev->perf_config1;
            }
            snprintf(path, sizeof path, EVSRC "/%s/cpumask", names[i]);
            if (cs_read_file(path, mask, sizeof mask) == 0) {
                mask[strcspn(mask, "\n")] = '\0';
                t[i].cpumask = hwloc_bitmap_alloc();
                if (hwloc_bitmap_list_sscanf(t[i].cpumask, mask) < 0 || hwloc_bitmap_iszero(t[i].cpumask)) {
                    hwloc_bitmap_free(t[i].cpumask);
                    t[i].cpumask = NULL;
                }
            }
        }
    }
    for (int i = 0; i < k; i++) {
        struct perf_event_attr *a = &t[i].attr;
        a->size = sizeof *a;
        a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        if (ev->scope == CS_SCOPE_CORE) {
            a->inherit = 1;
            a->exclude_kernel = a->exclude_hv = user_only;
        }
    }
    for (int i = 0; names && i < k; i++)
        free(names[i]);
    free(names);
    *out = t;
    *n = k;
    return 0;
fail:
    cs_strv_free(names, k);
    free_targets(t, k);
    return -1;
}

/* Software events that fire in kernel context: 0 when counting user mode only. */
static int kernel_only_sw(const struct cs_event *ev)
{
    return ev->perf_kind == CS_PERF_SW &&
           (ev->perf_config == PERF_COUNT_SW_CONTEXT_SWITCHES || ev->perf_config == PERF_COUNT_SW_CPU_MIGRATIONS
#ifdef PERF_COUNT_SW_CGROUP_SWITCHES
            || ev->perf_config == PERF_COUNT_SW_CGROUP_SWITCHES
#endif
           );
}

/* Open ev once, disabled, to see whether it can be counted here: on ourselves
 * (core scope) or on the first cpu of its PMU (cpu-wide).  May switch
 * *user_only on when that is what the kernel allows. */
static int trial_open(const struct cs_event *ev, int *user_only, char *why, size_t len)
{
    struct target *t;
    int n, fd = -1, err = 0;

    if (resolve(ev, *user_only, &t, &n, why, len) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int cpuwide = ev->scope != CS_SCOPE_CORE;
        int cpu = cpuwide ? (t[i].cpumask ? hwloc_bitmap_first(t[i].cpumask) : 0) : -1;
        t[i].attr.disabled = 1;
        fd = sys_perf_event_open(&t[i].attr, cpuwide ? -1 : 0, cpu, -1);
        if (fd < 0 && (errno == EACCES || errno == EPERM) && !cpuwide && !*user_only) {
            struct perf_event_attr a = t[i].attr;
            a.exclude_kernel = a.exclude_hv = 1;
            fd = sys_perf_event_open(&a, 0, -1, -1);
            if (fd >= 0)
                *user_only = 1;
        }
        if (fd < 0) {
            err = errno;
            explain(err, ev, t[i].pmu, cpuwide, *user_only, why, len);
            break;
        }
        close(fd);
    }
    free_targets(t, n);
    if (fd < 0)
        return -1;
    if (*user_only && kernel_only_sw(ev)) {
        snprintf(why, len,
                 "%s (perf=%s) fires in the kernel and reads 0 when counting user mode only "
                 "(kernel.perf_event_paranoid is %d; sysctl -w kernel.perf_event_paranoid=1 or CAP_PERFMON "
                 "to count it)",
                 ev->slot, ev->perf_spec, paranoid_level());
        return -1;
    }
    return 0;
}

/* Which events of p can be counted here, and whether only in user mode. */
static int check(const struct cs_profile *p, unsigned char *countable, int *user_only, char *why, size_t len)
{
    int n = 0;
    char w[512];

    *user_only = 0;
    why[0] = '\0';
    if (p->nevents > CS_COUNTS_MAX) {
        snprintf(why, len, "profile %s has %d events; at most %d are supported", p->name, p->nevents, CS_COUNTS_MAX);
        return -1;
    }
    /* The first core event refused for kernel-mode counting switches to user
     * mode; the kernel applies that rule to every event alike (paranoid 2),
     * so nothing tried before it had succeeded in kernel mode. */
    for (int i = 0; i < p->nevents; i++) {
        int ok = trial_open(&p->events[i], user_only, w, sizeof w) == 0;
        if (countable)
            countable[i] = ok;
        n += ok;
        if (!ok && why[0] == '\0')
            snprintf(why, len, "%s", w);
    }
    return n;
}

int cs_counters_perf_check(const struct cs_profile *p, unsigned char *countable, char *why, size_t len)
{
    int user_only;
    return check(p, countable, &user_only, why, len);
}

/* ------------------------------------------------------------ ops */

static int perf_probe(const char *arg, char *why, size_t len)
{
    struct perf_event_attr a = { .size = sizeof a, .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK,
                                 .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1 };
    int fd = sys_perf_event_open(&a, 0, -1, -1);
    if (fd < 0) {
        struct cs_event ev = { .slot = "task-clock", .perf_spec = "sw:task-clock", .perf_kind = CS_PERF_SW };
        explain(errno, &ev, "", 0, 1, why, len);
        return -1;
    }
    close(fd);
    return 0;
}

static void free_layout(void)
{
    for (int i = 0; i < P.nue; i++)
        if (P.ue[i].fd >= 0)
            close(P.ue[i].fd);
    for (int i = 0; i < P.ndom; i++)
        hwloc_bitmap_free(P.dom[i].cpus);
    free(P.ce);
    free(P.grp);
    free(P.ue);
    free(P.dom);
    memset(&P, 0, sizeof P);
}

/* Pack the core entries into groups the PMU accepts, trying them on ourselves. */
static void layout_groups(void)
{
    int *fds = malloc((P.nce ? P.nce : 1) * sizeof *fds);

    P.grp = calloc(P.nce ? P.nce : 1, sizeof *P.grp);
    P.ngrp = 0;
    P.group_format = 1;
    for (int i = 0; i < P.nce; i++) {
        struct perf_event_attr a = P.ce[i].attr;
        struct cgrp *g = P.ngrp ? &P.grp[P.ngrp - 1] : NULL;
        a.disabled = 1;
        a.read_format |= PERF_FORMAT_GROUP;
        fds[i] = -1;
        if (g && P.group_format)
            fds[i] = sys_perf_event_open(&a, 0, -1, fds[g->first]);
        if (fds[i] >= 0) {
            g->n++;
            P.ce[i].group = P.ngrp - 1;
            continue;
        }
        /* a new group; if even a group of one cannot be read as a group, no groups at all */
        if (P.group_format) {
            fds[i] = sys_perf_event_open(&a, 0, -1, -1);
            if (fds[i] < 0)
                P.group_format = 0;
        }
        P.grp[P.ngrp].first = i;
        P.grp[P.ngrp].n = 1;
        P.ce[i].group = P.ngrp++;
        P.ce[i].leader = 1;
    }
    for (int i = 0; i < P.nce; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    if (!P.group_format) {         /* every event alone */
        P.ngrp = P.nce;
        for (int i = 0; i < P.nce; i++) {
            P.grp[i].first = i;
            P.grp[i].n = 1;
            P.ce[i].group = i;
            P.ce[i].leader = 1;
        }
    }
    for (int i = 0; i < P.nce; i++)
        if (P.group_format && P.ce[i].leader)
            P.ce[i].attr.read_format |= PERF_FORMAT_GROUP;
}

static int domain_of(struct cs_engine *e, enum cs_scope scope, int cpu)
{
    int c = cs_topo_core_of_pu(e->topo, cpu), idx;

    if (c < 0)
        return -1;
    idx = scope == CS_SCOPE_UNCORE && e->topo->cores[c].llc >= 0 ? e->topo->cores[c].llc : e->topo->cores[c].package;
    if (scope == CS_SCOPE_UNCORE && e->topo->cores[c].llc < 0)
        scope = CS_SCOPE_SOCKET;
    for (int i = 0; i < P.ndom; i++)
        if (P.dom[i].scope == scope && P.dom[i].index == idx)
            return i;
    P.dom = realloc(P.dom, (P.ndom + 1) * sizeof *P.dom);
    struct udom *d = &P.dom[P.ndom];
    d->scope = scope;
    d->index = idx;
    d->owner = NULL;
    if (scope == CS_SCOPE_UNCORE) {
        d->cpus = hwloc_bitmap_dup(e->topo->llcs[idx].cpus);
    } else {
        d->cpus = hwloc_bitmap_alloc();
        for (int k = 0; k < e->topo->ncores; k++)
            if (e->topo->cores[k].package == idx)
                hwloc_bitmap_or(d->cpus, d->cpus, e->topo->cores[k].pus);
    }
    return P.ndom++;
}

/* One cpu per domain for a PMU without a cpumask. */
static hwloc_bitmap_t representatives(struct cs_engine *e, enum cs_scope scope)
{
    hwloc_bitmap_t r = hwloc_bitmap_alloc(), seen = hwloc_bitmap_alloc();
    for (int k = 0; k < e->topo->ncores; k++) {
        int id = scope == CS_SCOPE_UNCORE && e->topo->cores[k].llc >= 0 ? e->topo->cores[k].llc
                                                                       : 1000000 + e->topo->cores[k].package;
        if (hwloc_bitmap_isset(seen, id))
            continue;
        hwloc_bitmap_set(seen, id);
        hwloc_bitmap_set(r, hwloc_bitmap_first(e->topo->cores[k].pus));
    }
    hwloc_bitmap_free(seen);
    return r;
}

static int open_uncore(struct cs_engine *e, int ev, char *why, size_t len)
{
    const struct cs_event *E = &P.p->events[ev];
    struct target *t;
    int n, cpu, r = 0;

    if (resolve(E, 0, &t, &n, why, len) < 0)
        return -1;
    for (int i = 0; i < n && r == 0; i++) {
        hwloc_bitmap_t cpus = t[i].cpumask ? hwloc_bitmap_dup(t[i].cpumask) : representatives(e, E->scope);
        hwloc_bitmap_foreach_begin(cpu, cpus) {
            int d = domain_of(e, E->scope, cpu), fd;
            if (d < 0)
                continue;            /* a cpu outside cosched's topology */
            fd = sys_perf_event_open(&t[i].attr, -1, cpu, -1);
            if (fd < 0) {
                explain(errno, E, t[i].pmu, 1, 0, why, len);
                r = -1;
                break;
            }
            P.ue = realloc(P.ue, (P.nue + 1) * sizeof *P.ue);
            P.ue[P.nue++] = (struct uentry){ .ev = ev, .dom = d, .fd = fd };
        }
        hwloc_bitmap_foreach_end();
        hwloc_bitmap_free(cpus);
    }
    free_targets(t, n);
    return r;
}

static int perf_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    char why[512] = "";
    int n;

    free_layout();
    if (p == NULL) {
        cs_err("counters: perf: no counter profile");
        return -1;
    }
    P.p = p;
    n = check(p, P.countable, &P.user_only, why, sizeof why);
    if (n <= 0) {
        cs_err("counters: perf: cannot count %s of profile %s here: %s", n < 0 ? "anything" : "any event", p->name,
               why);
        free_layout();
        return -1;
    }
    if (P.user_only)
        cs_warn("counters: perf: counting user mode only (kernel.perf_event_paranoid is %d): work the jobs do in "
                "the kernel is not counted; sysctl -w kernel.perf_event_paranoid=1 or CAP_PERFMON counts it",
                paranoid_level());
    if (n < p->nevents) {
        char list[400] = "";
        for (int i = 0; i < p->nevents; i++)
            if (!P.countable[i] && strlen(list) + strlen(p->events[i].slot) + 3 < sizeof list)
                strcat(strcat(list, list[0] ? ", " : ""), p->events[i].slot);
        cs_warn("counters: perf: profile %s: %d of %d events cannot be counted here and read NaN (%s): %s",
                p->name, p->nevents - n, p->nevents, list, why);
    }

    for (int i = 0; i < p->nevents; i++) {
        const struct cs_event *E = &p->events[i];
        struct target *t;
        int nt;
        if (!P.countable[i])
            continue;
        if (E->scope != CS_SCOPE_CORE) {
            P.uncore_used = 1;
            continue;
        }
        if (resolve(E, P.user_only, &t, &nt, why, sizeof why) < 0) {
            cs_err("counters: perf: %s", why);
            free_layout();
            return -1;
        }
        P.ce = realloc(P.ce, (P.nce + nt) * sizeof *P.ce);
        for (int k = 0; k < nt; k++)
            P.ce[P.nce++] = (struct centry){ .ev = i, .attr = t[k].attr };
        free_targets(t, nt);
    }
    layout_groups();

    if (P.uncore_used && strcmp(e->topo ? e->topo->source : "", "this machine") != 0) {
        cs_warn("counters: perf: socket/uncore events are not attributed with --topology %s (their cpus are this "
                "machine's); they read NaN",
                e->topo ? e->topo->source : "(none)");
        P.uncore_used = 0;
    }
    for (int i = 0; i < p->nevents && P.uncore_used; i++)
        if (P.countable[i] && p->events[i].scope != CS_SCOPE_CORE && open_uncore(e, i, why, sizeof why) < 0) {
            cs_err("counters: perf: %s", why);
            free_layout();
            return -1;
        }
    cs_debug("counters: perf: %d core events in %d group%s%s, %d socket/uncore fds%s", P.nce, P.ngrp,
             P.ngrp == 1 ? "" : "s", P.group_format ? "" : " (no group reads)", P.nue,
             P.user_only ? ", user mode only" : "");
    return 0;
}

static void close_job_fds(struct pjob *pj)
{
    for (int i = 0; i < P.nce; i++)
        if (pj->fd[i] >= 0) {
            close(pj->fd[i]);
            pj->fd[i] = -1;
        }
    pj->open = 0;
}

static void perf_instance_ended(struct cs_engine *e, struct cs_job *j);

static int perf_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    struct pjob *pj = j->cnt;

    if (pj == NULL) {
        pj = j->cnt = calloc(1, sizeof *pj);
        pj->fd = malloc((P.nce ? P.nce : 1) * sizeof *pj->fd);
        pj->last = calloc(P.nce ? P.nce : 1, sizeof *pj->last);
        for (int i = 0; i < P.nce; i++)
            pj->fd[i] = -1;
    }
    if (pj->open)                  /* the engine reports every end; defensive */
        perf_instance_ended(e, j);
    for (int i = 0; i < P.nce; i++) {
        const struct centry *c = &P.ce[i];
        int lfd = c->leader ? -1 : pj->fd[P.grp[c->group].first];
        struct perf_event_attr a = c->attr;
        a.disabled = 0;
        pj->fd[i] = sys_perf_event_open(&a, pid, -1, lfd);
        if (pj->fd[i] < 0) {
            char why[512];
            explain(errno, &P.p->events[c->ev], "", 0, P.user_only, why, sizeof why);
            cs_err("counters: perf: job %d (%s), pid %d: %s", j->id, j->name, (int)pid, why);
            close_job_fds(pj);
            return -1;
        }
        memset(pj->last[i], 0, sizeof pj->last[i]);
    }
    pj->open = 1;
    if (!pj->attached_once) {
        pj->attached_once = 1;
        pj->t_last = cs_now();
        for (int s = 0; s < P.p->nevents; s++)
            pj->pend[s] = 0;
    }
    return 0;
}

/* Delta of one counter since last, scaled when multiplexed; NaN when it was
 * enabled but never on the PMU. */
static double delta(uint64_t last[3], uint64_t v, uint64_t en, uint64_t run, int *flags)
{
    uint64_t dv = v >= last[0] ? v - last[0] : 0, den = en >= last[1] ? en - last[1] : 0,
             drun = run >= last[2] ? run - last[2] : 0;
    last[0] = v;
    last[1] = en;
    last[2] = run;
    if (drun >= den)
        return (double)dv;
    if (drun == 0)
        return NAN;
    *flags |= CS_COUNTS_MULTIPLEXED;
    return (double)dv * ((double)den / (double)drun);
}

/* Add the job's core counts since its previous read into acc. */
static int sample(struct pjob *pj, double *acc, int *flags)
{
    uint64_t buf[3 + 2 * CS_COUNTS_MAX + 8];

    for (int g = 0; g < P.ngrp; g++) {
        const struct cgrp *G = &P.grp[g];
        if (P.group_format) {
            size_t want = (3 + G->n) * sizeof(uint64_t);
            if (read(pj->fd[G->first], buf, want) != (ssize_t)want)
                return -1;
            for (int k = 0; k < G->n; k++) {
                int i = G->first + k;
                acc[P.ce[i].ev] += delta(pj->last[i], buf[3 + k], buf[1], buf[2], flags);
            }
        } else {
            if (read(pj->fd[G->first], buf, 3 * sizeof(uint64_t)) != 3 * sizeof(uint64_t))
                return -1;
            acc[P.ce[G->first].ev] += delta(pj->last[G->first], buf[0], buf[1], buf[2], flags);
        }
    }
    return 0;
}

static void perf_instance_ended(struct cs_engine *e, struct cs_job *j)
{
    struct pjob *pj = j->cnt;

    if (pj == NULL || !pj->open)
        return;
    if (sample(pj, pj->pend, &pj->pend_flags) < 0)
        cs_warn("counters: perf: job %d (%s): the last counts of the instance could not be read: %s", j->id,
                j->name, strerror(errno));
    close_job_fds(pj);
}

static int perf_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    /* The step's counts start now, where the engine's CPU time of the step
     * starts (measure_begin): what the jobs did since their last read (while
     * the policy planned and the engine switched) belongs to no step, and is
     * dropped here rather than added to the next step's counts. */
    double now = cs_now();
    for (int i = 0; i < e->njobs; i++) {
        struct pjob *pj = e->jobs[i]->cnt;
        double scratch[CS_COUNTS_MAX] = { 0 };
        int flags = 0;
        if (pj == NULL)
            continue;
        if (pj->open && sample(pj, scratch, &flags) < 0)
            continue;                /* perf_read says why, once */
        memset(pj->pend, 0, sizeof pj->pend);
        pj->pend_flags = 0;
        pj->t_last = now;
    }
    if (!P.uncore_used)
        return 0;
    for (int d = 0; d < P.ndom; d++) {
        P.dom[d].owner = NULL;
        for (int i = 0; i < e->njobs; i++)
            if (cpus_of[i] && hwloc_bitmap_isincluded(P.dom[d].cpus, cpus_of[i]))
                P.dom[d].owner = e->jobs[i];
    }
    for (int i = 0; i < e->njobs; i++) {
        struct pjob *pj = e->jobs[i]->cnt;
        if (pj == NULL)
            continue;
        for (int s = 0; s < 3; s++) {
            int touched = 0, ok = cpus_of[i] != NULL;
            for (int d = 0; d < P.ndom && ok; d++)
                if ((int)P.dom[d].scope == s && hwloc_bitmap_intersects(P.dom[d].cpus, cpus_of[i])) {
                    touched = 1;
                    ok = P.dom[d].owner == e->jobs[i];
                }
            pj->owns[s] = ok && touched;
        }
    }
    for (int u = 0; u < P.nue; u++)
        if (read(P.ue[u].fd, P.ue[u].mark, sizeof P.ue[u].mark) != sizeof P.ue[u].mark)
            memset(P.ue[u].mark, 0, sizeof P.ue[u].mark);
    return 0;
}

static int perf_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    struct pjob *pj = j->cnt;
    const struct cs_profile *p = P.p;
    double now = cs_now();
    int flags = CS_COUNTS_VALID, got[CS_COUNTS_MAX] = { 0 };

    out->n = p->nevents;
    out->flags = 0;
    out->seconds = 0;
    for (int s = 0; s < p->nevents; s++)
        out->v[s] = NAN;
    if (pj == NULL)                  /* never attached: nothing was counted */
        return 0;
    for (int s = 0; s < p->nevents; s++)
        out->v[s] = P.countable[s] && p->events[s].scope == CS_SCOPE_CORE ? pj->pend[s] : NAN;
    flags |= pj->pend_flags;
    if (pj->open && sample(pj, out->v, &flags) < 0) {
        if (!pj->warned++)
            cs_warn("counters: perf: job %d (%s): cannot read its counters: %s; it gets no measurements while "
                    "this lasts", j->id, j->name, strerror(errno));
        return -1;
    }
    for (int u = 0; u < P.nue; u++) {
        const struct uentry *U = &P.ue[u];
        enum cs_scope sc = P.dom[U->dom].scope;
        uint64_t cur[3], last[3];
        if (!pj->owns[sc] || P.dom[U->dom].owner != j)
            continue;
        if (read(U->fd, cur, sizeof cur) != sizeof cur) {
            got[U->ev] = -1;          /* one domain unreadable: the sum is unknown */
            continue;
        }
        memcpy(last, U->mark, sizeof last);
        if (got[U->ev] == 0) {
            out->v[U->ev] = 0;
            got[U->ev] = 1;
        }
        out->v[U->ev] += delta(last, cur[0], cur[1], cur[2], &flags);
        flags |= CS_COUNTS_SOCKET_OWNED;
    }
    for (int s = 0; s < p->nevents; s++) {
        if (got[s] < 0)
            out->v[s] = NAN;
        pj->pend[s] = 0;
    }
    pj->pend_flags = 0;
    out->flags = flags;
    out->seconds = now - pj->t_last;
    pj->t_last = now;
    return 0;
}

static void perf_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct pjob *pj = j->cnt;

    if (pj == NULL)
        return;
    close_job_fds(pj);
    free(pj->fd);
    free(pj->last);
    free(pj);
    j->cnt = NULL;
}

static void perf_fini(struct cs_engine *e)
{
    free_layout();
}

const struct cs_counter_ops cs_counters_perf = {
    .name = "perf",
    .probe = perf_probe,
    .init = perf_init,
    .job_attach = perf_attach,
    .step_begin = perf_step_begin,
    .read = perf_read,
    .instance_ended = perf_instance_ended,
    .job_release = perf_job_release,
    .fini = perf_fini,
};
