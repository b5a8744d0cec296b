/*
 * fuzz_simapps - simulated application files (share/sim/NAME.apps: app
 * models, phases, the empirical interference matrix), cs_sim_apps_load()
 * in launcher/sim.c; every app of a file that loads is looked up by name.
 */
#define FUZZ_WANT_LOG
#include "fuzz.h"
#include "config.h"
#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cs_sim_apps *a = cs_sim_apps_load(fuzz_file(data, size));
    if (a != NULL) {
        for (int i = 0; i < a->napps; i++)
            if (cs_sim_app_find(a, a->apps[i].name) == NULL)
                abort();
        cs_sim_app_find(a, "no-such-app");
        cs_sim_apps_free(a);
    }
    return 0;
}
