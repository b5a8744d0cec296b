/*
 * cgroupfs.c - the cgroup file system layer under every cgroup backend
 * (cgroup1.c, cgroup2.c, slurm.c) and their rescue code in the guardian:
 * where a hierarchy is mounted and where a process sits in it, reading and
 * writing a cgroup's files, moving processes out, and reclaiming (removing)
 * a cgroup tree.  The kernel's freezer and CPU-time rules are cgrules.c;
 * Last, a cgroup tree someone else owns, walked within bounds (the
 * directories below a Slurm step, found breadth first: every parent before
 * its children, each opened with O_NOFOLLOW relative to its parent, at most
 * CS_CGTREE_GROUPS of them and a given depth; nothing below is ever recursed
 * into: the shape of the tree is its owner's, its size and depth are ours).
 *
 * Both own-run backends keep their run directories below the cgroup cosched
 * was started in (<own>/cosched/<pid>/job<N>), so a delegated subtree works
 * as well as the root.  Reclaiming a directory tree means: thaw it (both
 * versions' rule, cgrules.c), put its processes back into the origin
 * cgroup, recurse, rmdir children first; the same routine serves
 * job_release, fini, leftovers from a dead cosched and the guardian's
 * rescue, so there is one way of undoing.
 *
 * May use: core/, control/internal.h, control/cgroup.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

#define MAX_PASSES 64          /* rounds of moving processes out before giving up */
#define MAX_DEPTH 16           /* cgroup tree depth we are willing to reclaim */

/* ------------------------------------------------------- mounts, cgroups */

/* Decode mountinfo / record escapes (\ooo) in place. */
void cs_unescape(char *s)
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
        cs_unescape(tok[3]);
        cs_unescape(tok[4]);
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

int cs_cg_write_fd(const char *who, int fd, const char *where, const char *file, const char *val)
{
    size_t len = strlen(val);
    ssize_t w = -1;
    int saved;

    if (fd >= 0) {
        w = write(fd, val, len);
        saved = errno;
        close(fd);
        errno = w >= 0 && w != (ssize_t)len ? EIO : saved;
    }
    if (w == (ssize_t)len)
        return 0;
    if (who) {
        saved = errno;
        cs_err("%s: cannot write %s to %s/%s: %s", who, val, where, file, strerror(saved));
        errno = saved;
    }
    return -1;
}

int cs_cg_write(const char *who, const char *dir, const char *file, const char *val)
{
    return cs_cg_write_fd(who, cg_open(dir, file, O_WRONLY), dir, file, val);
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
    /* mems first: when one write fails the cpus are as they were, as the
     * caller's failure says (the bindings learnt at the next move compare
     * the threads' CPUs with what the engine believes they were given) */
    if (mems && !hwloc_bitmap_iszero(mems) && cg_write_set(who, dir, "cpuset.mems", mems) < 0)
        return -1;
    return cg_write_set(who, dir, "cpuset.cpus", cpus) < 0 ? -1 : 0;
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
    /* thaw first: a task frozen by the v1 freezer cannot even die; which
     * version dir is, the file that exists says (the other is ENOENT) */
    for (int v2 = 0; v2 <= 1; v2++) {
        struct cs_cgfreezer f = { .v2 = v2, .events = -1, .dir = dir };
        if (cs_cgf_ask(NULL, &f, 0) < 0 && errno != ENOENT)
            cs_warn("%s: cannot thaw %s/%s: %s", who, dir, v2 ? "cgroup.freeze" : "freezer.state",
                    strerror(errno));
    }
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
        if (de->d_type != DT_DIR || !cs_proc_digits(de->d_name))
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

int cs_cg_mkdir(const char *who, const char *dir, int exist_ok)
{
    if (mkdir(dir, 0755) == 0 || (exist_ok && errno == EEXIST))
        return 0;
    if (errno == EEXIST)
        cs_err("%s: %s already exists; it was not created by this run and is not reused", who, dir);
    else
        cs_err("%s: cannot create %s: %s", who, dir, strerror(errno));
    return -1;
}

/* ------------------------------------------------- a tree someone else owns */

void cs_cgtree_close(struct cs_cgtree *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        close(t->fd[i]);
    free(t);
}

/* The tree below dir, down to depth levels, of the subdirectories whose
 * name starts with prefix (NULL: all); NULL when dir cannot be opened. */
struct cs_cgtree *cs_cgtree_open(const char *dir, int depth, const char *prefix)
{
    struct cs_cgtree *t = calloc(1, sizeof *t);

    if (!t)
        return NULL;
    t->fd[0] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (t->fd[0] < 0) {
        free(t);
        return NULL;
    }
    t->n = 1;
    t->parent[0] = -1;
    snprintf(t->name[0], sizeof t->name[0], "%s", dir);
    for (int i = 0; i < t->n && !t->truncated; i++) {
        int dfd = dup(t->fd[i]);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        struct dirent *de;
        if (!d) {
            if (dfd >= 0)
                close(dfd);
            continue;
        }
        while ((de = readdir(d)) != NULL) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
                (prefix && strncmp(de->d_name, prefix, strlen(prefix)) != 0))
                continue;
            if (t->depth[i] >= depth || t->n == CS_CGTREE_GROUPS) {
                t->truncated = 1;
                break;
            }
            int fd = openat(t->fd[i], de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0)
                continue;               /* removed meanwhile */
            t->fd[t->n] = fd;
            t->parent[t->n] = (short)i;
            t->depth[t->n] = (short)(t->depth[i] + 1);
            snprintf(t->name[t->n], sizeof t->name[0], "%s", de->d_name);
            t->n++;
        }
        closedir(d);
    }
    return t;
}

/* The path of group i, for messages. */
const char *cs_cgtree_path(const struct cs_cgtree *t, int i, char *buf, size_t len)
{
    if (t->parent[i] < 0) {
        snprintf(buf, len, "%s", t->name[i]);
        return buf;
    }
    cs_cgtree_path(t, t->parent[i], buf, len);
    size_t n = strlen(buf);
    if (n < len)
        snprintf(buf + n, len - n, "/%s", t->name[i]);
    return buf;
}

/* Write val to file of group i (relative to its open directory). */
int cs_cgtree_write(const char *who, const struct cs_cgtree *t, int i, const char *file, const char *val)
{
    char path[PATH_MAX];
    int fd = openat(t->fd[i], file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW), saved = errno;

    if (fd < 0 || cs_cg_write_fd(NULL, fd, NULL, file, val) < 0) {
        saved = errno;
        cs_err("%s: cannot write %s to %s/%s: %s", who, val, cs_cgtree_path(t, i, path, sizeof path), file,
               strerror(saved));
        errno = saved;
        return -1;
    }
    return 0;
}

/* The contents of file in group i (malloc'd, at most 1 MiB), or NULL. */
/* The contents of fd (closed here; < 0: NULL), at most 1 MiB: a file of a
 * tree someone else owns, whose size they choose. */
static char *read_capped(int fd)
{
    size_t n = 0, cap = 16384;
    char *buf = fd >= 0 ? malloc(cap) : NULL;

    while (buf) {
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (cap - n < 4096) {
            char *p = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!p)
                break;
            buf = p;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = '\0';
    if (fd >= 0)
        close(fd);
    return buf;
}

char *cs_cgtree_read(const struct cs_cgtree *t, int i, const char *file)
{
    return read_capped(openat(t->fd[i], file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
}

size_t cs_cgtree_tids(const char *dir, int v2, int depth, size_t bound, pid_t **out)
{
    /* depth 0: dir alone, without the walk (a move's cost, binds.c) */
    struct cs_cgtree *t = depth > 0 ? cs_cgtree_open(dir, depth, NULL) : NULL;
    int groups = depth > 0 ? (t ? t->n : 0) : 1;
    size_t n = 0;
    pid_t *v = groups && bound ? malloc(bound * sizeof *v) : NULL;
    const char *file = v2 ? "cgroup.threads" : "tasks";

    for (int i = 0; v && i < groups && n < bound; i++) {
        char *list = t ? cs_cgtree_read(t, i, file) : read_capped(cg_open(dir, file, O_RDONLY)), *p, *end;
        for (p = list; p && *p && n < bound; p = end) {
            long tid = strtol(p, &end, 10);
            if (end == p) {
                end = p + 1;
                continue;
            }
            if (tid > 0 && tid <= INT_MAX)
                v[n++] = (pid_t)tid;
        }
        free(list);
    }
    cs_cgtree_close(t);
    *out = v;
    return n;
}
