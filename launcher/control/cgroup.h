/*
 * control/cgroup.h - the cgroup layer under every cgroup backend: the own-run
 * backends (cgroup1.c, cgroup2.c) and the Slurm backend (slurm.c) ask it
 * *how* (the kernel's rules), and say only *where* (their directories).
 *
 *   cgroupfs.c  the file system: mounts, where a process sits, a cgroup's
 *               files, moving processes out, reclaiming a tree, and a
 *               bounded walk of a cgroup tree someone else owns (a Slurm
 *               step's, whose shape is its user's)
 *   cgrules.c   the kernel's rules, one v1 and one v2 set: freeze, frozen?,
 *               thaw-and-wait, the v2 event descriptor (cgroup.events), CPU
 *               time, the v1 nesting rule for a tree's cores
 *
 * Private to control/ (internal.h includes it).  who ("cgroup1") prefixes
 * messages; a NULL who keeps a function silent where it says so.
 */
#ifndef COSCHED_CONTROL_CGROUP_H
#define COSCHED_CONTROL_CGROUP_H

#include <stdint.h>
#include <sys/types.h>
#include <hwloc.h>

/* ---------------------------------------------------------- cgroupfs.c */
/* pid's cgroup path in the v1 hierarchy carrying ctl, or in cgroup2 when ctl
 * is NULL (pid 0: this process); -1 with errno (ENOENT: no such line). */
int cs_proc_cgroup(pid_t pid, const char *ctl, char *path, size_t len);
/* Directory of cosched's own cgroup in the v1 hierarchy of ctl, or in
 * cgroup2 if ctl is NULL, and that hierarchy's mount point; -1 and why. */
int cs_cgroup_locate(const char *ctl, char *mnt, size_t mntlen, char *dir, size_t dirlen,
                     char *why, size_t whylen);
/* dir/file I/O: write reports "who: cannot write V to P: why" unless who is
 * NULL; read NUL-terminates and strips the newline (returns length). */
int cs_cg_write(const char *who, const char *dir, const char *file, const char *val);
/* The one write: val to fd (open for writing; closed here; -1: fails with
 * the open's errno), reported as where/file unless who is NULL. */
int cs_cg_write_fd(const char *who, int fd, const char *where, const char *file, const char *val);
int cs_cg_read(const char *dir, const char *file, char *buf, size_t len);
char *cs_cg_read_all(const char *dir, const char *file);
/* Write mems (unless NULL or empty) to dir/cpuset.mems, then cpus to
 * dir/cpuset.cpus, as lists; reports as cs_cg_write (who must not be NULL).
 * On failure the cpus are unchanged. */
int cs_cg_write_cpuset(const char *who, const char *dir, hwloc_const_bitmap_t cpus,
                       hwloc_const_bitmap_t mems);
int cs_cgroup_move_procs(const char *who, const char *from, const char *to);
/* Thaw, (restore affinity,) move processes to origin, rmdir, children first. */
int cs_cgroup_reclaim(const char *who, const char *dir, const char *origin,
                      hwloc_const_bitmap_t restore);
/* Reclaim every cosched_dir/<pid> whose pid is not a live cosched, warning. */
void cs_cgroup_reclaim_leftovers(const char *who, const char *cosched_dir, const char *origin,
                                 hwloc_const_bitmap_t restore);
/* mkdir dir (0755); exist_ok: an existing dir is fine, else it is refused
 * as not this run's.  0, or -1 after reporting. */
int cs_cg_mkdir(const char *who, const char *dir, int exist_ok);
/* 0 if cgroup2's cpuset controller can confine jobs here; else -1 and why
 * (cgroup2.c). */
int cs_cgroup2_cpuset_usable(char *why, size_t len);
/* Decode mountinfo and record escapes (\ooo) in place. */
void cs_unescape(char *s);

/* --------------------------- cgroupfs.c: a tree someone else owns */
/* A cgroup tree as far as it is followed: directories found breadth first
 * (every parent before its children), each opened O_NOFOLLOW relative to
 * its parent, at most CS_CGTREE_GROUPS of them and depth levels. */
#define CS_CGTREE_GROUPS 256
struct cs_cgtree {
    int n, truncated;           /* truncated: more groups or levels than followed */
    int fd[CS_CGTREE_GROUPS];
    short parent[CS_CGTREE_GROUPS], depth[CS_CGTREE_GROUPS];
    char name[CS_CGTREE_GROUPS][256];
};
/* The tree below dir, down to depth levels, of the subdirectories whose
 * name starts with prefix (NULL: all); NULL when dir cannot be opened. */
struct cs_cgtree *cs_cgtree_open(const char *dir, int depth, const char *prefix);
void cs_cgtree_close(struct cs_cgtree *t);
/* The path of group i, for messages and path-based calls. */
const char *cs_cgtree_path(const struct cs_cgtree *t, int i, char *buf, size_t len);
/* Write val to file of group i; reports (who) and -1 on failure. */
int cs_cgtree_write(const char *who, const struct cs_cgtree *t, int i, const char *file, const char *val);
/* The contents of file in group i (malloc'd, at most 1 MiB), or NULL. */
char *cs_cgtree_read(const struct cs_cgtree *t, int i, const char *file);
/* The threads of the tree below dir, down to depth levels (0: dir alone,
 * without a walk; v2: each group's cgroup.threads, v1: its tasks), at most
 * bound of them; malloc'd into *out, count returned (0 on any failure). */
size_t cs_cgtree_tids(const char *dir, int v2, int depth, size_t bound, pid_t **out);

/* ----------------------------------------------------------- cgrules.c */
/*
 * A cgroup's freezer, v1 or v2:
 *   v1: freezer.state of dir (a freezer hierarchy's cgroup): write FROZEN or
 *       THAWED; reads FROZEN, FREEZING or THAWED.  No change notification:
 *       waits poll.
 *   v2: write 1 or 0 to cgroup.freeze; the "frozen" line of cgroup.events
 *       says what is reached.  events holds cgroup.events open (kernfs marks
 *       it POLLPRI when "frozen" changes): waits ppoll() on it.
 * dir is the caller's string, which must outlive the freezer.
 */
struct cs_cgfreezer {
    int v2;
    int events;                 /* v2: cgroup.events, open; -1: none (v1, or read by path) */
    const char *dir;
};
/* Fill f; for v2 open dir/cgroup.events.  0, or -1 after reporting. */
int cs_cgf_open(struct cs_cgfreezer *f, const char *who, int v2, const char *dir);
void cs_cgf_close(struct cs_cgfreezer *f);
/* Ask for frozen (on) or thawed; reports as cs_cg_write (who NULL: silent). */
int cs_cgf_ask(const char *who, const struct cs_cgfreezer *f, int on);
/* What is reached: 1 frozen, 0 thawed, 2 on the way (v1 FREEZING), -1
 * unreadable (errno). */
int cs_cgf_state(const struct cs_cgfreezer *f);
/* The state as text for a message (v1 freezer.state's word, v2 "frozen N"). */
const char *cs_cgf_describe(const struct cs_cgfreezer *f, char *buf, size_t len);
/* What is asked (v1 freezer.state FROZEN or FREEZING, v2 cgroup.freeze 1):
 * 1 frozen, 0 not, -1. */
int cs_cgf_asked(const struct cs_cgfreezer *f);
/* A freeze's check for cs_freeze_wait: 1 frozen, 0 not yet, -1 unreadable
 * (reported with what, "job 3" or "step 7.0", and the freeze undone). */
int cs_cgf_check(const char *who, const char *what, const struct cs_cgfreezer *f);
/* Thaw and wait, through cs_freeze_wait (bounded by CS_FREEZE_TIMEOUT),
 * until the freezer reads thawed; 0, or -1 after reporting with what. */
int cs_cgf_thaw(const char *who, const char *what, const struct cs_cgfreezer *f);
/* CPU time used by the cgroup dir so far, ns: v2 cpu.stat's usage_usec, v1
 * cpuacct.usage (dir in the cpuacct hierarchy).  -1, reported unless who
 * is NULL. */
int cs_cg_cpu_ns(const char *who, int v2, const char *dir, uint64_t *ns);
/* v1 cores of a tree: cpuset.cpus of every group below dir (depth levels)
 * set to list, grown to the union parents first, then shrunk children first
 * (a v1 child must stay inside its parent).  0; -1 after reporting; -2 when
 * the tree is larger than followed and the cores cannot be moved
 * consistently (growing always can: what is below stays inside). */
int cs_cg1_tree_cpus(const char *who, const char *dir, int depth, const char *list);

#endif
