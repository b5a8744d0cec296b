/*
 * slurmleft.c - Slurm steps a dead engine left frozen, found and thawed when
 * the next node engine starts (cs_slurm_thaw_leftovers, control.h): one of
 * the Slurm backend's safety rules, beside slurm.c.  A step freezer left
 * FROZEN (or a v2 step's user/cgroup.freeze left 1) is a previous engine's,
 * or Slurm's suspend: proctrack/cgroup answers the SIGSTOP of `scontrol
 * suspend` by freezing the step (v1: its freezer; cgroup/v2: its
 * user/cgroup.freeze, read in 26.05's cgroup_v2.c).  The engine's record of a
 * step says when Slurm suspended it (slurm.c, make_record): the restore of
 * those records passes such a freezer here (cs_slurm_keep_frozen) and it is
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
