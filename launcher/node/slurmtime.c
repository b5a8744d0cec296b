/*
 * slurmtime.c - time given back to Slurm: what a Slurm job's steps were held
 * frozen here, said to Slurm through scontrol (its time limit extended, its
 * AdminComment), and the last word when its last step leaves or the engine
 * stops.  internal.h, struct sjob, says how.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "node/node.h"
#include "node/internal.h"

/* ------------------------------------------------------------ time given back */

struct sjob *node_sjob_of(struct cs_serve *s, unsigned long job, int create)
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
    n->seen = cs_now();
    return n;
}

/* What a registration says of its job: extend=0|1, scontrol=, slurm_conf=
 * (root's: the plugin in slurmstepd).  An scontrol that is not root's and
 * out of others' reach is never run. */
void node_sjob_note(struct cs_serve *s, unsigned long job, const struct cs_msg *m)
{
    struct sjob *sj = node_sjob_of(s, job, 1);
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

/* Whether the job's room below its partition's MaxTime is still to be
 * asked (the probe): it would be asked, and has neither answered nor
 * failed yet, nor kept its steps waiting PROBE_WAIT.  After that its steps
 * may be frozen (a failed probe is tried again, a late answer still counts):
 * a slurmctld that does not answer must not turn co-scheduling off. */
int node_sjob_unasked(const struct sjob *sj)
{
    return sj->extend && sj->scontrol[0] && !sj->probed && sj->probe_after == 0 &&
           !(sj->probing && cs_now() - sj->probe_since >= PROBE_WAIT);
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
 * two updates a minute, and its last words once a minute).  An update that
 * adds minutes (extending) counts from the last one that added minutes: a
 * comment written while the job was not held does not make it wait. */
static int sjob_due(const struct sjob *sj, double now, int here, int extending)
{
    double last = extending ? sj->last_extend : sj->last_update;

    if (sj->child > 0 || !sj->scontrol[0])
        return 0;
    if (last == 0 || now - last >= GIVE_EVERY)
        return 1;
    return !here && (sj->last_extra == 0 || now - sj->last_extra >= GIVE_EVERY);
}

/* Seconds of time limit the job is owed now, ahead seconds in advance. */
static double sjob_pending(const struct sjob *sj, double ahead)
{
    return sj->extend ? sj->held + ahead - sj->given : 0;
}

static void give_back(const struct sjob *sj, long add, int probe);

/* Fork the job's scontrol child (reaped by sjob_reap); 0 when it runs. */
static int sjob_fork(struct sjob *sj, long add, int probe)
{
    pid_t pid = fork();

    if (pid == 0)
        give_back(sj, add, probe);
    if (pid < 0) {
        cs_warn("job %lu: fork: %s: frozen time not given back now", sj->job, strerror(errno));
        return -1;
    }
    sj->child = pid;
    sj->probing = probe;
    if (probe)
        sj->probe_since = cs_now();
    sj->adding = 0;
    sj->said_before = sj->said;
    sj->frozen_said_before = sj->frozen_said;
    return 0;
}

/* Start the job's update: pending seconds of time limit, in whole minutes,
 * and its AdminComment. */
static void sjob_give(struct cs_serve *s, struct sjob *sj, double pending)
{
    long add = pending > 0 ? (long)ceil(pending / 60.0) : 0;

    if (sjob_fork(sj, add, 0) < 0)
        return;
    double now = cs_now();
    /* within the minute of the update before and not an extension due on
     * its own minute: a last word (sjob_due) */
    if (sj->last_update > 0 && now - sj->last_update < GIVE_EVERY &&
        !(add > 0 && (sj->last_extend == 0 || now - sj->last_extend >= GIVE_EVERY)))
        sj->last_extra = now;
    sj->adding = (double)add * 60.0;
    sj->given += sj->adding;
    s->given_total += sj->adding;
    sj->said = sj->held;
    sj->frozen_said = sj->frozen;
    sj->last_update = now;
    if (add > 0)
        sj->last_extend = now;
}

/* The job's scontrol child, if it ended: reaped (child 0).  If it failed
 * (slurmctld down, slow or restarting), what it was to say is unsaid again
 * and tried RETRY_AFTER s later: minutes count as given once Slurm has them.
 * Exit 2: done, and the job's limit can take no further update (noroom). */
static void sjob_reap(struct cs_serve *s, struct sjob *sj)
{
    int st = 0;
    pid_t r;

    if (sj->child <= 0 || ((r = waitpid(sj->child, &st, WNOHANG)) != sj->child && !(r < 0 && errno == ECHILD)))
        return;
    sj->child = 0;
    int ok = r > 0 && WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2);
    if (ok && sj->fails > 0)
        cs_info("job %lu: Slurm answered again, after %d failed update%s", sj->job, sj->fails,
                sj->fails > 1 ? "s" : "");
    sj->fails = ok ? 0 : sj->fails + (r > 0);
    int probe = sj->probing;         /* a probe says nothing to Slurm: nothing to undo */
    sj->probing = 0;
    sj->probed = sj->probed || (ok && (probe || sj->adding > 0));   /* both read the MaxTime */
    if (probe && !ok)
        sj->probe_after = cs_now() + RETRY_AFTER;
    if (r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2)
        sj->noroom = 1;
    else if (r > 0 && !ok && !probe) {
        sj->given -= sj->adding;
        s->given_total -= sj->adding;
        sj->said = sj->said_before;
        sj->frozen_said = sj->frozen_said_before;
        sj->last_update = cs_now() - GIVE_EVERY + RETRY_AFTER;
        if (sj->adding > 0)
            sj->last_extend = sj->last_update;
        sj->last_extra = 0;
    }
    sj->adding = 0;
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
int node_hold_over(struct cs_engine *e, struct conn *c)
{
    struct sjob *sj;

    if (!c->hold)
        return 1;
    if ((sj = node_sjob_of(srv(e), c->hold, 0)) != NULL)
        sjob_reap(srv(e), sj);
    if (!sj || job_here(e, c->hold) || cs_now() >= c->hold_until) {
        c->hold = 0;
        return 1;
    }
    if (sjob_due(sj, cs_now(), 0, 0) && sjob_unsaid(sj))
        sjob_give(srv(e), sj, sjob_pending(sj, 0));
    if (sj->child == 0)
        c->hold = 0;                 /* nothing to say or not now, or the fork failed */
    return !c->hold;
}

/* The engine stops: every job's unsaid time goes out as a last word
 * (sjob_due; not waited for), and the held replies get their job's last
 * word, HOLD_MAX at most; then every reply queued is sent if the client
 * takes it now. */
void node_last_words(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    int held;

    for (int k = 0; k < s->nsj; k++) {
        sjob_reap(s, &s->sj[k]);
        if (sjob_due(&s->sj[k], cs_now(), 0, 0) && sjob_unsaid(&s->sj[k]))
            sjob_give(s, &s->sj[k], sjob_pending(&s->sj[k], 0));
    }
    do {
        held = 0;
        for (int k = 0; k < s->nc; k++)
            held += !node_hold_over(e, &s->c[k]);
        if (held)
            nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    } while (held);
    for (int k = 0; k < s->nc; k++)
        if (s->c[k].out)
            node_flush(&s->c[k]);
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

/* The value of KEY= in scontrol's one-line output ("" if absent): only for
 * output without free text of a user's (a partition's). */
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

    if (strcmp(v, "UNLIMITED") == 0 || strcmp(v, "Partition_Limit") == 0 || strcmp(v, "NOT_SET") == 0)
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

/* Whether scontrol's record of a job holds an AdminComment that is not
 * cosched's (any "AdminComment=" not followed by "cosched:"): a job name or
 * a path of the user's can add one, which only keeps cosched's comment off
 * that job, never puts it over a site's. */
static int site_comment(const char *doc)
{
    for (const char *p = doc; (p = strstr(p, "AdminComment=")) != NULL; p += 13)
        if ((p == doc || isspace((unsigned char)p[-1])) && strncmp(p + 13, "cosched:", 8) != 0)
            return 1;
    return 0;
}

/* JOB's line of `squeue -h -r -j JOB -o %A|%i|%l|%P`: Slurm's own fields,
 * none a user writes.  Its id as Slurm addresses it (an array task
 * ARRAY_TASK - JOB alone may name the whole array -; for a heterogeneous
 * job's component LEADER+OFFSET, LEADER), its limit and partition; -1 if
 * absent. */
static int squeue_job(unsigned long job, const char *doc, char *id, size_t idl, char *tl, size_t tll, char *part,
                      size_t pl)
{
    for (const char *l = doc; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        char a[32], i[64], t[64], pa[256];
        if (sscanf(l, "%31[^|\n]|%63[^|\n]|%63[^|\n]|%255[^|\n]", a, i, t, pa) != 4 ||
            strtoul(a, NULL, 10) != job)
            continue;
        i[strcspn(i, "+")] = '\0';
        snprintf(id, idl, "%s", i);
        snprintf(tl, tll, "%s", t);
        snprintf(part, pl, "%s", pa);
        return 0;
    }
    return -1;
}

/* A failure of give_back's: a warning for the first of a row of failed
 * runs and every FAILS_LOGGED-th after it, the others at debug level (a
 * slurmctld down for an hour, or no squeue beside scontrol, must not log
 * every RETRY_AFTER s for every held job). */
#define FAILS_LOGGED 30
#define FAILED(...) (sj->fails % FAILS_LOGGED == 0 ? cs_warn(__VA_ARGS__) : cs_debug(__VA_ARGS__))

/* The child that talks to slurmctld for one job: add minutes to its time
 * limit (never beyond its partition's MaxTime) and write the seconds held
 * to its AdminComment; a probe only reads.  Says what it did in the
 * engine's log.  Exit 0 when done (or nothing could be given: no limit),
 * 2 when done and the limit is then less than ROOM_MIN minutes below the
 * partition's MaxTime (the next update could not give what the job may be
 * held by then), 1 when Slurm did not answer: the engine tries again. */
static void give_back(const struct sjob *sj, long add, int probe)
{
    char out[16384], tl[64], part[256], max[64], jid[32], id[64], sq[PATH_MAX], why[PATH_MAX + 256], a1[96], a2[128];
    char *sc = (char *)sj->scontrol;
    long cur, lim, to = -1;
    const char *lost = probe ? "its room below its partition's MaxTime is asked again later"
                             : "frozen time not given back now";

    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* nothing of the engine's but the log: the guardian must see the engine
     * gone when it dies, the lock be free when it exits */
    if (cs_log_copy > 3)
        close_range(3, (unsigned)cs_log_copy - 1, 0);
    close_range(cs_log_copy >= 3 ? (unsigned)cs_log_copy + 1 : 3, ~0U, 0);
    snprintf(jid, sizeof jid, "%lu", sj->job);
    /* squeue beside scontrol, as trusted */
    snprintf(sq, sizeof sq, "%.*ssqueue", (int)(strrchr(sc, '/') - sc + 1), sc);
    if (cs_path_trusted(sq, why, sizeof why) != 0) {
        FAILED("job %lu: squeue %s is not used: %s: %s (%.0f s held)", sj->job, sq, why, lost, sj->held);
        _exit(1);
    }
    char *squeue[] = { sq, "-h", "-r", "-j", jid, "-o", "%A|%i|%l|%P", NULL };
    /* a heterogeneous job's component: its leader's limit is the one
     * Slurm kills all components at, and an update of the leader reaches
     * them all */
    unsigned long want = sj->job;
    for (int tries = 0; tries < 2; tries++) {
        if (run_capture(squeue, sj->conf, out, sizeof out) != 0 ||
            squeue_job(want, out, id, sizeof id, tl, sizeof tl, part, sizeof part) < 0) {
            FAILED("job %lu: %s -j %s failed: %s (%.0f s held)", sj->job, sq, jid, lost, sj->held);
            _exit(1);
        }
        if (strchr(id, '_') || (want = strtoul(id, NULL, 10)) == strtoul(jid, NULL, 10))
            break;
        snprintf(jid, sizeof jid, "%lu", want);
    }
    char *show[] = { sc, "-o", "show", "job", id, NULL };
    if (!probe && run_capture(show, sj->conf, out, sizeof out) != 0) {
        FAILED("job %lu: %s show job %s failed: frozen time not given back now (%.0f s held)", sj->job, sc, id,
               sj->held);
        _exit(1);
    }
    int mine = !probe && !site_comment(out), noroom = 0;
    cur = minutes_of(tl);
    if ((add > 0 || probe) && cur >= 0) {
        char *showp[] = { sc, "-o", "show", "partition", part, NULL };
        lim = run_capture(showp, sj->conf, out, sizeof out) == 0 ? (field(out, "MaxTime", max, sizeof max),
                                                                   minutes_of(max)) : -2;
        to = cur + add;
        if (lim == -2) {
            FAILED("job %lu: cannot read partition %s's MaxTime: %s", sj->job, part, lost);
            _exit(1);
        } else if (lim >= 0 && to > lim) {
            to = lim > cur ? lim : -1;
            cs_warn("job %lu: held %.0f s; its time limit stops at partition %s's MaxTime (%s)", sj->job, sj->held,
                    part, max);
        }
        noroom = lim >= 0 && lim - (to > cur ? to : cur) < ROOM_MIN;
        if (noroom)
            cs_info("job %lu: its time limit (%ld min) is less than %d min below partition %s's MaxTime (%s): "
                    "its steps here are never frozen from now on", sj->job, to > cur ? to : cur, ROOM_MIN, part,
                    max);
    }
    if (probe)
        _exit(noroom ? 2 : 0);
    int n = 0;
    char *upd[6] = { sc, "update", NULL, NULL, NULL, NULL };
    snprintf(a1, sizeof a1, "JobId=%s", id);
    upd[2] = a1;
    n = 3;
    /* an increment, not the sum: another node's engine may extend the
     * same job between this read and this write */
    if (to > cur) {
        snprintf(a2, sizeof a2, "TimeLimit=+%ld", to - cur);
        upd[n++] = a2;
    }
    char a3[160];
    if (mine) {
        snprintf(a3, sizeof a3, "AdminComment=cosched:held_s=%.0f,frozen_s=%.0f", sj->held, sj->frozen);
        upd[n++] = a3;
    }
    if (n == 3)
        _exit(noroom ? 2 : 0);
    if (run_capture(upd, sj->conf, out, sizeof out) != 0) {
        FAILED("job %lu: %s update %s%s%s failed: %s", sj->job, sc, a1, to > cur ? " " : "", to > cur ? a2 : "",
               out);
        _exit(1);
    }
    if (to > cur)
        cs_info("job %lu: its steps were all held frozen %.0f s: time limit %ld -> %ld min", sj->job, sj->held, cur,
                to);
    _exit(noroom ? 2 : 0);
}

/* Between two steps of the loop: count the time held, start the updates
 * that are due, reap the finished ones, forget jobs with nothing left. */
void node_account(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    double now = cs_now(), dt = s->acct_last > 0 ? now - s->acct_last : 0;
    int *allheld = calloc((size_t)s->nsj + 1, sizeof *allheld);

    s->acct_last = now;
    if (!allheld)
        return;
    for (int k = 0; k < s->nsj; k++) {
        sjob_reap(s, &s->sj[k]);
        s->sj[k].live = 0;
        allheld[k] = 1;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        struct served *sv = j->served;
        struct sjob *sj;
        if (j->state != CS_JOB_LIVE || !sv || !(sj = node_sjob_of(s, sv->job, 0)))
            continue;
        sj->live++;
        sj->seen = now;
        /* answered, failed, or not to be asked: an unasked step is on one
         * node, and the next plan may freeze it - unless its job's limit
         * has no room (just below, said in the log) */
        if (sv->unasked && !node_sjob_unasked(sj)) {
            sv->unasked = 0;
            j->nofreeze = 0;
        }
        if (sj->noroom && !j->nofreeze) {
            j->nofreeze = 1;          /* the next switch thaws it where it is */
            cs_info("step %s: never frozen from now on (its job's time limit is at its partition's MaxTime)",
                    j->name);
        }
        /* its room below MaxTime, asked once it registers here (again
         * RETRY_AFTER s after a failure; a step spanning nodes is never
         * held, one not yet asked is not held before the answer) */
        if (!sj->probed && (!j->nofreeze || sv->unasked) && sj->extend && sj->scontrol[0] && sj->child == 0 &&
            now >= sj->probe_after && sjob_fork(sj, 0, 1) < 0)
            sj->probe_after = now + RETRY_AFTER;
        if (j->frozen) {
            sv->frozen_s += dt;
            sj->frozen += dt;
        }
        /* a step Slurm suspended (scontrol suspend) gets that time back
         * from Slurm itself: not held by the engine then; nor is a step
         * no plan has run yet (it waits frozen for its first plan) */
        if (!j->frozen || j->fresh || (sv->nt > 0 && cs_proc_all_stopped(sv->t[0].pid) == 1))
            allheld[sj - s->sj] = 0;
    }
    for (int k = 0; k < s->nsj; k++) {
        struct sjob *sj = &s->sj[k];
        if (sj->live && allheld[k]) {
            sj->held += dt;
            s->held_total += dt;
        }
        /* while the job is held, give an update's interval ahead: the next
         * update can come only GIVE_EVERY s (and a step) later, and by then
         * the job may have been held that much longer - a job given exactly
         * its held time could pass its limit frozen in between */
        double pending = sjob_pending(sj, sj->live && allheld[k] ? GIVE_EVERY : 0);
        int here = sj->live > 0;
        if ((pending > 0 && sjob_due(sj, now, here, 1)) || (sjob_unsaid(sj) && sjob_due(sj, now, here, 0)))
            sjob_give(s, sj, pending);
    }
    /* jobs with no step here for FORGET_AFTER s, nothing running and
     * nothing left to say */
    int m = 0;
    for (int k = 0; k < s->nsj; k++) {
        struct sjob *sj = &s->sj[k];
        if (sj->live || sj->child || sjob_unsaid(sj) || now - sj->seen < FORGET_AFTER)
            s->sj[m++] = *sj;
    }
    s->nsj = m;
    free(allheld);
}

