/*
 * fuzz_simapps - simulated application files (share/sim/NAME.apps: app
 * models, phases, the empirical interference matrix), cs_sim_apps_load()
 * in launcher/sim/sim.c.  Every app of a file that loads is looked up by name,
 * and the first four run in the model as `cosched simulate --bound` runs
 * them on share/sim/2socket.node: each alone and all together on every core
 * (cs_sim_steady), under the analytic model and, when the file has a
 * matrix, the empirical one.  UBSan sees the model's arithmetic on the
 * values the loader let through (float-to-int overflow is UB).
 */
#define FUZZ_WANT_LOG
#include "config.h"
#include "fuzz.h"
#include "sim/sim.h"
#include "core/topo.h"
#include "core/job.h"

static void run_model(const struct cs_sim_apps *a, const struct cs_sim_node *n, const struct cs_topo *t,
                      enum cs_sim_model model)
{
    struct cs_sim *s = cs_sim_new(n, a, model, 1, 0.1, t);
    struct cs_job jobs[4];
    hwloc_const_bitmap_t cpus[4];
    int ids[4], nj = 0;
    double rates[4];

    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < a->napps && nj < 4; i++) {
        jobs[nj].id = nj + 1;
        jobs[nj].name = a->apps[i].name;
        jobs[nj].threads = a->apps[i].threads;
        if (cs_sim_add_job(s, &jobs[nj], &a->apps[i], -2) < 0)
            break;
        ids[nj] = nj + 1;
        cpus[nj] = t->all_pus;
        nj++;
    }
    for (int i = 0; i < nj; i++) {
        cs_sim_steady(s, &ids[i], &cpus[i], 1, rates);
        cs_sim_work(s, &jobs[i]);
    }
    if (nj > 1)
        cs_sim_steady(s, ids, cpus, nj, rates);
    cs_sim_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cs_sim_node *n;
    static struct cs_topo *t;
    struct cs_sim_apps *a;

    if (n == NULL) {
        char *synth;
        if ((n = cs_sim_node_load(COSCHED_SRCDIR "/share/sim/2socket.node")) == NULL ||
            (synth = cs_sim_node_synthetic(n)) == NULL || (t = cs_topo_load(synth)) == NULL)
            abort();
        free(synth);
    }
    if ((a = cs_sim_apps_load(fuzz_file(data, size))) != NULL) {
        for (int i = 0; i < a->napps; i++)
            if (cs_sim_app_find(a, a->apps[i].name) == NULL)
                abort();
        cs_sim_app_find(a, "no-such-app");
        run_model(a, n, t, CS_SIM_ANALYTIC);
        if (a->have_matrix)
            run_model(a, n, t, CS_SIM_EMPIRICAL);
        cs_sim_apps_free(a);
    }
    return 0;
}
