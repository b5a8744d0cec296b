/*
 * status.c - what the node engine says of itself: the status document of
 * `cosched status` (text or JSON; a user sees only their own steps) and the
 * --metrics file (Prometheus text format).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "core/store.h"
#include "node/node.h"
#include "node/internal.h"
#include "core/json.h"
#include "policy/policy.h"

/* ------------------------------------------------------------ status */

static char job_class(const struct cs_job *j)
{
    if (j->result && j->result->cls)
        return j->result->cls;
    if (j->stored && j->stored->cls)
        return j->stored->cls;
    return j->cls_hint;
}

/* Why the step is in the state it is, for its owner (who; 0: root): the
 * steps of other users are counted, not named (PrivateData=jobs). */
static void reason(struct cs_engine *e, const struct cs_job *j, uid_t who, char *buf, size_t len)
{
    int mine = hwloc_bitmap_weight(j->cpus), all = hwloc_bitmap_weight(cs_job_home(e, j));
    struct served *sv = j->served;

    if (sv->nt > 0 && cs_proc_all_stopped(sv->t[0].pid) == 1) {
        snprintf(buf, len, "stopped by Slurm (scontrol suspend): cosched leaves it so");
        return;
    }
    if (j->frozen) {
        size_t n = (size_t)snprintf(buf, len, "waiting for its turn: policy %s runs", cs_policy_name(e->policy));
        int any = 0, others = 0;
        for (int i = 0; i < e->njobs && n < len; i++) {
            const struct cs_job *o = e->jobs[i];
            const struct served *osv = o->served;
            if (o->state != CS_JOB_LIVE || o->frozen || o == j)
                continue;
            if (who != 0 && (!osv || osv->uid != who)) {
                others++;
                continue;
            }
            n += (size_t)snprintf(buf + n, len - n, "%s%s", any ? ", " : " ", o->name);
            any = 1;
        }
        if (others && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%d step%s of other users", any ? " and " : " ", others,
                                  others == 1 ? "" : "s");
        if (n < len)
            snprintf(buf + n, len - n, "%s in this quantum; waiting for %.1f s", any || others ? "" : " nothing else",
                     cs_now() - j->last_run_end);
        return;
    }
    const char *never = node_nofreeze_why(j);
    if (mine < all)
        snprintf(buf, len, "folded: %d of its %d cpus this quantum (%s)", mine, all,
                 never ? never : "sharing the node");
    else
        snprintf(buf, len, "running on all its cpus%s%s%s", never ? " (" : "", never ? never : "", never ? ")" : "");
}

char *node_status_doc(struct cs_engine *e, uid_t who, int text)
{
    char *doc = NULL;
    size_t dlen = 0;
    FILE *f = open_memstream(&doc, &dlen);
    int shown = 0;
    json_t *jdoc = NULL, *steps = NULL;

    if (!f)
        return NULL;
    if (text)
        fprintf(f, "cosched node engine pid %d, policy %s, quantum %g s, up %.0f s\n", (int)getpid(),
                cs_policy_name(e->policy), e->quantum, cs_now() - srv(e)->started);
    else
        jdoc = json_pack("{s:{s:i, s:o, s:o, s:o, s:I}, s:o}", "engine", "pid", (int)getpid(), "policy",
                        cs_json_text(cs_policy_name(e->policy)), "quantum", cs_json_sig(e->quantum, 6), "uptime",
                        cs_json_fixed(cs_now() - srv(e)->started, 3), "epoch", (json_int_t)e->epoch, "steps",
                        steps = json_array());
    if (text)
        fprintf(f, "%-12s %-10s %-8s %-6s %-5s %-9s %-9s %6s %6s %8s %8s  %s\n", "STEP", "USER", "NAME", "POLICY",
                "CLASS", "STATE", "CPUS", "Q_RUN", "Q_WAIT", "CPU_S", "FROZEN_S", "WHY");
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        struct served *sv = j->served;
        char why[512], *cpus, *allowed, user[64];
        char cls = job_class(j);
        int folded;
        const char *state;

        if (j->state != CS_JOB_LIVE || !sv || (who != 0 && sv->uid != who))
            continue;
        shown++;
        reason(e, j, who, why, sizeof why);
        cpus = cs_bitmap_list(j->cpus);
        allowed = cs_bitmap_list(cs_job_home(e, j));
        folded = hwloc_bitmap_weight(j->cpus) < hwloc_bitmap_weight(cs_job_home(e, j));
        state = j->frozen ? "frozen" : folded ? "folded" : "running";
        snprintf(user, sizeof user, "%s", sv->user);
        if (text) {
            char pol[80];
            snprintf(pol, sizeof pol, "%s%s%s", cs_policy_name(e->policy), strcmp(sv->asked, cs_policy_name(e->policy)) ? "/asked:" : "",
                     strcmp(sv->asked, cs_policy_name(e->policy)) ? sv->asked : "");
            fprintf(f, "%-12s %-10s %-8.8s %-6s %-5c %-9s %-9s %6llu %6llu %8.1f %8.1f  %s", j->name, user, sv->prog,
                    pol, cls ? cls : '-', state, cpus, (unsigned long long)j->quanta_run,
                    (unsigned long long)j->quanta_frozen, j->cpu_ns * 1e-9, sv->frozen_s, why);
            char *info = j->policy_info ? json_dumps(j->policy_info, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
            if (info)
                fprintf(f, "; %s says %s", cs_policy_name(e->policy), info);
            free(info);
            fputc('\n', f);
        } else {
            char cl[2] = { cls, 0 };
            json_t *o = json_pack("{s:I, s:I, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:s, s:s, s:i, s:b, "
                                  "s:i, s:I, s:I, s:o, s:o, s:i}",
                                  "job", (json_int_t)sv->job, "step", (json_int_t)sv->step, "id", j->id, "uid",
                                  (int)sv->uid, "user", cs_json_text(user), "name", cs_json_text(sv->prog), "policy",
                                  cs_json_text(cs_policy_name(e->policy)), "asked_policy", cs_json_text(sv->asked),
                                  "opts", cs_json_text(sv->opts), "class", cls ? json_string(cl) : json_null(),
                                  "state", state, "reason", cs_json_text(why), "cpus", cpus, "allocation", allowed,
                                  "nodes", sv->nnodes, "never_frozen", j->nofreeze && !sv->unasked, "tasks", sv->nt, "quanta_run",
                                  (json_int_t)j->quanta_run, "quanta_waited", (json_int_t)j->quanta_frozen,
                                  "waited_s", cs_json_fixed(j->frozen ? cs_now() - j->last_run_end : 0.0, 3),
                                  "cpu_s", cs_json_fixed(j->cpu_ns * 1e-9, 3), "priority", j->priority);
            if (o)                   /* not frozen until Slurm answers its job's probe (slurmtime.c) */
                json_object_set_new(o, "awaiting_slurm", json_boolean(sv->unasked));
            if (o && j->last_step_wall > 0 && j->last_step_ncpus > 0)
                json_object_set_new(o, "cpu_share",
                                    cs_json_fixed(j->last_step_cpu / (j->last_step_wall * j->last_step_ncpus), 3));
            struct sjob *sj = node_sjob_of(srv(e), sv->job, 0);
            if (o) {
                /* frozen time: this step's, and its job's held and given back */
                json_object_set_new(o, "frozen_s", cs_json_fixed(sv->frozen_s, 1));
                json_object_set_new(o, "job_held_s", cs_json_fixed(sj ? sj->held : 0.0, 1));
                json_object_set_new(o, "job_given_s", cs_json_fixed(sj ? sj->given : 0.0, 1));
                json_object_set_new(o, "job_extend_time", json_boolean(sj ? sj->extend : 1));
            }
            if (o)
                json_object_set_new(o, "policy_info", j->policy_info ? json_incref(j->policy_info) : json_null());
            json_array_append_new(steps, o);
        }
        free(cpus);
        free(allowed);
    }
    if (text && !shown)
        fprintf(f, "(no co-scheduled step%s on this node)\n", who ? " of yours" : "");
    if (!text)
        cs_json_put(f, jdoc, 0);
    fclose(f);
    return doc;
}

/* ------------------------------------------------------------ metrics */

/* why a registration was refused, for the metrics (their label values) */
static const char *const refusal_label[] = { "bad_request", "not_in_step", "policy", "engine", "not_root" };
/* switch latency histogram bounds, s (the last bucket is +Inf) */
static const double lat_le[10] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1 };

/* The switch that ended since the last call: into the histogram. */
void node_metrics_sample(struct cs_engine *e)
{
    struct cs_serve *s = srv(e);
    uint64_t n = e->switches - s->prev_switches;

    if (n > 0) {
        double each = (e->switch_us_total - s->prev_switch_us) * 1e-6 / (double)n;
        int b = 0;
        while (b < 10 && each > lat_le[b])
            b++;
        s->lat_bucket[b] += n;
        s->lat_n += n;
        s->lat_sum += each * (double)n;
    }
    s->prev_switches = e->switches;
    s->prev_switch_us = e->switch_us_total;
}

#define HELP(f, name, type, text) fprintf(f, "# HELP " name " " text "\n# TYPE " name " " type "\n")

/* Write the metrics file (FILE.tmp, then renamed over FILE: a scrape never
 * sees half of it); up is 0 in the last one, when the engine stops. */
void node_metrics_write(struct cs_engine *e, int up)
{
    struct cs_serve *s = srv(e);
    char tmp[PATH_MAX + 8];
    int fd, st[3] = { 0, 0, 0 };
    FILE *f;

    if (!s->metrics)
        return;
    s->metrics_last = cs_now();
    snprintf(tmp, sizeof tmp, "%s.tmp", s->metrics);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 || !(f = fdopen(fd, "w"))) {
        cs_warn("--metrics: cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    for (int i = 0; i < e->njobs; i++) {
        struct cs_job *j = e->jobs[i];
        if (j->state != CS_JOB_LIVE || !j->served)
            continue;
        st[j->frozen ? 2 : hwloc_bitmap_weight(j->cpus) < hwloc_bitmap_weight(cs_job_home(e, j)) ? 1 : 0]++;
    }
    HELP(f, "cosched_up", "gauge", "1 while the node engine runs, 0 once it stopped");
    fprintf(f, "cosched_up %d\n", up);
    HELP(f, "cosched_steps", "gauge", "Co-scheduled Slurm steps on this node now, by state");
    fprintf(f, "cosched_steps{state=\"running\"} %d\ncosched_steps{state=\"folded\"} %d\n"
               "cosched_steps{state=\"frozen\"} %d\n", st[0], st[1], st[2]);
    HELP(f, "cosched_steps_coscheduled_total", "counter", "Steps taken under co-scheduling since the engine started");
    fprintf(f, "cosched_steps_coscheduled_total %llu\n", (unsigned long long)s->accepted);
    HELP(f, "cosched_steps_refused_total", "counter",
         "Task registrations refused since the engine started, by reason (the step runs without co-scheduling)");
    for (int r = 0; r < 5; r++)
        fprintf(f, "cosched_steps_refused_total{reason=\"%s\"} %llu\n", refusal_label[r],
                (unsigned long long)s->refused[r]);
    HELP(f, "cosched_job_frozen_seconds", "gauge", "Seconds the job's steps on this node were frozen, summed over steps");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_frozen_seconds{job=\"%lu\"} %.1f\n", s->sj[k].job, s->sj[k].frozen);
    HELP(f, "cosched_job_held_seconds", "gauge", "Seconds all of the job's steps on this node were frozen at once");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_held_seconds{job=\"%lu\"} %.1f\n", s->sj[k].job, s->sj[k].held);
    HELP(f, "cosched_job_given_seconds", "gauge", "Seconds added to the job's time limit (extend_time)");
    for (int k = 0; k < s->nsj; k++)
        fprintf(f, "cosched_job_given_seconds{job=\"%lu\"} %.0f\n", s->sj[k].job, s->sj[k].given);
    HELP(f, "cosched_held_seconds_total", "counter", "Seconds jobs were held frozen, all jobs");
    fprintf(f, "cosched_held_seconds_total %.1f\n", s->held_total);
    HELP(f, "cosched_given_seconds_total", "counter", "Seconds added to jobs' time limits, all jobs");
    fprintf(f, "cosched_given_seconds_total %.0f\n", s->given_total);
    HELP(f, "cosched_switch_latency_seconds", "histogram", "Time one switch (freezes, thaws, core moves) took");
    uint64_t cum = 0;
    for (int b = 0; b < 11; b++) {
        cum += s->lat_bucket[b];
        if (b < 10)
            fprintf(f, "cosched_switch_latency_seconds_bucket{le=\"%g\"} %llu\n", lat_le[b], (unsigned long long)cum);
        else
            fprintf(f, "cosched_switch_latency_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    fprintf(f, "cosched_switch_latency_seconds_sum %.6f\ncosched_switch_latency_seconds_count %llu\n", s->lat_sum,
            (unsigned long long)s->lat_n);
    HELP(f, "cosched_policy_errors_total", "counter",
         "Plans the policy failed to make (the fallback plan ran instead) since the engine started");
    fprintf(f, "cosched_policy_errors_total %d\n", e->nfallbacks);
    HELP(f, "cosched_idle_while_frozen_cpu_seconds_total", "counter",
         "CPU-seconds the managed cpus sat idle while a step was held frozen, on cpus given to no running step "
         "(nobody) and on cpus of a running step that left them idle (held)");
    fprintf(f, "cosched_idle_while_frozen_cpu_seconds_total{cpus=\"nobody\"} %.2f\n"
               "cosched_idle_while_frozen_cpu_seconds_total{cpus=\"held\"} %.2f\n", e->idle_nobody_s, e->idle_held_s);
    HELP(f, "cosched_rescued_steps_total", "counter",
         "Steps a previous engine left held or frozen (killed with its guardian) that this engine gave back at start");
    fprintf(f, "cosched_rescued_steps_total %d\n", s->restored);
    if (fclose(f) != 0 || rename(tmp, s->metrics) < 0) {
        cs_warn("--metrics: cannot write %s: %s", s->metrics, strerror(errno));
        unlink(tmp);
    }
}

