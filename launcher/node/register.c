/*
 * register.c - the node engine as the engine's host (cs_node_host,
 * engine/host.h): the socket's connections, read without blocking; the
 * protocol (shared/proto.h); a task's registration - its step located once
 * (cs_slurm_step_locate), the step added to the engine (cs_engine_add) or the
 * task joined to it - and its end (deregister, or its pidfd); signals stop
 * the engine.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "node/node.h"
#include "node/internal.h"
#include "policy/policy.h"

/* ------------------------------------------------------------ jobs */

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        cs_warn("pidfd_open(%d): %s: the task leaves the engine only when the plugin deregisters it", (int)pid,
                strerror(errno));
    return fd;
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* The live job of step job.step whose cgroup is `where`, or - where NULL -
 * the one holding task pid. */
static struct cs_job *find_step(struct cs_engine *e, unsigned long job, unsigned long step, const char *where,
                                pid_t pid, int *task)
{
    for (int i = 0; i < e->njobs; i++) {
        struct served *sv = e->jobs[i]->served;
        if (e->jobs[i]->state != CS_JOB_LIVE || !sv || sv->job != job || sv->step != step)
            continue;
        if (where && strcmp(where, sv->at.freeze) == 0)
            return e->jobs[i];
        for (int k = 0; !where && k < sv->nt; k++)
            if (sv->t[k].pid == pid) {
                *task = k;
                return e->jobs[i];
            }
    }
    return NULL;
}

static void task_remove(struct cs_engine *e, struct cs_job *j, int k, const char *why)
{
    struct served *sv = j->served;
    if (sv->t[k].fd >= 0)
        close(sv->t[k].fd);
    sv->t[k] = sv->t[--sv->nt];
    if (sv->nt == 0)
        cs_engine_drop(e, j, why);   /* the engine's managed cpus shrink with it */
}

/* The OK of a registration of j: its id and the policy, and its OpenMP page
 * in *page_fd (-1: none) when the task asked for it (want: omp_page=1). */
static void register_ok(struct cs_engine *e, struct cs_job *j, long want, char *rep, size_t len, int *page_fd)
{
    if (want)
        *page_fd = cs_engine_omp_page(e, j);
    snprintf(rep, len, "OK id=%d policy=%s%s%s", j->id, cs_policy_name(e->policy),
             cs_policy_shares_cpus(e->policy) ? " shares_cpus=1" : "", *page_fd >= 0 ? " omp_page=1" : "");
}

/* Why a step is never frozen (j->nofreeze: set here and by node_account),
 * in the words of the join line and of cosched status; NULL when it may be
 * frozen. */
const char *node_nofreeze_why(const struct cs_job *j)
{
    const struct served *sv = j->served;

    if (!j->nofreeze || !sv)
        return NULL;
    return sv->nnodes > 1 ? "spans nodes: never frozen"
           : sv->unasked ? "not frozen until Slurm says how far its job's time limit may grow"
                         : "its job's time limit is at its partition's MaxTime: never frozen";
}

/* Returns 1 (job set changed) or 0 with an error reply in rep; *page_fd: the
 * descriptor to send with the reply (-1: none). */
static int do_register(struct cs_engine *e, const struct cs_msg *m, pid_t peer, char *rep, size_t len, int *page_fd)
{
    struct cs_serve *s = srv(e);
    char err[PATH_MAX + 256];
    long job, step, uid, pid, v, want_page = 0;
    const char *pol = cs_msg_get(m, "policy");
    struct cs_job *j;
    int rf = RF_REQUEST;

    *page_fd = -1;
    if (cs_msg_long(m, "job", 0, 0xffffffffL, 0, &job, err, sizeof err) < 0 ||
        cs_msg_long(m, "step", 0, 0xffffffffL, 0, &step, err, sizeof err) < 0 ||
        cs_msg_long(m, "uid", 0, 0x7fffffffL, 0, &uid, err, sizeof err) < 0 ||
        cs_msg_long(m, "pid", 2, INT_MAX, 0, &pid, err, sizeof err) < 0 ||
        cs_msg_long(m, "omp_page", 0, 1, 1, &want_page, err, sizeof err) < 0)
        goto bad;
    if (!cs_msg_get(m, "cores")) {
        snprintf(err, sizeof err, "register: key 'cores' missing");
        goto bad;
    }
    static struct cs_slurm_step at;   /* where the step is: found once, here (large: not on the stack) */
    const char *where = at.freeze;    /* its cgroup on this node (one machine may be several nodes) */
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (cs_slurm_step_locate((pid_t)pid, peer, (unsigned long)job, (unsigned long)step, &at, cpus, err,
                             sizeof err) < 0) {
        hwloc_bitmap_free(cpus);
        rf = RF_NOT_IN_STEP;
        goto bad;
    }
    if ((j = find_step(e, (unsigned long)job, (unsigned long)step, where, 0, NULL)) != NULL) {
        struct served *sv = j->served;
        hwloc_bitmap_free(cpus);
        for (int k = 0; k < sv->nt; k++)
            if (sv->t[k].pid == (pid_t)pid) {
                node_sjob_note(s, (unsigned long)job, m);   /* its Slurm job: time given back */
                register_ok(e, j, want_page, rep, len, page_fd);
                return 0;
            }
        struct task *nt = realloc(sv->t, (sv->nt + 1) * sizeof *nt);
        if (!nt) {
            snprintf(err, sizeof err, "out of memory");
            rf = RF_ENGINE;
            goto bad;
        }
        sv->t = nt;
        sv->t[sv->nt++] = (struct task){ (pid_t)pid, pidfd_open_((pid_t)pid) };
        if (sv->nt > j->omp_procs)
            j->omp_procs = sv->nt;   /* the most: the page's team may be a departed task's */
        /* it starts on all the step's cores; a folded step's tasks are on fewer
         * (v2 without cpuset binds thread by thread): it joins them now */
        if (!hwloc_bitmap_isequal(j->cpus, cs_job_home(e, j)) && e->ctl->set_cpus(e, j, j->cpus, j->mems) < 0)
            cs_warn("step %s: task %ld joined but could not be moved to the step's cpus", j->name, pid);
        node_sjob_note(s, (unsigned long)job, m);   /* its Slurm job: time given back */
        register_ok(e, j, want_page, rep, len, page_fd);
        return 0;
    }
    /* a new step: the policy it asks for, if the engine is idle */
    int live = 0;
    for (int i = 0; i < e->njobs; i++)
        live += e->jobs[i]->state == CS_JOB_LIVE;
    if (pol && strcmp(pol, cs_policy_name(e->policy)) != 0 && live == 0) {
        struct cs_policy *np = node_load_policy(s, pol, err, sizeof err);
        if (!np) {
            hwloc_bitmap_free(cpus);
            rf = RF_POLICY;
            goto bad;
        }
        cs_info("policy %s now (asked by step %ld.%ld; the engine was idle)", pol, job, step);
        cs_engine_set_policy(e, np);
    } else if (pol && strcmp(pol, cs_policy_name(e->policy)) != 0) {
        struct cs_policy *np = node_load_policy(s, pol, err, sizeof err);   /* is it a real policy at all? */
        if (!np) {
            hwloc_bitmap_free(cpus);
            rf = RF_POLICY;
            goto bad;
        }
        cs_policy_free(np);
        cs_info("step %ld.%ld asked for policy %s; co-scheduled under %s, which runs the node's steps now", job,
                step, pol, cs_policy_name(e->policy));
    }
    j = calloc(1, sizeof *j);
    struct served *sv = calloc(1, sizeof *sv);
    if (!j || !sv) {
        free(j);
        free(sv);
        hwloc_bitmap_free(cpus);
        snprintf(err, sizeof err, "out of memory");
        rf = RF_ENGINE;
        goto bad;
    }
    sv->job = (unsigned long)job;
    sv->step = (unsigned long)step;
    sv->uid = (uid_t)uid;
    snprintf(sv->prog, sizeof sv->prog, "%s", cs_msg_get(m, "name") ? cs_msg_get(m, "name") : "?");
    snprintf(sv->asked, sizeof sv->asked, "%s", pol ? pol : cs_policy_name(e->policy));
    snprintf(sv->opts, sizeof sv->opts, "%s", cs_msg_get(m, "opts") ? cs_msg_get(m, "opts") : "");
    sv->at = at;
    struct passwd *pw = getpwuid((uid_t)uid);
    snprintf(sv->user, sizeof sv->user, "%s", pw ? pw->pw_name : "?");
    sv->nnodes = cs_msg_long(m, "nnodes", 1, 100000, 1, &v, err, sizeof err) == 0 ? (int)v : 1;
    sv->t = malloc(sizeof *sv->t);
    sv->t[0] = (struct task){ (pid_t)pid, pidfd_open_((pid_t)pid) };
    sv->nt = 1;
    j->omp_procs = 1;
    j->id = ++s->next_id;
    j->name = cs_strdup_printf("%ld.%ld", job, step);
    j->origin = cs_strdup_printf("Slurm step %ld.%ld (uid %ld)", job, step, uid);
    j->allowed = cpus;
    node_sjob_note(s, (unsigned long)job, m);   /* its Slurm job: time given back */
    struct sjob *sj = node_sjob_of(s, (unsigned long)job, 0);
    sv->unasked = sv->nnodes == 1 && sj && node_sjob_unasked(sj);
    j->nofreeze = sv->nnodes > 1 || (sj && sj->noroom) || sv->unasked;
    j->served = sv;
    j->has_owner = 1;
    j->owner = uid;
    j->slurm = &sv->at;              /* the step's identity for the control backend: data, not its name */
    int ncores = 0;
    for (int k = 0; k < e->topo->ncores; k++)
        ncores += hwloc_bitmap_intersects(e->topo->cores[k].pus, cpus);
    j->threads = ncores ? ncores : hwloc_bitmap_weight(cpus);
    if (cs_msg_long(m, "priority", -1000, 1000, 1, &v, err, sizeof err) == 0)
        j->priority = (int)v;
    const char *cls = cs_msg_get(m, "class");
    if (cls && (strcmp(cls, "S") == 0 || strcmp(cls, "C") == 0 || strcmp(cls, "N") == 0))
        j->cls_hint = cls[0];
    if (cs_engine_add(e, j, (pid_t)pid) < 0) {
        snprintf(err, sizeof err, "step %ld.%ld could not be put under control (see the engine's log)", job, step);
        if (sv->t[0].fd >= 0)
            close(sv->t[0].fd);
        free(sv->t);
        free(sv);
        j->served = NULL;
        cs_job_free(j);
        rf = RF_ENGINE;
        goto bad;
    }
    const char *never = node_nofreeze_why(j);
    cs_info("step %s (uid %ld, %s) joined: cores %s%s%s", j->name, uid, sv->prog, cs_msg_get(m, "cores"),
            never ? ", " : "", never ? never : "");
    register_ok(e, j, want_page, rep, len, page_fd);
    s->accepted++;
    return 1;
bad:
    s->refused[rf]++;
    snprintf(rep, len, "ERR %s", err);
    return 0;
}

/* Returns 1 (job set changed) or 0; an error reply in rep; *jobp: the job. */
static int do_deregister(struct cs_engine *e, const struct cs_msg *m, char *rep, size_t len, unsigned long *jobp)
{
    char err[256];
    long job, step, pid;
    struct cs_job *j;

    if (cs_msg_long(m, "job", 0, 0xffffffffL, 0, &job, err, sizeof err) < 0 ||
        cs_msg_long(m, "step", 0, 0xffffffffL, 0, &step, err, sizeof err) < 0 ||
        cs_msg_long(m, "pid", 2, INT_MAX, 0, &pid, err, sizeof err) < 0) {
        snprintf(rep, len, "ERR %s", err);
        return 0;
    }
    *jobp = (unsigned long)job;
    int k;
    if ((j = find_step(e, (unsigned long)job, (unsigned long)step, NULL, (pid_t)pid, &k)) != NULL) {
        snprintf(rep, len, "OK");
        task_remove(e, j, k, "its tasks ended");
        return 1;
    }
    snprintf(rep, len, "OK unknown=1");   /* already gone (pidfd was first): not an error */
    return 0;
}

/* ------------------------------------------------------------ socket */

static void conn_close(struct cs_serve *s, int k)
{
    close(s->c[k].fd);
    if (s->c[k].pass_fd >= 0)
        close(s->c[k].pass_fd);
    free(s->c[k].out);
    s->c[k] = s->c[--s->nc];
}

/* Queue msg on the connection's reply. */
static void reply(struct conn *c, const char *msg)
{
    size_t n = strlen(msg);
    char *p = realloc(c->out, c->olen + n + 1);

    if (!p)
        return;                      /* the client sees a short reply */
    memcpy(p + c->olen, msg, n + 1);
    c->out = p;
    c->olen += n;
}

/* Send what the client takes now; 1 when the reply is out (or cannot be). */
int node_flush(struct conn *c)
{
    while (c->ooff < c->olen) {
        ssize_t w = c->pass_fd >= 0 && c->ooff == 0
                    ? cs_proto_send_fd(c->fd, c->out, 1, c->pass_fd)
                    : send(c->fd, c->out + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0 && c->pass_fd >= 0) {
            close(c->pass_fd);       /* the client has its own now */
            c->pass_fd = -1;
        }
        if (w > 0)
            c->ooff += (size_t)w;
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && errno != EAGAIN && c->pass_fd >= 0) {
            /* the descriptor cannot go (a full socket buffer would say EAGAIN):
             * the reply goes without it, the step without a page */
            cs_warn("a reply's OpenMP page could not be sent: %s; the step runs without one", strerror(errno));
            close(c->pass_fd);
            c->pass_fd = -1;
        } else
            return w < 0 && errno == EAGAIN ? 0 : 1;
    }
    return 1;
}

/* Whether to log one more refusal: REFUSALS_LOGGED a minute, then a count
 * (refused requests cost a user nothing; the log is a tmpfs). */
static int refusal_logged(struct cs_serve *s)
{
    double now = cs_now();

    if (now - s->refusals_since > 60) {
        if (s->refusals_quiet)
            cs_warn("socket: %d more refused requests in the last minute were not logged", s->refusals_quiet);
        s->refusals_since = now;
        s->refusals_logged = s->refusals_quiet = 0;
    }
    if (s->refusals_logged < REFUSALS_LOGGED) {
        s->refusals_logged++;
        return 1;
    }
    s->refusals_quiet++;
    return 0;
}

#define REFUSED(s, ...) do { if (refusal_logged(s)) cs_warn(__VA_ARGS__); } while (0)

/* A whole request arrived on connection k: answer it.  1: job set changed. */
static int handle(struct cs_engine *e, struct conn *c)
{
    struct cs_msg m;
    char err[300], rep[PATH_MAX + 400];
    int changed = 0;

    if (cs_msg_parse(&m, c->buf, c->len, err, sizeof err) < 0) {
        snprintf(rep, sizeof rep, "ERR %s\n", err);
        REFUSED(srv(e), "socket: refused a request from pid %d (uid %d): %s", (int)c->pid, (int)c->uid, err);
        reply(c, rep);
        return 0;
    }
    if (strcmp(m.verb, "ping") == 0) {
        snprintf(rep, sizeof rep, "OK version=%d pid=%d policy=%s\n", CS_PROTO_VERSION, (int)getpid(),
                 cs_policy_name(e->policy));
    } else if (strcmp(m.verb, "status") == 0) {
        const char *fmt = cs_msg_get(&m, "format");
        int text = fmt && strcmp(fmt, "text") == 0;
        char *doc = node_status_doc(e, c->uid, text);
        if (!doc) {
            reply(c, "ERR out of memory\n");
            return 0;
        }
        reply(c, text ? "OK text\n" : "OK json\n");
        reply(c, doc);
        free(doc);
        return 0;
    } else if (strcmp(m.verb, "register") == 0 || strcmp(m.verb, "deregister") == 0) {
        if (c->uid != 0) {
            snprintf(rep, sizeof rep, "ERR %s is for root (the Slurm plugin) only; you are uid %d\n", m.verb,
                     (int)c->uid);
            REFUSED(srv(e), "socket: refused %s from uid %d (pid %d): not root", m.verb, (int)c->uid, (int)c->pid);
            if (m.verb[0] == 'r')
                srv(e)->refused[RF_NOT_ROOT]++;
        } else {
            char r[PATH_MAX + 300];
            unsigned long job = 0;
            changed = m.verb[0] == 'r' ? do_register(e, &m, c->pid, r, sizeof r, &c->pass_fd)
                                       : do_deregister(e, &m, r, sizeof r, &job);
            if (r[0] == 'E')
                cs_warn("socket: %s refused: %s", m.verb, r + 4);
            else if (job) {
                c->hold = job;       /* its last word to Slurm first, if it has one to say */
                c->hold_until = cs_now() + HOLD_MAX;
            }
            snprintf(rep, sizeof rep, "%s\n", r);
        }
    } else {
        snprintf(rep, sizeof rep, "ERR unknown verb '%s' (known: ping, register, deregister, status)\n", m.verb);
    }
    reply(c, rep);
    return changed;
}

static int host_nfds(struct cs_engine *e)
{
    int n = 2 + srv(e)->nc;          /* the socket, the connections, the tasks, the signals */
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->served)
            n += ((struct served *)e->jobs[i]->served)->nt;
    return n;
}

static int host_pollfds(struct cs_engine *e, struct pollfd *pf, int max)
{
    struct cs_serve *s = srv(e);
    int n = 0;

    pf[n++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
    for (int k = 0; k < s->nc && n < max; k++)
        pf[n++] = (struct pollfd){ .fd = s->c[k].fd, .events = s->c[k].hold ? 0 : s->c[k].out ? POLLOUT : POLLIN };
    for (int i = 0; i < e->njobs; i++) {
        struct served *sv = e->jobs[i]->served;
        if (!sv || e->jobs[i]->state != CS_JOB_LIVE)
            continue;
        for (int k = 0; k < sv->nt && n < max - 1; k++)
            pf[n++] = (struct pollfd){ .fd = sv->t[k].fd, .events = POLLIN };
    }
    pf[n++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
    return n;
}

/* SIGINT, SIGTERM, SIGHUP: the node engine stops (tidy) and gives every step
 * back to Slurm, thawed, on its own cores.  It signals no step (Slurm does)
 * and reaps only its own scontrol runs (sjob_reap). */
static int on_signal(struct cs_serve *s)
{
    struct signalfd_siginfo si;
    int stop = 0;

    while (read(s->sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue;
        if (!s->stopping)
            cs_info("received %s: giving every step back to Slurm (thawed, on its own cores) and exiting",
                    strsignal(sig));
        s->stopping = 1;
        stop = 1;
    }
    return stop;
}

/* A connection refused at the door: one line if the client takes it now. */
static void turn_away(int fd, const char *msg)
{
    if (send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* nothing more to do for it */
    }
    close(fd);
}

static void accept_all(struct cs_serve *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct ucred cr;
        socklen_t cl = sizeof cr;
        int mine = 0;
        if (fd < 0)
            return;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        for (int k = 0; k < s->nc; k++)
            mine += s->c[k].uid == cr.uid;
        if (s->nc == MAX_CONNS || (cr.uid != 0 && s->nc >= MAX_CONNS - ROOT_SLOTS)) {
            REFUSED(s, "socket: refused a connection from pid %d (uid %d): %d connections open",
                    (int)cr.pid, (int)cr.uid, s->nc);
            turn_away(fd, "ERR the engine is busy (too many connections); try again\n");
            continue;
        }
        if (cr.uid != 0 && mine >= PER_USER) {
            REFUSED(s, "socket: refused a connection from pid %d (uid %d): that user has %d open already",
                    (int)cr.pid, (int)cr.uid, mine);
            turn_away(fd, "ERR you have too many connections to the engine open; close some and try again\n");
            continue;
        }
        s->c[s->nc++] = (struct conn){ .fd = fd, .uid = cr.uid, .pid = cr.pid, .deadline = cs_now() + CONN_DEADLINE,
                                       .pass_fd = -1 };
    }
}

static int host_ready(struct cs_engine *e, const struct pollfd *pf, int n)
{
    struct cs_serve *s = srv(e);
    int changed = 0, nc = s->nc, k;
    int done[MAX_CONNS] = { 0 };

    if (n > 0 && pf[n - 1].fd == s->sfd) {   /* the signals: last */
        if ((pf[--n].revents & POLLIN) && on_signal(s))
            return 1;
    }

    /* ended tasks first: a pidfd closed here may get its number back from a
     * registration below, which must not inherit this round's POLLIN */
    for (int p = 1 + nc; p < n; p++) {
        if (!(pf[p].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        for (int i = 0; i < e->njobs; i++) {
            struct served *sv = e->jobs[i]->served;
            if (!sv || e->jobs[i]->state != CS_JOB_LIVE)
                continue;
            for (int t = 0; t < sv->nt; t++)
                if (sv->t[t].fd == pf[p].fd) {
                    task_remove(e, e->jobs[i], t, "its tasks ended");
                    changed = 1;
                    goto next;
                }
        }
next:;
    }
    /* then the connections, in the order poll saw them */
    for (k = 0; k < nc && 1 + k < n; k++) {
        struct conn *c = &s->c[k];
        if (c->hold) {                       /* its reply waits for a job's last word */
            if (pf[1 + k].fd == c->fd && (pf[1 + k].revents & (POLLHUP | POLLERR)))
                c->hold = 0;                 /* nobody waits for it any more */
            done[k] = node_hold_over(e, c) && node_flush(c);
            continue;
        }
        if (pf[1 + k].fd != c->fd || !pf[1 + k].revents)
            continue;
        if (c->out) {                        /* sending the reply */
            done[k] = node_flush(c);
            continue;
        }
        if (!(pf[1 + k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = read(c->fd, c->buf + c->len, CS_PROTO_MAX + 1 - c->len);
        if (r > 0)
            c->len += (size_t)r;
        char *nl = memchr(c->buf, '\n', c->len);
        int answered = 1;
        if (nl || r == 0 || c->len > CS_PROTO_MAX) {
            if (!nl && c->len > CS_PROTO_MAX) {
                char rep[128];
                snprintf(rep, sizeof rep, "ERR request longer than the limit of %d bytes\n", CS_PROTO_MAX);
                REFUSED(s, "socket: refused an oversized request from pid %d (uid %d)", (int)c->pid, (int)c->uid);
                reply(c, rep);
            } else if (c->len == 0) {
                answered = 0;                /* closed without a word */
            } else if (!nl) {
                reply(c, "ERR request truncated: no newline before the end of the connection\n");
                REFUSED(s, "socket: refused a truncated request from pid %d (uid %d)", (int)c->pid, (int)c->uid);
            } else {
                c->len = (size_t)(nl - c->buf);
                changed |= handle(e, c);
            }
            /* the reply goes out as the client reads it, within the deadline */
            c->deadline = cs_now() + CONN_DEADLINE;
            done[k] = !answered || !c->out || (node_hold_over(e, c) && node_flush(c));
        } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
            done[k] = 1;
        }
    }
    for (k = nc - 1; k >= 0; k--)
        if (done[k] || cs_now() > s->c[k].deadline) {
            if (!done[k] && !s->c[k].out) {
                reply(&s->c[k], "ERR no complete request within 2 s\n");
                node_flush(&s->c[k]);
            }
            conn_close(s, k);
        }
    if (pf[0].revents & POLLIN)
        accept_all(s);
    return changed;
}

static int host_tidy(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);

    if (s->stopping)
        return 1;                    /* a signal: every step goes back to Slurm */
    node_account(e);
    node_metrics_sample(e);
    if (s->metrics && cs_now() - s->metrics_last >= METRICS_EVERY)
        node_metrics_write(e, 1);
    cs_engine_forget(e, node_served_job_free);
    if (e->njobs > 0 || s->idle_exit <= 0) {
        s->idle_since = cs_now();
        return 0;
    }
    if (cs_now() - s->idle_since >= s->idle_exit) {
        cs_info("no step registered for %g s: exiting (--idle-exit)", s->idle_exit);
        return 1;
    }
    return 0;
}

/* The earliest end of a held reply's wait (0: none held). */
static double host_wake(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    double t = 0;

    for (int k = 0; k < s->nc; k++)
        if (s->c[k].hold && (t == 0 || s->c[k].hold_until < t))
            t = s->c[k].hold_until;
    return t;
}


/* The engine's host: jobs from outside, registered over the socket. */
static int host_begin(struct cs_engine *e)
{
    if ((srv(e)->sfd = cs_engine_signalfd()) < 0)
        return -1;
    return cs_guard_start(e->ctl);
}

static void host_end(struct cs_engine *e, int complete)
{
    cs_guard_done();
    if (srv(e)->sfd >= 0)
        close(srv(e)->sfd);
    srv(e)->sfd = -1;
}

/* No step live: more may register. */
static int host_more(struct cs_engine *e)
{
    return 1;
}

const struct cs_host_ops cs_node_host = {
    .name = "node engine",
    .command = "serve",
    .begin = host_begin,
    .end = host_end,
    .more = host_more,
    .nfds = host_nfds,
    .pollfds = host_pollfds,
    .ready = host_ready,
    .wake = host_wake,
    .tidy = host_tidy,
};

