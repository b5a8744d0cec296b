/*
 * fzwatch.c - who else writes a freezer's file: an inotify watch (IN_MODIFY,
 * which kernfs sends for every write to a cgroup file, also one that
 * changes nothing) on a step's freezer.state (v1) or cgroup.freeze (v2).
 *
 * Why.  Slurm's kill of a step writes its freezer before any signal: every
 * kill path sends SIGCONT first (scancel, a time limit; a step's own scancel
 * sends SIGKILL), and proctrack/cgroup answers SIGCONT and SIGKILL by
 * thawing the step (v1 freezer.state THAWED, v2 step/user/cgroup.freeze 0:
 * the files slurm.c freezes through) - also when the step runs.  A step
 * that takes its SIGTERM at once shows no pending signal afterwards, so
 * that write is what tells the engine (slurm.c, dying()).
 *
 * One inotify instance for the process (fs.inotify.max_user_instances is
 * 128 by default; watches are plenty), a watch per freezer.  The owner's
 * own writes are drained right after it makes them (cs_fzwatch_written
 * once more): a write of someone else's in the microseconds between the
 * two is taken for the owner's.  A queue that overflows (IN_Q_OVERFLOW,
 * 16,384 events by default; not reached while each write is drained right
 * after it) loses writes, and is ignored: reading it as "written" would take
 * a step the engine froze for Slurm's suspend (slurm.c, slurm_touched), left
 * frozen until Slurm writes again.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "control/internal.h"

static int ino = -1;
static struct cs_fzwatch **watched;    /* drain() finds a watch by its wd */
static int nwatched;

int cs_fzwatch_add(struct cs_fzwatch *w, const char *file)
{
    struct cs_fzwatch **n;

    w->wd = -1;
    w->written = 0;
    if (ino < 0 && (ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
        return -1;
    if ((w->wd = inotify_add_watch(ino, file, IN_MODIFY)) < 0)
        return -1;
    if (!(n = realloc(watched, (size_t)(nwatched + 1) * sizeof *n))) {
        inotify_rm_watch(ino, w->wd);
        w->wd = -1;
        errno = ENOMEM;
        return -1;
    }
    watched = n;
    watched[nwatched++] = w;
    return 0;
}

void cs_fzwatch_del(struct cs_fzwatch *w)
{
    for (int i = 0; i < nwatched; i++)
        if (watched[i] == w) {
            watched[i] = watched[--nwatched];
            break;
        }
    if (w->wd >= 0)
        inotify_rm_watch(ino, w->wd);       /* also once the cgroup is gone (6.18: no IN_IGNORED came, the
                                             * watch held the file until now); an error is no matter */
    w->wd = -1;
}

/* Read every event queued: each marks its watch written. */
static void drain(void)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t r;

    while (ino >= 0 && (r = read(ino, buf, sizeof buf)) > 0)
        for (char *p = buf; p + sizeof(struct inotify_event) <= buf + r;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            for (int i = 0; i < nwatched; i++)
                if (watched[i]->wd == ev->wd && (ev->mask & IN_MODIFY))
                    watched[i]->written = 1;
            p += sizeof *ev + ev->len;
        }
}

int cs_fzwatch_written(struct cs_fzwatch *w)
{
    int was;

    if (w->wd < 0)
        return 0;
    drain();
    was = w->written;
    w->written = 0;
    return was;
}
