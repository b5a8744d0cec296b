/*
 * numa.c - where each job's memory actually is, for the NUMA policies
 * (paper 000's home node, paper 002's memory domains).
 *
 * The kernel reports, per mapping of a process, how many pages sit on each
 * node (/proc/PID/numa_maps, "N0=123 N1=45 ... kernelpagesize_kB=4"): that
 * is every resident page, not a sample, and costs one read per process.
 * libnuma's move_pages() status query would need the page addresses first
 * (from /proc/PID/maps) and gives the same answer page by page; numa_maps is
 * what numastat(8) reads.  Only the job's leader process is read: its
 * threads share its memory; child processes with memory of their own are
 * not counted (documented in cosched-policy(7)).
 *
 * Sampling is at most once a second per job (paper 000's epoch is 1 s).
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util.h"
#include "core/topo.h"
#include "core/job.h"
#include "core/numa.h"
#include "core/engine_state.h"

int cs_numa_resident(pid_t pid, double *bytes, int nnodes)
{
    char path[64], *line = NULL;
    size_t cap = 0;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/numa_maps", (int)pid);
    if ((f = fopen(path, "re")) == NULL)
        return -1;
    for (int k = 0; k < nnodes; k++)
        bytes[k] = 0;
    while (getline(&line, &cap, f) > 0) {
        double pagesize = 4096;
        char *kp = strstr(line, " kernelpagesize_kB=");
        if (kp)
            pagesize = strtod(kp + 19, NULL) * 1024;
        for (char *t = strstr(line, " N"); t; t = strstr(t + 1, " N")) {
            char *end;
            long node = strtol(t + 2, &end, 10);
            if (end == t + 2 || *end != '=' || node < 0 || node >= nnodes)
                continue;
            bytes[node] += strtod(end + 1, NULL) * pagesize;
        }
    }
    free(line);
    fclose(f);
    return 0;
}

void cs_numa_sample_jobs(struct cs_engine *e)
{
    double now = cs_now();
    int nnodes = 1;

    for (int k = 0; k < e->topo->nnumas; k++)
        if (e->topo->numas[k].os_index + 1 > nnodes)
            nnodes = e->topo->numas[k].os_index + 1;
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || j->pid <= 0 || now - j->mem_sampled < 1.0)
            continue;
        if (j->mem_bytes == NULL)
            j->mem_bytes = calloc(nnodes, sizeof *j->mem_bytes);
        j->mem_sampled = now;
        j->mem_nnodes = (j->mem_bytes && cs_numa_resident(j->pid, j->mem_bytes, nnodes) == 0) ? nnodes : 0;
    }
}
