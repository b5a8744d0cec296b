/*
 * profile.h - counter profiles: per-microarchitecture event sets and the
 * metric formulas the policies need, read from profiles/<arch>.txt.
 *
 * A profile says, for one family of CPUs, which hardware events to count and
 * how to turn the counts into the metrics of cs_required_metrics[] (IPC, the
 * inbound bandwidths into L1, L2 and the LLC of paper 001 Sec. 3, memory
 * bandwidth, LLC misses and references, MPKI, offcore-request-buffer-full
 * cycles of paper 004, local and remote memory accesses of paper 000).  The
 * counter backends (likwid, perf_event, replay) program cs_event and hand the
 * counts back to cs_profile_eval(); they do not parse anything themselves.
 *
 * Lifecycle:
 *
 *     cs_profile_match(dirs, vendor, family, model)   or cs_profile_load(path)
 *            |  parse + check: every error is "FILE:LINE: what was expected"
 *            v
 *     struct cs_profile  --events-->  backend programs them (perf or likwid)
 *            |                         ... one measurement interval ...
 *            |  <--counts[nevents], seconds, ncores--  backend
 *            v
 *     cs_profile_eval(p, cs_profile_find_metric(p, "bw_l2"), counts, ...)
 *            v
 *     cs_profile_free(p)
 *
 * The file format is described in profiles/README.md and at the top of
 * profile.c.  In short (likwid groups/ARCH/NAME.txt are the model):
 *
 *     SHORT   Intel Skylake-SP / Cascade Lake
 *     ARCH    intel 6 0x55
 *     SOURCE  likwid groups/skylakeX/CACHES.txt (RRZE-HPC/likwid)
 *     CAVEAT  mem_bw counts the whole socket (uncore IMC)
 *     EVENTSET
 *     FIXC0   INST_RETIRED.ANY    perf=hw:instructions  likwid=INSTR_RETIRED_ANY:FIXC0
 *     PMC0    L1D.REPLACEMENT     perf=raw:event=0x51,umask=0x01
 *     UNC0    UNC_M_CAS_COUNT.RD  perf=pmu:uncore_imc_*:event=0x04,umask=0x03 scope=socket
 *     METRICS
 *     ipc     [instr/cycle] FIXC0/FIXC1
 *     bw_l1   [GB/s] 1.0E-09*PMC0*clsize/time
 *     orb_full - unavailable: no such event on this core
 *
 * Error convention (core/log.h): NULL or -1 after cs_err(); cs_profile_eval()
 * reports nothing (it runs every quantum).
 */
#ifndef COSCHED_PROFILE_H
#define COSCHED_PROFILE_H

#include <stdint.h>

/* Where an event counts (what a backend must open it on). */
enum cs_scope {
    CS_SCOPE_CORE,     /* per hardware thread: follows the job's tasks (perf: pid, any cpu) */
    CS_SCOPE_UNCORE,   /* per cache domain shared by some cores (AMD L3 = one CCX): counts
                          every core of the domain, not only the job (perf: cpu, pid -1) */
    CS_SCOPE_SOCKET,   /* per package (memory controller, data fabric): counts every core
                          of the socket (perf: one cpu of the package, pid -1) */
};

/* How the perf backend opens an event (perf= in the file). */
enum cs_perf_kind {
    CS_PERF_HW,        /* perf=hw:NAME      PERF_TYPE_HARDWARE, config = PERF_COUNT_HW_* */
    CS_PERF_SW,        /* perf=sw:NAME      PERF_TYPE_SOFTWARE, config = PERF_COUNT_SW_* */
    CS_PERF_CACHE,     /* perf=cache:NAME   PERF_TYPE_HW_CACHE (perf's names, LLC-load-misses) */
    CS_PERF_RAW,       /* perf=raw:...      PERF_TYPE_RAW, config (+ config1 for offcore) */
    CS_PERF_PMU,       /* perf=pmu:NAME:... a dynamic PMU (uncore_imc_*, amd_l3, amd_df, ...)
                          whose type is in /sys/bus/event_source/devices/NAME/type */
};

#define CS_PERF_TYPE_DYNAMIC UINT32_MAX  /* perf_type of CS_PERF_PMU events: resolve perf_pmu */

struct cs_event {
    char *slot;              /* "FIXC0", "PMC3", "UNC0", "SW1": unique in the profile */
    char *name;              /* vendor's event name, "L1D.REPLACEMENT" (for people) */
    int line;                /* where it is defined */

    /* perf_event: attr.type = perf_type, attr.config = perf_config,
     * attr.config1 = perf_config1 (offcore response matrix), for PMU events the
     * type of every PMU named perf_pmu (perf_pmu_all: perf_pmu followed by "_"
     * and digits, e.g. uncore_imc_0..uncore_imc_5, counts summed). */
    char *perf_spec;         /* as written after perf= */
    enum cs_perf_kind perf_kind;
    uint32_t perf_type;
    uint64_t perf_config;
    uint64_t perf_config1;
    char *perf_pmu;          /* CS_PERF_PMU: "uncore_imc", "amd_l3"; else NULL */
    int perf_pmu_all;        /* written "NAME_*" */
    char *perf_terms;        /* CS_PERF_RAW/PMU written as terms ("event=0x04,umask=0x03"):
                                the terms, so a backend may re-encode them through the
                                PMU's sysfs format files; NULL when written as a number */

    /* likwid: "EVENT:COUNTER" for likwid_addEventSet(), NULL if likwid cannot
     * count it the same way (likwid=- or no likwid= given).  A COUNTER written
     * "MBOX*C0" means that counter of every box, summed.  A backend with fewer
     * registers than the profile has events splits them into several groups
     * and renumbers the registers of each class within a group. */
    char *likwid;
    enum cs_scope scope;     /* scope=core|uncore|socket, default core */
};

/* A compiled formula. */
enum cs_expr_op {
    CS_EX_NUM, CS_EX_SLOT, CS_EX_METRIC, CS_EX_TIME, CS_EX_CORES, CS_EX_CLSIZE,
    CS_EX_NEG, CS_EX_ADD, CS_EX_SUB, CS_EX_MUL, CS_EX_DIV,
};
struct cs_expr {
    enum cs_expr_op op;
    double value;            /* CS_EX_NUM */
    int index;               /* CS_EX_SLOT: event index; CS_EX_METRIC: metric index */
    struct cs_expr *l, *r;   /* operands (CS_EX_NEG uses l) */
};

struct cs_metric {
    char *name;              /* "bw_l2" */
    char *unit;              /* "GB/s"; "" when the file gives none */
    int line;
    int available;           /* 0: declared "name - unavailable: reason" */
    char *reason;            /* why not (available == 0), else NULL */
    char *formula;           /* source text (available), else NULL */
    struct cs_expr *expr;    /* compiled formula (available), else NULL */
    enum cs_scope scope;     /* widest scope of the events it uses */
};

enum cs_vendor { CS_VENDOR_ANY, CS_VENDOR_INTEL, CS_VENDOR_AMD };

struct cs_model_range { int lo, hi; };

struct cs_profile {
    char *name;              /* file name without directory and ".txt": "skylakeX" */
    char *file;              /* path it was read from */
    char *description;       /* SHORT */
    enum cs_vendor vendor;   /* ARCH */
    int family;              /* -1: any */
    int nmodels;             /* 0: any model */
    struct cs_model_range *models;
    int test;                /* ARCH ... test: never chosen by cs_profile_match() */
    int nsources;
    char **sources;          /* SOURCE lines, at least one */
    int ncaveats;
    char **caveats;          /* CAVEAT lines */
    int nevents;
    struct cs_event *events;
    int nmetrics;
    struct cs_metric *metrics;
};

/* The metrics every profile defines or declares unavailable, NULL-terminated:
 * instructions cycles ipc bw_l1 bw_l2 bw_llc mem_bw llc_misses llc_refs mpki
 * orb_full remote_accesses local_accesses.  The four bandwidths are in GB/s. */
extern const char *const cs_required_metrics[];

/* Read and check one profile file.  NULL after printing "FILE:LINE: what was
 * expected" (the first error only) through cs_err(). */
struct cs_profile *cs_profile_load(const char *path);
void cs_profile_free(struct cs_profile *p);

/* Index of the metric called name, -1 if the profile has none. */
int cs_profile_find_metric(const struct cs_profile *p, const char *name);

/* Evaluate metric metric_index on one interval: counts[i] is the count of
 * p->events[i] (summed over the job's threads for core-scope events; the
 * package's count for socket-scope ones; NAN for an event the backend could
 * not count, which makes every metric using it NAN), seconds the interval
 * (the variable time), ncores the cores the job used (cores).  Arithmetic is
 * IEEE: x/0 is +inf (-inf for negative x) and 0/0 is NaN, never a trap.
 * 0 and *out set; -1 and *out = NAN if metric_index is out of range or the
 * metric is declared unavailable (nothing is printed). */
int cs_profile_eval(const struct cs_profile *p, int metric_index, const double *counts,
                    double seconds, int ncores, double *out);

/* 1 if the profile's ARCH covers this CPU.  vendor is hwloc's CPUVendor
 * ("GenuineIntel", "AuthenticAMD") or "intel"/"amd".  Test profiles match
 * nothing. */
int cs_profile_matches(const struct cs_profile *p, const char *vendor, int family, int model);

/* Every *.txt in dirs, in order (each directory sorted by name; a name seen in
 * an earlier directory shadows later ones): the first non-test profile whose
 * ARCH covers the CPU, loaded; the caller frees it.  NULL when none does (not
 * an error); files that fail to parse are reported and skipped. */
struct cs_profile *cs_profile_match(const char *const *dirs, int ndirs, const char *vendor,
                                    int family, int model);

/* The profile search path, most specific first: extra (--profile-path), then
 * ~/.config/cosched/profiles, COSCHED_SYSCONFDIR/profiles (/etc/cosched), and
 * cs_datadir()/profiles ($COSCHED_DATADIR, else the installed pkgdatadir, else
 * the source tree of a cosched run from its build tree: profiles/ is at the
 * top of the tree).  Caller frees each string and the vector. */
char **cs_profile_search_path(char *const *extra, int nextra, int *n);

const char *cs_scope_name(enum cs_scope s);

/* The profile for this machine's CPU (hwloc's CPU identification), or NULL
 * with why filled in (nothing printed). */
struct cs_profile *cs_profile_for_this_cpu(char *const *extra, int nextra, char *why, size_t len);
/* --profile SPEC: a path (contains '/') or a NAME looked up as NAME.txt in the
 * search path.  NULL after reporting. */
struct cs_profile *cs_profile_find(const char *spec, char *const *extra, int nextra);

/* What `cosched profiles` (cli/profiles.c) shows. */
/* Every profile file in dirs, in search order, loaded unless shadowed by
 * one of the same name earlier (p NULL then, or when it is broken: its
 * error was reported).  Count; *out malloc'ed. */
struct cs_profile_entry {
    char *name;
    char *path;
    struct cs_profile *p;    /* NULL: broken or shadowed */
    int shadowed_by;         /* index of the entry with the same name, -1 */
};
int cs_profile_scan(const char *const *dirs, int ndirs, struct cs_profile_entry **out);
void cs_profile_entries_free(struct cs_profile_entry *v, int n);
/* A CPU's identification: this machine's from hwloc (known 0 and why set
 * when hwloc does not say), or VENDOR:FAMILY:MODEL as --cpuid gives it
 * (-1 if malformed). */
struct cs_cpuid {
    char vendor[64];
    int family, model;
    int known;
    char why[200];
};
void cs_cpuid_this(struct cs_cpuid *c);
int cs_cpuid_parse(const char *s, struct cs_cpuid *c);
/* Why no entry matches cpu (cpu->known), for people. */
void cs_profile_why_none(const struct cs_cpuid *cpu, const struct cs_profile_entry *v, int n, char *const *dirs,
                         int ndirs, char *buf, size_t len);
/* A family or model number as profiles write it (decimal below 10, else hex). */
void cs_profile_num(char *buf, size_t len, int v);
const char *cs_profile_vendor_name(enum cs_vendor v);
/* p's ARCH for people: "intel 6 0x4f,0x56", "any (test)". */
void cs_profile_arch(const struct cs_profile *p, char *buf, size_t len);
/* Some metric of p reads event slot (index into p->events). */
int cs_profile_slot_used(const struct cs_profile *p, int slot);

#endif
