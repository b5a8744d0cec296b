/*
 * summary.c - the run's summary on stderr (cs_engine_summary, host.h): the
 * policy, the switches, the CPU time left idle while a job was held, each
 * job's runs and state, the characterizations.  Printed by the hosts whose
 * user reads it (local/, sim/) at the end of a complete run.
 */
#include "config.h"
#include <stdio.h>
#include <sys/wait.h>
#include "engine/engine.h"
#include "core/log.h"
#include "core/util.h"
#include "control/control.h"
#include "policy/policy.h"

void cs_engine_summary(struct cs_engine *e)
{
    fprintf(stderr, "\ncosched: summary (policy %s, control %s, %.1f s, %llu steps, mean switch %.0f us%s)\n",
            cs_policy_name(e->policy), e->ctl->name, cs_now() - e->t0, (unsigned long long)e->step_seq,
            e->switches ? e->switch_us_total / e->switches : 0.0,
            e->nfallbacks ? ", policy fallbacks occurred" : "");
    if (e->idle_steps)
        fprintf(stderr, "idle while a job was frozen: %.2f CPU-s (%.2f on cpus given to nobody, %.2f on cpus of a "
                        "running job)%s\n", e->idle_nobody_s + e->idle_held_s, e->idle_nobody_s, e->idle_held_s,
                e->idle_steps < e->step_seq ? ", in the steps where the idle time could be read" : "");
    else if (e->step_seq)
        fprintf(stderr, "idle while a job was frozen: unknown (control %s could not read the cpus' idle time)\n",
                e->ctl->name);
    fprintf(stderr, "%4s %-16s %5s %8s %9s %9s %7s %7s  %s\n", "id", "name", "runs", "done", "wall_s", "cpu_s",
            "q_run", "q_froz", "status");
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        char st[48];
        int s = j->last_status;
        if (j->runs_started == 0)
            snprintf(st, sizeof st, "not started");
        else if (j->cut_by_window && !j->failed)
            snprintf(st, sizeof st, "ok, last run cut by the window");
        else if (j->cut_by_window)
            snprintf(st, sizeof st, "cut by the window (earlier run failed)");
        else if (j->stopped_by_us)   /* classify, once characterized: asked for, not a failure */
            snprintf(st, sizeof st, "%sstopped by cosched (signal %d)", j->failed ? "" : "ok, ", WTERMSIG(s));
        else if (WIFEXITED(s))
            snprintf(st, sizeof st, "exit %d%s", WEXITSTATUS(s), j->failed ? " (failed)" : "");
        else if (WIFSIGNALED(s))
            snprintf(st, sizeof st, "signal %d%s", WTERMSIG(s), j->failed ? " (failed)" : "");
        else
            snprintf(st, sizeof st, "?");
        fprintf(stderr, "%4d %-16s %5d %8d %9.2f %9.2f %7llu %7llu  %s\n", j->id, j->name, j->runs_started,
                j->runs_done, j->wall, j->cpu_ns * 1e-9, (unsigned long long)j->quanta_run,
                (unsigned long long)j->quanta_frozen, st);
    }
    /* characterizations (policies that measure jobs): more than one per job
     * is a re-characterization - a phase change, or a false one */
    int nch = 0, nre = 0;
    for (int i = 0; i < e->njobs; i++) {
        nch += e->jobs[i]->characterized;
        nre += e->jobs[i]->characterized > 1 ? e->jobs[i]->characterized - 1 : 0;
    }
    if (nch) {
        fprintf(stderr, "characterizations: %d, of which %d re-characterization%s", nch, nre, nre == 1 ? "" : "s");
        for (int i = 0, first = 1; i < e->njobs; i++)
            if (e->jobs[i]->characterized > 1) {
                fprintf(stderr, "%s%s x%d", first ? " (" : ", ", e->jobs[i]->name, e->jobs[i]->characterized);
                first = 0;
            }
        fprintf(stderr, "%s\n", nre ? ")" : "");
    }
}
