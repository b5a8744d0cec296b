/*
 * cgrules.c - the kernel's cgroup rules, written once for every caller
 * (cgroup1.c, cgroup2.c and slurm.c ask here how; they say only where):
 *
 *              v1                              v2
 *   freeze     freezer.state <- FROZEN         cgroup.freeze <- 1
 *   frozen?    freezer.state reads FROZEN      cgroup.events "frozen 1"
 *              (FREEZING on the way)
 *   thaw       freezer.state <- THAWED,        cgroup.freeze <- 0,
 *              wait for THAWED (polled)        wait for "frozen 0" (ppoll)
 *   event fd   none (v1 has no notification)   cgroup.events, held open:
 *                                              kernfs marks it POLLPRI when
 *                                              "frozen" changes
 *   CPU time   cpuacct.usage (ns)              cpu.stat usage_usec
 *   cores      cpuset.cpus of a tree: parents  cpuset.cpus (the kernel
 *              first to grow, children first   confines what is below)
 *              to shrink (a child must stay
 *              inside its parent)
 *
 * Every wait, freeze or thaw, is freeze.c's loop, bounded by
 * CS_FREEZE_TIMEOUT: on cgroup.events with ppoll() where there is one (the
 * state is re-read after every wake-up, so no change can be missed), else
 * after a back-off.  Unlike v1, a v2-frozen task still dies on SIGKILL; a
 * v1-frozen one does not until thawed, so every undo path thaws first
 * (cgroupfs.c's reclaim asks both versions' thaw).
 *
 * May use: core/, control/internal.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

static const char *freeze_file(int v2)
{
    return v2 ? "cgroup.freeze" : "freezer.state";
}

static const char *state_file(int v2)
{
    return v2 ? "cgroup.events" : "freezer.state";
}

int cs_cgf_open(struct cs_cgfreezer *f, const char *who, int v2, const char *dir)
{
    char file[PATH_MAX + 32];

    f->v2 = v2;
    f->dir = dir;
    f->events = -1;
    if (!v2)
        return 0;
    snprintf(file, sizeof file, "%s/cgroup.events", dir);
    f->events = open(file, O_RDONLY | O_CLOEXEC);
    if (f->events < 0) {
        cs_err("%s: cannot open %s: %s", who, file, strerror(errno));
        return -1;
    }
    return 0;
}

void cs_cgf_close(struct cs_cgfreezer *f)
{
    if (f->events >= 0)
        close(f->events);
    f->events = -1;
}

int cs_cgf_ask(const char *who, const struct cs_cgfreezer *f, int on)
{
    return cs_cg_write(who, f->dir, freeze_file(f->v2), f->v2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED"));
}

int cs_cgf_state(const struct cs_cgfreezer *f)
{
    char buf[256], *p;

    if (f->v2) {
        if (f->events >= 0) {
            ssize_t r = pread(f->events, buf, sizeof buf - 1, 0);
            if (r < 0)
                return -1;
            buf[r] = '\0';
        } else if (cs_cg_read(f->dir, "cgroup.events", buf, sizeof buf) < 0)
            return -1;
        if (!(p = strstr(buf, "frozen "))) {
            errno = EINVAL;
            return -1;
        }
        return p[7] == '1';
    }
    if (cs_cg_read(f->dir, "freezer.state", buf, sizeof buf) < 0)
        return -1;
    return strcmp(buf, "FROZEN") == 0 ? 1 : strcmp(buf, "THAWED") == 0 ? 0 : 2;
}

const char *cs_cgf_describe(const struct cs_cgfreezer *f, char *buf, size_t len)
{
    int s = f->v2 ? cs_cgf_state(f) : -1;

    if (f->v2 && s >= 0)
        snprintf(buf, len, "frozen %d", s);
    else if (f->v2 || cs_cg_read(f->dir, "freezer.state", buf, len) < 0)
        snprintf(buf, len, "unreadable: %s", strerror(errno));
    return buf;
}

int cs_cgf_asked(const struct cs_cgfreezer *f)
{
    char buf[32];

    if (cs_cg_read(f->dir, freeze_file(f->v2), buf, sizeof buf) < 0)
        return -1;
    return f->v2 ? strcmp(buf, "1") == 0 : strcmp(buf, "THAWED") != 0;   /* v1 FREEZING: asked */
}

int cs_cgf_check(const char *who, const char *what, const struct cs_cgfreezer *f)
{
    int s = cs_cgf_state(f);

    if (s == 1)
        return 1;
    if (s < 0) {
        cs_err("%s: %s: cannot read %s/%s: %s", who, what, f->dir, state_file(f->v2), strerror(errno));
        cs_cgf_ask(who, f, 0);
        return -1;
    }
    return 0;
}

/* thaw-and-wait through cs_freeze_wait: "frozen" there reads "thawed" */
struct thaw { const char *who, *what; const struct cs_cgfreezer *f; };

static int thaw_start(void *arg, int i, struct cs_job *j)
{
    struct thaw *t = arg;

    return cs_cgf_ask(t->who, t->f, 0) < 0 ? -1 : 0;
}

static int thaw_check(void *arg, int i, struct cs_job *j)
{
    struct thaw *t = arg;
    int s = cs_cgf_state(t->f);

    if (s < 0) {
        cs_err("%s: %s: cannot read %s/%s: %s", t->who, t->what, t->f->dir, state_file(t->f->v2),
               strerror(errno));
        return -1;
    }
    return s == 0;
}

static int thaw_event_fd(void *arg, int i, struct cs_job *j)
{
    return ((struct thaw *)arg)->f->events;
}

static void thaw_laggard(void *arg, int i, struct cs_job *j)
{
    struct thaw *t = arg;
    char buf[256];

    cs_err("%s: %s: %s/%s still reads %s %.0f ms after it was thawed", t->who, t->what, t->f->dir,
           state_file(t->f->v2), cs_cgf_describe(t->f, buf, sizeof buf), CS_FREEZE_TIMEOUT * 1e3);
}

int cs_cgf_thaw(const char *who, const char *what, const struct cs_cgfreezer *f)
{
    struct thaw t = { who, what, f };
    struct cs_freeze_ops ops = {
        .who = who,
        .events = "cgroup.events",
        .start = thaw_start,
        .check = thaw_check,
        .event_fd = f->events >= 0 ? thaw_event_fd : NULL,
        .laggard = thaw_laggard,
    };
    struct cs_job *none = NULL;
    int thawed;

    return cs_freeze_wait(&ops, &t, &none, 1, &thawed);
}

int cs_cg_cpu_ns(const char *who, int v2, const char *dir, uint64_t *ns)
{
    const char *file = v2 ? "cpu.stat" : "cpuacct.usage";
    char buf[1024], *p = buf, *end;
    unsigned long long v;

    if (cs_cg_read(dir, file, buf, sizeof buf) < 0) {
        if (who)
            cs_err("%s: cannot read %s/%s: %s", who, dir, file, strerror(errno));
        return -1;
    }
    if (v2 && (p = strstr(buf, "usage_usec ")) != NULL)
        p += 11;
    v = p ? strtoull(p, &end, 10) : 0;
    if (!p || end == p) {
        if (who && v2)
            cs_err("%s: %s/cpu.stat has no 'usage_usec N' line", who, dir);
        else if (who)
            cs_err("%s: %s/cpuacct.usage holds '%s', expected a number of ns", who, dir, buf);
        return -1;
    }
    *ns = v2 ? (uint64_t)v * 1000ull : (uint64_t)v;
    return 0;
}

int cs_cg1_tree_cpus(const char *who, const char *dir, int depth, const char *list)
{
    struct cs_cgtree *t;
    int r = 0;

    char cur[512] = "", uni[1024];
    hwloc_bitmap_t a = hwloc_bitmap_alloc(), b = hwloc_bitmap_alloc();
    if (!(t = cs_cgtree_open(dir, depth, NULL))) {
        cs_err("%s: cannot open %s: %s", who, dir, strerror(errno));
        r = -1;
        goto out;
    }
    cs_cg_read(dir, "cpuset.cpus", cur, sizeof cur);
    hwloc_bitmap_list_sscanf(a, cur);
    hwloc_bitmap_list_sscanf(b, list);
    hwloc_bitmap_or(a, a, b);
    hwloc_bitmap_list_snprintf(uni, sizeof uni, a);
    if (t->truncated && strcmp(uni, list) != 0) {
        r = -2;
        goto out;
    }
    for (int i = 0; i < t->n; i++)
        if (cs_cgtree_write(who, t, i, "cpuset.cpus", uni) < 0) {
            r = -1;
            goto out;
        }
    if (strcmp(uni, list) != 0)
        for (int i = t->n - 1; i >= 0; i--)
            if (cs_cgtree_write(who, t, i, "cpuset.cpus", list) < 0)
                r = -1;
out:
    cs_cgtree_close(t);
    hwloc_bitmap_free(a);
    hwloc_bitmap_free(b);
    return r;
}
