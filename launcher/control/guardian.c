/*
 * guardian.c - a separate process that undoes what cosched did to the jobs
 * if cosched dies, even by SIGKILL.
 *
 *     engine                                guardian
 *     cs_guard_start(ops) --fork, fork-->   setsid, ignore INT/TERM/HUP/PIPE/QUIT,
 *                         <-- "ready PID"   SCHED_OTHER, other fds closed
 *     cs_guard_record()   -- "+REC\n" -->   push REC
 *     cs_guard_forget()   -- "-REC\n" -->   drop the newest equal REC
 *     cs_guard_done()     -- "done\n" -->   exit, touching nothing
 *     (engine dies)       -- EOF ------->   ops->rescue(REC) newest first, exit
 *
 * The channel is a socketpair rather than a pipe so that the engine can
 * write with MSG_NOSIGNAL: a guardian that died must cost a warning, never
 * a SIGPIPE that kills the engine with jobs frozen.  The engine's death is
 * seen two ways: a pidfd of the engine becomes readable (Linux >= 5.3), and
 * the socket reaches EOF once every copy of the engine's end is closed.
 * The pidfd matters because that end is close-on-exec only: a child the
 * engine forked and that has not exec'ed (a job blocked before exec, a
 * helper that never execs) still holds it, and EOF alone would wait for
 * that child.  Records written before the death are still queued and are
 * drained first, so no acknowledgement is needed; backends record *before*
 * they create (a rescue of something that does not exist yet is a no-op).
 *
 * The guardian is forked twice so that it is not the engine's child: the
 * engine reaps its jobs with wait(), and must never see (or reap) the
 * guardian there.  It ignores the signals a terminal or an operator sends to
 * "cosched" (Ctrl-C reaches the whole foreground group), leaves the
 * terminal's session, drops real-time scheduling the engine may run with,
 * and asks the OOM killer to spare it.  What it cannot survive is being
 * SIGKILLed itself together with the engine (kill -9 -PGID, a killed
 * session scope); then the next cosched run reclaims the leftovers (see
 * cs_cgroup_reclaim_leftovers).
 *
 * Records are one line each and the backends' business (formats in
 * cgroup1.c, cgroup2.c, signals.c, slurm.c); their fields are written and
 * split here (cs_rec_add, cs_rec_split): space-separated, each escaped like
 * /proc/self/mountinfo (\040 for a space), which keeps any path safe.
 * cs_guard_start must be called before the backend's init, which records
 * the run directory.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control/internal.h"
#include "core/log.h"
#include "core/util.h"

#define LINE_MAX_LEN (1 << 20)      /* longer lines are protocol errors */
#define START_TIMEOUT_MS 5000

static int guard_fd = -1;
static int guard_lost;

/* ------------------------------------------------------------- guardian */

struct records { char **v; size_t n, cap; };

static void push(struct records *r, const char *s)
{
    char *d = strdup(s);

    if (!d)
        goto oom;
    if (r->n == r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 32;
        char **p = realloc(r->v, nc * sizeof *p);
        if (!p) {
            free(d);
            goto oom;
        }
        r->v = p;
        r->cap = nc;
    }
    r->v[r->n++] = d;
    return;
oom:
    cs_err("guardian: out of memory; cannot keep record '%s'", s);
}

static void drop(struct records *r, const char *s)
{
    size_t i = r->n;

    while (i-- > 0)
        if (strcmp(r->v[i], s) == 0) {
            free(r->v[i]);
            memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * sizeof *r->v);
            r->n--;
            return;
        }
    cs_debug("guardian: forget of an unknown record '%s'", s);
}

static void close_other_fds(int keep)
{
    int fd;

    if (keep != 3) {
        if (dup2(keep, 3) < 0)
            _exit(1);
        close(keep);
    }
    fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (fd > 3)
            close(fd);
    }
    {
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0)
            return;
#endif
        struct rlimit rl;
        int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                  && rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : 65536;
        for (fd = 4; fd < max; fd++)
            close(fd);
    }
}

static void detach(void)
{
    static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT,
                                   SIGTSTP, SIGTTIN, SIGTTOU };
    struct sched_param sp = { .sched_priority = 0 };
    struct sigaction sa;
    sigset_t all;
    size_t i;
    int sig, fd;

    setsid();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (sig = 1; sig < NSIG; sig++)        /* the engine's handlers mean nothing here */
        sigaction(sig, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        sigaction(ignored[i], &sa, NULL);
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    sched_setscheduler(0, SCHED_OTHER, &sp);
    prctl(PR_SET_NAME, "cosched-guard", 0, 0, 0);
    if (chdir("/") < 0)
        _exit(1);
    fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "-1000", 5) < 0) {
            /* not privileged: the default score of a tiny process is fine */
        }
        close(fd);
    }
}

int cs_rescue_isolated(void (*rescue)(const char *), const char *record, double timeout)
{
    double t0 = cs_now();
    int status;
    pid_t pid = fork();

    if (pid < 0) {
        cs_warn("guardian: cannot fork (%s): restoring '%s' in this process", strerror(errno), record);
        rescue(record);
        return 0;
    }
    if (pid == 0) {
        rescue(record);
        _exit(0);
    }
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (cs_now() - t0 > timeout) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cs_err("guardian: restoring '%s' took more than %.0f s: stopped, going on with the others",
                   record, timeout);
            return -1;
        }
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    if (WIFSIGNALED(status)) {
        cs_err("guardian: restoring '%s' failed (signal %d), going on with the others", record,
               WTERMSIG(status));
        return -1;
    }
    return 0;
}

/* Newest first; with rescue_thaw, every record is thawed before any is
 * given its cores back.  Each in a process of its own: a record whose
 * restore crashes or hangs cannot keep the others frozen or confined. */
static void rescue_all(const struct cs_control_ops *ops, struct records *r, pid_t engine)
{
    double t0 = cs_now();
    size_t i;

    if (!r->n) {
        cs_debug("guardian: cosched (pid %ld) ended with nothing to restore", (long)engine);
        return;
    }
    cs_warn("guardian: cosched (pid %ld) ended without restoring its jobs; restoring %zu item(s)",
            (long)engine, r->n);
    for (i = r->n; ops->rescue_thaw && i-- > 0;)
        cs_rescue_isolated(ops->rescue_thaw, r->v[i], 10.0);
    for (i = r->n; i-- > 0;) {
        cs_debug("guardian: rescue %s", r->v[i]);
        cs_rescue_isolated(ops->rescue, r->v[i], 30.0);
    }
    cs_warn("guardian: done in %.1f ms", (cs_now() - t0) * 1e3);
}

/* Read what is there; handle complete lines.  0: more may come, 1: EOF
 * (or EAGAIN once draining), exits on "done". */
static int take_input(int fd, struct records *recs, char **buf, size_t *len, size_t *cap)
{
    char *line, *nl;
    ssize_t r;

    if (*cap - *len < 4096) {
        char *p;
        if (*cap >= LINE_MAX_LEN) {
            cs_err("guardian: protocol error (line longer than %d bytes); dropped", LINE_MAX_LEN);
            *len = 0;
        } else {
            p = realloc(*buf, *cap + 65536);
            if (!p) {
                cs_err("guardian: out of memory");
                return 1;
            }
            *buf = p;
            *cap += 65536;
        }
    }
    r = read(fd, *buf + *len, *cap - *len);
    if (r < 0 && errno == EINTR)
        return 0;
    if (r <= 0)
        return 1;
    *len += (size_t)r;
    line = *buf;
    while ((nl = memchr(line, '\n', *len - (size_t)(line - *buf)))) {
        *nl = '\0';
        if (line[0] == '+')
            push(recs, line + 1);
        else if (line[0] == '-')
            drop(recs, line + 1);
        else if (strcmp(line, "done") == 0)
            _exit(0);
        else
            cs_warn("guardian: protocol error: '%s' ignored", line);
        line = nl + 1;
    }
    *len -= (size_t)(line - *buf);
    memmove(*buf, line, *len);
    return 0;
}

static void __attribute__((noreturn))
guardian_main(const struct cs_control_ops *ops, int fd, pid_t engine)
{
    struct records recs = { 0 };
    struct pollfd pfd[2];
    char *buf = NULL, hello[48];
    size_t len = 0, cap = 0;
    int n, pidfd = -1;

    detach();
    close_other_fds(fd);
    fd = 3;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, engine, 0);
#endif
    n = snprintf(hello, sizeof hello, "ready %ld\n", (long)getpid());
    if (send(fd, hello, (size_t)n, MSG_NOSIGNAL) != n)
        _exit(1);
    pfd[0].fd = fd;
    pfd[0].events = POLLIN;
    pfd[1].fd = pidfd;                      /* negative: ignored by poll */
    pfd[1].events = POLLIN;
    for (;;) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[1].revents) {
            /* the engine exited; what it sent before is still queued */
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            while (take_input(fd, &recs, &buf, &len, &cap) == 0)
                ;
            break;
        }
        if (pfd[0].revents && take_input(fd, &recs, &buf, &len, &cap))
            break;
    }
    rescue_all(ops, &recs, engine);
    _exit(0);
}

/* --------------------------------------------------------------- engine */

int cs_guard_start(const struct cs_control_ops *ops)
{
    struct pollfd pfd;
    char hello[48];
    pid_t engine = getpid(), mid;
    int sv[2], status, r;
    ssize_t got = 0;

    if (guard_fd >= 0) {
        cs_err("guardian: already running");
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        cs_err("guardian: cannot create its socket pair: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    mid = fork();
    if (mid < 0) {
        cs_err("guardian: cannot fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (mid == 0) {
        pid_t g;
        close(sv[0]);
        g = fork();
        if (g < 0)
            _exit(1);
        if (g > 0)
            _exit(0);
        guardian_main(ops, sv[1], engine);
    }
    close(sv[1]);
    while ((r = waitpid(mid, &status, 0)) < 0 && errno == EINTR)
        ;
    /* ECHILD: a SIGCHLD handler of the engine reaped it; the hello decides */
    pfd.fd = sv[0];
    pfd.events = POLLIN;
    while (got < (ssize_t)sizeof hello - 1 && !memchr(hello, '\n', (size_t)got)) {
        ssize_t n;
        if (poll(&pfd, 1, START_TIMEOUT_MS) <= 0)
            break;
        n = read(sv[0], hello + got, sizeof hello - 1 - (size_t)got);
        if (n <= 0)
            break;
        got += n;
    }
    hello[got] = '\0';
    if (strncmp(hello, "ready ", 6) != 0 || !strchr(hello, '\n')) {
        cs_err("guardian: did not start (%s); cosched would not be able to restore its jobs if it "
               "died", r == mid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)
                   ? "fork failed" : "no answer");
        close(sv[0]);
        return -1;
    }
    guard_fd = sv[0];
    guard_lost = 0;
    cs_debug("guardian: pid %ld watching over cosched pid %ld", strtol(hello + 6, NULL, 10),
             (long)engine);
    return 0;
}

static void guard_send(char op, const char *fmt, va_list ap)
{
    char *rec = NULL, *line = NULL;
    size_t len, off = 0;

    if (guard_fd < 0) {
        if (!guard_lost)
            cs_debug("guardian: not running; '%c' record not kept", op);
        return;
    }
    if (vasprintf(&rec, fmt, ap) < 0) {
        cs_err("guardian: out of memory; record not sent");
        return;
    }
    if (strchr(rec, '\n')) {
        cs_err("guardian: refusing a record with a newline: '%s'", rec);
        goto out;
    }
    len = strlen(rec) + 2;
    line = malloc(len + 1);
    if (!line) {
        cs_err("guardian: out of memory; record not sent");
        goto out;
    }
    snprintf(line, len + 1, "%c%s\n", op, rec);
    while (off < len) {
        ssize_t w = send(guard_fd, line + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            cs_warn("guardian: lost (%s); if cosched dies now, its jobs stay frozen or confined "
                    "until the next cosched run reclaims them", strerror(errno));
            close(guard_fd);
            guard_fd = -1;
            guard_lost = 1;
            goto out;
        }
        off += (size_t)w;
    }
out:
    free(line);
    free(rec);
}

void cs_guard_record(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    guard_send('+', fmt, ap);
    va_end(ap);
}

void cs_guard_forget(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    guard_send('-', fmt, ap);
    va_end(ap);
}

void cs_guard_done(void)
{
    if (guard_fd < 0)
        return;
    if (send(guard_fd, "done\n", 5, MSG_NOSIGNAL) != 5)
        cs_debug("guardian: could not say done (%s)", strerror(errno));
    close(guard_fd);
    guard_fd = -1;
}

/* --------------------------------------------------------- record fields */

int cs_rec_add(char *rec, size_t len, const char *field)
{
    size_t n = strlen(rec);
    const char *s;

    if (n && n + 1 < len)
        rec[n++] = ' ';
    for (s = *field ? field : "-"; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\\' || (c == '-' && !s[1] && s == field)) {
            if (n + 4 >= len)
                goto full;
            snprintf(rec + n, 5, "\\%03o", c);
            n += 4;
        } else {
            if (n + 1 >= len)
                goto full;
            rec[n++] = (char)c;
        }
    }
    rec[n] = '\0';
    return 0;
full:
    rec[len ? len - 1 : 0] = '\0';
    errno = ENAMETOOLONG;
    return -1;
}

int cs_rec_split(char *rec, char **fields, int max)
{
    char *save = NULL, *t;
    int n = 0;

    for (t = strtok_r(rec, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        if (strcmp(t, "-") == 0)
            t[0] = '\0';                    /* an empty field */
        else
            cs_unescape(t);
        fields[n++] = t;
    }
    return n;
}
