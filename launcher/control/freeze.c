/*
 * freeze.c - the one freeze-and-wait loop of the control backends, behind
 * the freeze_many() of cgroup1.c, cgroup2.c, signals.c and slurm.c:
 *
 *   start every job's freeze -> wait until each is confirmed, against one
 *   bound for all (the waits overlap instead of adding up) -> a job still
 *   not frozen at the bound goes back to its backend, which undoes the
 *   freeze and says why (the job runs this step rather than stall the
 *   switch)
 *
 * Waiting: where the backend gives a job an event descriptor (cgroup v2's
 * cgroup.events, which the kernel marks POLLPRI when "frozen" changes: the
 * own-run cgroup2 backend and the Slurm backend's v2 steps) the loop sleeps
 * in ppoll() until one changes; a job without one (v1, signals) is looked
 * at again after a back-off of 20 us doubling to 2 ms: a freeze usually
 * completes in a few hundred microseconds (BENCHMARKS.md), so the first
 * looks come early and a slow freeze costs a few dozen looks at most.
 * Thaw-and-wait (cgrules.c's cs_cgf_thaw) runs through this loop too, with
 * "thawed" for "frozen": one wait, whichever way the state goes.
 *
 * The bound, CS_FREEZE_TIMEOUT (internal.h, 100 ms), was each backend's own
 * constant before this loop was written once (FREEZE_TIMEOUT in cgroup1.c,
 * cgroup2.c and slurm.c, STOP_TIMEOUT in signals.c), all 100 ms: one value,
 * the same behaviour.
 */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"

int cs_freeze_wait(const struct cs_freeze_ops *w, void *arg, struct cs_job **jobs, int n, int *frozen)
{
    struct pollfd *pfd = NULL;
    long delay = 20000;                     /* ns */
    double t0;
    int i, pending = 0, ret = 0;

    if (w->event_fd && (pfd = calloc((size_t)n + 1, sizeof *pfd)) == NULL) {
        cs_err("%s: out of memory", w->who);
        return -1;
    }
    for (i = 0; i < n; i++) {
        frozen[i] = w->start(arg, i, jobs[i]);
        pending += frozen[i] == 0;
    }
    t0 = cs_now();
    while (pending) {
        int npfd = 0, nofd = !pfd;
        double left, wait;
        for (i = 0; i < n; i++) {
            int s, fd;
            if (frozen[i])
                continue;
            s = w->check(arg, i, jobs[i]);
            if (s != 0) {
                frozen[i] = s;
                pending--;
            } else if (pfd && (fd = w->event_fd(arg, i, jobs[i])) >= 0) {
                pfd[npfd].fd = fd;
                pfd[npfd++].events = POLLPRI;
            } else
                nofd = 1;
        }
        left = CS_FREEZE_TIMEOUT - (cs_now() - t0);
        if (!pending || left <= 0)
            break;
        /* a job without an event descriptor is looked at again after the back-off */
        wait = nofd && (double)delay * 1e-9 < left ? (double)delay * 1e-9 : left;
        struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
        if (npfd) {
            if (ppoll(pfd, (nfds_t)npfd, &ts, NULL) < 0 && errno != EINTR) {
                cs_err("%s: waiting on %s: %s", w->who, w->events, strerror(errno));
                break;
            }
        } else
            nanosleep(&ts, NULL);
        if (nofd && delay < 2000000)
            delay *= 2;
    }
    for (i = 0; i < n; i++) {
        if (frozen[i] == 1 && w->settle && w->settle(arg, i, jobs[i])) {
            frozen[i] = 0;
            ret = -1;
            continue;
        }
        if (frozen[i] == 1)
            continue;
        ret = -1;
        if (frozen[i] == 0)
            w->laggard(arg, i, jobs[i]);
        frozen[i] = 0;
    }
    free(pfd);
    return ret;
}
