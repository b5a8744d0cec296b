/*
 * remote.c - the plugin in slurmstepd: register each task of a co-scheduled
 * step with the node's engine (starting it on demand), deregister it when it
 * exits, and tell the user in one line when the step runs without
 * co-scheduling.  Nothing here fails a step: every failure ends as "the step
 * runs normally" plus the notice.
 *
 * The step's OpenMP page (shared/omppage.h).  Slurm 22.05's slurmstepd
 * forks every task before the first task_post_fork (mgr.c
 * _fork_all_tasks), and a forked task waits on a pipe until all of them are
 * registered; task_init_privileged runs in the task before that wait, so
 * before the registration that makes the step a cosched job.  Hence: the
 * page comes with the registration, in task_post_fork (slurmstepd, root),
 * as a descriptor in the engine's reply (register omp_page=1, proto.h); it
 * goes on to the task over a socket pair made in user_init, before the
 * fork, whose other end every task inherits; the task takes it in
 * task_init, as the user, just before exec, and names it in
 * COSCHED_OMP_PAGE.  Nothing between task_init and the task's execve
 * closes descriptors (task.c exec_task), so the page reaches the program
 * (a step run in an OCI container, --container, may not pass it on: its
 * shim then finds no page behind the number and runs without one).
 * The tasks register together, at the last task's task_post_fork (below:
 * Slurm binds each task just before its own).
 * One message per step: each task peeks at it (MSG_PEEK gives each its own
 * descriptor and leaves the message for the next), so no count of tasks
 * meets a socket buffer's limit.  A descriptor that is not a sealed memfd of
 * the page's name and size is closed; any failure leaves the task without a
 * page (its shim then re-reads its affinity on the clock), never without
 * its step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin.h"
#include "shared/cgleave.h"
#include "shared/proto.h"
#include "shared/ompinject.h"
#include "shared/omppage.h"

/* Step ids at and above this are Slurm's special steps (batch 0xfffffffb,
 * extern 0xfffffffc, interactive 0xfffffffa, pending 0xfffffffd): never
 * co-scheduled. */
#define CS_SPECIAL_STEPS 0xfffffff0u

enum { V_PENDING, V_REGISTERED, V_FAILED };

/* The verdict, written by slurmstepd in task_post_fork, read by the tasks in
 * task_init (they were forked before it was written: shared anonymous page). */
struct cs_shared {
    atomic_int state;
    char id[64];
    char policy[CS_NAME_MAX];
    char why[448];
    int shares_cpus;           /* the engine's policy runs steps on the same CPUs */
};

#define MAX_TASKS 1024

static struct {
    int skip;                  /* special step */
    int cosched;               /* the step asked or was enforced */
    char policy[CS_NAME_MAX];
    uint32_t job, step;
    struct cs_shared *sh;
    double deadline;           /* ms, monotonic: the step's registration budget */
    int failed;
    int quiet_engine;          /* a deregistration went unanswered: the others are not waited for */
    int nreg;
    pid_t reg[MAX_TASKS];      /* registered task pids */
    int npend;
    struct { pid_t pid; uint32_t gtid; } pend[MAX_TASKS];   /* forked, to register with the last */
    int chan[2];               /* the OpenMP page to the tasks: slurmstepd sends on [0], a task reads [1] (-1: none) */
    int page;                  /* the page: 0 not yet passed on, 1 passed on, -1 given up (a bad one) */
} st;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Tell the engine that task pid ended (or leaves).  The engine also sees a
 * task end through its pidfd: when it does not answer in time, the later
 * tasks of the step do not wait for it in turn (one wait per step). */
static void deregister(pid_t pid)
{
    char req[256], reply[256], why[256];

    if (st.quiet_engine)
        return;
    if (cs_req_init(req, sizeof req, "deregister") < 0 || cs_req_add(req, sizeof req, "job", "%u", st.job) < 0 ||
        cs_req_add(req, sizeof req, "step", "%u", st.step) < 0 ||
        cs_req_add(req, sizeof req, "pid", "%d", (int)pid) < 0)
        return;
    if (cs_proto_call(cs_g.conf.socket, req, reply, sizeof reply, 500, why, sizeof why) < 0) {
        st.quiet_engine = 1;
        slurm_debug("cosched: step %u.%u: deregister pid %d: %s", st.job, st.step, (int)pid, why);
    } else if (strncmp(reply, "OK", 2) != 0) {
        slurm_debug("cosched: step %u.%u: deregister pid %d: %s", st.job, st.step, (int)pid, reply);
    }
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    st.failed = 1;
    /* a later task failed after earlier ones registered: the step leaves the
     * engine whole (half a step co-scheduled is neither one nor the other) */
    while (st.nreg > 0)
        deregister(st.reg[--st.nreg]);
    if (st.sh == NULL || atomic_load(&st.sh->state) == V_FAILED)
        return;
    va_start(ap, fmt);
    vsnprintf(st.sh->why, sizeof st.sh->why, fmt, ap);
    va_end(ap);
    atomic_store(&st.sh->state, V_FAILED);
    slurm_info("cosched: step %u.%u runs without co-scheduling: %s", st.job, st.step, st.sh->why);
}

int cs_remote_option(const char *optarg)
{
    /* may run twice: parse afresh each time */
    cs_g.req_bad = cs_req_parse(&cs_g.req, optarg, &cs_g.conf, &cs_g.installed, cs_g.req_err,
                                sizeof cs_g.req_err) < 0;
    if (cs_g.req_bad)
        cs_g.req.given = 1;
    return 0;
}

int cs_remote_init(spank_t sp)
{
    memset(&st, 0, sizeof st);
    st.chan[0] = st.chan[1] = -1;
    if (spank_get_item(sp, S_JOB_ID, &st.job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &st.step) != ESPANK_SUCCESS)
        st.skip = 1;
    else if (st.step >= CS_SPECIAL_STEPS)
        st.skip = 1;
    return 0;
}

int cs_remote_user_init(spank_t sp)
{
    if (st.skip)
        return 0;
    if (cs_g.req_bad) {
        st.cosched = 0;
    } else {
        st.cosched = cs_decide(&cs_g.conf, cs_g.req.given ? &cs_g.req : NULL, st.policy);
        if (!st.cosched && !(cs_g.req.given && cs_g.req.off))
            return 0;
    }
    st.sh = mmap(NULL, sizeof *st.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st.sh == MAP_FAILED) {
        st.sh = NULL;
        slurm_error("cosched: step %u.%u: mmap: %s; the step runs without co-scheduling", st.job, st.step,
                    strerror(errno));
        st.cosched = 0;
        return 0;
    }
    memset(st.sh, 0, sizeof *st.sh);
    snprintf(st.sh->policy, sizeof st.sh->policy, "%s", cs_g.req.off ? "off" : st.policy);
    if (cs_g.req_bad)
        fail("%s", cs_g.req_err);
    else if (st.cosched && cs_g.conf.omp_shim[0] && !cs_g.req.omp_shim_off &&
             socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st.chan) < 0) {
        slurm_debug("cosched: step %u.%u: socketpair: %s; no OpenMP page", st.job, st.step, strerror(errno));
        st.chan[0] = st.chan[1] = -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ engine start */

/* fork, setsid, fork, exec `cosched serve ...`.  Only async-signal-safe
 * calls between fork and exec (slurmstepd is multithreaded). */
static int spawn_engine(char *why, size_t whylen)
{
    static char roots[32][PATH_MAX];
    const struct cs_conf *c = &cs_g.conf;
    char quantum[32], idle[32];
    char *argv[] = { (char *)c->cosched, "serve", "--socket", (char *)c->socket, "--quantum", quantum,
                     "--idle-exit", idle, "--detach", NULL };
    char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    int nroots, status;
    pid_t pid;

    if (access(c->cosched, X_OK) < 0) {
        snprintf(why, whylen, "cannot start the engine: %.200s: %s", c->cosched, strerror(errno));
        return -1;
    }
    snprintf(quantum, sizeof quantum, "%dms", c->quantum_ms);
    snprintf(idle, sizeof idle, "%dms", c->idle_exit_ms);
    nroots = cs_leave_slurm_targets(roots, 32);       /* shared/cgleave.h: the rule */
    pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "cannot start the engine: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        int fd;
        setsid();
        if (fork() != 0)
            _exit(0);
        for (int i = 0; i < nroots; i++)
            cs_leave_slurm_move(roots[i]);          /* async-signal-safe */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++)
            signal(s, SIG_DFL);
        if ((fd = open("/dev/null", O_RDWR)) >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
            for (int i = 3; i < 4096; i++)
                close(i);
        umask(022);
        if (chdir("/") < 0)
            _exit(126);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    /* the intermediate child exits at once; slurmstepd may reap it first */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* Engine start, serialised between steps by a lock beside the socket. */
static int start_engine(char *why, size_t whylen)
{
    char lock[CS_SOCKET_MAX + 8], dir[CS_SOCKET_MAX];
    char *slash;
    int fd, rc;

    snprintf(dir, sizeof dir, "%s", cs_g.conf.socket);
    if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    snprintf(lock, sizeof lock, "%s.lock", cs_g.conf.socket);
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);      /* another step is starting it: just wait for the socket */
        return 0;
    }
    rc = spawn_engine(why, whylen);
    if (fd >= 0)
        close(fd);      /* the engine binds its socket within the retry window */
    return rc;
}

/* One request to the engine within the step's budget; starts the engine on
 * demand.  0 with the reply (and in *fdp the descriptor it carried, -1:
 * none), -1 with why. */
static int call(const char *req, char *reply, size_t len, int *fdp, char *why, size_t whylen)
{
    int started = 0;

    for (;;) {
        double left = st.deadline - now_ms();
        if (left < 50)
            left = 50;
        if (cs_proto_call_fd(cs_g.conf.socket, req, reply, len, (int)left, fdp, why, whylen) == 0)
            return 0;
        if (errno != ENOENT && errno != ECONNREFUSED)
            return -1;
        if (cs_g.conf.start != CS_START_ONDEMAND) {
            snprintf(why, whylen, "no engine at %s (start=%s: %s)", cs_g.conf.socket,
                     cs_g.conf.start == CS_START_NONE ? "none" : "systemd",
                     cs_g.conf.start == CS_START_NONE ? "the administrator starts it"
                                                      : "is cosched.service running?");
            return -1;
        }
        if (!started) {
            if (start_engine(why, whylen) < 0)
                return -1;
            started = 1;
        }
        if (now_ms() + 50 > st.deadline) {
            snprintf(why, whylen, "the engine started with %.150s did not answer at %s within %d ms (its messages: %s.log)",
                     cs_g.conf.cosched, cs_g.conf.socket, cs_g.conf.timeout_ms, cs_g.conf.socket);
            return -1;
        }
        usleep(50 * 1000);
    }
}

/* argv[0]'s basename as a protocol value: printable, no spaces, short. */
static void step_name(spank_t sp, char *buf, size_t len)
{
    int argc = 0;
    char **argv = NULL;
    const char *s;
    size_t n = 0;

    snprintf(buf, len, "step");
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || argv[0] == NULL)
        return;
    s = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    for (; *s && n + 1 < len && n < 64; s++)
        buf[n++] = ((unsigned char)*s > ' ' && (unsigned char)*s < 0x7f && *s != '=') ? *s : '_';
    if (n > 0)
        buf[n] = '\0';
}

/* Take "key=value" out of an "OK k=v k=v" reply. */
static void reply_get(const char *reply, const char *key, char *out, size_t len)
{
    size_t kn = strlen(key);
    const char *p = reply;

    out[0] = '\0';
    while ((p = strstr(p, key)) != NULL) {
        if ((p == reply || p[-1] == ' ') && p[kn] == '=') {
            size_t n = strcspn(p + kn + 1, " \n");
            snprintf(out, len, "%.*s", (int)n, p + kn + 1);
            return;
        }
        p += kn;
    }
}

/* The scontrol beside this slurmstepd (PREFIX/sbin/slurmstepd ->
 * PREFIX/bin/scontrol) and the slurm.conf slurmd gave it (SLURM_CONF, which
 * slurmd sets for its children); conf "" when not set.  0, or -1. */
static int slurm_paths(char *scontrol, size_t slen, char *conf, size_t clen)
{
    char exe[CS_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *c = getenv("SLURM_CONF");
    char *sl;

    if (n <= 0)
        return -1;
    exe[n] = '\0';
    if ((sl = strrchr(exe, '/')) == NULL)
        return -1;
    *sl = '\0';
    if ((sl = strrchr(exe, '/')) == NULL || strcmp(sl, "/sbin") != 0)
        return -1;
    *sl = '\0';
    if ((size_t)snprintf(scontrol, slen, "%s/bin/scontrol", exe) >= slen)
        return -1;
    snprintf(conf, clen, "%s", c && c[0] == '/' && strlen(c) < clen ? c : "");
    return 0;
}

/* Is fd the engine's OpenMP page: a memfd of its name and size, sealed so
 * that it can neither shrink nor grow (engine/omppage.c)?  What a reply
 * carries is checked as any other part of it. */
static int page_ok(int fd)
{
    static const char name[] = "/memfd:" CS_OMPPAGE_NAME;
    char path[64], link[128];
    struct stat sb;
    ssize_t n;
    int seals;

    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if ((n = readlink(path, link, sizeof link - 1)) <= 0)
        return 0;
    link[n] = '\0';
    if (strncmp(link, name, sizeof name - 1) != 0 ||
        (link[sizeof name - 1] != '\0' && strcmp(link + sizeof name - 1, " (deleted)") != 0))
        return 0;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size != CS_OMPPAGE_SIZE)
        return 0;
    seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW);
}

/* slurmstepd: the descriptor that came with a task's registration (fd, -1:
 * none), if it is the page the reply announced, goes on to the tasks (the
 * one message of the channel, which slurmstepd then closes); closed here in
 * any case. */
static void page_forward(int fd, const char *reply)
{
    char said[8];

    if (fd < 0)
        return;
    reply_get(reply, "omp_page", said, sizeof said);
    if (strcmp(said, "1") != 0 || !page_ok(fd)) {
        st.page = -1;
        slurm_info("cosched: step %u.%u: the engine's reply carried a descriptor that is not an OpenMP page: "
                   "closed, the step's tasks run without one", st.job, st.step);
    } else if (cs_proto_send_fd(st.chan[0], "p", 1, fd) == 1) {
        st.page = 1;
    } else {
        st.page = -1;
        slurm_debug("cosched: step %u.%u: OpenMP page not passed on: %s", st.job, st.step, strerror(errno));
    }
    close(fd);
    if (st.page != 0) {
        close(st.chan[0]);
        st.chan[0] = -1;
    }
}

static int shim_preload(spank_t sp, char *pre, size_t len);

/* One task's registration (task_post_fork: pid, its global task id). */
static void register_task(spank_t sp, pid_t pid, uint32_t gtid)
{
    char req[CS_PROTO_MAX], reply[1024], why[448], name[80], cores[256] = "";
    char scontrol[CS_PATH_MAX], conf[CS_PATH_MAX];
    char *alloc = NULL;
    uint32_t uid = 0, ntasks = 0, nnodes = 0;
    uint16_t cpt = 0;
    int ok, want_page, page = -1;

    if (st.deadline == 0)
        st.deadline = now_ms() + cs_g.conf.timeout_ms;
    else if (st.nreg > 0 && st.deadline < now_ms() + 500)
        st.deadline = now_ms() + 500;       /* the engine answers: each later task gets its turn */

    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
        fail("Slurm did not give the step's uid");
        return;
    }
    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks);
    /* the step's node count: in slurmstepd S_JOB_NNODES is the node count
     * of the step being launched (its launch request's), from Slurm itself -
     * never the step's environment, which the user controls: a step
     * spanning nodes is never frozen (cosched(1) SLURM) */
    spank_get_item(sp, S_JOB_NNODES, &nnodes);
    spank_get_item(sp, S_STEP_CPUS_PER_TASK, &cpt);
    if (spank_get_item(sp, S_STEP_ALLOC_CORES, &alloc) == ESPANK_SUCCESS && alloc != NULL)
        snprintf(cores, sizeof cores, "%s", alloc);
    step_name(sp, name, sizeof name);
    /* the step has no page yet (its channel exists where the shim may be
     * put in: user_init).  Whether this task gets the shim is not guessed
     * here: slurmstepd's working directory and user are not the task's, so
     * `srun ./prog` or a root-squashed file system would say no where the
     * task says yes; the task takes the page only with the shim (task_init),
     * and a page nobody maps costs a page. */
    want_page = st.chan[0] >= 0 && st.page == 0;

    ok = cs_req_init(req, sizeof req, "register") == 0 &&
         cs_req_add(req, sizeof req, "job", "%u", st.job) == 0 &&
         cs_req_add(req, sizeof req, "step", "%u", st.step) == 0 &&
         cs_req_add(req, sizeof req, "uid", "%u", uid) == 0 &&
         cs_req_add(req, sizeof req, "pid", "%d", (int)pid) == 0 &&
         cs_req_add(req, sizeof req, "task", "%u", gtid) == 0 &&
         cs_req_add(req, sizeof req, "ntasks", "%u", ntasks) == 0 &&
         cs_req_add(req, sizeof req, "nnodes", "%u", nnodes) == 0 &&
         cs_req_add(req, sizeof req, "cpus_per_task", "%u", (unsigned)cpt) == 0 &&
         cs_req_add(req, sizeof req, "policy", "%s", st.policy) == 0 &&
         cs_req_add(req, sizeof req, "name", "%s", name) == 0 &&
         (cores[0] == '\0' || cs_req_add(req, sizeof req, "cores", "%s", cores) == 0) &&
         (!cs_g.req.has_priority || cs_req_add(req, sizeof req, "priority", "%ld", cs_g.req.priority) == 0) &&
         (!cs_g.req.cls || cs_req_add(req, sizeof req, "class", "%c", cs_g.req.cls) == 0) &&
         cs_req_add(req, sizeof req, "extend", "%d", cs_g.conf.extend_time) == 0;
    /* the page, when it fits: without it the step is still co-scheduled */
    if (ok && want_page) {
        char tmp[CS_PROTO_MAX];
        memcpy(tmp, req, sizeof tmp);
        if (cs_req_add(tmp, sizeof tmp, "omp_page", "1") == 0)
            memcpy(req, tmp, sizeof tmp);
        else
            want_page = 0;
    }
    /* where this Slurm's scontrol and slurm.conf are, for the engine's time
     * given back (a value that is not a protocol value is left out) */
    if (ok && slurm_paths(scontrol, sizeof scontrol, conf, sizeof conf) == 0) {
        char tmp[CS_PROTO_MAX];
        memcpy(tmp, req, sizeof tmp);
        if (cs_req_add(tmp, sizeof tmp, "scontrol", "%s", scontrol) == 0 &&
            (!conf[0] || cs_req_add(tmp, sizeof tmp, "slurm_conf", "%s", conf) == 0))
            memcpy(req, tmp, sizeof tmp);
    }
    if (!ok) {
        fail("cannot build the registration request");
        return;
    }
    if (cores[0] == '\0') {
        fail("Slurm did not give the step's cores");
        return;
    }
    if (call(req, reply, sizeof reply, &page, why, sizeof why) < 0) {
        fail("%s", why);
        return;
    }
    if (strncmp(reply, "OK", 2) != 0) {
        if (page >= 0)
            close(page);
        reply[strcspn(reply, "\n")] = '\0';
        fail("the engine refused: %s", strncmp(reply, "ERR ", 4) == 0 ? reply + 4 : reply);
        return;
    }
    page_forward(page, reply);
    if (want_page && page < 0)
        st.page = -1;   /* the engine gave none (it could not, or the policy shares cpus): ask no more */
    if (st.nreg < MAX_TASKS)
        st.reg[st.nreg++] = pid;
    if (st.sh->id[0] == '\0') {
        char pol[CS_NAME_MAX];
        reply_get(reply, "id", st.sh->id, sizeof st.sh->id);
        reply_get(reply, "policy", pol, sizeof pol);
        if (pol[0])
            snprintf(st.sh->policy, sizeof st.sh->policy, "%s", pol);
        reply_get(reply, "shares_cpus", pol, sizeof pol);
        st.sh->shares_cpus = strcmp(pol, "1") == 0;
        atomic_store(&st.sh->state, V_REGISTERED);
        slurm_debug("cosched: step %u.%u registered as cosched job %s (policy %s)", st.job, st.step,
                    st.sh->id, st.sh->policy);
    }
}

int cs_remote_task_post_fork(spank_t sp)
{
    pid_t pid = 0;
    uint32_t gtid = 0, nlocal = 0;
    int local = -1;

    /* every task is forked before the first task_post_fork: slurmstepd
     * needs no copy of the tasks' end of the page channel */
    if (st.chan[1] >= 0) {
        close(st.chan[1]);
        st.chan[1] = -1;
    }
    if (st.skip || !st.cosched || st.sh == NULL || st.failed)
        return 0;
    if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
        fail("Slurm did not give the task's pid");
        return 0;
    }
    spank_get_item(sp, S_TASK_GLOBAL_ID, &gtid);
    spank_get_item(sp, S_TASK_ID, &local);
    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &nlocal);
    /* Slurm binds each task (task/affinity) just before its task_post_fork,
     * one task after the other.  A step the engine adopted at its first
     * task may be folded at once, its cpuset narrowed, and the next task's
     * binding to a cpu now outside it fails with EINVAL: the step does not
     * launch ("Slurmd could not execve job").  So the tasks register
     * together, at the last one's task_post_fork, once all are bound. */
    st.pend[st.npend].pid = pid;
    st.pend[st.npend].gtid = gtid;
    st.npend++;
    if (local >= 0 && (uint32_t)local + 1 < nlocal && st.npend < MAX_TASKS)
        return 0;
    for (int i = 0; i < st.npend && !st.failed; i++)
        register_task(sp, st.pend[i].pid, st.pend[i].gtid);
    st.npend = 0;
    /* the last task: a page not sent by now never will be */
    if ((local < 0 || (uint32_t)local + 1 >= nlocal) && st.chan[0] >= 0) {
        close(st.chan[0]);
        st.chan[0] = -1;
    }
    return 0;
}

/* the task's environment for cs_omp_env_allows; a value too long to read
 * counts as set to something that is not "on" (the safe side: passive) */
struct task_env {
    spank_t sp;
    char buf[2][256];
    int i;
};

static const char *task_getenv(const char *name, void *arg)
{
    struct task_env *t = arg;
    char *b = t->buf[t->i++ % 2];
    spank_err_t rc = spank_getenv(t->sp, name, b, sizeof t->buf[0]);
    if (rc == ESPANK_SUCCESS)
        return b;
    return rc == ESPANK_ENV_NOEXIST ? NULL : "?";
}

/* The LD_PRELOAD that puts libcosched-omp.so first for a task of this step
 * when the shim can apply (cosched-spank(8) ENVIRONMENT): 1 with it in pre,
 * 0 (the task waits passively).  The same answer in slurmstepd (register:
 * does the task want the page?) as in the task (task_init): the step's
 * environment and program, and the engine's shares_cpus. */
static int shim_preload(spank_t sp, char *pre, size_t len)
{
    struct task_env t = { .sp = sp };
    char exe[PATH_MAX], path[4096], old[4096];
    const char *shim = cs_g.conf.omp_shim;
    char **argv = NULL;
    int argc = 0;
    spank_err_t rc;

    if (shim[0] == '\0' || cs_g.req.omp_shim_off || st.sh->shares_cpus || access(shim, R_OK) != 0)
        return 0;
    if (!cs_omp_env_allows(task_getenv, &t))
        return 0;
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || argv == NULL)
        return 0;
    rc = spank_getenv(sp, "PATH", path, sizeof path);
    if (!cs_exe_lookup(argv[0], rc == ESPANK_SUCCESS ? path : NULL, exe, sizeof exe) || !cs_exe_preloadable(exe))
        return 0;
    rc = spank_getenv(sp, "LD_PRELOAD", old, sizeof old);
    if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_NOEXIST)
        return 0;
    return cs_preload_value(shim, rc == ESPANK_SUCCESS ? old : NULL, pre, len) != NULL;
}

/* Put libcosched-omp.so first in the task's LD_PRELOAD when it can apply;
 * 1 if it did, 0: the task waits passively. */
static int omp_shim_task(spank_t sp)
{
    char pre[8192];

    return shim_preload(sp, pre, sizeof pre) && spank_setenv(sp, "LD_PRELOAD", pre, 1) == ESPANK_SUCCESS;
}

/* In the task, which got the shim: the page slurmstepd passed on (peeked
 * at: the message stays for the other tasks), kept open across exec and
 * named in COSCHED_OMP_PAGE for the shim.  Without one, no
 * COSCHED_OMP_PAGE. */
static void omp_page_task(spank_t sp)
{
    char b[16];
    int fd = -1;

    if (st.chan[1] >= 0 && cs_proto_recv_fd(st.chan[1], b, sizeof b, MSG_DONTWAIT | MSG_PEEK, &fd) > 0 &&
        fd >= 0 && fcntl(fd, F_SETFD, 0) == 0 && snprintf(b, sizeof b, "%d", fd) > 0 &&
        spank_setenv(sp, CS_OMPPAGE_ENV, b, 1) == ESPANK_SUCCESS)
        return;
    if (fd >= 0)
        close(fd);
    spank_unsetenv(sp, CS_OMPPAGE_ENV);
}

/* In the task, as the user, before exec. */
int cs_remote_task_init(spank_t sp)
{
    int state, local = -1;
    char buf[600];

    if (st.skip || st.sh == NULL)
        return 0;
    state = atomic_load(&st.sh->state);
    spank_get_item(sp, S_TASK_ID, &local);
    if (st.sh->policy[0])
        spank_setenv(sp, "COSCHED_POLICY", st.sh->policy, 1);
    if (state == V_REGISTERED) {
        if (st.sh->id[0])
            spank_setenv(sp, "COSCHED_JOB", st.sh->id, 1);
        /* a spinning OpenMP team on a folded or frozen core is >100x slower:
         * the shim sizes teams to the cores; where it cannot, wait passively */
        if (!omp_shim_task(sp))
            spank_setenv(sp, "OMP_WAIT_POLICY", "passive", 0);
        else
            omp_page_task(sp);
    } else if (state == V_FAILED && local == 0) {
        int n = snprintf(buf, sizeof buf, "cosched: step %u.%u runs without co-scheduling: %s\n", st.job,
                         st.step, st.sh->why);
        if (n > 0)
            (void)!write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    }
    for (int i = 0; i < 2; i++)
        if (st.chan[i] >= 0) {
            close(st.chan[i]);
            st.chan[i] = -1;
        }
    return 0;
}

int cs_remote_task_exit(spank_t sp)
{
    pid_t pid = 0;
    int i;

    if (st.skip || st.nreg == 0 || spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
        return 0;
    for (i = 0; i < st.nreg && st.reg[i] != pid; i++)
        ;
    if (i == st.nreg)
        return 0;
    st.reg[i] = st.reg[--st.nreg];
    deregister(pid);
    return 0;
}
