/*
 * serve.c - the node engine: `cosched serve` (cli/serve.c parses its options
 * and calls cs_node_serve()); `cosched status` (cli/status.c) is its client.
 *
 * One engine per node, as root: the same engine as `cosched run`
 * (engine.c), whose jobs are Slurm steps.  The SPANK plugin registers each
 * task of a co-scheduled step over a unix socket (proto.h) from
 * task_post_fork, where the task is already inside the step's cgroups;
 * the first task of a step makes the step one cosched job, the others join
 * it (on the cores the step has at that moment).  A task leaves when the
 * plugin deregisters it (task_exit) or when its pidfd says it is gone -
 * whichever comes first; a step whose tasks are all gone leaves the engine.
 * Control goes through Slurm's own step cgroups (slurm.c).
 *
 * Choices (cosched(1) SLURM says the same for users):
 *  - Cores: a step never leaves its allocation.  The engine manages the
 *    union of the registered steps' cores; a plan's cores are cut to each
 *    step's own (engine.c do_switch) and a plan that gives a step none of its
 *    own runs it on all of them.
 *  - Policy: one per engine.  The first step to register while the engine
 *    is idle chooses it (its --cosched policy, else the plugin's default);
 *    a step asking for another policy while steps run is co-scheduled under
 *    the running one, and `cosched status` shows both names.
 *  - Steps spanning nodes are never frozen (issue: "either coordinated or
 *    only folded"): freezing one node's part stalls the others at the
 *    step's next collective, and per-node engines have no common clock.
 *    The plan still decides their cores (folding is space sharing and needs
 *    no synchronisation); when a plan leaves such a step out, it keeps
 *    running on the cores it had.
 *  - Security: registrations only from uid 0 (SO_PEERCRED); status from
 *    anybody, showing a user only their own steps (root: all).  Requests are
 *    at most CS_PROTO_MAX bytes with a version tag, read without blocking
 *    with a 2 s deadline per connection and at most MAX_CONNS at once;
 *    anything malformed gets "ERR why" and the connection is closed.  The
 *    environment is cleared at start (no user variable reaches the root
 *    engine) and policies are loaded only from root-owned files in
 *    root-owned directories not writable by others.
 *  - OpenMP page: a registration that asks for it (omp_page=1: the task
 *    gets the shim) is answered with a descriptor of the step's page
 *    (cs_engine_omp_page: made at the first asking, one per step, owned by
 *    the engine, closed when the step leaves), sent with the reply's first
 *    byte; the plugin passes it on to the task (plugin/remote.c).
 *  - Start: by systemd (share/cosched-engine.service) or on demand by the
 *    plugin (`--detach --idle-exit`): the daemon leaves Slurm's cgroups
 *    (it must not die with the step that started it), holds a lock beside
 *    its socket (a second engine exits at once) and exits after the idle
 *    time with no step registered.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"
#include "node/node.h"
#include "core/json.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "shared/proto.h"

/* Connections: each user but root may hold PER_USER at once, and the last
 * ROOT_SLOTS are root's alone (the plugin's registrations always get in).
 * Replies are queued and sent as the client reads them: the scheduling loop
 * never waits for a client. */
#define MAX_CONNS 256
#define ROOT_SLOTS 32
#define PER_USER 8
#define CONN_DEADLINE 2.0            /* s to send a whole request, and to read the whole reply */
#define REFUSALS_LOGGED 20           /* refusal warnings per minute, then a count */

struct task { pid_t pid; int fd; };

struct served {                      /* per job (j->served) */
    unsigned long job, step;
    uid_t uid;
    char prog[64];                   /* name= from the plugin */
    char asked[64];                  /* the policy the step asked for */
    char opts[256];
    char user[64];                   /* looked up once, at registration (root's request) */
    int nnodes;
    struct cs_slurm_step at;         /* where the step is (j->slurm): located once, at its first task */
    struct task *t;
    int nt;
    double frozen_s;                 /* s this step was held frozen by the engine */
};

/* Frees a job and what the node engine keeps for it (its tasks' descriptors). */
static void served_job_free(struct cs_job *j)
{
    struct served *sv = j->served;
    if (sv) {
        for (int t = 0; t < sv->nt; t++)
            if (sv->t[t].fd >= 0)
                close(sv->t[t].fd);
        free(sv->t);
        free(sv);
    }
    cs_job_free(j);
}

/*
 * Time given back.  Slurm moves a job's end when it suspends it (and does
 * not count the suspended time); a step frozen by the engine is invisible to
 * Slurm.  So the engine counts, per Slurm job, the time during which every
 * step of it registered here was frozen ("held"), and extends the job's
 * time limit by it through scontrol: in whole minutes rounded up, given as
 * soon as the job is held (a job can be killed as soon as its limit passes),
 * then at most once a minute per job, a minute ahead while it is held (so
 * that it is never short between two updates), never beyond its partition's
 * MaxTime;
 * the seconds held go to the job's AdminComment ("cosched:held_s=...",
 * where sacct shows it) unless a site's own comment is there.  The
 * plugin's extend_time=no turns the extension off (the comment stays).
 * scontrol runs in a child of its own (never waited for in the loop).
 * An update is due when a second or more held or frozen is unsaid.  The
 * last word: when a job's last step here leaves, what is unsaid goes out at
 * once (within the minute of the update before: once a minute, sjob_due),
 * and the plugin's deregister (slurmstepd's task_exit, before Slurm hears
 * that the step ended) is answered only once that update is done, HOLD_MAX
 * at most: Slurm refuses any update of a finished job, and a job whose
 * script ends with the step ends a few milliseconds later.  When the engine
 * stops, every job's unsaid time goes out (last_words).
 */
#define GIVE_EVERY 60.0              /* s between two updates of one job */
#define HOLD_MAX 0.4                 /* s a deregister waits for the last word (the plugin waits 0.5 s) */
struct sjob {
    unsigned long job;
    int extend;                      /* 0 when any of its steps said extend=0 */
    char scontrol[PATH_MAX];         /* from its slurmstepd (trusted, root) */
    char conf[PATH_MAX];             /* SLURM_CONF of its slurmstepd; "" none */
    double held, given, frozen;      /* s all held; s given back; s frozen summed over its steps */
    double said, frozen_said;        /* held and frozen as last written to Slurm */
    double last_update;              /* 0: never */
    double last_extra;               /* the last word sent within a minute of the update before (0: never) */
    pid_t child;                     /* the scontrol run under way (0: none) */
    int live;                        /* its steps registered now */
};

struct cs_serve;
static void sjob_note(struct cs_serve *s, unsigned long job, const struct cs_msg *m);
static void account(struct cs_engine *e);
static void metrics_sample(struct cs_engine *e);
static void metrics_write(struct cs_engine *e, int up);
#define METRICS_EVERY 5.0            /* s between two writes of the metrics file */

struct conn {
    int fd;
    uid_t uid;
    pid_t pid;
    double deadline;
    size_t len;
    char buf[CS_PROTO_MAX + 1];
    char *out;                       /* the reply being sent (writing state once set) */
    size_t olen, ooff;
    int pass_fd;                     /* a descriptor sent with the reply's first byte (-1: none) */
    unsigned long hold;              /* a job's last word to Slurm the reply waits for (0: none) */
    double hold_until;
};

static int hold_over(struct cs_engine *e, struct conn *c);

struct cs_serve {
    int lfd;
    int sfd;                         /* signals (cs_engine_signalfd), polled last */
    int stopping;                    /* a signal arrived: the engine stops */
    const char *socket;
    struct conn c[MAX_CONNS];
    int nc;
    double idle_exit, idle_since;
    int next_id;
    char **search;
    int nsearch;
    char **popts;
    int npopts;
    char policy[64];
    double started;
    double refusals_since;           /* rate limit of the refusal warnings */
    int refusals_logged, refusals_quiet;
    struct sjob *sj;                 /* the Slurm jobs with steps here (time given back) */
    int nsj;
    double acct_last;                /* when held time was last counted */
    /* metrics (--metrics): counters since start */
    const char *metrics;
    double metrics_last;
    uint64_t accepted, refused[5];
    uint64_t lat_bucket[11], lat_n, prev_switches;
    double lat_sum, prev_switch_us, held_total, given_total;
    int restored;
};
/* why a registration was refused, for the metrics (their label values) */
enum { RF_REQUEST, RF_NOT_IN_STEP, RF_POLICY, RF_ENGINE, RF_NOT_ROOT };
static const char *const refusal_label[] = { "bad_request", "not_in_step", "policy", "engine", "not_root" };
/* switch latency histogram bounds, s (the last bucket is +Inf) */
static const double lat_le[10] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1 };
static struct sjob *sjob_of(struct cs_serve *s, unsigned long job, int create);

/* The node engine's state, the engine's host_arg (engine.h, struct cs_host_ops). */
static struct cs_serve *srv(const struct cs_engine *e)
{
    return e->host_arg;
}

/* ------------------------------------------------------------ trust */

/* Root-owned and not writable by group or others: path and its directory. */

/* The policy file name resolves to, its modules included, must be trusted. */
static struct cs_policy *load_policy(struct cs_serve *s, const char *name, char *why, size_t len)
{
    char file[PATH_MAX];
    int found = 0;

    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-') {
            snprintf(why, len, "policy '%.64s': a policy name is letters, digits, '_' and '-'", name);
            return NULL;
        }
    for (int i = 0; i < s->nsearch && !found; i++) {
        snprintf(file, sizeof file, "%s/%s.lua", s->search[i], name);
        found = access(file, F_OK) == 0;
    }
    if (!found) {
        snprintf(why, len, "policy '%.64s' is not installed on this node (cosched policies lists them)", name);
        return NULL;
    }
    if (cs_path_trusted(file, why, len) < 0)
        return NULL;
    /* and the shared modules policies may require */
    snprintf(file, sizeof file, "%s/lua/cosched", cs_datadir());
    DIR *d = opendir(file);
    struct dirent *de;
    int bad = cs_path_trusted(file, why, len) < 0;
    while (!bad && d && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".lua") != 0)
            continue;
        snprintf(file, sizeof file, "%s/lua/cosched/%s", cs_datadir(), de->d_name);
        bad = cs_path_trusted(file, why, len) < 0;
    }
    if (d)
        closedir(d);
    if (bad)
        return NULL;
    struct cs_policy *p = cs_policy_load(name, s->search, s->nsearch, s->popts, s->npopts);
    if (!p)
        snprintf(why, len, "policy '%.64s' failed to load (see the engine's log)", name);
    return p;
}

/* ------------------------------------------------------------ jobs */

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        cs_warn("pidfd_open(%d): %s: the task leaves the engine only when the plugin deregisters it", (int)pid,
                strerror(errno));
    return fd;
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* The live job of step job.step whose cgroup is `where`, or - where NULL -
 * the one holding task pid. */
static struct cs_job *find_step(struct cs_engine *e, unsigned long job, unsigned long step, const char *where,
                                pid_t pid, int *task)
{
    for (int i = 0; i < e->njobs; i++) {
        struct served *sv = e->jobs[i]->served;
        if (e->jobs[i]->state != CS_JOB_LIVE || !sv || sv->job != job || sv->step != step)
            continue;
        if (where && strcmp(where, sv->at.freeze) == 0)
            return e->jobs[i];
        for (int k = 0; !where && k < sv->nt; k++)
            if (sv->t[k].pid == pid) {
                *task = k;
                return e->jobs[i];
            }
    }
    return NULL;
}

static void task_remove(struct cs_engine *e, struct cs_job *j, int k, const char *why)
{
    struct served *sv = j->served;
    if (sv->t[k].fd >= 0)
        close(sv->t[k].fd);
    sv->t[k] = sv->t[--sv->nt];
    if (sv->nt == 0)
        cs_engine_drop(e, j, why);   /* the engine's managed cpus shrink with it */
}

/* The OK of a registration of j: its id and the policy, and its OpenMP page
 * in *page_fd (-1: none) when the task asked for it (want: omp_page=1). */
static void register_ok(struct cs_engine *e, struct cs_job *j, long want, char *rep, size_t len, int *page_fd)
{
    if (want)
        *page_fd = cs_engine_omp_page(e, j);
    snprintf(rep, len, "OK id=%d policy=%s%s%s", j->id, cs_policy_name(e->policy),
             cs_policy_shares_cpus(e->policy) ? " shares_cpus=1" : "", *page_fd >= 0 ? " omp_page=1" : "");
}

/* Returns 1 (job set changed) or 0 with an error reply in rep; *page_fd: the
 * descriptor to send with the reply (-1: none). */
static int do_register(struct cs_engine *e, const struct cs_msg *m, pid_t peer, char *rep, size_t len, int *page_fd)
{
    struct cs_serve *s = srv(e);
    char err[PATH_MAX + 256];
    long job, step, uid, pid, v, want_page = 0;
    const char *pol = cs_msg_get(m, "policy");
    struct cs_job *j;
    int rf = RF_REQUEST;

    *page_fd = -1;
    if (cs_msg_long(m, "job", 0, 0xffffffffL, 0, &job, err, sizeof err) < 0 ||
        cs_msg_long(m, "step", 0, 0xffffffffL, 0, &step, err, sizeof err) < 0 ||
        cs_msg_long(m, "uid", 0, 0x7fffffffL, 0, &uid, err, sizeof err) < 0 ||
        cs_msg_long(m, "pid", 2, INT_MAX, 0, &pid, err, sizeof err) < 0 ||
        cs_msg_long(m, "omp_page", 0, 1, 1, &want_page, err, sizeof err) < 0)
        goto bad;
    if (!cs_msg_get(m, "cores")) {
        snprintf(err, sizeof err, "register: key 'cores' missing");
        goto bad;
    }
    static struct cs_slurm_step at;   /* where the step is: found once, here (large: not on the stack) */
    const char *where = at.freeze;    /* its cgroup on this node (one machine may be several nodes) */
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (cs_slurm_step_locate((pid_t)pid, peer, (unsigned long)job, (unsigned long)step, &at, cpus, err,
                             sizeof err) < 0) {
        hwloc_bitmap_free(cpus);
        rf = RF_NOT_IN_STEP;
        goto bad;
    }
    sjob_note(s, (unsigned long)job, m);
    if ((j = find_step(e, (unsigned long)job, (unsigned long)step, where, 0, NULL)) != NULL) {
        struct served *sv = j->served;
        hwloc_bitmap_free(cpus);
        for (int k = 0; k < sv->nt; k++)
            if (sv->t[k].pid == (pid_t)pid) {
                register_ok(e, j, want_page, rep, len, page_fd);
                return 0;
            }
        struct task *nt = realloc(sv->t, (sv->nt + 1) * sizeof *nt);
        if (!nt) {
            snprintf(err, sizeof err, "out of memory");
            rf = RF_ENGINE;
            goto bad;
        }
        sv->t = nt;
        sv->t[sv->nt++] = (struct task){ (pid_t)pid, pidfd_open_((pid_t)pid) };
        if (sv->nt > j->omp_procs)
            j->omp_procs = sv->nt;   /* the most: the page's team may be a departed task's */
        /* it starts on all the step's cores; a folded step's tasks are on fewer
         * (v2 without cpuset binds thread by thread): it joins them now */
        if (!hwloc_bitmap_isequal(j->cpus, cs_job_home(e, j)) && e->ctl->set_cpus(e, j, j->cpus, j->mems) < 0)
            cs_warn("step %s: task %ld joined but could not be moved to the step's cpus", j->name, pid);
        register_ok(e, j, want_page, rep, len, page_fd);
        return 0;
    }
    /* a new step: the policy it asks for, if the engine is idle */
    int live = 0;
    for (int i = 0; i < e->njobs; i++)
        live += e->jobs[i]->state == CS_JOB_LIVE;
    if (pol && strcmp(pol, cs_policy_name(e->policy)) != 0 && live == 0) {
        struct cs_policy *np = load_policy(s, pol, err, sizeof err);
        if (!np) {
            hwloc_bitmap_free(cpus);
            rf = RF_POLICY;
            goto bad;
        }
        cs_info("policy %s now (asked by step %ld.%ld; the engine was idle)", pol, job, step);
        cs_engine_set_policy(e, np);
    } else if (pol && strcmp(pol, cs_policy_name(e->policy)) != 0) {
        struct cs_policy *np = load_policy(s, pol, err, sizeof err);   /* is it a real policy at all? */
        if (!np) {
            hwloc_bitmap_free(cpus);
            rf = RF_POLICY;
            goto bad;
        }
        cs_policy_free(np);
        cs_info("step %ld.%ld asked for policy %s; co-scheduled under %s, which runs the node's steps now", job,
                step, pol, cs_policy_name(e->policy));
    }
    j = calloc(1, sizeof *j);
    struct served *sv = calloc(1, sizeof *sv);
    if (!j || !sv) {
        free(j);
        free(sv);
        hwloc_bitmap_free(cpus);
        snprintf(err, sizeof err, "out of memory");
        rf = RF_ENGINE;
        goto bad;
    }
    sv->job = (unsigned long)job;
    sv->step = (unsigned long)step;
    sv->uid = (uid_t)uid;
    snprintf(sv->prog, sizeof sv->prog, "%s", cs_msg_get(m, "name") ? cs_msg_get(m, "name") : "?");
    snprintf(sv->asked, sizeof sv->asked, "%s", pol ? pol : cs_policy_name(e->policy));
    snprintf(sv->opts, sizeof sv->opts, "%s", cs_msg_get(m, "opts") ? cs_msg_get(m, "opts") : "");
    sv->at = at;
    struct passwd *pw = getpwuid((uid_t)uid);
    snprintf(sv->user, sizeof sv->user, "%s", pw ? pw->pw_name : "?");
    sv->nnodes = cs_msg_long(m, "nnodes", 1, 100000, 1, &v, err, sizeof err) == 0 ? (int)v : 1;
    sv->t = malloc(sizeof *sv->t);
    sv->t[0] = (struct task){ (pid_t)pid, pidfd_open_((pid_t)pid) };
    sv->nt = 1;
    j->omp_procs = 1;
    j->id = ++s->next_id;
    j->name = cs_strdup_printf("%ld.%ld", job, step);
    j->origin = cs_strdup_printf("Slurm step %ld.%ld (uid %ld)", job, step, uid);
    j->allowed = cpus;
    j->nofreeze = sv->nnodes > 1;
    j->served = sv;
    j->slurm = &sv->at;              /* the step's identity for the control backend: data, not its name */
    int ncores = 0;
    for (int k = 0; k < e->topo->ncores; k++)
        ncores += hwloc_bitmap_intersects(e->topo->cores[k].pus, cpus);
    j->threads = ncores ? ncores : hwloc_bitmap_weight(cpus);
    if (cs_msg_long(m, "priority", -1000, 1000, 1, &v, err, sizeof err) == 0)
        j->priority = (int)v;
    const char *cls = cs_msg_get(m, "class");
    if (cls && (strcmp(cls, "S") == 0 || strcmp(cls, "C") == 0 || strcmp(cls, "N") == 0))
        j->cls_hint = cls[0];
    if (cs_engine_add(e, j, (pid_t)pid) < 0) {
        snprintf(err, sizeof err, "step %ld.%ld could not be put under control (see the engine's log)", job, step);
        if (sv->t[0].fd >= 0)
            close(sv->t[0].fd);
        free(sv->t);
        free(sv);
        j->served = NULL;
        cs_job_free(j);
        rf = RF_ENGINE;
        goto bad;
    }
    cs_info("step %s (uid %ld, %s) joined: cores %s%s", j->name, uid, sv->prog, cs_msg_get(m, "cores"),
            j->nofreeze ? ", spans nodes: never frozen" : "");
    register_ok(e, j, want_page, rep, len, page_fd);
    s->accepted++;
    return 1;
bad:
    s->refused[rf]++;
    snprintf(rep, len, "ERR %s", err);
    return 0;
}

/* Returns 1 (job set changed) or 0; an error reply in rep; *jobp: the job. */
static int do_deregister(struct cs_engine *e, const struct cs_msg *m, char *rep, size_t len, unsigned long *jobp)
{
    char err[256];
    long job, step, pid;
    struct cs_job *j;

    if (cs_msg_long(m, "job", 0, 0xffffffffL, 0, &job, err, sizeof err) < 0 ||
        cs_msg_long(m, "step", 0, 0xffffffffL, 0, &step, err, sizeof err) < 0 ||
        cs_msg_long(m, "pid", 2, INT_MAX, 0, &pid, err, sizeof err) < 0) {
        snprintf(rep, len, "ERR %s", err);
        return 0;
    }
    *jobp = (unsigned long)job;
    int k;
    if ((j = find_step(e, (unsigned long)job, (unsigned long)step, NULL, (pid_t)pid, &k)) != NULL) {
        snprintf(rep, len, "OK");
        task_remove(e, j, k, "its tasks ended");
        return 1;
    }
    snprintf(rep, len, "OK unknown=1");   /* already gone (pidfd was first): not an error */
    return 0;
}

/* ------------------------------------------------------------ status */

static char job_class(const struct cs_job *j)
{
    if (j->result && j->result->cls)
        return j->result->cls;
    if (j->stored && j->stored->cls)
        return j->stored->cls;
    return j->cls_hint;
}

/* Why the step is in the state it is, for its owner (who; 0: root): the
 * steps of other users are counted, not named (PrivateData=jobs). */
static void reason(struct cs_engine *e, const struct cs_job *j, uid_t who, char *buf, size_t len)
{
    int mine = hwloc_bitmap_weight(j->cpus), all = hwloc_bitmap_weight(cs_job_home(e, j));
    struct served *sv = j->served;

    if (sv->nt > 0 && cs_proc_all_stopped(sv->t[0].pid) == 1) {
        snprintf(buf, len, "stopped by Slurm (scontrol suspend): cosched leaves it so");
        return;
    }
    if (j->frozen) {
        size_t n = (size_t)snprintf(buf, len, "waiting for its turn: policy %s runs", cs_policy_name(e->policy));
        int any = 0, others = 0;
        for (int i = 0; i < e->njobs && n < len; i++) {
            const struct cs_job *o = e->jobs[i];
            const struct served *osv = o->served;
            if (o->state != CS_JOB_LIVE || o->frozen || o == j)
                continue;
            if (who != 0 && (!osv || osv->uid != who)) {
                others++;
                continue;
            }
            n += (size_t)snprintf(buf + n, len - n, "%s%s", any ? ", " : " ", o->name);
            any = 1;
        }
        if (others && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%d step%s of other users", any ? " and " : " ", others,
                                  others == 1 ? "" : "s");
        if (n < len)
            snprintf(buf + n, len - n, "%s in this quantum; waiting for %.1f s", any || others ? "" : " nothing else",
                     cs_now() - j->last_run_end);
    } else if (mine < all) {
        snprintf(buf, len, "folded: %d of its %d cpus this quantum (%s)", mine, all,
                 j->nofreeze ? "spans nodes, never frozen" : "sharing the node");
    } else {
        snprintf(buf, len, "running on all its cpus%s", j->nofreeze ? " (spans nodes, never frozen)" : "");
    }
}

static char *status_doc(struct cs_engine *e, uid_t who, int text)
{
    char *doc = NULL;
    size_t dlen = 0;
    FILE *f = open_memstream(&doc, &dlen);
    int shown = 0;
    json_t *jdoc = NULL, *steps = NULL;

    if (!f)
        return NULL;
    if (text)
        fprintf(f, "cosched node engine pid %d, policy %s, quantum %g s, up %.0f s\n", (int)getpid(),
                cs_policy_name(e->policy), e->quantum, cs_now() - srv(e)->started);
    else
        jdoc = json_pack("{s:{s:i, s:o, s:o, s:o, s:I}, s:o}", "engine", "pid", (int)getpid(), "policy",
                        cs_json_text(cs_policy_name(e->policy)), "quantum", cs_json_sig(e->quantum, 6), "uptime",
                        cs_json_fixed(cs_now() - srv(e)->started, 3), "epoch", (json_int_t)e->epoch, "steps",
                        steps = json_array());
    if (text)
        fprintf(f, "%-12s %-10s %-8s %-6s %-5s %-9s %-9s %6s %6s %8s %8s  %s\n", "STEP", "USER", "NAME", "POLICY",
                "CLASS", "STATE", "CPUS", "Q_RUN", "Q_WAIT", "CPU_S", "FROZEN_S", "WHY");
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        struct served *sv = j->served;
        char why[512], *cpus, *allowed, user[64];
        char cls = job_class(j);
        int folded;
        const char *state;

        if (j->state != CS_JOB_LIVE || !sv || (who != 0 && sv->uid != who))
            continue;
        shown++;
        reason(e, j, who, why, sizeof why);
        cpus = cs_bitmap_list(j->cpus);
        allowed = cs_bitmap_list(cs_job_home(e, j));
        folded = hwloc_bitmap_weight(j->cpus) < hwloc_bitmap_weight(cs_job_home(e, j));
        state = j->frozen ? "frozen" : folded ? "folded" : "running";
        snprintf(user, sizeof user, "%s", sv->user);
        if (text) {
            char pol[80];
            snprintf(pol, sizeof pol, "%s%s%s", cs_policy_name(e->policy), strcmp(sv->asked, cs_policy_name(e->policy)) ? "/asked:" : "",
                     strcmp(sv->asked, cs_policy_name(e->policy)) ? sv->asked : "");
            fprintf(f, "%-12s %-10s %-8.8s %-6s %-5c %-9s %-9s %6llu %6llu %8.1f %8.1f  %s", j->name, user, sv->prog,
                    pol, cls ? cls : '-', state, cpus, (unsigned long long)j->quanta_run,
                    (unsigned long long)j->quanta_frozen, j->cpu_ns * 1e-9, sv->frozen_s, why);
            char *info = j->policy_info ? json_dumps(j->policy_info, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
            if (info)
                fprintf(f, "; %s says %s", cs_policy_name(e->policy), info);
            free(info);
            fputc('\n', f);
        } else {
            char cl[2] = { cls, 0 };
            json_t *o = json_pack("{s:I, s:I, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:s, s:s, s:i, s:b, "
                                  "s:i, s:I, s:I, s:o, s:o, s:i}",
                                  "job", (json_int_t)sv->job, "step", (json_int_t)sv->step, "id", j->id, "uid",
                                  (int)sv->uid, "user", cs_json_text(user), "name", cs_json_text(sv->prog), "policy",
                                  cs_json_text(cs_policy_name(e->policy)), "asked_policy", cs_json_text(sv->asked),
                                  "opts", cs_json_text(sv->opts), "class", cls ? json_string(cl) : json_null(),
                                  "state", state, "reason", cs_json_text(why), "cpus", cpus, "allocation", allowed,
                                  "nodes", sv->nnodes, "never_frozen", j->nofreeze, "tasks", sv->nt, "quanta_run",
                                  (json_int_t)j->quanta_run, "quanta_waited", (json_int_t)j->quanta_frozen,
                                  "waited_s", cs_json_fixed(j->frozen ? cs_now() - j->last_run_end : 0.0, 3),
                                  "cpu_s", cs_json_fixed(j->cpu_ns * 1e-9, 3), "priority", j->priority);
            if (o && j->last_step_wall > 0 && j->last_step_ncpus > 0)
                json_object_set_new(o, "cpu_share",
                                    cs_json_fixed(j->last_step_cpu / (j->last_step_wall * j->last_step_ncpus), 3));
            struct sjob *sj = sjob_of(srv(e), sv->job, 0);
            if (o) {
                /* frozen time: this step's, and its job's held and given back */
                json_object_set_new(o, "frozen_s", cs_json_fixed(sv->frozen_s, 1));
                json_object_set_new(o, "job_held_s", cs_json_fixed(sj ? sj->held : 0.0, 1));
                json_object_set_new(o, "job_given_s", cs_json_fixed(sj ? sj->given : 0.0, 1));
                json_object_set_new(o, "job_extend_time", json_boolean(sj ? sj->extend : 1));
            }
            if (o)
                json_object_set_new(o, "policy_info", j->policy_info ? json_incref(j->policy_info) : json_null());
            json_array_append_new(steps, o);
        }
        free(cpus);
        free(allowed);
    }
    if (text && !shown)
        fprintf(f, "(no co-scheduled step%s on this node)\n", who ? " of yours" : "");
    if (!text)
        cs_json_put(f, jdoc, 0);
    fclose(f);
    return doc;
}

/* ------------------------------------------------------------ socket */

static void conn_close(struct cs_serve *s, int k)
{
    close(s->c[k].fd);
    if (s->c[k].pass_fd >= 0)
        close(s->c[k].pass_fd);
    free(s->c[k].out);
    s->c[k] = s->c[--s->nc];
}

/* Queue msg on the connection's reply. */
static void reply(struct conn *c, const char *msg)
{
    size_t n = strlen(msg);
    char *p = realloc(c->out, c->olen + n + 1);

    if (!p)
        return;                      /* the client sees a short reply */
    memcpy(p + c->olen, msg, n + 1);
    c->out = p;
    c->olen += n;
}

/* Send what the client takes now; 1 when the reply is out (or cannot be). */
static int flush(struct conn *c)
{
    while (c->ooff < c->olen) {
        ssize_t w = c->pass_fd >= 0 && c->ooff == 0
                    ? cs_proto_send_fd(c->fd, c->out, 1, c->pass_fd)
                    : send(c->fd, c->out + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0 && c->pass_fd >= 0) {
            close(c->pass_fd);       /* the client has its own now */
            c->pass_fd = -1;
        }
        if (w > 0)
            c->ooff += (size_t)w;
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && errno != EAGAIN && c->pass_fd >= 0) {
            /* the descriptor cannot go (a full socket buffer would say EAGAIN):
             * the reply goes without it, the step without a page */
            cs_warn("a reply's OpenMP page could not be sent: %s; the step runs without one", strerror(errno));
            close(c->pass_fd);
            c->pass_fd = -1;
        } else
            return w < 0 && errno == EAGAIN ? 0 : 1;
    }
    return 1;
}

/* Whether to log one more refusal: REFUSALS_LOGGED a minute, then a count
 * (refused requests cost a user nothing; the log is a tmpfs). */
static int refusal_logged(struct cs_serve *s)
{
    double now = cs_now();

    if (now - s->refusals_since > 60) {
        if (s->refusals_quiet)
            cs_warn("socket: %d more refused requests in the last minute were not logged", s->refusals_quiet);
        s->refusals_since = now;
        s->refusals_logged = s->refusals_quiet = 0;
    }
    if (s->refusals_logged < REFUSALS_LOGGED) {
        s->refusals_logged++;
        return 1;
    }
    s->refusals_quiet++;
    return 0;
}

#define REFUSED(s, ...) do { if (refusal_logged(s)) cs_warn(__VA_ARGS__); } while (0)

/* A whole request arrived on connection k: answer it.  1: job set changed. */
static int handle(struct cs_engine *e, struct conn *c)
{
    struct cs_msg m;
    char err[300], rep[PATH_MAX + 400];
    int changed = 0;

    if (cs_msg_parse(&m, c->buf, c->len, err, sizeof err) < 0) {
        snprintf(rep, sizeof rep, "ERR %s\n", err);
        REFUSED(srv(e), "socket: refused a request from pid %d (uid %d): %s", (int)c->pid, (int)c->uid, err);
        reply(c, rep);
        return 0;
    }
    if (strcmp(m.verb, "ping") == 0) {
        snprintf(rep, sizeof rep, "OK version=%d pid=%d policy=%s\n", CS_PROTO_VERSION, (int)getpid(),
                 cs_policy_name(e->policy));
    } else if (strcmp(m.verb, "status") == 0) {
        const char *fmt = cs_msg_get(&m, "format");
        int text = fmt && strcmp(fmt, "text") == 0;
        char *doc = status_doc(e, c->uid, text);
        if (!doc) {
            reply(c, "ERR out of memory\n");
            return 0;
        }
        reply(c, text ? "OK text\n" : "OK json\n");
        reply(c, doc);
        free(doc);
        return 0;
    } else if (strcmp(m.verb, "register") == 0 || strcmp(m.verb, "deregister") == 0) {
        if (c->uid != 0) {
            snprintf(rep, sizeof rep, "ERR %s is for root (the Slurm plugin) only; you are uid %d\n", m.verb,
                     (int)c->uid);
            REFUSED(srv(e), "socket: refused %s from uid %d (pid %d): not root", m.verb, (int)c->uid, (int)c->pid);
            if (m.verb[0] == 'r')
                srv(e)->refused[RF_NOT_ROOT]++;
        } else {
            char r[PATH_MAX + 300];
            unsigned long job = 0;
            changed = m.verb[0] == 'r' ? do_register(e, &m, c->pid, r, sizeof r, &c->pass_fd)
                                       : do_deregister(e, &m, r, sizeof r, &job);
            if (r[0] == 'E')
                cs_warn("socket: %s refused: %s", m.verb, r + 4);
            else if (job) {
                c->hold = job;       /* its last word to Slurm first, if it has one to say */
                c->hold_until = cs_now() + HOLD_MAX;
            }
            snprintf(rep, sizeof rep, "%s\n", r);
        }
    } else {
        snprintf(rep, sizeof rep, "ERR unknown verb '%s' (known: ping, register, deregister, status)\n", m.verb);
    }
    reply(c, rep);
    return changed;
}

static int host_nfds(struct cs_engine *e)
{
    int n = 2 + srv(e)->nc;          /* the socket, the connections, the tasks, the signals */
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->served)
            n += ((struct served *)e->jobs[i]->served)->nt;
    return n;
}

static int host_pollfds(struct cs_engine *e, struct pollfd *pf, int max)
{
    struct cs_serve *s = srv(e);
    int n = 0;

    pf[n++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
    for (int k = 0; k < s->nc && n < max; k++)
        pf[n++] = (struct pollfd){ .fd = s->c[k].fd, .events = s->c[k].hold ? 0 : s->c[k].out ? POLLOUT : POLLIN };
    for (int i = 0; i < e->njobs; i++) {
        struct served *sv = e->jobs[i]->served;
        if (!sv || e->jobs[i]->state != CS_JOB_LIVE)
            continue;
        for (int k = 0; k < sv->nt && n < max - 1; k++)
            pf[n++] = (struct pollfd){ .fd = sv->t[k].fd, .events = POLLIN };
    }
    pf[n++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
    return n;
}

/* SIGINT, SIGTERM, SIGHUP: the node engine stops (tidy) and gives every step
 * back to Slurm, thawed, on its own cores.  It signals no step (Slurm does)
 * and reaps only its own scontrol runs (sjob_reap). */
static int on_signal(struct cs_serve *s)
{
    struct signalfd_siginfo si;
    int stop = 0;

    while (read(s->sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue;
        if (!s->stopping)
            cs_info("received %s: giving every step back to Slurm (thawed, on its own cores) and exiting",
                    strsignal(sig));
        s->stopping = 1;
        stop = 1;
    }
    return stop;
}

/* A connection refused at the door: one line if the client takes it now. */
static void turn_away(int fd, const char *msg)
{
    if (send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* nothing more to do for it */
    }
    close(fd);
}

static void accept_all(struct cs_serve *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct ucred cr;
        socklen_t cl = sizeof cr;
        int mine = 0;
        if (fd < 0)
            return;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        for (int k = 0; k < s->nc; k++)
            mine += s->c[k].uid == cr.uid;
        if (s->nc == MAX_CONNS || (cr.uid != 0 && s->nc >= MAX_CONNS - ROOT_SLOTS)) {
            REFUSED(s, "socket: refused a connection from pid %d (uid %d): %d connections open",
                    (int)cr.pid, (int)cr.uid, s->nc);
            turn_away(fd, "ERR the engine is busy (too many connections); try again\n");
            continue;
        }
        if (cr.uid != 0 && mine >= PER_USER) {
            REFUSED(s, "socket: refused a connection from pid %d (uid %d): that user has %d open already",
                    (int)cr.pid, (int)cr.uid, mine);
            turn_away(fd, "ERR you have too many connections to the engine open; close some and try again\n");
            continue;
        }
        s->c[s->nc++] = (struct conn){ .fd = fd, .uid = cr.uid, .pid = cr.pid, .deadline = cs_now() + CONN_DEADLINE,
                                       .pass_fd = -1 };
    }
}

static int host_ready(struct cs_engine *e, const struct pollfd *pf, int n)
{
    struct cs_serve *s = srv(e);
    int changed = 0, nc = s->nc, k;
    int done[MAX_CONNS] = { 0 };

    if (n > 0 && pf[n - 1].fd == s->sfd) {   /* the signals: last */
        if ((pf[--n].revents & POLLIN) && on_signal(s))
            return 1;
    }

    /* ended tasks first: a pidfd closed here may get its number back from a
     * registration below, which must not inherit this round's POLLIN */
    for (int p = 1 + nc; p < n; p++) {
        if (!(pf[p].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        for (int i = 0; i < e->njobs; i++) {
            struct served *sv = e->jobs[i]->served;
            if (!sv || e->jobs[i]->state != CS_JOB_LIVE)
                continue;
            for (int t = 0; t < sv->nt; t++)
                if (sv->t[t].fd == pf[p].fd) {
                    task_remove(e, e->jobs[i], t, "its tasks ended");
                    changed = 1;
                    goto next;
                }
        }
next:;
    }
    /* then the connections, in the order poll saw them */
    for (k = 0; k < nc && 1 + k < n; k++) {
        struct conn *c = &s->c[k];
        if (c->hold) {                       /* its reply waits for a job's last word */
            if (pf[1 + k].fd == c->fd && (pf[1 + k].revents & (POLLHUP | POLLERR)))
                c->hold = 0;                 /* nobody waits for it any more */
            done[k] = hold_over(e, c) && flush(c);
            continue;
        }
        if (pf[1 + k].fd != c->fd || !pf[1 + k].revents)
            continue;
        if (c->out) {                        /* sending the reply */
            done[k] = flush(c);
            continue;
        }
        if (!(pf[1 + k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = read(c->fd, c->buf + c->len, CS_PROTO_MAX + 1 - c->len);
        if (r > 0)
            c->len += (size_t)r;
        char *nl = memchr(c->buf, '\n', c->len);
        int answered = 1;
        if (nl || r == 0 || c->len > CS_PROTO_MAX) {
            if (!nl && c->len > CS_PROTO_MAX) {
                char rep[128];
                snprintf(rep, sizeof rep, "ERR request longer than the limit of %d bytes\n", CS_PROTO_MAX);
                REFUSED(s, "socket: refused an oversized request from pid %d (uid %d)", (int)c->pid, (int)c->uid);
                reply(c, rep);
            } else if (c->len == 0) {
                answered = 0;                /* closed without a word */
            } else if (!nl) {
                reply(c, "ERR request truncated: no newline before the end of the connection\n");
                REFUSED(s, "socket: refused a truncated request from pid %d (uid %d)", (int)c->pid, (int)c->uid);
            } else {
                c->len = (size_t)(nl - c->buf);
                changed |= handle(e, c);
            }
            /* the reply goes out as the client reads it, within the deadline */
            c->deadline = cs_now() + CONN_DEADLINE;
            done[k] = !answered || !c->out || (hold_over(e, c) && flush(c));
        } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
            done[k] = 1;
        }
    }
    for (k = nc - 1; k >= 0; k--)
        if (done[k] || cs_now() > s->c[k].deadline) {
            if (!done[k] && !s->c[k].out) {
                reply(&s->c[k], "ERR no complete request within 2 s\n");
                flush(&s->c[k]);
            }
            conn_close(s, k);
        }
    if (pf[0].revents & POLLIN)
        accept_all(s);
    return changed;
}

static int host_tidy(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);

    account(e);
    metrics_sample(e);
    if (s->metrics && cs_now() - s->metrics_last >= METRICS_EVERY)
        metrics_write(e, 1);
    if (s->stopping)
        return 1;                    /* a signal: every step goes back to Slurm */
    cs_engine_forget(e, served_job_free);
    if (e->njobs > 0 || s->idle_exit <= 0) {
        s->idle_since = cs_now();
        return 0;
    }
    if (cs_now() - s->idle_since >= s->idle_exit) {
        cs_info("no step registered for %g s: exiting (--idle-exit)", s->idle_exit);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ time given back */

static struct sjob *sjob_of(struct cs_serve *s, unsigned long job, int create)
{
    for (int i = 0; i < s->nsj; i++)
        if (s->sj[i].job == job)
            return &s->sj[i];
    if (!create)
        return NULL;
    struct sjob *n = realloc(s->sj, (size_t)(s->nsj + 1) * sizeof *n);
    if (!n)
        return NULL;
    s->sj = n;
    n = &s->sj[s->nsj++];
    memset(n, 0, sizeof *n);
    n->job = job;
    n->extend = 1;
    return n;
}

/* What a registration says of its job: extend=0|1, scontrol=, slurm_conf=
 * (root's: the plugin in slurmstepd).  An scontrol that is not root's and
 * out of others' reach is never run. */
static void sjob_note(struct cs_serve *s, unsigned long job, const struct cs_msg *m)
{
    struct sjob *sj = sjob_of(s, job, 1);
    const char *x = cs_msg_get(m, "extend"), *sc = cs_msg_get(m, "scontrol"), *cf = cs_msg_get(m, "slurm_conf");
    char why[PATH_MAX + 256];

    if (!sj)
        return;
    if (x && strcmp(x, "0") == 0)
        sj->extend = 0;
    if (sc && !sj->scontrol[0] && sc[0] == '/') {
        if (cs_path_trusted(sc, why, sizeof why) == 0)
            snprintf(sj->scontrol, sizeof sj->scontrol, "%s", sc);
        else
            cs_warn("job %lu: scontrol %s is not used to give frozen time back: %s", job, sc, why);
    }
    if (cf && !sj->conf[0] && cf[0] == '/')
        snprintf(sj->conf, sizeof sj->conf, "%s", cf);
}

/* Whether the job has something not yet said to Slurm: time to give back,
 * or a second or more held or frozen since its last AdminComment. */
static int sjob_unsaid(const struct sjob *sj)
{
    return sj->scontrol[0] && ((sj->extend && sj->held > sj->given) || sj->held >= sj->said + 1 ||
                               sj->frozen >= sj->frozen_said + 1);
}

/* Whether an update of the job may start now: none under way, and a
 * minute since the one before - or, its last step here gone (here 0), one
 * more within that minute, once a minute: the last word (a finished job
 * cannot be updated; a job whose steps end in quick succession gets at most
 * two updates a minute, and its last words once a minute). */
static int sjob_due(const struct sjob *sj, double now, int here)
{
    if (sj->child > 0 || !sj->scontrol[0])
        return 0;
    if (sj->last_update == 0 || now - sj->last_update >= GIVE_EVERY)
        return 1;
    return !here && (sj->last_extra == 0 || now - sj->last_extra >= GIVE_EVERY);
}

/* Seconds of time limit the job is owed now, ahead seconds in advance. */
static double sjob_pending(const struct sjob *sj, double ahead)
{
    return sj->extend ? sj->held + ahead - sj->given : 0;
}

static void give_back(const struct sjob *sj, long add);

/* Start the job's update (its own child, reaped by sjob_reap): pending
 * seconds of time limit, in whole minutes, and its AdminComment. */
static void sjob_give(struct cs_serve *s, struct sjob *sj, double pending)
{
    long add = pending > 0 ? (long)ceil(pending / 60.0) : 0;
    pid_t pid = fork();

    if (pid == 0)
        give_back(sj, add);
    if (pid < 0) {
        cs_warn("job %lu: fork: %s: frozen time not given back now", sj->job, strerror(errno));
        return;
    }
    double now = cs_now();
    if (sj->last_update > 0 && now - sj->last_update < GIVE_EVERY)
        sj->last_extra = now;
    sj->child = pid;
    sj->given += (double)add * 60.0;
    s->given_total += (double)add * 60.0;
    sj->said = sj->held;
    sj->frozen_said = sj->frozen;
    sj->last_update = now;
}

/* The job's scontrol child, if it ended: reaped (child 0). */
static void sjob_reap(struct sjob *sj)
{
    int st;
    pid_t r;

    if (sj->child > 0 && ((r = waitpid(sj->child, &st, WNOHANG)) == sj->child || (r < 0 && errno == ECHILD)))
        sj->child = 0;
}

/* Whether a step of the job is registered here. */
static int job_here(const struct cs_engine *e, unsigned long job)
{
    for (int i = 0; i < e->njobs; i++) {
        const struct served *sv = e->jobs[i]->served;
        if (e->jobs[i]->state == CS_JOB_LIVE && sv && sv->job == job)
            return 1;
    }
    return 0;
}

/* Whether connection c's reply may go (and its hold is over): its job has a
 * step here still, or its last word is said, or HOLD_MAX passed.  Starts
 * the last word if it is due and no update is under way. */
static int hold_over(struct cs_engine *e, struct conn *c)
{
    struct sjob *sj;

    if (!c->hold)
        return 1;
    if ((sj = sjob_of(srv(e), c->hold, 0)) != NULL)
        sjob_reap(sj);
    if (!sj || job_here(e, c->hold) || cs_now() >= c->hold_until) {
        c->hold = 0;
        return 1;
    }
    if (sjob_due(sj, cs_now(), 0) && sjob_unsaid(sj))
        sjob_give(srv(e), sj, sjob_pending(sj, 0));
    if (sj->child == 0)
        c->hold = 0;                 /* nothing to say or not now, or the fork failed */
    return !c->hold;
}

/* The engine stops: every job's unsaid time goes out as a last word
 * (sjob_due; not waited for), and the held replies get their job's last
 * word, HOLD_MAX at most; then every reply queued is sent if the client
 * takes it now. */
static void last_words(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    int held;

    for (int k = 0; k < s->nsj; k++) {
        sjob_reap(&s->sj[k]);
        if (sjob_due(&s->sj[k], cs_now(), 0) && sjob_unsaid(&s->sj[k]))
            sjob_give(s, &s->sj[k], sjob_pending(&s->sj[k], 0));
    }
    do {
        held = 0;
        for (int k = 0; k < s->nc; k++)
            held += !hold_over(e, &s->c[k]);
        if (held)
            nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    } while (held);
    for (int k = 0; k < s->nc; k++)
        if (s->c[k].out)
            flush(&s->c[k]);
}

/* Run argv with SLURM_CONF=conf, its output in out; its exit status. */
static int run_capture(char *const argv[], const char *conf, char *out, size_t len)
{
    int p[2], st = -1;
    size_t n = 0;
    char envc[PATH_MAX + 16];
    char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", conf[0] ? envc : NULL, NULL };
    pid_t pid;

    snprintf(envc, sizeof envc, "SLURM_CONF=%s", conf);
    out[0] = '\0';
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    if ((pid = fork()) == 0) {
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(p[1], 1);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    close(p[1]);
    while (pid > 0) {
        ssize_t r = read(p[0], out + n, len - 1 - n);
        if (r > 0 && (n += (size_t)r) < len - 1)
            continue;
        if (r < 0 && errno == EINTR)
            continue;
        break;
    }
    out[n] = '\0';
    close(p[0]);
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
        return WEXITSTATUS(st);
    return -1;
}

/* The value of KEY= in scontrol's one-line output ("" if absent). */
static void field(const char *doc, const char *key, char *val, size_t len)
{
    size_t k = strlen(key);

    val[0] = '\0';
    for (const char *p = doc; (p = strstr(p, key)) != NULL; p += k)
        if ((p == doc || isspace((unsigned char)p[-1])) && p[k] == '=') {
            size_t n = strcspn(p + k + 1, " \n");
            snprintf(val, len, "%.*s", (int)(n < len ? n : len - 1), p + k + 1);
            return;
        }
}

/* Minutes of a Slurm time ("UNLIMITED": -1; "D-HH:MM:SS", "HH:MM:SS",
 * "MM:SS", "MM"); -2 if unreadable. */
static long minutes_of(const char *v)
{
    long d = 0, a[3], n = 0;
    const char *p = v;
    char *e;

    if (strcmp(v, "UNLIMITED") == 0 || strcmp(v, "Partition_Limit") == 0)
        return -1;
    if (strchr(v, '-')) {
        d = strtol(v, &e, 10);
        if (*e != '-')
            return -2;
        p = e + 1;
    }
    while (n < 3) {
        a[n++] = strtol(p, &e, 10);
        if (e == p)
            return -2;
        if (*e != ':')
            break;
        p = e + 1;
    }
    if (*e != '\0')
        return -2;
    if (n == 3)
        return d * 1440 + a[0] * 60 + a[1] + (a[2] > 0);
    if (n == 2)
        return d * 1440 + (d ? a[0] * 60 + a[1] : a[0] + (a[1] > 0));
    return d ? d * 1440 + a[0] * 60 : a[0];
}

/* The child that talks to slurmctld for one job: add minutes to its time
 * limit (never beyond its partition's MaxTime) and write the seconds held
 * to its AdminComment.  Says what it did in the engine's log. */
static void give_back(const struct sjob *sj, long add)
{
    char out[16384], tl[64], part[256], max[64], adm[256], jid[32], a1[96], a2[128];
    char *sc = (char *)sj->scontrol;
    long cur, lim, to = -1;

    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* nothing of the engine's but the log: the guardian must see the engine
     * gone when it dies, the lock be free when it exits */
    if (cs_log_copy > 3)
        close_range(3, (unsigned)cs_log_copy - 1, 0);
    close_range(cs_log_copy >= 3 ? (unsigned)cs_log_copy + 1 : 3, ~0U, 0);
    snprintf(jid, sizeof jid, "%lu", sj->job);
    char *show[] = { sc, "-o", "show", "job", jid, NULL };
    if (run_capture(show, sj->conf, out, sizeof out) != 0) {
        cs_warn("job %lu: %s show job failed: frozen time not given back (%.0f s held)", sj->job, sc, sj->held);
        _exit(1);
    }
    field(out, "TimeLimit", tl, sizeof tl);
    field(out, "Partition", part, sizeof part);
    field(out, "AdminComment", adm, sizeof adm);
    cur = minutes_of(tl);
    if (add > 0 && cur >= 0) {
        char *showp[] = { sc, "-o", "show", "partition", part, NULL };
        lim = run_capture(showp, sj->conf, out, sizeof out) == 0 ? (field(out, "MaxTime", max, sizeof max),
                                                                   minutes_of(max)) : -2;
        to = cur + add;
        if (lim == -2) {
            cs_warn("job %lu: cannot read partition %s's MaxTime: its time limit is left at %s", sj->job, part, tl);
            to = -1;
        } else if (lim >= 0 && to > lim) {
            to = lim > cur ? lim : -1;
            cs_warn("job %lu: held %.0f s; its time limit stops at partition %s's MaxTime (%s)", sj->job, sj->held,
                    part, max);
        }
    }
    int n = 0;
    char *upd[6] = { sc, "update", NULL, NULL, NULL, NULL };
    snprintf(a1, sizeof a1, "JobId=%lu", sj->job);
    upd[2] = a1;
    n = 3;
    if (to > cur) {
        snprintf(a2, sizeof a2, "TimeLimit=%ld", to);
        upd[n++] = a2;
    }
    char a3[160];
    if (!adm[0] || strncmp(adm, "cosched:", 8) == 0) {
        snprintf(a3, sizeof a3, "AdminComment=cosched:held_s=%.0f,frozen_s=%.0f", sj->held, sj->frozen);
        upd[n++] = a3;
    }
    if (n == 3)
        _exit(0);
    if (run_capture(upd, sj->conf, out, sizeof out) != 0) {
        cs_warn("job %lu: %s update %s%s%s failed: %s", sj->job, sc, a1, to > cur ? " " : "", to > cur ? a2 : "",
                out);
        _exit(1);
    }
    if (to > cur)
        cs_info("job %lu: its steps were all held frozen %.0f s: time limit %ld -> %ld min", sj->job, sj->held, cur,
                to);
    _exit(0);
}

/* Between two steps of the loop: count the time held, start the updates
 * that are due, reap the finished ones, forget jobs with nothing left. */
static void account(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    double now = cs_now(), dt = s->acct_last > 0 ? now - s->acct_last : 0;
    int *allheld = calloc((size_t)s->nsj + 1, sizeof *allheld);

    s->acct_last = now;
    if (!allheld)
        return;
    for (int k = 0; k < s->nsj; k++) {
        s->sj[k].live = 0;
        allheld[k] = 1;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        struct served *sv = j->served;
        struct sjob *sj;
        if (j->state != CS_JOB_LIVE || !sv || !(sj = sjob_of(s, sv->job, 0)))
            continue;
        sj->live++;
        if (j->frozen) {
            sv->frozen_s += dt;
            sj->frozen += dt;
        }
        /* a step Slurm suspended (scontrol suspend) gets that time back
         * from Slurm itself: not held by the engine then */
        if (!j->frozen || (sv->nt > 0 && cs_proc_all_stopped(sv->t[0].pid) == 1))
            allheld[sj - s->sj] = 0;
    }
    for (int k = 0; k < s->nsj; k++) {
        struct sjob *sj = &s->sj[k];
        if (sj->live && allheld[k]) {
            sj->held += dt;
            s->held_total += dt;
        }
        sjob_reap(sj);
        /* while the job is held, give an update's interval ahead: the next
         * update can come only GIVE_EVERY s (and a step) later, and by then
         * the job may have been held that much longer - a job given exactly
         * its held time could pass its limit frozen in between */
        double pending = sjob_pending(sj, sj->live && allheld[k] ? GIVE_EVERY : 0);
        if (sjob_due(sj, now, sj->live > 0) && (pending > 0 || sjob_unsaid(sj)))
            sjob_give(s, sj, pending);
    }
    /* jobs with no step here, nothing running and nothing left to say */
    int m = 0;
    for (int k = 0; k < s->nsj; k++) {
        struct sjob *sj = &s->sj[k];
        if (sj->live || sj->child || sjob_unsaid(sj))
            s->sj[m++] = *sj;
    }
    s->nsj = m;
    free(allheld);
}

/* ------------------------------------------------------------ metrics */

/* The switch that ended since the last call: into the histogram. */
static void metrics_sample(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    uint64_t n = e->switches - s->prev_switches;

    if (n > 0) {
        double each = (e->switch_us_total - s->prev_switch_us) * 1e-6 / (double)n;
        int b = 0;
        while (b < 10 && each > lat_le[b])
            b++;
        s->lat_bucket[b] += n;
        s->lat_n += n;
        s->lat_sum += each * (double)n;
    }
    s->prev_switches = e->switches;
    s->prev_switch_us = e->switch_us_total;
}

#define HELP(f, name, type, text) fprintf(f, "# HELP " name " " text "\n# TYPE " name " " type "\n")

/* Write the metrics file (FILE.tmp, then renamed over FILE: a scrape never
 * sees half of it); up is 0 in the last one, when the engine stops. */
static void metrics_write(struct cs_engine *e, int up)
{
    struct cs_serve *s = srv(e);
    char tmp[PATH_MAX + 8];
    int fd, st[3] = { 0, 0, 0 };
    FILE *f;

    if (!s->metrics)
        return;
    s->metrics_last = cs_now();
    snprintf(tmp, sizeof tmp, "%s.tmp", s->metrics);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 || !(f = fdopen(fd, "w"))) {
        cs_warn("--metrics: cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || !j->served)
            continue;
        st[j->frozen ? 2 : hwloc_bitmap_weight(j->cpus) < hwloc_bitmap_weight(cs_job_home(e, j)) ? 1 : 0]++;
    }
    HELP(f, "cosched_up", "gauge", "1 while the node engine runs, 0 once it stopped");
    fprintf(f, "cosched_up %d\n", up);
    HELP(f, "cosched_steps", "gauge", "Co-scheduled Slurm steps on this node now, by state");
    fprintf(f, "cosched_steps{state=\"running\"} %d\ncosched_steps{state=\"folded\"} %d\n"
               "cosched_steps{state=\"frozen\"} %d\n", st[0], st[1], st[2]);
    HELP(f, "cosched_steps_coscheduled_total", "counter", "Steps taken under co-scheduling since the engine started");
    fprintf(f, "cosched_steps_coscheduled_total %llu\n", (unsigned long long)s->accepted);
    HELP(f, "cosched_steps_refused_total", "counter",
         "Task registrations refused since the engine started, by reason (the step runs without co-scheduling)");
    for (int r = 0; r < 5; r++)
        fprintf(f, "cosched_steps_refused_total{reason=\"%s\"} %llu\n", refusal_label[r],
                (unsigned long long)s->refused[r]);
    HELP(f, "cosched_job_frozen_seconds", "gauge", "Seconds the job's steps on this node were frozen, summed over steps");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_frozen_seconds{job=\"%lu\"} %.1f\n", s->sj[k].job, s->sj[k].frozen);
    HELP(f, "cosched_job_held_seconds", "gauge", "Seconds all of the job's steps on this node were frozen at once");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_held_seconds{job=\"%lu\"} %.1f\n", s->sj[k].job, s->sj[k].held);
    HELP(f, "cosched_job_given_seconds", "gauge", "Seconds added to the job's time limit (extend_time)");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_given_seconds{job=\"%lu\"} %.0f\n", s->sj[k].job, s->sj[k].given);
    HELP(f, "cosched_held_seconds_total", "counter", "Seconds jobs were held frozen, all jobs");
    fprintf(f, "cosched_held_seconds_total %.1f\n", s->held_total);
    HELP(f, "cosched_given_seconds_total", "counter", "Seconds added to jobs' time limits, all jobs");
    fprintf(f, "cosched_given_seconds_total %.0f\n", s->given_total);
    HELP(f, "cosched_switch_latency_seconds", "histogram", "Time one switch (freezes, thaws, core moves) took");
    uint64_t cum = 0;
    for (int b = 0; b < 11; b++) {
        cum += s->lat_bucket[b];
        if (b < 10)
            fprintf(f, "cosched_switch_latency_seconds_bucket{le=\"%g\"} %llu\n", lat_le[b], (unsigned long long)cum);
        else
            fprintf(f, "cosched_switch_latency_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    fprintf(f, "cosched_switch_latency_seconds_sum %.6f\ncosched_switch_latency_seconds_count %llu\n", s->lat_sum,
            (unsigned long long)s->lat_n);
    HELP(f, "cosched_policy_errors_total", "counter",
         "Plans the policy failed to make (the fallback plan ran instead) since the engine started");
    fprintf(f, "cosched_policy_errors_total %d\n", e->nfallbacks);
    HELP(f, "cosched_idle_while_frozen_cpu_seconds_total", "counter",
         "CPU-seconds the managed cpus sat idle while a step was held frozen, on cpus given to no running step "
         "(nobody) and on cpus of a running step that left them idle (held)");
    fprintf(f, "cosched_idle_while_frozen_cpu_seconds_total{cpus=\"nobody\"} %.2f\n"
               "cosched_idle_while_frozen_cpu_seconds_total{cpus=\"held\"} %.2f\n", e->idle_nobody_s, e->idle_held_s);
    HELP(f, "cosched_rescued_steps_total", "counter",
         "Steps a previous engine left held or frozen (killed with its guardian) that this engine gave back at start");
    fprintf(f, "cosched_rescued_steps_total %d\n", s->restored);
    if (fclose(f) != 0 || rename(tmp, s->metrics) < 0) {
        cs_warn("--metrics: cannot write %s: %s", s->metrics, strerror(errno));
        unlink(tmp);
    }
}

/* The earliest end of a held reply's wait (0: none held). */
static double host_wake(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    double t = 0;

    for (int k = 0; k < s->nc; k++)
        if (s->c[k].hold && (t == 0 || s->c[k].hold_until < t))
            t = s->c[k].hold_until;
    return t;
}

/* ------------------------------------------------------------ daemon */

/* The engine's host: jobs from outside, registered over the socket. */
static int host_begin(struct cs_engine *e)
{
    if ((srv(e)->sfd = cs_engine_signalfd()) < 0)
        return -1;
    return cs_guard_start(e->ctl);
}

static void host_end(struct cs_engine *e, int complete)
{
    cs_guard_done();
    if (srv(e)->sfd >= 0)
        close(srv(e)->sfd);
    srv(e)->sfd = -1;
}

/* No step live: more may register. */
static int host_more(struct cs_engine *e)
{
    return 1;
}

const struct cs_host_ops cs_node_host = {
    .name = "node engine",
    .command = "serve",
    .begin = host_begin,
    .end = host_end,
    .more = host_more,
    .nfds = host_nfds,
    .pollfds = host_pollfds,
    .ready = host_ready,
    .wake = host_wake,
    .tidy = host_tidy,
};

/* Leave Slurm's cgroups (started on demand from a step's slurmstepd). */
static void leave_slurm_cgroups(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[PATH_MAX + 256];

    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, mnt[PATH_MAX], dir[PATH_MAX],
             why[256], ctl[64], pid[32];
        if (!c2 || (!strstr(c2, "slurm") && !strstr(c2, "/job_")))
            continue;
        *c2 = '\0';
        snprintf(ctl, sizeof ctl, "%s", c1 + 1);
        char *comma = strchr(ctl, ',');
        if (comma)
            *comma = '\0';
        if (strncmp(ctl, "name=", 5) == 0)
            continue;
        if (cs_cgroup_locate(ctl[0] ? ctl : NULL, mnt, sizeof mnt, dir, sizeof dir, why, sizeof why) < 0)
            continue;
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        if (cs_cg_write(NULL, mnt, "cgroup.procs", pid) < 0)
            cs_warn("cannot leave cgroup %s%s: %s", mnt, c2 + 1, strerror(errno));
    }
    fclose(f);
}

static int listen_on(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    char dir[PATH_MAX];
    int fd;

    if (strlen(path) >= sizeof a.sun_path) {
        cs_err("--socket %s: longer than %zu bytes", path, sizeof a.sun_path - 1);
        return -1;
    }
    snprintf(dir, sizeof dir, "%s", path);
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            cs_err("--socket %s: cannot create %s: %s", path, dir, strerror(errno));
            return -1;
        }
    }
    strcpy(a.sun_path, path);
    unlink(path);               /* we hold the lock: any socket there is stale */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
        cs_err("--socket %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

#define BAD(...) do { cs_err(__VA_ARGS__); goto out; } while (0)

int cs_node_serve(const struct cs_node_opts *o)
{
    struct cs_engine e = { 0 };
    struct cs_serve s = { .lfd = -1, .sfd = -1, .socket = o->socket, .idle_exit = o->idle_exit,
                          .popts = o->popts, .npopts = o->npopts };
    const char *policy = o->policy, *logfile = o->logfile, *trace = o->trace, *counters = o->counters;
    char *const *ppath = o->ppath;
    int nppath = o->nppath, detach = o->detach, status = 2, lockfd = -1, logfd = -1, ready[2] = { -1, -1 };
    struct cs_profile *profile = NULL;
    char why[PATH_MAX + 256];

    e.quantum = o->quantum;
    e.kill_timeout = 10;
    if (geteuid() != 0)
        BAD("cosched serve must run as root: it freezes and moves other users' Slurm steps");
    /* nothing from the environment of whoever started us */
    clearenv();
    cs_policy_trusted_only = 1;
    setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
    umask(022);
    /* a pidfd per registered task: as many descriptors as allowed */
    {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }

    /* one engine per socket */
    {
        char *lock = cs_strdup_printf("%s.lock", s.socket);
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", s.socket);
        char *sl = strrchr(dir, '/');
        if (sl && sl != dir) {
            *sl = '\0';
            mkdir(dir, 0755);
        }
        /* a directory others may write would let them replace the socket
         * (and receive root's registrations) or plant links for the lock */
        if (cs_path_trusted(!sl ? "." : sl == dir ? "/" : dir, why, sizeof why) < 0) {
            cs_err("--socket %s: %s", s.socket, why);
            free(lock);
            goto out;
        }
        /* --detach: the log gets the start-up messages too (an engine the
         * SPANK plugin starts has /dev/null as its stderr: a bad policy or a
         * thawed leftover would otherwise be said to nobody) */
        if (detach) {
            char logdef[PATH_MAX];
            snprintf(logdef, sizeof logdef, "%s.log", s.socket);
            if ((logfd = open(logfile ? logfile : logdef, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                              0640)) < 0)
                cs_warn("--log %s: %s (messages go to stderr only)", logfile ? logfile : logdef, strerror(errno));
            cs_log_copy = logfd;
        }
        lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (lockfd < 0) {
            cs_err("cannot open the lock %s: %s", lock, strerror(errno));
            free(lock);
            goto out;
        }
        /* an engine that is just exiting still holds it: ask again for 1 s */
        int locked = -1;
        for (int t = 0; t < 20 && (locked = flock(lockfd, LOCK_EX | LOCK_NB)) < 0; t++) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        if (locked < 0) {
            cs_info("an engine already serves %s (lock %s held): nothing to do", s.socket, lock);
            free(lock);
            status = detach ? 0 : 1;
            goto out;
        }
        free(lock);
    }
    {
        char *held = cs_strdup_printf("%s.held", s.socket);
        int r = cs_slurm_keep_state(held);
        free(held);
        if (r < 0)
            goto out;
    }
    s.restored = cs_slurm_restore_held();
    s.restored += cs_slurm_thaw_leftovers();
    if (o->metrics) {
        char dir[PATH_MAX];
        struct stat mst;
        snprintf(dir, sizeof dir, "%s", o->metrics);
        char *sl = strrchr(dir, '/');
        if (sl)
            *(sl == dir ? sl + 1 : sl) = '\0';
        /* root writes there: a directory anybody may write is refused */
        if (stat(sl ? dir : ".", &mst) < 0 || !S_ISDIR(mst.st_mode))
            BAD("--metrics %s: %s is not a directory", o->metrics, sl ? dir : ".");
        if ((mst.st_mode & S_IWOTH) || ((mst.st_mode & S_IWGRP) && mst.st_gid != 0))
            BAD("--metrics %s: its directory %s is writable by others (root does not write there)", o->metrics,
                sl ? dir : ".");
        s.metrics = o->metrics;
    }
    /* policies: the admin's directories, the site's, the installed ones; trusted only */
    for (int i = 0; i < nppath; i++)
        if (cs_path_trusted(ppath[i], why, sizeof why) < 0)
            BAD("--policy-path %s: %s", ppath[i], why);
    s.search = calloc(nppath + 2, sizeof *s.search);
    for (int i = 0; i < nppath; i++)
        s.search[s.nsearch++] = strdup(ppath[i]);
    s.search[s.nsearch++] = cs_strdup_printf("%s/policies", COSCHED_SYSCONFDIR);
    s.search[s.nsearch++] = cs_strdup_printf("%s/lua/policies", cs_datadir());
    if ((e.topo = cs_topo_load(NULL)) == NULL)
        goto out;
    e.managed = hwloc_bitmap_alloc();
    if ((e.policy = load_policy(&s, policy, why, sizeof why)) == NULL)
        BAD("--policy: %s", why);
    snprintf(s.policy, sizeof s.policy, "%s", policy);
    if (strcmp(counters, "none") != 0) {
        profile = cs_profile_for_this_cpu(NULL, 0, why, sizeof why);
        if (profile == NULL || (e.cnt = cs_counters_select("auto", profile, &e.cnt_arg)) == NULL ||
            e.cnt == &cs_counters_none) {
            cs_info("counters: none (%s)", profile ? "no backend works here" : why);
            if (profile)
                cs_profile_free(profile);
            profile = NULL;
            e.cnt = NULL;
        }
    }
    e.profile = profile;
    e.ctl = &cs_control_slurm;
    e.host = &cs_node_host;
    e.host_arg = &s;
    e.explain = 1;
    e.output = CS_OUT_INHERIT;
    if (trace && (e.trace = cs_fopen_write(trace)) == NULL)
        BAD("--trace %s: %s", trace, errno == ELOOP ? "a symbolic link (cosched never writes through one)" : strerror(errno));
    if ((s.lfd = listen_on(s.socket)) < 0)
        goto out;

    if (detach) {
        if (pipe2(ready, O_CLOEXEC) < 0)
            BAD("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0)
            BAD("fork: %s", strerror(errno));
        if (pid > 0) {
            /* the parent: exit once the daemon says it runs */
            char b = 0;
            close(ready[1]);
            status = read(ready[0], &b, 1) == 1 && b == 'y' ? 0 : 1;
            close(ready[0]);
            close(s.lfd);
            s.lfd = -1;
            goto out_parent;
        }
        close(ready[0]);
        setsid();
        leave_slurm_cgroups();
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
        }
        cs_log_copy = -1;           /* the log is stderr from here on */
        if (logfd >= 0)
            dup2(logfd, 2);
        if (nul > 2)
            close(nul);
        if (logfd > 2)
            close(logfd);
        logfd = -1;
        (void)!chdir("/");
    }
    s.started = s.idle_since = cs_now();
    cs_info("node engine pid %d listening on %s: policy %s, quantum %g s%s", (int)getpid(), s.socket, policy,
            e.quantum, s.idle_exit > 0 ? ", exits when idle" : "");
    if (detach) {
        (void)!write(ready[1], "y", 1);
        close(ready[1]);
    }
    metrics_write(&e, 1);
    status = cs_engine_run(&e);
    last_words(&e);
    metrics_write(&e, 0);
    cs_info("node engine pid %d stopped; every step was given back to Slurm", (int)getpid());
out:
    if (s.lfd >= 0) {
        close(s.lfd);
        unlink(s.socket);
    }
out_parent:
    for (int k = 0; k < s.nc; k++)
        close(s.c[k].fd);
    for (int i = 0; i < e.njobs; i++)
        served_job_free(e.jobs[i]);
    free(e.jobs);
    free(e.run_id);
    if (e.policy)
        cs_policy_free(e.policy);
    if (profile)
        cs_profile_free(profile);
    if (e.trace)
        fclose(e.trace);
    if (e.managed)
        hwloc_bitmap_free(e.managed);
    cs_topo_free(e.topo);
    cs_strv_free(s.search, s.nsearch);
    free(s.sj);
    if (lockfd >= 0)
        close(lockfd);
    if (logfd >= 0) {
        cs_log_copy = -1;
        close(logfd);
    }
    return status;
}
