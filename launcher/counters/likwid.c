/*
 * counters_likwid.c - the likwid backend (--counters likwid), through
 * liblikwid's C API (likwid.h).  Compiled only when configure found likwid
 * (HAVE_LIKWID); otherwise cs_counters_likwid exists and says "not built with
 * likwid".
 *
 * likwid counts per hardware thread, whoever runs there.  The engine runs at
 * most one job per core in a step, so the counts of the cpus a job held in a
 * step are that job's; a frozen job held none and gets zeros.  Socket- and
 * uncore-scope events (MBOX*, CBOX*, the AMD L3 and data fabric boxes: likwid
 * counts them on one thread per socket) are a job's only when it held every
 * cpu of the domains it ran on (CS_COUNTS_SOCKET_OWNED); else NaN.
 *
 *   init        topology_init, HPMmode (likwid's configured access mode),
 *               perfmon_init on every hardware thread, one event set per
 *               group of the profile's likwid= strings, setup, start
 *   step_begin  remember each job's cpus; with several groups, switch to the
 *               next one (round robin: the other groups' slots are NaN)
 *   read        the first read of a step calls perfmon_readCounters; each job
 *               gets the sum of perfmon_getLastResult over its cpus (counts
 *               since the previous read: the step, plus the switch before it)
 *   fini        stop, perfmon_finalize, topology_finalize
 *
 * Events: the profile's likwid=EVENT:COUNTER strings; events without one read
 * NaN.  "EVENT:MBOX*C0" means that counter of every box: it is expanded to
 * MBOX0C0 ... MBOX15C0 and the boxes likwid accepts here are summed.  Strings
 * that use the same register go into different groups (likwid cannot count two
 * events on one register), in profile order; a register a group names that this
 * CPU lacks is refused by likwid and reported.
 *
 * Before perfmon_init, the reasons likwid fails without saying why clearly are
 * checked: no counters at all (get_cpuInfo()->perf_num_ctr == 0: no PMU, e.g.
 * a VM), the lock file (/var/run/likwid.lock owned by another user), and the
 * access mode's needs (accessdaemon: the daemon exists and is setuid root;
 * direct: root and /dev/cpu/N/msr; perf_event: perf_event_paranoid).
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/engine_state.h"


#ifdef HAVE_LIKWID

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <likwid.h>

#define LW_LOCK "/var/run/likwid.lock"
#define LW_MAXUNITS 256
#define LW_MAXGROUPS 16
#define LW_BOXES 16

/* One likwid "EVENT:REGISTER" that counts (part of) profile event slot. */
struct unit {
    int slot;
    char str[128];
    char reg[48];
    int ok;                        /* likwid accepts it here */
    int group, eid;                /* where it went: group index, event index in it */
};

static struct {
    const struct cs_profile *p;
    int topo, perfmon, started;
    int ncpu;
    int *cpu;                      /* thread index -> OS cpu */
    struct unit u[LW_MAXUNITS];
    int nu;
    int gid[LW_MAXGROUPS], ngroups, active;
    uint64_t steps;
    int read_done;
    double t_read;
    unsigned char countable[CS_COUNTS_MAX];
} L;

struct ljob {
    hwloc_bitmap_t cpus;           /* held in this step (empty: frozen) */
    int owns[3];                   /* per cs_scope */
};

static const char *mode_name(int m)
{
    return m == ACCESSMODE_PERF ? "perf_event" : m == ACCESSMODE_DIRECT ? "direct" : "accessdaemon";
}

/* The access mode likwid is configured for (likwid.cfg, else its build default). */
static int access_mode(void)
{
    Configuration_t cfg;
    init_configuration();
    cfg = get_configuration();
    return cfg ? (int)cfg->daemonMode : ACCESSMODE_DAEMON;
}

/* What likwid needs before perfmon_init, checked so that the reason is clear. */
static int preflight(char *why, size_t len)
{
    CpuInfo_t info;
    struct stat st;
    int mode;

    if (!L.topo) {
        if (topology_init() != 0) {
            snprintf(why, len, "likwid: topology_init failed (likwid cannot read this machine's topology)");
            return -1;
        }
        L.topo = 1;
    }
    info = get_cpuInfo();
    if (info == NULL || info->perf_num_ctr == 0) {
        snprintf(why, len,
                 "no hardware counters: likwid finds 0 general-purpose counters on %s (get_cpuInfo()->perf_num_ctr "
                 "is 0): no PMU here (a VM without a virtual PMU?)",
                 info && info->name ? info->name : "this CPU");
        return -1;
    }
    if (stat(LW_LOCK, &st) == 0 && st.st_uid != getuid()) {
        struct passwd *pw = getpwuid(st.st_uid);
        snprintf(why, len,
                 "likwid's lock file " LW_LOCK " belongs to user %s: only that user may use the counters (remove "
                 "it as root to free them, or run cosched as that user)",
                 pw ? pw->pw_name : "(unknown uid)");
        return -1;
    }
    mode = access_mode();
    if (mode == ACCESSMODE_DAEMON && geteuid() != 0) {
        Configuration_t cfg = get_configuration();
        const char *d = cfg && cfg->daemonPath ? cfg->daemonPath : "likwid-accessD";
        if (stat(d, &st) < 0) {
            snprintf(why, len,
                     "likwid is in accessdaemon mode but its daemon %s is missing (%s): install it, or set "
                     "ACCESSMODE in likwid.cfg",
                     d, strerror(errno));
            return -1;
        }
        if (!(st.st_mode & S_ISUID) || st.st_uid != 0) {
            snprintf(why, len,
                     "likwid is in accessdaemon mode but its daemon %s is not setuid root: as root, chown root %s "
                     "&& chmod u+s %s",
                     d, d, d);
            return -1;
        }
    } else if (mode == ACCESSMODE_DIRECT) {
        if (geteuid() != 0) {
            snprintf(why, len, "likwid is in direct access mode, which needs root (or use its accessdaemon mode)");
            return -1;
        }
        if (access("/dev/cpu/0/msr", R_OK | W_OK) < 0) {
            snprintf(why, len, "likwid is in direct access mode but /dev/cpu/0/msr is not usable (%s): modprobe msr",
                     strerror(errno));
            return -1;
        }
    } else if (mode == ACCESSMODE_PERF && geteuid() != 0) {
        char b[32] = "";
        if (cs_read_file("/proc/sys/kernel/perf_event_paranoid", b, sizeof b) == 0 && atoi(b) > 0) {
            snprintf(why, len,
                     "likwid is in perf_event mode, which counts per cpu and needs kernel.perf_event_paranoid <= 0 "
                     "(it is %d): as root, sysctl -w kernel.perf_event_paranoid=0",
                     atoi(b));
            return -1;
        }
    }
    HPMmode(mode);
    return 0;
}

static int perfmon_up(char *why, size_t len)
{
    CpuTopology_t t;
    int r;

    if (L.perfmon)
        return 0;
    t = get_cpuTopology();
    free(L.cpu);
    L.cpu = malloc(t->numHWThreads * sizeof *L.cpu);
    L.ncpu = 0;
    for (uint32_t i = 0; i < t->numHWThreads; i++)
        if (t->threadPool[i].inCpuSet)
            L.cpu[L.ncpu++] = (int)t->threadPool[i].apicId;
    perfmon_setVerbosity(0);
    if ((r = perfmon_init(L.ncpu, L.cpu)) < 0) {
        int mode = access_mode();
        const char *hint = "";
        if (mode != ACCESSMODE_PERF && access("/dev/cpu/0/msr", F_OK) < 0)
            hint = ": there is no /dev/cpu/0/msr (modprobe msr; in a VM the hypervisor must expose the PMU)";
        else if (r == -EACCES || r == -EPERM)
            hint = geteuid() == 0 ? ": the MSRs refuse access (a VM or a locked-down kernel?)"
                                  : ": no permission to program the counters (run as root, or make likwid's "
                                    "accessdaemon setuid root)";
        snprintf(why, len, "likwid: perfmon_init failed (%d: %s) in %s mode%s", r, strerror(-r), mode_name(mode),
                 hint);
        return -1;
    }
    L.perfmon = 1;
    return 0;
}

static void perfmon_down(void)
{
    if (L.started)
        perfmon_stopCounters();
    if (L.perfmon)
        perfmon_finalize();
    L.started = L.perfmon = 0;
    L.ngroups = 0;
}

/* The units of the profile: its likwid strings, MBOX*C0 expanded. */
static void make_units(const struct cs_profile *p)
{
    L.nu = 0;
    for (int i = 0; i < p->nevents; i++) {
        const char *s = p->events[i].likwid, *colon, *star;
        if (s == NULL || (colon = strchr(s, ':')) == NULL)
            continue;
        star = strchr(colon, '*');
        for (int b = 0; b < (star ? LW_BOXES : 1) && L.nu < LW_MAXUNITS; b++) {
            struct unit *u = &L.u[L.nu++];
            u->slot = i;
            if (star)
                snprintf(u->str, sizeof u->str, "%.*s%d%s", (int)(star - s), s, b, star + 1);
            else
                snprintf(u->str, sizeof u->str, "%s", s);
            snprintf(u->reg, sizeof u->reg, "%s", strchr(u->str, ':') + 1);
            u->reg[strcspn(u->reg, ":")] = '\0';     /* EVENT:REG:OPTIONS */
            u->group = -1;
            u->ok = 0;
        }
    }
}

int cs_counters_likwid_check(const struct cs_profile *p, unsigned char *countable, char *why, size_t len)
{
    unsigned char ok[CS_COUNTS_MAX] = { 0 };
    int n = 0;

    why[0] = '\0';
    if (p->nevents > CS_COUNTS_MAX) {
        snprintf(why, len, "profile %s has %d events; at most %d are supported", p->name, p->nevents, CS_COUNTS_MAX);
        return -1;
    }
    if (preflight(why, len) < 0 || perfmon_up(why, len) < 0)
        return -1;
    make_units(p);
    /* each unit alone: an event set cannot be removed, so this is a throwaway perfmon */
    for (int k = 0; k < L.nu; k++) {
        int g = perfmon_addEventSet(L.u[k].str);
        if (g >= 0 && perfmon_getNumberOfEvents(g) == 1)
            ok[L.u[k].slot] = L.u[k].ok = 1;
        else if (why[0] == '\0' && !strchr(p->events[L.u[k].slot].likwid, '*'))
            snprintf(why, len, "likwid refuses %s (%s) on this CPU", L.u[k].str, p->events[L.u[k].slot].slot);
    }
    perfmon_down();
    for (int i = 0; i < p->nevents; i++) {
        if (!p->events[i].likwid && why[0] == '\0')
            snprintf(why, len, "profile %s gives no likwid= string for %s", p->name, p->events[i].slot);
        if (countable)
            countable[i] = ok[i];
        n += ok[i];
    }
    return n;
}

static int lw_probe(const char *arg, char *why, size_t len)
{
    return preflight(why, len);
}

static int lw_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    char why[512] = "", list[400] = "";
    int n;

    if (p == NULL) {
        cs_err("counters: likwid: no counter profile");
        return -1;
    }
    n = cs_counters_likwid_check(p, L.countable, why, sizeof why);
    if (n <= 0) {
        cs_err("counters: likwid: cannot count %s of profile %s here: %s", n < 0 ? "anything" : "any event", p->name,
               why);
        return -1;
    }
    L.p = p;
    if (perfmon_up(why, sizeof why) < 0) {
        cs_err("counters: %s", why);
        return -1;
    }
    /* groups: a register once per group, units in profile order */
    char gstr[LW_MAXGROUPS][2048] = { { 0 } };
    int gcount[LW_MAXGROUPS] = { 0 };
    L.ngroups = 0;
    for (int k = 0; k < L.nu; k++) {
        struct unit *u = &L.u[k];
        int g;
        if (!u->ok)
            continue;
        for (g = 0; g < L.ngroups; g++) {
            int clash = 0;
            for (int q = 0; q < k && !clash; q++)
                clash = L.u[q].group == g && strcmp(L.u[q].reg, u->reg) == 0;
            if (!clash)
                break;
        }
        if (g == LW_MAXGROUPS)
            continue;
        if (g == L.ngroups)
            L.ngroups++;
        if (strlen(gstr[g]) + strlen(u->str) + 2 >= sizeof gstr[g])
            continue;
        if (gstr[g][0])
            strcat(gstr[g], ",");
        strcat(gstr[g], u->str);
        u->group = g;
        u->eid = gcount[g]++;
    }
    for (int g = 0; g < L.ngroups; g++) {
        L.gid[g] = perfmon_addEventSet(gstr[g]);
        if (L.gid[g] < 0 || perfmon_getNumberOfEvents(L.gid[g]) != gcount[g]) {
            cs_err("counters: likwid: event set %d (%s) was refused: too many events for this CPU's registers?", g,
                   gstr[g]);
            perfmon_down();
            return -1;
        }
    }
    L.active = 0;
    if (perfmon_setupCounters(L.gid[0]) < 0 || perfmon_startCounters() < 0) {
        cs_err("counters: likwid: cannot set up or start the counters (event set %s)", gstr[0]);
        perfmon_down();
        return -1;
    }
    L.started = 1;
    L.t_read = cs_now();
    L.steps = 0;
    for (int i = 0; i < p->nevents; i++)
        if (!L.countable[i] && strlen(list) + strlen(p->events[i].slot) + 3 < sizeof list)
            strcat(strcat(list, list[0] ? ", " : ""), p->events[i].slot);
    if (list[0])
        cs_warn("counters: likwid: profile %s: %s read NaN (no likwid= string, or refused here%s%s)", p->name, list,
                why[0] ? ": " : "", why);
    if (L.ngroups > 1)
        cs_info("counters: likwid: %d event sets, one per step in turn (the others' slots are NaN in that step)",
                L.ngroups);
    return 0;
}

static int lw_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return 0;
}

static int lw_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        struct ljob *lj = j->cnt;
        if (lj == NULL) {
            lj = j->cnt = calloc(1, sizeof *lj);
            lj->cpus = hwloc_bitmap_alloc();
        }
        if (cpus_of[i])
            hwloc_bitmap_copy(lj->cpus, cpus_of[i]);
        else
            hwloc_bitmap_zero(lj->cpus);
        /* socket / uncore ownership: every cpu of each package (LLC) it touches */
        for (int s = 0; s < 3; s++) {
            int touched = 0, ok = cpus_of[i] != NULL;
            for (int d = 0; ok && e->topo && d < (s == CS_SCOPE_UNCORE ? e->topo->nllcs : e->topo->npackages); d++) {
                hwloc_bitmap_t dc = hwloc_bitmap_alloc();
                if (s == CS_SCOPE_UNCORE)
                    hwloc_bitmap_copy(dc, e->topo->llcs[d].cpus);
                else
                    for (int k = 0; k < e->topo->ncores; k++)
                        if (e->topo->cores[k].package == d)
                            hwloc_bitmap_or(dc, dc, e->topo->cores[k].pus);
                if (hwloc_bitmap_intersects(dc, cpus_of[i])) {
                    touched = 1;
                    ok = hwloc_bitmap_isincluded(dc, cpus_of[i]);
                }
                hwloc_bitmap_free(dc);
            }
            lj->owns[s] = ok && touched;
        }
    }
    if (L.ngroups > 1) {
        int g = (int)(L.steps % (uint64_t)L.ngroups);
        if (g != L.active && perfmon_switchActiveGroup(L.gid[g]) == 0) {
            L.active = g;
            L.t_read = cs_now();
        }
    }
    L.steps++;
    L.read_done = 0;
    return 0;
}

static int lw_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    struct ljob *lj = j->cnt;
    static double seconds;
    int got[CS_COUNTS_MAX] = { 0 }, flags = CS_COUNTS_VALID;

    out->n = L.p->nevents;
    out->flags = 0;
    out->seconds = 0;
    for (int i = 0; i < out->n; i++)
        out->v[i] = NAN;
    if (lj == NULL || !L.started)
        return 0;
    if (!L.read_done) {
        double now = cs_now();
        if (perfmon_readCounters() < 0) {
            cs_warn("counters: likwid: perfmon_readCounters failed");
            return -1;
        }
        seconds = now - L.t_read;
        L.t_read = now;
        L.read_done = 1;
    }
    for (int k = 0; k < L.nu; k++) {
        const struct unit *u = &L.u[k];
        enum cs_scope sc = L.p->events[u->slot].scope;
        if (u->group != L.active || got[u->slot] < 0)
            continue;
        if (sc != CS_SCOPE_CORE && !lj->owns[sc]) {
            got[u->slot] = -1;
            continue;
        }
        if (!got[u->slot]) {
            out->v[u->slot] = 0;
            got[u->slot] = 1;
        }
        for (int t = 0; t < L.ncpu; t++)
            if (hwloc_bitmap_isset(lj->cpus, L.cpu[t]))
                out->v[u->slot] += perfmon_getLastResult(L.gid[u->group], u->eid, t);
        if (sc != CS_SCOPE_CORE)
            flags |= CS_COUNTS_SOCKET_OWNED;
    }
    for (int i = 0; i < out->n; i++)
        if (got[i] < 0)
            out->v[i] = NAN;
    out->flags = flags;
    out->seconds = seconds;
    return 0;
}

static void lw_job(struct cs_engine *e, struct cs_job *j)
{
}

static void lw_job_release(struct cs_engine *e, struct cs_job *j)
{
    struct ljob *lj = j->cnt;
    if (lj == NULL)
        return;
    hwloc_bitmap_free(lj->cpus);
    free(lj);
    j->cnt = NULL;
}

static void lw_fini(struct cs_engine *e)
{
    perfmon_down();
    if (L.topo)
        topology_finalize();
    free(L.cpu);
    memset(&L, 0, sizeof L);
}

#else /* !HAVE_LIKWID */

#define NOT_BUILT "not built with likwid (configure found no likwid.h/liblikwid: install likwid - Debian: " \
                  "apt-get install likwid - and re-run configure, or configure --with-likwid=PREFIX)"

int cs_counters_likwid_check(const struct cs_profile *p, unsigned char *countable, char *why, size_t len)
{
    snprintf(why, len, NOT_BUILT);
    return -1;
}

static int lw_probe(const char *arg, char *why, size_t len)
{
    snprintf(why, len, NOT_BUILT);
    return -1;
}

static int lw_init(struct cs_engine *e, const char *arg, const struct cs_profile *p)
{
    cs_err("counters: likwid: " NOT_BUILT);
    return -1;
}

static int lw_attach(struct cs_engine *e, struct cs_job *j, pid_t pid)
{
    return -1;
}

static int lw_step_begin(struct cs_engine *e, hwloc_const_bitmap_t const *cpus_of)
{
    return 0;
}

static int lw_read(struct cs_engine *e, struct cs_job *j, struct cs_counts *out)
{
    out->flags = 0;
    out->n = 0;
    return -1;
}

static void lw_job(struct cs_engine *e, struct cs_job *j)
{
}

static void lw_job_release(struct cs_engine *e, struct cs_job *j)
{
}

static void lw_fini(struct cs_engine *e)
{
}

#endif

/* One table for both builds: without likwid every entry refuses or does nothing. */
const struct cs_counter_ops cs_counters_likwid = {
    .name = "likwid",
    .probe = lw_probe,
    .init = lw_init,
    .job_attach = lw_attach,
    .step_begin = lw_step_begin,
    .read = lw_read,
    .instance_ended = lw_job,
    .job_release = lw_job_release,
    .fini = lw_fini,
};
