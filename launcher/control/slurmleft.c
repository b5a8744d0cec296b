/*
 * slurmleft.c - what a node engine leaves of Slurm steps for the next one:
 * one of the Slurm backend's safety rules, beside slurm.c.
 *
 * Held records.  Each step the engine moves has a record (its freezer, its
 * cpuset, the cores Slurm gave it, its threads' own bindings, whether Slurm
 * holds it suspended), written in one format here (cs_slurm_rec_make and
 * cs_slurm_rec_parse), which both the guardian and a root-only directory
 * next to the socket keep, one file per step (cs_slurm_held_add).  A step
 * that neither the engine nor its guardian gave back (both killed) gets its
 * own cores back when the next engine starts (cs_slurm_restore_held), not
 * only a thaw.
 *
 * Left-frozen steps.  A step freezer left FROZEN (or a v2 step's
 * user/cgroup.freeze left 1) is a previous engine's, or Slurm's suspend:
 * proctrack/cgroup answers the SIGSTOP of `scontrol suspend` by freezing the
 * step (v1: its freezer; cgroup/v2: its user/cgroup.freeze, read in 26.05's
 * cgroup_v2.c).  A record says when Slurm suspended its step: the restore
 * of those records passes such a freezer to cs_slurm_keep_frozen and it is
 * left frozen for Slurm's resume.  Without a record (the engine, its
 * guardian and its records all lost) a suspended step is thawed: its
 * tasks stay stopped by Slurm's SIGTSTP unless they catch it.  The
 * freezer's rules are cgrules.c's.
 *
 * May use: core/, control/internal.h.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

#define WHO "slurm"
#define STOPPED ".stopped"           /* in the held records' directory: the engine before stopped */
#define KEPT_MAX 256                /* suspended steps' freezers remembered from records */

/* ---------------------------------------------------------- held records */

/* "slurm v1|v2[:suspended] FREEZEDIR CPUSETDIR|- CORES [BINDINGS]",
 * BINDINGS as cs_binds_format writes them; -1, and the record without
 * them, when they do not fit. */
int cs_slurm_rec_make(char *out, size_t len, const struct cs_slurm_rec *r)
{
    static const char *const version[] = { "v1", "v2", "v1:suspended", "v2:suspended" };

    out[0] = '\0';
    cs_rec_add(out, len, "slurm");
    cs_rec_add(out, len, version[(r->v2 ? 1 : 0) | (r->suspended ? 2 : 0)]);
    cs_rec_add(out, len, r->freeze);
    cs_rec_add(out, len, r->cpuset[0] ? r->cpuset : "-");   /* none: "-" (escaped, as ever) */
    cs_rec_add(out, len, r->cores);
    if (r->binds && r->binds[0] && cs_rec_add(out, len, r->binds) < 0) {
        struct cs_slurm_rec bare = *r;
        bare.binds = NULL;
        cs_slurm_rec_make(out, len, &bare);
        return -1;
    }
    return 0;
}

/* A record of cs_slurm_rec_make's, split in place (r points into copy);
 * -1 when it is not one. */
int cs_slurm_rec_parse(char *copy, struct cs_slurm_rec *r)
{
    char *f[6];
    int n = cs_rec_split(copy, f, 6);

    if ((n != 5 && n != 6) || strcmp(f[0], "slurm") != 0)
        return -1;
    if (strcmp(f[1], "v1") == 0 || strcmp(f[1], "v2") == 0)
        r->suspended = 0;
    else if (strcmp(f[1], "v1:suspended") == 0 || strcmp(f[1], "v2:suspended") == 0)
        r->suspended = 1;
    else
        return -1;
    r->v2 = f[1][1] == '2';
    r->freeze = f[2];
    r->cpuset = strcmp(f[3], "-") == 0 ? "" : f[3];
    r->cores = f[4];
    r->binds = n == 6 ? f[5] : NULL;
    return 0;
}

static char held_dir[PATH_MAX];

int cs_slurm_keep_state(const char *dir)
{
    struct stat st;

    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        cs_err(WHO ": cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
        cs_err(WHO ": %s must be a directory of root's, mode 0700 (it is not): the engine keeps there "
               "the cores of the steps it moves", dir);
        return -1;
    }
    snprintf(held_dir, sizeof held_dir, "%s", dir);
    return 0;
}

static void held_path(const char *record, char *out, size_t len)
{
    unsigned long long h = 1469598103934665603ULL;      /* FNV-1a */

    for (const unsigned char *c = (const unsigned char *)record; *c; c++)
        h = (h ^ *c) * 1099511628211ULL;
    snprintf(out, len, "%s/%016llx", held_dir, h);
}

void cs_slurm_held_add(const char *record)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    int fd;

    if (!held_dir[0])
        return;
    held_path(record, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, record, strlen(record)) != (ssize_t)strlen(record) || close(fd) < 0 ||
        rename(tmp, path) < 0) {
        cs_warn(WHO ": cannot keep %s (%s): if the engine and its guardian both die, a restarted engine "
                "thaws this step but cannot give it its cores back", path, strerror(errno));
        unlink(tmp);
    }
}

void cs_slurm_held_drop(const char *record)
{
    char path[PATH_MAX + 32];

    if (!held_dir[0])
        return;
    held_path(record, path, sizeof path);
    if (unlink(path) < 0 && errno != ENOENT)
        cs_warn(WHO ": cannot remove %s: %s", path, strerror(errno));
}

/* At the node engine's start: give back every step a previous engine held
 * (each in a process of its own: one bad record cannot stop the others). */
int cs_slurm_restore_held(void)
{
    DIR *d = held_dir[0] ? opendir(held_dir) : NULL;
    struct dirent *de;
    int n = 0;

    while (d && (de = readdir(d)) != NULL) {
        char path[PATH_MAX + 300], rec[CS_SLURM_REC_MAX];
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", held_dir, de->d_name);
        if (strstr(de->d_name, ".new") == NULL && cs_read_file(path, rec, sizeof rec) > 0) {
            cs_warn(WHO ": a previous engine held '%s' and did not give it back: restoring it", rec);
            cs_rescue_isolated(cs_control_slurm.rescue, rec, 30.0);
            struct cs_slurm_rec r;
            if (cs_slurm_rec_parse(rec, &r) == 0 && r.suspended)
                cs_slurm_keep_frozen(r.freeze);   /* Slurm's suspend: not a leftover */
            n++;
        }
        unlink(path);
    }
    if (d)
        closedir(d);
    return n;
}

/* ------------------------------------------------------ left-frozen steps */

static char *kept[KEPT_MAX];
static int nkept;

void cs_slurm_keep_frozen(const char *dir)
{
    if (nkept < KEPT_MAX && (kept[nkept] = strdup(dir)) != NULL)
        nkept++;
    else if (nkept == KEPT_MAX)
        cs_warn(WHO ": more than %d steps Slurm holds suspended: %s may be thawed", KEPT_MAX, dir);
}

/* Whether name is a step the engine can have frozen: step_<s>[+<het>];
 * the batch, extern and interactive steps are never co-scheduled (a frozen
 * one is Slurm's suspend). */
static int numbered_step(const char *name)
{
    const char *p = name + 5;

    if (strncmp(name, "step_", 5) != 0 || !isdigit((unsigned char)*p))
        return 0;
    p += strspn(p, "0123456789");
    if (*p == '+' && isdigit((unsigned char)p[1]))
        p += 1 + strspn(p + 1, "0123456789");
    return *p == '\0';
}

/* Thaw dir's freezer if it reads frozen and is not Slurm's suspend; 1 when
 * it was thawed. */
static int thaw_left(int v2, const char *dir)
{
    struct cs_cgfreezer fz = { .v2 = v2, .events = -1, .dir = dir };

    for (int i = 0; i < nkept; i++)
        if (strcmp(kept[i], dir) == 0)
            return 0;
    if (cs_cgf_asked(&fz) != 1 || cs_cgf_ask(WHO, &fz, 0) < 0)
        return 0;
    cs_warn(WHO ": %s was left frozen (by an engine that died with its guardian): thawed", dir);
    return 1;
}

/* Root's subdirectories of dir (not "." or links), as names; NULL if none. */
static char **root_subdirs(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;

    *n = 0;
    while (d && (de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        if (de->d_name[0] == '.' || snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p ||
            lstat(p, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
            continue;
        char **nv = realloc(v, (size_t)(*n + 1) * sizeof *v);
        if (!nv || !(nv[*n] = strdup(de->d_name))) {
            v = nv;
            break;
        }
        v = nv;
        (*n)++;
    }
    if (d)
        closedir(d);
    return v;
}

static void free_names(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The v2 steps of a slurmstepd scope: <scope>/<any job dir>/step_<s>/user. */
static int thaw_scope(const char *scope)
{
    int nj, n = 0;
    char **jobs = root_subdirs(scope, &nj);

    for (int i = 0; i < nj; i++) {
        char jd[PATH_MAX], sd[PATH_MAX];
        DIR *d;
        struct dirent *de;
        if (snprintf(jd, sizeof jd, "%s/%s", scope, jobs[i]) >= (int)sizeof jd || !(d = opendir(jd)))
            continue;
        while ((de = readdir(d)) != NULL)
            if (numbered_step(de->d_name) &&
                snprintf(sd, sizeof sd, "%s/%s/user", jd, de->d_name) < (int)sizeof sd)
                n += thaw_left(1, sd);
        closedir(d);
    }
    free_names(jobs, nj);
    return n;
}

/* Every directory named [<node>_]slurmstepd.scope in root's part of the cgroup2
 * tree, at most SCOPE_DEPTH levels down: whatever slice holds it (25.11's
 * CgroupSlice), inside a container's cgroup or not. */
#define SCOPE_DEPTH 8
static int thaw_scopes(const char *dir, int depth)
{
    int nd, n = 0;
    char **sub = depth < SCOPE_DEPTH ? root_subdirs(dir, &nd) : NULL;

    if (!sub)
        return 0;
    for (int i = 0; i < nd; i++) {
        char p[PATH_MAX];
        size_t k = strlen(sub[i]);
        if (snprintf(p, sizeof p, "%s/%s", dir, sub[i]) >= (int)sizeof p)
            continue;
        if (k >= 16 && strcmp(sub[i] + k - 16, "slurmstepd.scope") == 0)
            n += thaw_scope(p);
        else
            n += thaw_scopes(p, depth + 1);
    }
    free_names(sub, nd);
    return n;
}

/* The engine stops, every step given back: the next one need not look for
 * leftovers (held: its records' directory). */
void cs_slurm_stopped(const char *held)
{
    char p[PATH_MAX];
    int fd;

    if (snprintf(p, sizeof p, "%s/%s", held, STOPPED) < (int)sizeof p &&
        (fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0)
        close(fd);
}

/* At the node engine's start (it holds the engine lock, so no other engine
 * runs), after the restore of the held records: unless the engine before
 * stopped and said so (cs_slurm_stopped: an engine started on demand stops
 * when idle, and a step of a job not co-scheduled that Slurm holds
 * suspended has no record to tell it from a leftover), a step freezer left
 * FROZEN (or a v2 step's user/cgroup.freeze left 1) that no record says
 * Slurm suspended is a previous engine's - one killed together with its
 * guardian, its records lost.  Thaw them, saying so.  The steps are found by their
 * place, not by one release's names: v2, user/ of every step_<s> of every
 * job directory (job_<j> or a SLUID) of every <node>_slurmstepd.scope in any
 * slice; v1, every step_<s> of every job_<j> of the freezer's slurm_<node>
 * (v1 kept those names).  Returns how many. */
int cs_slurm_thaw_leftovers(const char *held)
{
    char mnt[PATH_MAX], own[PATH_MAX], why[PATH_MAX + 256], pat[PATH_MAX + 80];
    int n = 0;
    glob_t g;

    if (snprintf(pat, sizeof pat, "%s/%s", held, STOPPED) < (int)sizeof pat && unlink(pat) == 0)
        return 0;

    if (cs_cgroup_locate(NULL, mnt, sizeof mnt, own, sizeof own, why, sizeof why) == 0)
        n += thaw_scopes(mnt, 0);
    if (cs_cgroup_locate("freezer", mnt, sizeof mnt, own, sizeof own, why, sizeof why) == 0) {
        snprintf(pat, sizeof pat, "%s/slurm*/uid_*/job_*/step_*", mnt);
        if (glob(pat, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++)
                if (numbered_step(strrchr(g.gl_pathv[i], '/') + 1))
                    n += thaw_left(0, g.gl_pathv[i]);
            globfree(&g);
        }
    }
    return n;
}
