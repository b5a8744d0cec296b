/*
 * switchbench - cost of one quantum switch per control backend.
 *
 * For J jobs of T threads each, half of the jobs run and half are frozen.
 * One switch is what the engine does between two steps of a gang rotation:
 *
 *     freeze the J/2 running jobs -> set_cpus on the J/2 entering jobs
 *     (each gets a different core than the last time it ran) -> thaw them
 *
 * timed as a whole (and per phase) with CLOCK_MONOTONIC, repeated -n times
 * with -g ms of running in between.  Jobs are real processes, forked the
 * way the engine forks them (own process group, blocked on a pipe until
 * attached and confined); each runs T threads that spin ~5 ms and sleep
 * ~1 ms in a loop (-w SPIN_US/SLEEP_US), so a freeze finds threads both on
 * and off CPU.  Every thread has to get a CPU once to stop (SIGSTOP,
 * cgroup.freeze) and, for v1, to leave a non-freezable state; when the
 * running jobs have more runnable threads than the node has CPUs, the
 * freeze phase therefore mostly measures runqueue waiting, as it would in
 * production on an oversubscribed node.
 *
 * Output: a markdown table on stdout (median, p10, p90 in microseconds, and
 * the median as a share of a 1 s and a 100 ms quantum); progress and
 * problems on stderr.  The controller runs SCHED_FIFO (children are reset
 * to SCHED_OTHER) when permitted, as the engine does: at normal priority
 * the figures mostly measure how long the controller waits for a CPU.
 *
 * It drives the backends through their ops tables exactly as the engine
 * does, guardian included, so a killed benchmark leaves nothing behind.
 * The process names itself "cosched" so that a cosched started meanwhile in
 * the same cgroup treats its run directory as live rather than as a
 * leftover.  Needs root (or delegated cgroups) for cgroup1/cgroup2;
 * unusable backends are reported and skipped.
 *
 *   switchbench [-b cgroup1,cgroup2,signals] [-j 2,8,32] [-t 1,16,64]
 *               [-n 50] [-g 20] [-w 5000/1000] [-m each|many|both] [-N] [-v]
 *
 * -m: "each" times the freeze phase as freeze() job after job, "many" as
 * one freeze_many() call (both by default).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control/control.h"
#include "core/log.h"
#include "core/job.h"
#include "core/engine_state.h"

#define MAXLIST 16

static volatile sig_atomic_t stop;
static double spin_us = 5000, sleep_us = 1000;  /* -w: per-thread duty cycle */

static void on_signal(int sig) { (void)sig; stop = 1; }

static void msleep(double ms)
{
    struct timespec ts = { (time_t)(ms / 1e3), (long)((ms - 1e3 * (double)(time_t)(ms / 1e3)) * 1e6) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop)
        ;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ the jobs */

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        double t0 = now_ns();
        struct timespec nap = { (time_t)(sleep_us / 1e6),
                                (long)(sleep_us * 1e3) % 1000000000L };
        while (now_ns() - t0 < spin_us * 1e3)
            __asm__ volatile("" ::: "memory");
        if (sleep_us > 0)
            nanosleep(&nap, NULL);
    }
    return NULL;
}

static void __attribute__((noreturn)) job_main(int startfd, int nthreads)
{
    pthread_attr_t attr;
    char c;
    int i;

    prctl(PR_SET_NAME, "switchjob", 0, 0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    setpgid(0, 0);
    if (read(startfd, &c, 1) != 1)
        _exit(1);
    close(startfd);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (i = 1; i < nthreads; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker, NULL) != 0)
            _exit(2);
    }
    worker(NULL);
    _exit(0);
}

struct bjob { struct cs_job j; int live, prepared; };

static int start_job(struct cs_engine *e, struct bjob *b, int id, int nthreads,
                     hwloc_const_bitmap_t cpus, int frozen)
{
    const struct cs_control_ops *ops = e->ctl;
    int sp[2];
    pid_t pid;

    memset(b, 0, sizeof *b);
    b->j.id = id;
    b->j.cpus = hwloc_bitmap_alloc();   /* what the engine keeps: the cores last given */
    if (ops->job_prepare(e, &b->j) < 0)
        return -1;
    b->prepared = 1;
    if (pipe2(sp, O_CLOEXEC) < 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        close(sp[0]);
        close(sp[1]);
        return -1;
    }
    if (pid == 0) {
        close(sp[1]);
        job_main(sp[0], nthreads);
    }
    close(sp[0]);
    setpgid(pid, pid);
    b->j.pid = pid;
    b->live = 1;
    if (ops->job_attach(e, &b->j, pid) < 0 || ops->set_cpus(e, &b->j, cpus, NULL) < 0) {
        close(sp[1]);
        return -1;
    }
    if (b->j.cpus)
        hwloc_bitmap_copy(b->j.cpus, cpus);
    if (frozen) {
        /* on a crowded machine the child may not have run yet: retry as
         * the engine would at its next step */
        int tries = 0;
        while (ops->freeze(e, &b->j) < 0)
            if (++tries == 10 || stop) {
                close(sp[1]);
                return -1;
            }
    }
    b->j.frozen = frozen;
    if (write(sp[1], "g", 1) != 1) {
        close(sp[1]);
        return -1;
    }
    close(sp[1]);
    return 0;
}

static void end_job(struct cs_engine *e, struct bjob *b)
{
    const struct cs_control_ops *ops = e->ctl;
    struct rusage ru;
    int status;

    if (b->live) {
        if (b->j.frozen)
            ops->thaw(e, &b->j);        /* v1: frozen tasks ignore SIGKILL */
        kill(-b->j.pid, SIGKILL);
        while (wait4(b->j.pid, &status, 0, &ru) < 0 && errno == EINTR)
            ;
        if (ops->instance_ended)
            ops->instance_ended(e, &b->j, &ru);
        b->live = 0;
    }
    if (b->prepared)
        ops->job_release(e, &b->j);
    b->prepared = 0;
    if (b->j.cpus)
        hwloc_bitmap_free(b->j.cpus);
    b->j.cpus = NULL;
}

/* ------------------------------------------------------------ measure */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    return v[(int)((n - 1) * p + 0.5)];
}

struct cell { double med, p10, p90, fr, cp, th; int fails, n; };

/* Cores for entering job k on its e-th entry: one CPU, rotating. */
static void cores_for(hwloc_const_bitmap_t managed, int k, int entry, hwloc_bitmap_t out)
{
    int w = hwloc_bitmap_weight(managed), idx = (k + entry) % w, cpu, i = 0;

    hwloc_bitmap_zero(out);
    hwloc_bitmap_foreach_begin(cpu, managed) {
        if (i++ == idx) {
            hwloc_bitmap_set(out, (unsigned)cpu);
            break;
        }
    } hwloc_bitmap_foreach_end();
}

static int run_cell(struct cs_engine *e, int njobs, int nthreads, int nswitch, double gap_ms,
                    int batched, struct cell *c)
{
    const struct cs_control_ops *ops = e->ctl;
    struct bjob *jobs = calloc((size_t)njobs, sizeof *jobs);
    double *tot = calloc((size_t)nswitch, sizeof *tot), *fr = calloc((size_t)nswitch, sizeof *fr);
    double *cp = calloc((size_t)nswitch, sizeof *cp), *th = calloc((size_t)nswitch, sizeof *th);
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    struct cs_job **leave = calloc((size_t)njobs, sizeof *leave);
    int *ok = calloc((size_t)njobs, sizeof *ok);
    int half = njobs / 2, i, s, ret = -1, warm = 3;

    memset(c, 0, sizeof *c);
    if (!jobs || !tot || !fr || !cp || !th || !cpus || !leave || !ok || half < 1)
        goto out;
    /* the frozen half first, while nothing spins yet: a child forked
     * behind a thousand runnable threads may not run (and so not freeze)
     * for seconds */
    for (s = 0; s < njobs && !stop; s++) {
        i = (s + half) % njobs;
        cores_for(e->managed, i % half, 0, cpus);
        if (start_job(e, &jobs[i], i + 1, nthreads, cpus, i >= half) < 0) {
            fprintf(stderr, "switchbench: %s: cannot start job %d of %d\n", ops->name, i + 1, njobs);
            goto out;
        }
    }
    msleep(50);                             /* threads created, running ones spinning */
    for (s = -warm; s < nswitch && !stop; s++) {
        int lo = (s + warm) % 2 ? half : 0;         /* leaving: jobs [lo, lo+half) */
        int en = half - lo;                          /* entering: jobs [en, en+half) */
        int entry = (s + warm) / 2 + 1;
        double t0, t1, t2, t3;

        t0 = now_ns();
        if (batched) {
            for (i = 0; i < half; i++)
                leave[i] = &jobs[lo + i].j;
            ops->freeze_many(e, leave, half, ok);
            for (i = 0; i < half; i++) {
                jobs[lo + i].j.frozen = ok[i];
                c->fails += s >= 0 && !ok[i];
            }
        } else {
            for (i = 0; i < half; i++) {
                if (ops->freeze(e, &jobs[lo + i].j) < 0)
                    c->fails += s >= 0;
                else
                    jobs[lo + i].j.frozen = 1;
            }
        }
        t1 = now_ns();
        for (i = 0; i < half; i++) {
            cores_for(e->managed, i, entry, cpus);
            if (ops->set_cpus(e, &jobs[en + i].j, cpus, NULL) < 0)
                c->fails += s >= 0;
            else if (jobs[en + i].j.cpus)
                hwloc_bitmap_copy(jobs[en + i].j.cpus, cpus);
        }
        t2 = now_ns();
        for (i = 0; i < half; i++) {
            if (ops->thaw(e, &jobs[en + i].j) < 0)
                c->fails += s >= 0;
            else
                jobs[en + i].j.frozen = 0;
        }
        t3 = now_ns();
        if (s >= 0) {
            tot[s] = (t3 - t0) / 1e3;
            fr[s] = (t1 - t0) / 1e3;
            cp[s] = (t2 - t1) / 1e3;
            th[s] = (t3 - t2) / 1e3;
            c->n++;
        }
        msleep(gap_ms);
    }
    if (c->n) {
        qsort(tot, (size_t)c->n, sizeof *tot, cmp_double);
        qsort(fr, (size_t)c->n, sizeof *fr, cmp_double);
        qsort(cp, (size_t)c->n, sizeof *cp, cmp_double);
        qsort(th, (size_t)c->n, sizeof *th, cmp_double);
        c->med = pct(tot, c->n, 0.5);
        c->p10 = pct(tot, c->n, 0.1);
        c->p90 = pct(tot, c->n, 0.9);
        c->fr = pct(fr, c->n, 0.5);
        c->cp = pct(cp, c->n, 0.5);
        c->th = pct(th, c->n, 0.5);
        ret = 0;
    }
out:
    for (i = 0; jobs && i < njobs; i++)
        end_job(e, &jobs[i]);
    hwloc_bitmap_free(cpus);
    free(leave);
    free(ok);
    free(jobs);
    free(tot);
    free(fr);
    free(cp);
    free(th);
    return ret;
}

/* ---------------------------------------------------------------- main */

/* The signals backend scans /proc: its cost depends on this. */
static long count_processes(void)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    long n = 0;

    if (!d)
        return -1;
    while ((de = readdir(d)))
        n += isdigit((unsigned char)de->d_name[0]) != 0;
    closedir(d);
    return n;
}

static int parse_list(const char *s, int *v, int max)
{
    int n = 0;
    char *end;

    while (*s && n < max) {
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > 4096 || (*end && *end != ','))
            return -1;
        v[n++] = (int)x;
        s = *end ? end + 1 : end;
    }
    return n;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: switchbench [-b cgroup1,cgroup2,signals] [-j 2,8,32] [-t 1,16,64]\n"
               "                   [-n switches] [-g gap_ms] [-w spin_us/sleep_us] [-m each|many|both]\n"
               "                   [-N (no real-time)] [-v]\n");
}

int main(int argc, char **argv)
{
    const char *backends = "cgroup1,cgroup2,signals";
    int js[MAXLIST] = { 2, 8, 32 }, ts[MAXLIST] = { 1, 16, 64 }, nj = 3, nt = 3;
    int nswitch = 50, rt = 1, opt, failed = 0, modes = 3;   /* 1 each, 2 many */
    double gap = 20;
    char runid[32], *list, *name, *save = NULL, *managed = NULL;
    struct sigaction sa;
    struct cs_engine e;
    const char *sched = "SCHED_OTHER";

    cs_verbosity = CS_LOG_WARN;
    while ((opt = getopt(argc, argv, "b:j:t:n:g:w:m:Nvh")) != -1) {
        switch (opt) {
        case 'b': backends = optarg; break;
        case 'j': nj = parse_list(optarg, js, MAXLIST); break;
        case 't': nt = parse_list(optarg, ts, MAXLIST); break;
        case 'n': nswitch = atoi(optarg); break;
        case 'g': gap = atof(optarg); break;
        case 'w':
            if (sscanf(optarg, "%lf/%lf", &spin_us, &sleep_us) != 2 || spin_us < 0 || sleep_us < 0) {
                usage(stderr);
                return 2;
            }
            break;
        case 'N': rt = 0; break;
        case 'm':
            modes = !strcmp(optarg, "each") ? 1 : !strcmp(optarg, "many") ? 2
                  : !strcmp(optarg, "both") ? 3 : 0;
            if (!modes) {
                usage(stderr);
                return 2;
            }
            break;
        case 'v': cs_verbosity = CS_LOG_DEBUG; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (nj < 1 || nt < 1 || nswitch < 1 || gap < 0 || optind != argc) {
        usage(stderr);
        return 2;
    }
    prctl(PR_SET_NAME, "cosched", 0, 0, 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (rt) {
        struct sched_param sp = { .sched_priority = 10 };
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
            sched = "SCHED_FIFO 10";
        else
            fprintf(stderr, "switchbench: cannot use SCHED_FIFO (%s); figures include scheduling "
                    "delays of the controller\n", strerror(errno));
    }
    memset(&e, 0, sizeof e);
    snprintf(runid, sizeof runid, "%ld", (long)getpid());
    e.run_id = runid;
    e.managed = hwloc_bitmap_dup(cs_proc_start_cpus());
    hwloc_bitmap_list_asprintf(&managed, e.managed);
    for (int i = 0; i < nj; i++)
        if (js[i] < 2 || js[i] % 2) {
            fprintf(stderr, "switchbench: -j values must be even and >= 2 (got %d)\n", js[i]);
            return 2;
        }

    printf("# switchbench: cost of one quantum switch\n\n");
    printf("switch = freeze the J/2 running jobs, set_cpus on the J/2 entering jobs (a different "
           "core each time), thaw them.  %d switches per cell, %.0f ms apart; job threads spin %.0f us "
           "and sleep %.0f us in turn; controller %s; managed CPUs %s; %ld processes on the node "
           "at start.\n\n", nswitch, gap, spin_us, sleep_us, sched,
           managed ? managed : "?", count_processes());
    printf("freeze: \"each\" calls freeze() job after job (each waits until its job is frozen); "
           "\"many\" calls freeze_many() once for the leaving jobs (waits overlap).  "
           "failed ops: freezes not complete within the backends' 100 ms bound (the job is thawed "
           "back and left running), and failed set_cpus/thaw.\n\n");
    printf("| backend | freeze | jobs | threads/job | median µs | p10 µs | p90 µs | freeze / cpus / "
           "thaw median µs | share of 1 s | share of 100 ms | failed ops |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);

    list = strdup(backends);
    for (name = strtok_r(list, ",", &save); name && !stop; name = strtok_r(NULL, ",", &save)) {
        const struct cs_control_ops *ops = cs_control_by_name(name);
        char why[1024], label[64];
        if (!ops) {
            fprintf(stderr, "switchbench: unknown backend '%s'\n", name);
            failed = 1;
            continue;
        }
        if (ops->probe(why, sizeof why) < 0) {
            printf("| %s | | | | not usable here: %s | | | | | | |\n", name, why);
            continue;
        }
        snprintf(label, sizeof label, "%s", name);
        if (ops == &cs_control_cgroup2)
            snprintf(label, sizeof label, "cgroup2 (%s)",
                     cs_cgroup2_cpuset_usable(why, sizeof why) == 0 ? "cpuset" : "affinity");
        e.ctl = ops;
        if (cs_guard_start(ops) < 0 || ops->init(&e) < 0) {
            fprintf(stderr, "switchbench: %s: cannot initialise\n", name);
            cs_guard_done();
            failed = 1;
            continue;
        }
        for (int a = 0; a < nj && !stop; a++)
            for (int b = 0; b < nt && !stop; b++)
                for (int m = 1; m <= 2 && !stop; m++) {
                    const char *mode = m == 1 ? "each" : "many";
                    struct cell c;
                    if (!(modes & m) || (m == 2 && !ops->freeze_many))
                        continue;
                    fprintf(stderr, "switchbench: %s, %d jobs x %d threads, freeze %s...\n",
                            name, js[a], ts[b], mode);
                    if (run_cell(&e, js[a], ts[b], nswitch, gap, m == 2, &c) < 0) {
                        printf("| %s | %s | %d | %d | failed | | | | | | |\n", label, mode,
                               js[a], ts[b]);
                        failed = 1;
                        continue;
                    }
                    printf("| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f / %.0f / %.0f | "
                           "%.3f %% | %.2f %% | %d |\n", label, mode, js[a], ts[b], c.med, c.p10,
                           c.p90, c.fr, c.cp, c.th, c.med / 1e4, c.med / 1e3, c.fails);
                    fflush(stdout);
                }
        ops->fini(&e);
        cs_guard_done();
    }
    free(list);
    free(managed);
    hwloc_bitmap_free(e.managed);
    if (stop)
        fprintf(stderr, "switchbench: interrupted; jobs ended and cgroups removed\n");
    return failed || stop;
}
