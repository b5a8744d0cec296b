/*
 * counterbench: cost of the perf counter backend's read() per job per step
 * (BENCHMARKS.md).  Drives the real ops table (cs_counters_perf) as the engine
 * does - init, job_attach on forked processes, then rounds of step_begin and
 * one read() per job - and times the reads.
 *
 *   counterbench [-p PROFILE] [-n JOBS] [-r ROUNDS] [-s] [-R REPEATS]
 *
 *   -p PROFILE  profile file (default: profiles/test-software.txt of the tree)
 *   -n JOBS     jobs (forked processes, each with its own counters; default 8)
 *   -r ROUNDS   steps timed per repeat (default 2000)
 *   -s          the processes spin (a read may then need an IPI to the cpu the
 *               task runs on); default: they sleep, as frozen jobs do
 *   -P          pin: the reader on the first cpu, the processes on the others
 *               (so that spinning processes do not preempt the reader)
 *   -R REPEATS  repeats; the median and the minimum are printed (default 5)
 *
 * Prints: jobs, events per job, mode, ns per read (median, min), us per step
 * for all jobs (median).
 */
#include "config.h"
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "counters/counters.h"
#include "core/util.h"
#include "core/job.h"
#include "core/engine_state.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *prof = COSCHED_SRCDIR "/profiles/test-software.txt";
    int njobs = 8, rounds = 2000, spin = 0, repeats = 5, pin = 0, c;
    cpu_set_t mine, others;
    struct cs_engine e = { 0 };

    while ((c = getopt(argc, argv, "p:n:r:sR:P")) != -1)
        switch (c) {
        case 'p': prof = optarg; break;
        case 'n': njobs = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 's': spin = 1; break;
        case 'R': repeats = atoi(optarg); break;
        case 'P': pin = 1; break;
        default:
            fprintf(stderr, "usage: counterbench [-p PROFILE] [-n JOBS] [-r ROUNDS] [-s] [-P] [-R REPEATS]\n");
            return 2;
        }
    if (njobs < 1 || rounds < 1 || repeats < 1)
        return 2;
    if (pin) {
        int first = -1;
        if (sched_getaffinity(0, sizeof mine, &mine) < 0 || CPU_COUNT(&mine) < 2) {
            fprintf(stderr, "counterbench: -P needs at least 2 cpus\n");
            return 2;
        }
        others = mine;
        for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
            if (CPU_ISSET(i, &mine))
                first = i;
        CPU_ZERO(&mine);
        CPU_SET(first, &mine);
        CPU_CLR(first, &others);
    }
    struct cs_profile *p = cs_profile_load(prof);
    if (p == NULL)
        return 2;
    e.profile = p;
    e.njobs = njobs;
    e.jobs = calloc(njobs, sizeof *e.jobs);
    e.cnt = &cs_counters_perf;
    if (cs_counters_perf.init(&e, NULL, p) < 0)
        return 1;
    for (int i = 0; i < njobs; i++) {
        struct cs_job *j = e.jobs[i] = calloc(1, sizeof *j);
        char name[32];
        snprintf(name, sizeof name, "job%d", i + 1);
        j->id = i + 1;
        j->name = strdup(name);
        if ((j->pid = fork()) == 0) {
            if (pin)
                sched_setaffinity(0, sizeof others, &others);
            if (spin)
                for (volatile unsigned long x = 0;; x++)
                    ;
            for (;;)
                pause();
        }
        if (cs_counters_perf.job_attach(&e, j, j->pid) < 0)
            return 1;
    }
    if (pin)
        sched_setaffinity(0, sizeof mine, &mine);
    hwloc_const_bitmap_t *cpus_of = calloc(njobs, sizeof *cpus_of);
    double *per = calloc(repeats, sizeof *per), *step = calloc(repeats, sizeof *step);
    struct cs_counts out;
    for (int r = 0; r < repeats; r++) {
        double t = 0;
        for (int k = 0; k < rounds; k++) {
            cs_counters_perf.step_begin(&e, cpus_of);
            double t0 = cs_now();
            for (int i = 0; i < njobs; i++)
                if (cs_counters_perf.read(&e, e.jobs[i], &out) < 0 || !(out.flags & CS_COUNTS_VALID))
                    return 1;
            t += cs_now() - t0;
        }
        per[r] = t / rounds / njobs * 1e9;
        step[r] = t / rounds * 1e6;
    }
    qsort(per, repeats, sizeof *per, cmp);
    qsort(step, repeats, sizeof *step, cmp);
    printf("jobs %d  events/job %d  %s%s  read: %.0f ns median (min %.0f)  per step, all jobs: %.1f us\n", njobs,
           p->nevents, spin ? "spinning" : "sleeping", pin ? " (pinned apart)" : "", per[repeats / 2], per[0], step[repeats / 2]);
    for (int i = 0; i < njobs; i++) {
        kill(e.jobs[i]->pid, SIGKILL);
        waitpid(e.jobs[i]->pid, NULL, 0);
        cs_counters_perf.instance_ended(&e, e.jobs[i]);
        cs_counters_perf.job_release(&e, e.jobs[i]);
    }
    cs_counters_perf.fini(&e);
    cs_profile_free(p);
    return 0;
}
