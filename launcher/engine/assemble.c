/*
 * assemble.c - one engine, put together the same way for every command
 * (cs_engine_assemble, engine.h): `cosched run` (cli/run.c), `cosched
 * serve` (node/serve.c) and `cosched simulate` (cli/simulate.c) choose the
 * pieces by their own rules - options, trusted policies, a model - and hand
 * them here; what the engine then holds it frees in cs_engine_disassemble.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "control/control.h"
#include "counters/counters.h"
#include "policy/policy.h"

int cs_engine_assemble(struct cs_engine *e, const struct cs_engine_parts *p)
{
    /* the node and its cpus */
    e->topo = p->topo;
    if (e->topo == NULL && (e->topo = cs_topo_load(p->topology)) == NULL)
        return -1;
    e->managed = p->managed ? p->managed : hwloc_bitmap_alloc();
    /* the policy */
    e->policy = p->policy;
    /* the mechanism */
    e->ctl = p->ctl;
    if (e->ctl == NULL && (e->ctl = cs_control_select(p->control)) == NULL)
        return -1;
    /* the counters (none: cs_engine_run uses cs_counters_none) */
    e->cnt = p->cnt;
    e->cnt_arg = p->cnt_arg;
    e->profile = e->cnt ? p->profile : NULL;
    /* who the jobs belong to */
    e->host = p->host;
    e->host_arg = p->host_arg;
    /* the trace */
    if (p->trace && (e->trace = cs_fopen_write(p->trace)) == NULL) {
        cs_err("--trace %s: %s", p->trace,
               errno == ELOOP ? "a symbolic link (cosched never writes through one)" : strerror(errno));
        return -1;
    }
    return 0;
}

void cs_engine_disassemble(struct cs_engine *e, int keep_node)
{
    if (e->trace)
        fclose(e->trace);
    e->trace = NULL;
    if (e->policy)
        cs_policy_free(e->policy);
    e->policy = NULL;
    if (!keep_node) {
        if (e->managed)
            hwloc_bitmap_free(e->managed);
        cs_topo_free(e->topo);
    }
    e->managed = NULL;
    e->topo = NULL;
    free(e->run_id);
    e->run_id = NULL;
}
