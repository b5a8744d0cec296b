/*
 * fuzz_simnode - simulated node files (share/sim/NAME.node),
 * cs_sim_node_load() in launcher/sim.c; a node that loads is turned into
 * its hwloc synthetic description (cs_sim_node_synthetic).
 */
#define FUZZ_WANT_LOG
#include "fuzz.h"
#include "config.h"
#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cs_sim_node *n = cs_sim_node_load(fuzz_file(data, size));
    if (n != NULL) {
        free(cs_sim_node_synthetic(n));
        cs_sim_node_free(n);
    }
    return 0;
}
