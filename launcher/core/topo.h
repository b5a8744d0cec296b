/*
 * core/topo.h - the node's topology (topo.c, through hwloc): cores, last-level
 * cache domains, NUMA nodes, and cpu specs ("0-3", "numa:1+core:4").
 *
 * Used by any part of launcher/ that places jobs or describes the node.
 * Uses libc and hwloc only.
 */
#ifndef COSCHED_CORE_TOPO_H
#define COSCHED_CORE_TOPO_H

#include <stdint.h>
#include <stdio.h>
#include <hwloc.h>

struct cs_core {
    int index;                 /* logical index of the core */
    hwloc_bitmap_t pus;        /* OS indexes of its hardware threads */
    int llc;                   /* index into topo->llcs, -1 if none */
    int numa;                  /* index into topo->numas, -1 if none */
    int package;
};

struct cs_domain {
    int index;
    int os_index;              /* NUMA node number; for caches the logical index */
    hwloc_bitmap_t cpus;       /* PUs below it */
    uint64_t size;             /* cache size or NUMA memory, bytes (0 unknown) */
    int depth;                 /* cache level (3 for L3), 0 for NUMA */
};

struct cs_topo {
    hwloc_topology_t h;
    char *source;              /* "this machine", "synthetic:...", a file name */
    int ncores;
    struct cs_core *cores;
    int nllcs;
    struct cs_domain *llcs;    /* last-level cache domains */
    int nnumas;
    struct cs_domain *numas;
    int npackages;
    int npus;
    hwloc_bitmap_t all_pus;
};

/* spec NULL: this machine; "synthetic:DESC" or an XML file otherwise.
 * Returns NULL after reporting why. */
struct cs_topo *cs_topo_load(const char *spec);
void cs_topo_free(struct cs_topo *t);
/* Print as text (json=0) or JSON (json=1), restricted to managed (or all if NULL). */
void cs_topo_print(const struct cs_topo *t, hwloc_const_bitmap_t managed, FILE *f, int json);
/* Index of the core holding PU os index pu, -1 if none. */
int cs_topo_core_of_pu(const struct cs_topo *t, int pu);
/* A cpu list ("0-3,8") or TYPE:INDEXES terms joined by '+' ("numa:1",
 * "core:0-3+llc:1") into out; -1 with the reason in why. */
int cs_topo_cpus_parse(const struct cs_topo *t, const char *spec, hwloc_bitmap_t out, char *why, size_t len);

#endif
