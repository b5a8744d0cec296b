/*
 * stepfreeze - freeze latency of the Slurm backend (control/slurm.c) on a
 * cgroup v2 step, as the node engine freezes one at a switch.
 *
 * Builds the tree Slurm's cgroup/v2 makes for a step below a directory of
 * its own in the cgroup2 root (<root>/stepfreeze.<pid>/job_<J>/step_0/
 * {slurm,user/task_0}), forks one task of T spinning threads into
 * user/task_0, hands it to the Slurm backend (job_attach, which locates the
 * step from the task's /proc/PID/cgroup as for a registration), then times
 * N rounds of freeze_many() of the step alone and thaw(), each after -g
 * ms of running or being frozen (CLOCK_MONOTONIC, median, p10, p90 in
 * microseconds).  The gap is a quantum: keep it above 12 ms, since the
 * kernel sends at most one cgroup.events notification per file per 10 ms
 * (CGROUP_FILE_NOTIFY_MIN_INTV, rounded up to jiffies), and a freeze right
 * after a thaw would be timed against that limit, not against the freezer.  The controller runs
 * SCHED_FIFO when permitted, as the engine does.  Everything it made is
 * removed at the end.  Needs root and a cgroup2 hierarchy with
 * cgroup.freeze (the test VM, tests/vm/README).
 *
 *   stepfreeze [-n 200] [-t 2] [-g 30]
 *
 * tests/vm/stepcount runs it under strace -c for the system calls per
 * freeze (BENCHMARKS.md 11a).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control/internal.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void spin_task(int threads)
{
    for (int i = 1; i < threads; i++)
        if (fork() == 0)
            break;                          /* processes, not threads: no -lpthread needed */
    for (volatile unsigned long k = 0;; k++)
        ;
}

static int put(const char *dir, const char *file, const char *val)
{
    char p[PATH_MAX + 256];
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (!(f = fopen(p, "w")))
        return -1;
    fputs(val, f);
    return fclose(f);
}

int main(int argc, char **argv)
{
    int n = 200, threads = 2, gap_ms = 30, o;
    char top[PATH_MAX + 64], job[PATH_MAX + 96], step[PATH_MAX + 128], user[PATH_MAX + 160], task[PATH_MAX + 192],
        slurm[PATH_MAX + 192];
    char mnt[PATH_MAX], own[PATH_MAX], why[PATH_MAX + 256], name[32], num[32];
    int pipefd[2];

    while ((o = getopt(argc, argv, "n:t:g:")) != -1) {
        if (o == 'n')
            n = atoi(optarg);
        else if (o == 't')
            threads = atoi(optarg);
        else if (o == 'g')
            gap_ms = atoi(optarg);
        else {
            fprintf(stderr, "usage: stepfreeze [-n ROUNDS] [-t THREADS] [-g GAP_MS]\n");
            return 2;
        }
    }
    if (n < 1 || threads < 1)
        return 2;
    if (cs_cgroup_locate(NULL, mnt, sizeof mnt, own, sizeof own, why, sizeof why) < 0) {
        fprintf(stderr, "stepfreeze: %s\n", why);
        return 1;
    }
    snprintf(top, sizeof top, "%s/stepfreeze.%d", mnt, (int)getpid());
    snprintf(job, sizeof job, "%s/job_%d", top, (int)getpid());
    snprintf(step, sizeof step, "%s/step_0", job);
    snprintf(slurm, sizeof slurm, "%s/slurm", step);
    snprintf(user, sizeof user, "%s/user", step);
    snprintf(task, sizeof task, "%s/task_0", user);
    if (mkdir(top, 0755) || mkdir(job, 0755) || mkdir(step, 0755) || mkdir(slurm, 0755) || mkdir(user, 0755) ||
        mkdir(task, 0755)) {
        fprintf(stderr, "stepfreeze: cannot make %s: %s\n", task, strerror(errno));
        return 1;
    }
    struct sched_param sp = { .sched_priority = 1 };
    if (pipe(pipefd) < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char b;
        struct sched_param zero = { 0 };
        sched_setscheduler(0, SCHED_OTHER, &zero);
        setpgid(0, 0);
        close(pipefd[1]);
        if (read(pipefd[0], &b, 1) != 1)
            _exit(1);
        spin_task(threads);
    }
    close(pipefd[0]);
    snprintf(num, sizeof num, "%d", (int)pid);
    if (put(task, "cgroup.procs", num) < 0) {
        fprintf(stderr, "stepfreeze: cannot move %d to %s\n", (int)pid, task);
        kill(pid, SIGKILL);
        return 1;
    }
    (void)!write(pipefd[1], "g", 1);
    close(pipefd[1]);
    usleep(100000);
    sched_setscheduler(0, SCHED_FIFO, &sp);

    struct cs_engine e;
    struct cs_job j, *jp = &j;
    memset(&e, 0, sizeof e);
    memset(&j, 0, sizeof j);
    snprintf(name, sizeof name, "%d.0", (int)getpid());
    j.id = 1;
    j.name = name;
    j.pid = pid;
    e.ctl = &cs_control_slurm;
    int rc = 1;
    struct cs_slurm_step at;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    /* where the step is, found once as the node engine finds it */
    if (cs_slurm_step_locate(pid, 0, (unsigned long)getpid(), 0, &at, cpus, why, sizeof why) < 0) {
        fprintf(stderr, "stepfreeze: %s\n", why);
        hwloc_bitmap_free(cpus);
        goto out;
    }
    hwloc_bitmap_free(cpus);
    j.slurm = &at;
    if (cs_control_slurm.init(&e) < 0 || cs_control_slurm.job_attach(&e, &j, pid) < 0) {
        fprintf(stderr, "stepfreeze: the Slurm backend did not take the step\n");
        goto out;
    }
    double *fz = calloc((size_t)n, sizeof *fz), *th = calloc((size_t)n, sizeof *th);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int frozen = 0;
        struct timespec gap = { gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L };
        nanosleep(&gap, NULL);              /* running, as for a quantum */
        double t0 = mono();
        if (cs_control_slurm.freeze_many(&e, &jp, 1, &frozen) < 0 || !frozen)
            failed++;
        fz[i] = (mono() - t0) * 1e6;
        nanosleep(&gap, NULL);              /* frozen, as for a quantum */
        t0 = mono();
        if (cs_control_slurm.thaw(&e, &j) < 0)
            failed++;
        th[i] = (mono() - t0) * 1e6;
    }
    qsort(fz, (size_t)n, sizeof *fz, cmp);
    qsort(th, (size_t)n, sizeof *th, cmp);
    printf("stepfreeze v2 threads=%d rounds=%d failed=%d freeze_us median %.0f p10 %.0f p90 %.0f"
           " thaw_us median %.0f p10 %.0f p90 %.0f\n", threads, n, failed, fz[n / 2], fz[n / 10], fz[n * 9 / 10],
           th[n / 2], th[n / 10], th[n * 9 / 10]);
    free(fz);
    free(th);
    cs_control_slurm.job_release(&e, &j);
    rc = failed ? 1 : 0;
out:
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    usleep(100000);
    rmdir(task);
    rmdir(user);
    rmdir(slurm);
    rmdir(step);
    rmdir(job);
    rmdir(top);
    return rc;
}
