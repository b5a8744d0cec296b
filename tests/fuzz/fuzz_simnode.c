/*
 * fuzz_simnode - simulated node files (share/sim/NAME.node),
 * cs_sim_node_load() in launcher/sim/sim.c; a node that loads is built as
 * `cosched simulate` builds it: its synthetic description
 * (cs_sim_node_synthetic) loaded by cs_topo_load, which must succeed (and
 * within the time limit: corpus/simnode/timeout-16M-cores.node).
 */
#define FUZZ_WANT_LOG
#include "config.h"
#include "fuzz.h"
#include "sim/sim.h"
#include "core/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cs_sim_node *n = cs_sim_node_load(fuzz_file(data, size));
    if (n != NULL) {
        char *synth = cs_sim_node_synthetic(n);
        struct cs_topo *t = cs_topo_load(synth);
        if (t == NULL)
            abort();   /* the loader took a node the engine cannot build */
        cs_topo_free(t);
        free(synth);
        cs_sim_node_free(n);
    }
    return 0;
}
