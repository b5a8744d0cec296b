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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "node/node.h"
#include "node/internal.h"
#include "counters/counters.h"
#include "policy/policy.h"
#include "shared/cgleave.h"

/* Frees a job and what the node engine keeps for it (its tasks' descriptors). */
void node_served_job_free(struct cs_job *j)
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

/* ------------------------------------------------------------ trust */

/* Root-owned and not writable by group or others: path and its directory. */

/* The policy file name resolves to, its modules included, must be trusted. */
struct cs_policy *node_load_policy(struct cs_serve *s, const char *name, char *why, size_t len)
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

/* ------------------------------------------------------------ daemon */

/* Leave Slurm's cgroups (started on demand from a step's slurmstepd): the
 * rule is shared/cgleave.h's, the plugin's too. */
static void leave_slurm_cgroups(void)
{
    char paths[32][PATH_MAX];
    int n = cs_leave_slurm_targets(paths, 32);

    for (int i = 0; i < n; i++)
        if (cs_leave_slurm_move(paths[i]) < 0)
            cs_warn("cannot leave Slurm's cgroups: moving to %s: %s", paths[i], strerror(errno));
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
    char *held = NULL;                /* the held records' directory */
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
    held = cs_strdup_printf("%s.held", s.socket);
    if (cs_slurm_keep_state(held) < 0)
        goto out;
    s.restored = cs_slurm_restore_held();
    s.restored += cs_slurm_thaw_leftovers(held);
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
    struct cs_policy *pol = node_load_policy(&s, policy, why, sizeof why);
    if (pol == NULL)
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
    /* the engine: this machine, no cpus until steps bring theirs, Slurm's
     * own step cgroups, the steps registered over the socket (register.c) */
    e.explain = 1;
    e.output = CS_OUT_INHERIT;
    if (cs_engine_assemble(&e, &(struct cs_engine_parts){ .policy = pol, .ctl = &cs_control_slurm, .cnt = e.cnt,
                                                          .cnt_arg = e.cnt_arg, .profile = profile, .trace = trace,
                                                          .host = &cs_node_host, .host_arg = &s }) < 0)
        goto out;
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
    node_metrics_write(&e, 1);
    status = cs_engine_run(&e);
    node_last_words(&e);
    node_metrics_write(&e, 0);
    cs_slurm_stopped(held);
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
        node_served_job_free(e.jobs[i]);
    free(e.jobs);
    cs_engine_disassemble(&e, 0);
    if (profile)
        cs_profile_free(profile);
    cs_strv_free(s.search, s.nsearch);
    free(s.sj);
    free(held);
    if (lockfd >= 0)
        close(lockfd);
    if (logfd >= 0) {
        cs_log_copy = -1;
        close(logfd);
    }
    return status;
}
