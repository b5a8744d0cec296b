/*
 * local.c - the host of `cosched run` (engine/host.h): the jobs are this
 * machine's processes, forked by cosched.
 *
 *   start:  the job's output destinations, a child that blocks before its
 *           exec until the engine has put it under control (go: one byte
 *           on a pipe); OMP_* and the OpenMP shim set in the child
 *   during: the jobs' output passed through, each line prefixed [name]
 *           (--output prefix), the progress line (--progress) kept apart
 *           from it; SIGCHLD reaps instances (cs_engine_ended); SIGINT,
 *           SIGTERM and SIGHUP are forwarded to every job after thawing and
 *           unconfining it (a frozen task cannot act on a signal), and after
 *           --kill-timeout the stragglers get SIGKILL; a job stopped on
 *           purpose (cs_engine_stop_job) gets SIGKILL at its deadline
 *   end:    the guardian told "done", the output drained, the summary
 *
 * SIGKILL of cosched itself is the guardian's business (guardian.c).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "local/local.h"
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/engine_state.h"
#include "control/control.h"
#include "policy/policy.h"
#include "shared/ompinject.h"
#include "engine/omppage.h"

/* The host's state (one run per process). */
static struct {
    int sfd;                  /* signals (cs_engine_signalfd) */
    int signalled;            /* a signal arrived: forwarded */
    double kill_deadline;     /* SIGKILL to every job after this */
    int killed;               /* the jobs got SIGKILL */
    int *go;                  /* per job id: the start pipe's write end (-1: none) */
    int ngo;
} L = { .sfd = -1 };

/* ------------------------------------------------------------ output */

struct outbuf { int fd; FILE *to; struct cs_job *job; size_t len; char buf[4096]; };

static struct outbuf *outs;
static int nouts;

static void progress_clear(void);

static void out_flush_line(struct outbuf *o, size_t n)
{
    if (o->to == stdout || o->to == stderr)
        progress_clear();
    fprintf(o->to, "[%s] %.*s\n", o->job->name, (int)n, o->buf);
    fflush(o->to);
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
}

/* Read what a job wrote; prefix each complete line. 0 at EOF. */
static int out_read(struct outbuf *o)
{
    ssize_t r = read(o->fd, o->buf + o->len, sizeof o->buf - o->len);
    char *nl;


    if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return 1;
        if (o->len)
            out_flush_line(o, o->len);
        close(o->fd);
        o->fd = -1;
        return 0;
    }
    o->len += r;
    while ((nl = memchr(o->buf, '\n', o->len)) != NULL) {
        size_t n = nl - o->buf;
        if (o->to == stdout || o->to == stderr)
            progress_clear();
        fprintf(o->to, "[%s] %.*s\n", o->job->name, (int)n, o->buf);
        memmove(o->buf, nl + 1, o->len - n - 1);
        o->len -= n + 1;
    }
    if (o->len == sizeof o->buf)
        out_flush_line(o, o->len);
    fflush(o->to);
    return 1;
}

static void out_add(int fd, FILE *to, struct cs_job *j)
{
    outs = realloc(outs, (nouts + 1) * sizeof *outs);
    outs[nouts] = (struct outbuf){ .fd = fd, .to = to, .job = j };
    fcntl(fd, F_SETFL, O_NONBLOCK);
    nouts++;
}

/* Forget the outputs that reached EOF and were flushed (a --window run starts
 * thousands of instances: their pipes must not pile up). */
static void out_compact(void)
{
    int k = 0;
    for (int i = 0; i < nouts; i++)
        if (outs[i].fd >= 0 || outs[i].len > 0)
            outs[k++] = outs[i];
    nouts = k;
}

static void out_drain_all(void)
{
    for (int i = 0; i < nouts; i++)
        while (outs[i].fd >= 0 && out_read(&outs[i]) > 0)
            ;
}

static int job_outputs(struct cs_engine *e, struct cs_job *j, int *ofd, int *efd)
{
    int p[2];

    *ofd = *efd = -1;
    switch (e->output) {
    case CS_OUT_INHERIT:
        return 0;
    case CS_OUT_FILES: {
        char *o = cs_strdup_printf("%s/%s.out", e->output_dir, j->name);
        char *er = cs_strdup_printf("%s/%s.err", e->output_dir, j->name);
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (j->runs_started ? O_APPEND : O_TRUNC);
        *ofd = open(o, flags, 0644);
        *efd = *ofd >= 0 ? open(er, flags, 0644) : -1;
        if (*ofd < 0 || *efd < 0) {
            cs_err("job %d (%s): cannot open %s: %s", j->id, j->name, *ofd < 0 ? o : er, strerror(errno));
            if (*ofd >= 0)
                close(*ofd);
            free(o);
            free(er);
            return -1;
        }
        free(o);
        free(er);
        return 0;
    }
    case CS_OUT_PREFIX:
        if (pipe2(p, O_CLOEXEC) < 0)
            goto perr;
        out_add(p[0], stdout, j);
        *ofd = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
            goto perr;
        out_add(p[0], stderr, j);
        *efd = p[1];
        return 0;
    }
    return 0;
perr:
    cs_err("job %d (%s): cannot create an output pipe: %s", j->id, j->name, strerror(errno));
    if (*ofd >= 0)
        close(*ofd);
    return -1;
}

static void set_default_env(const char *k, const char *v, int force)
{
    if (force || getenv(k) == NULL)
        setenv(k, v, 1);
}

static const char *get_env(const char *name, void *arg)
{
    return getenv(name);
}

/* In the child: become the job.  Never returns. */
static void child_exec(struct cs_engine *e, struct cs_job *j, int gofd, int ofd, int efd)
{
    sigset_t none;
    struct sched_param sp = { 0 };
    char b[32];

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sched_setscheduler(0, SCHED_OTHER, &sp);
    setpgid(0, 0);
    /* jobs run in their own process group, in the background of a terminal:
     * reading it would stop them (SIGTTIN) for good */
    int nullfd = open("/dev/null", O_RDONLY);
    if (nullfd < 0 || dup2(nullfd, STDIN_FILENO) < 0)
        _exit(126);
    if (nullfd != STDIN_FILENO)
        close(nullfd);
    if (ofd >= 0 && dup2(ofd, STDOUT_FILENO) < 0)
        _exit(126);
    if (efd >= 0 && dup2(efd, STDERR_FILENO) < 0)
        _exit(126);
    /* wait until the engine has put us under control */
    ssize_t got;
    while ((got = read(gofd, b, 1)) < 0 && errno == EINTR)
        ;
    if (got != 1)      /* cosched died before letting us go: the job never starts */
        _exit(125);
    if (e->omp_env) {
        snprintf(b, sizeof b, "%d", j->threads);
        set_default_env("OMP_NUM_THREADS", b, j->threads_explicit);
        /* teams that follow the job's cores may spin as the runtime likes;
         * where the shim cannot apply, spinning threads on folded or frozen
         * cores cost > 100x (BENCHMARKS.md section 2): wait passively.  So
         * under a policy that runs jobs on the same cores at once (linux):
         * teams the size of the job's cores still overlap other jobs'. */
        char pre[4096];
        if (e->omp_shim && j->preloadable && !cs_policy_shares_cpus(e->policy) &&
            cs_omp_env_allows(get_env, NULL) &&
            cs_preload_value(e->omp_shim, getenv("LD_PRELOAD"), pre, sizeof pre)) {
            setenv("LD_PRELOAD", pre, 1);
            cs_omppage_exec(j);
#if !defined(__x86_64__)
            /* the shim resizes libomp's teams on x86-64 only (cosched-omp.c) */
            set_default_env("KMP_BLOCKTIME", "0", 0);
#endif
        } else {
            set_default_env("OMP_WAIT_POLICY", "passive", 0);
            set_default_env("GOMP_SPINCOUNT", "0", 0);
            set_default_env("KMP_BLOCKTIME", "0", 0);
        }
    }
    snprintf(b, sizeof b, "%d", j->id);
    setenv("COSCHED_JOB_ID", b, 1);
    setenv("COSCHED_JOB_NAME", j->name, 1);
    if (j->cwd && chdir(j->cwd) < 0) {
        fprintf(stderr, "cosched: job %d (%s): cannot change to directory %s: %s\n", j->id, j->name, j->cwd,
                strerror(errno));
        _exit(126);
    }
    execvp(j->argv[0], j->argv);
    fprintf(stderr, "cosched: job %d (%s): cannot execute %s: %s\n", j->id, j->name, j->argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* Bookkeeping of a new instance whose leader is pid (0 on a simulated node). */
/*
 * The progress line (--progress): one line on stderr, redrawn in place at
 * every step.  It never shares a line with anything else: it is erased
 * before job output passes through (out_read) and before any message
 * (cs_log_before), and drawn again once the output is out (wait_step); it
 * is cut to the terminal's width, since a wrapped line cannot be erased with
 * one \r.  The end of the run erases it, so the summary starts on a clean
 * line.  With --output inherit the jobs write to the terminal themselves,
 * so run.c leaves it off unless asked (cosched(1), --progress).
 */
static char progress_text[1024];
static int progress_shown;

static void progress_clear(void)
{
    if (!progress_shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress_shown = 0;
}

static void progress_draw(void)
{
    if (progress_shown || !progress_text[0])
        return;
    fprintf(stderr, "\r\033[K%s", progress_text);
    fflush(stderr);
    progress_shown = 1;
}

static void progress_line(struct cs_engine *e, const int *run)
{
    size_t n = 0, cap = sizeof progress_text;
    int runs = 0, ended = 0, width = 0;
    struct winsize ws;
    double now = cs_now();

#define PUT(...) do { int w_ = snprintf(progress_text + n, cap - n, __VA_ARGS__); \
                      if (w_ > 0) n = (size_t)w_ < cap - n ? n + (size_t)w_ : cap - 1; } while (0)
    PUT("cosched: %.1fs epoch %llu |", now - e->t0, (unsigned long long)e->epoch);
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state == CS_JOB_LIVE && run[i]) {
            char *c = cs_bitmap_list(j->cpus);
            PUT(" %s[%s]", j->name, c ? c : "?");
            free(c);
        }
        runs += j->runs_done;
        ended += j->state == CS_JOB_ENDED;
    }
    if (e->window > 0)
        PUT(" | %d run%s completed, %.0fs of the %gs window left", runs, runs == 1 ? "" : "s",
            fmax(0.0, e->t0 + e->window - now), e->window);
    else
        PUT(" | %d of %d job%s completed", ended, e->njobs, e->njobs == 1 ? "" : "s");
#undef PUT
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
        width = ws.ws_col;
    if (width > 1 && n >= (size_t)width)
        progress_text[width - 1] = '\0';      /* bytes, not characters: at worst shorter */
    cs_log_before = progress_clear;
    progress_shown = 0;
    progress_draw();
}


/* ------------------------------------------------------------ instances */

static int *go_slot(struct cs_job *j)
{
    if (j->id >= L.ngo) {
        int n = j->id + 16;
        int *g = realloc(L.go, (size_t)n * sizeof *g);
        if (g == NULL)
            return NULL;
        for (int k = L.ngo; k < n; k++)
            g[k] = -1;
        L.go = g;
        L.ngo = n;
    }
    return &L.go[j->id];
}

/* Fork a child that blocks before its exec; the engine puts it under
 * control, then go() lets it run its first instruction. */
static int local_start(struct cs_engine *e, struct cs_job *j, pid_t *pidp)
{
    int go[2], ofd, efd, *slot = go_slot(j);
    pid_t pid;

    if (slot == NULL) {
        cs_err("job %d (%s): out of memory", j->id, j->name);
        return -1;
    }
    if (job_outputs(e, j, &ofd, &efd) < 0)
        return -1;
    if (e->omp_env && e->omp_shim && j->preloadable && !cs_policy_shares_cpus(e->policy))
        cs_omppage_open(j);   /* the shim's page (omppage.h); child_exec passes it with the shim */
    cs_omppage_reset(j);
    if (pipe2(go, O_CLOEXEC) < 0) {
        cs_err("job %d (%s): cannot create a pipe: %s", j->id, j->name, strerror(errno));
        goto fail_out;
    }
    pid = fork();
    if (pid < 0) {
        cs_err("job %d (%s): cannot fork: %s", j->id, j->name, strerror(errno));
        close(go[0]);
        close(go[1]);
        goto fail_out;
    }
    if (pid == 0) {
        close(go[1]);
        child_exec(e, j, go[0], ofd, efd);
    }
    close(go[0]);
    if (ofd >= 0)
        close(ofd);
    if (efd >= 0)
        close(efd);
    setpgid(pid, pid);
    *slot = go[1];
    *pidp = pid;
    return 0;

fail_out:
    if (ofd >= 0)
        close(ofd);
    if (efd >= 0)
        close(efd);
    return -1;
}

static void local_go(struct cs_engine *e, struct cs_job *j)
{
    int *slot = go_slot(j);

    if (slot == NULL || *slot < 0)
        return;
    if (write(*slot, "g", 1) != 1)
        cs_warn("job %d (%s): could not release the start pipe: %s", j->id, j->name, strerror(errno));
    close(*slot);
    *slot = -1;
    cs_debug("job %d (%s): instance %d started as pid %d", j->id, j->name, j->runs_started, (int)j->pid);
}

/* Before its go, nothing of the job ran; after it, the run ends with it
 * live (a failed start of another job): killed and reaped. */
static void local_abandon(struct cs_engine *e, struct cs_job *j)
{
    int *slot = go_slot(j);

    if (slot && *slot >= 0) {
        close(*slot);
        *slot = -1;
    }
    if (j->pid <= 0)
        return;
    killpg(j->pid, SIGKILL);
    if (waitpid(j->pid, NULL, 0) < 0)
        kill(j->pid, SIGKILL);   /* not its group's leader yet */
}

static int local_kill(struct cs_engine *e, struct cs_job *j, int sig)
{
    cs_engine_unleash(e, j);
    if (j->pid > 0)
        killpg(j->pid, sig);
    return 0;
}

/* Every live job: thawed, on its home cores, then sig. */
static void forward_signal(struct cs_engine *e, int sig)
{
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->state == CS_JOB_LIVE)
            cs_engine_unleash(e, e->jobs[i]);
    for (int i = 0; i < e->njobs; i++)
        if (e->jobs[i]->state == CS_JOB_LIVE && e->jobs[i]->pid > 0)
            killpg(e->jobs[i]->pid, sig);
}

/* SIGKILL the jobs stopped on purpose whose time is up; the next such
 * deadline (cs_now() time, 0: none). */
static double stop_deadlines(struct cs_engine *e)
{
    double next = 0, now = cs_now();

    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || j->stop_deadline <= 0 || j->stop_killed)
            continue;
        if (now >= j->stop_deadline) {
            killpg(j->pid, SIGKILL);
            j->stop_killed = 1;
        } else if (next == 0 || j->stop_deadline < next) {
            next = j->stop_deadline;
        }
    }
    return next;
}

/* Reap ended instances.  Returns number of jobs whose instance ended. */
static int reap(struct cs_engine *e)
{
    int ended = 0, status;
    struct rusage ru;
    pid_t pid;

    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        struct cs_job *j = NULL;
        for (int i = 0; i < e->njobs; i++)
            if (e->jobs[i]->state == CS_JOB_LIVE && e->jobs[i]->pid == pid)
                j = e->jobs[i];
        if (j == NULL) {
            cs_debug("reaped pid %d that is no job leader", (int)pid);
            continue;
        }
        ended++;
        cs_engine_ended(e, j, status, &ru);
    }
    return ended;
}

/* Handle what signalfd delivered.  Returns 1 if jobs ended (replan). */
static int on_signal(struct cs_engine *e)
{
    struct signalfd_siginfo si;
    int replan = 0;

    while (read(L.sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue;
        if (!L.signalled) {
            L.signalled = 1;
            L.kill_deadline = cs_now() + e->kill_timeout;
            cs_engine_stop(e, sig);
            cs_warn("received %s: forwarding it to %d job(s), SIGKILL after %g s", strsignal(sig),
                    cs_engine_nlive(e), e->kill_timeout);
            forward_signal(e, sig);
        } else if (!L.killed) {
            cs_warn("received %s again: killing the jobs now", strsignal(sig));
            forward_signal(e, SIGKILL);
            L.killed = 1;
        }
        replan = 1;
    }
    return reap(e) > 0 || replan;
}

/* ------------------------------------------------------------ waiting */

static int local_nfds(struct cs_engine *e)
{
    out_compact();
    return 1 + nouts;
}

static int local_pollfds(struct cs_engine *e, struct pollfd *pf, int max)
{
    int n = 0;

    pf[n++] = (struct pollfd){ .fd = L.sfd, .events = POLLIN };
    for (int i = 0; i < nouts && n < max; i++)
        pf[n++] = (struct pollfd){ .fd = outs[i].fd, .events = POLLIN };
    return n;
}

static int local_ready(struct cs_engine *e, const struct pollfd *pf, int n)
{
    for (int i = 0; i < nouts && 1 + i < n; i++)
        if (outs[i].fd >= 0 && outs[i].fd == pf[1 + i].fd && (pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
            out_read(&outs[i]);
    if (e->progress)
        progress_draw();
    if ((pf[0].revents & POLLIN) && on_signal(e))
        return 1;
    stop_deadlines(e);
    if (L.signalled && !L.killed && cs_now() >= L.kill_deadline) {
        cs_warn("%d job(s) still running %g s after the signal: sending SIGKILL", cs_engine_nlive(e),
                e->kill_timeout);
        forward_signal(e, SIGKILL);
        L.killed = 1;
    }
    return L.signalled && cs_engine_nlive(e) == 0;
}

/* The next deadline: a stopped job's SIGKILL, the stragglers' SIGKILL after
 * a signal (every 0.1 s once they got it, for their end). */
static double local_wake(struct cs_engine *e)
{
    double t = stop_deadlines(e);

    if (L.signalled) {
        double k = L.killed ? cs_now() + 0.1 : L.kill_deadline;
        if (t == 0 || k < t)
            t = k;
    }
    return t;
}

static void local_stepped(struct cs_engine *e, const int *run)
{
    if (e->progress)
        progress_line(e, run);
}

/* ------------------------------------------------------------ the run */

static int local_begin(struct cs_engine *e)
{
    if ((L.sfd = cs_engine_signalfd()) < 0)
        return -1;
    return cs_guard_start(e->ctl);
}

static void local_end(struct cs_engine *e, int complete)
{
    if (e->progress) {
        progress_clear();
        progress_text[0] = '\0';
        cs_log_before = NULL;
    }
    cs_guard_done();
    out_drain_all();
    if (complete && cs_verbosity >= CS_LOG_INFO)   /* --quiet: none */
        cs_engine_summary(e);
    if (L.sfd >= 0)
        close(L.sfd);
    L.sfd = -1;
    free(L.go);
    L.go = NULL;
    L.ngo = 0;
}

const struct cs_host_ops cs_local_host = {
    .name = "local",
    .command = "run",
    .begin = local_begin,
    .end = local_end,
    .start = local_start,
    .go = local_go,
    .abandon = local_abandon,
    .kill = local_kill,
    .nfds = local_nfds,
    .pollfds = local_pollfds,
    .ready = local_ready,
    .wake = local_wake,
    .stepped = local_stepped,
};
