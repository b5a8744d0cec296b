/*
 * control/internal.h - what control/'s own files share, not for the layers
 * above (they use control.h): /proc (proc.c), affinity (affinity.c), the
 * jobs' own CPU bindings (binds.c), the guardian's records (guardian.c) and
 * the one freeze-and-wait loop (freeze.c).  The cgroup file system layer and
 * the kernel's cgroup rules are in cgroup.h, included here.  who ("cgroup1")
 * prefixes messages.
 *
 * May use: core/, control/.  Used by: the .c files of control/, tests/bench.
 */
#ifndef COSCHED_CONTROL_INTERNAL_H
#define COSCHED_CONTROL_INTERNAL_H

#include "control/control.h"
#include "control/cgroup.h"

/* ------------------------------------------------------------- proc.c */
struct cs_pstat { pid_t pid, ppid, pgrp; char state; uint64_t ticks; /* u+s+cu+cs */ };
/* Processes of the job whose group is pgid: group members and, to a fixed
 * point, children of members.  *out is malloc'ed. */
int cs_proc_members(pid_t pgid, struct cs_pstat **out, size_t *n);
/* pid is alive and its comm is "cosched". */
int cs_proc_is_cosched(pid_t pid);
/* One process's /proc/PID/stat (ticks = utime+stime+cutime+cstime); -1 with errno. */
int cs_proc_stat(pid_t pid, struct cs_pstat *st);
/* 1 when s is a non-empty string of digits (a /proc or cgroup pid name). */
int cs_proc_digits(const char *s);
/* Sum utime+stime(+cutime+cstime) of processes in pgid, ns. */
int cs_proc_cputime_pgrp(pid_t pgid, uint64_t *ns);
/* CPU time of a job counted from /proc, for backends without cgroup
 * accounting: the reaped instances (rusage) plus the live process group,
 * never going back (a member reaped outside the group drops out of /proc). */
struct cs_proc_cpu { uint64_t reaped_ns, last_ns; };
int cs_proc_cpu_read(struct cs_proc_cpu *a, pid_t live_pgid, uint64_t *ns);
void cs_proc_cpu_reaped(struct cs_proc_cpu *a, const struct rusage *ru);
/* Keep a counter monotonic: the larger of v and the last value returned. */
uint64_t cs_proc_cpu_monotonic(struct cs_proc_cpu *a, uint64_t v);
/* cpu_idle() of the backends on a real node: idle + iowait of the cpuN
 * lines of /proc/stat, in USER_HZ ticks, as seconds.  -1 when the file
 * cannot be read or a cpu of cpus has no line (offline). */
int cs_proc_cpu_idle(struct cs_engine *e, hwloc_const_bitmap_t cpus, double *idle_s);

/* --------------------------------------------------------- affinity.c */
/* Set the affinity of every thread of every process in process group pgid
 * (and of the children of its members); tasks set, or -1. */
int cs_affinity_pgrp(pid_t pgid, hwloc_const_bitmap_t cpus);
/* Bind every thread listed in dir's cgroup.threads (v2) or tasks (v1). */
int cs_affinity_cgroup(const char *who, const char *dir, hwloc_const_bitmap_t cpus);

/* ------------------------------------------------------------ binds.c */
/* The CPU bindings a job's threads chose themselves, kept across core moves:
 * note() before a move from cur, apply() after it, with the threads found
 * in the job's cgroups; apply gives each bound thread binding & now (all of
 * now where that is empty) and returns how many it had to set.  With all,
 * it also gives the others all of now where they have less; without, it
 * takes the mover's word that they have now: true after affinity was set on
 * every thread, and after a cpuset write that did not grow the set (now
 * within cur: a thread that had all of cur gets all of now from any kernel).
 * format/parse: "TID=LIST;..." for guardian records. */
struct cs_binds;
struct cs_binds *cs_binds_new(void);
void cs_binds_free(struct cs_binds *s);
void cs_binds_note(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t cur);
int cs_binds_apply(struct cs_binds *s, const pid_t *tids, size_t n, hwloc_const_bitmap_t now, int all);
/* For a rescue (no note() before it): take the threads of tids that s does
 * not list as unbound, or bound as their thread group leader is when s
 * lists it so; apply(all) then gives them all of now. */
void cs_binds_adopt(struct cs_binds *s, const pid_t *tids, size_t n);
int cs_binds_count(const struct cs_binds *s);
int cs_binds_format(const struct cs_binds *s, char *out, size_t len);
int cs_binds_parse(struct cs_binds *s, const char *text);
/* Before a move of the cores of a job whose threads live in the cgroup dir
 * (v2 or v1; at most CS_BINDS_TIDS threads; groups the job made below dir
 * are not followed: theirs keep the kernel's rule), from cur: make *s if
 * needed, list the threads into *tids (malloc'd) and note them.  Their
 * count; 0 when there is nothing to keep or cur is NULL or empty (a job's
 * first move: its threads are learnt at the next; apply() after the move
 * with the same list). */
#define CS_BINDS_TIDS 4096
size_t cs_binds_look(struct cs_binds **s, const char *dir, int v2, hwloc_const_bitmap_t cur, pid_t **tids);
/* After a move that grew the set to now (and its apply()), with the
 * threads listed again: those s does not know were created during the move
 * by a thread whose requested mask was still the smaller set (Linux >= 6.2
 * copies it to the new thread and keeps it when the cpuset grows), so they
 * are adopted and given their leader's binding & now, or all of now
 * (apply(all)).  tids is reordered.  How many it had to set.  look_again:
 * the same with the threads of the tree below dir (depth and bound as
 * cs_cgtree_tids), again while a pass set some (a latecomer may have made
 * a thread before it was set), CS_BINDS_PASSES passes at most; how many it
 * set in all. */
int cs_binds_latecomers(struct cs_binds *s, pid_t *tids, size_t n, hwloc_const_bitmap_t now);
#define CS_BINDS_PASSES 4
int cs_binds_look_again(struct cs_binds *s, const char *dir, int v2, int depth, size_t bound, hwloc_const_bitmap_t now);
/* After a cpuset write from cur to now, with look()'s list: apply(), all
 * when the set grew (see apply), and then look_again(). */
void cs_binds_moved(struct cs_binds *s, const char *dir, int v2, const pid_t *tids, size_t n,
                    hwloc_const_bitmap_t cur, hwloc_const_bitmap_t now);

/* --------------------------------------------------------- fzwatch.c */
/* Writes of a freezer's file (fzwatch.c says why): add a watch (0, or -1
 * with errno: then written() says 0 always), delete it, and written(): 1
 * when the file was written since the last call. */
struct cs_fzwatch {
    int wd;
    int written;
};
int cs_fzwatch_add(struct cs_fzwatch *w, const char *file);
void cs_fzwatch_del(struct cs_fzwatch *w);
int cs_fzwatch_written(struct cs_fzwatch *w);

/* --------------------------------------------------------- guardian.c */
/* Hand a record ("what to restore") to the guardian; forget with unrecord. */
void cs_guard_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cs_guard_forget(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Run rescue(record) in a child process, waited for at most timeout s
 * (then killed): a rescue that crashes or hangs costs one record, not all. */
int cs_rescue_isolated(void (*rescue)(const char *), const char *record, double timeout);
/* Records: append one escaped field; split (in place) and unescape. */
int cs_rec_add(char *rec, size_t len, const char *field);
int cs_rec_split(char *rec, char **fields, int max);
/* slurmleft.c: a Slurm step's record (the guardian's and the held file's;
 * cpuset "" for none, binds NULL or "" for none), made and parsed, and the
 * held files */
#define CS_SLURM_REC_MAX 8192
struct cs_slurm_rec {
    int v2, suspended;
    const char *freeze, *cpuset, *cores, *binds;
};
int cs_slurm_rec_make(char *out, size_t len, const struct cs_slurm_rec *r);
int cs_slurm_rec_parse(char *copy, struct cs_slurm_rec *r);
void cs_slurm_held_add(const char *record);
void cs_slurm_held_drop(const char *record);
/* a step freezer the restore leaves frozen (a record says Slurm suspended
 * it): cs_slurm_thaw_leftovers passes it by */
void cs_slurm_keep_frozen(const char *dir);

/* ----------------------------------------------------------- freeze.c */
/* The bound of every freeze and thaw confirmation, s (freeze.c says why). */
#define CS_FREEZE_TIMEOUT 0.100
/*
 * The one freeze-and-wait loop (freeze.c) behind the backends'
 * freeze_many(): start(), then check() each job until it is frozen or the
 * common bound has passed, waiting on event_fd()s with ppoll() where given
 * (an event_fd() of -1: that job is looked at after a back-off), else with
 * a back-off; then laggard() for each job still not frozen.  The rules'
 * thaw-and-wait (cs_cgf_thaw) runs through it too, "frozen" read "thawed".  arg
 * and i (the job's index in jobs) are handed to every call.
 *   start:   0 started, 1 nothing to freeze (counts as frozen), -1 failed
 *            (reported, nothing to undo), -2 not frozen on purpose (silent)
 *   check:   1 frozen, 0 not yet, -1 failed (reported and undone)
 *   laggard: not frozen at the bound: undo the freeze and warn
 *   settle:  optional, for each frozen job once the wait is over: 1 when it
 *            must be given back after all (undone and reported)
 * frozen[i] ends 1 for a frozen job, else 0.  0 when all froze, else -1.
 */
struct cs_freeze_ops {
    const char *who;           /* "cgroup1": prefixes messages */
    const char *events;        /* what event_fd() watches, for a message */
    int (*start)(void *arg, int i, struct cs_job *j);
    int (*check)(void *arg, int i, struct cs_job *j);
    int (*event_fd)(void *arg, int i, struct cs_job *j);
    void (*laggard)(void *arg, int i, struct cs_job *j);
    int (*settle)(void *arg, int i, struct cs_job *j);
};
int cs_freeze_wait(const struct cs_freeze_ops *w, void *arg, struct cs_job **jobs, int n, int *frozen);

#endif
