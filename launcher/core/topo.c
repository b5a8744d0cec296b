/*
 * topo.c - the node's shape, from hwloc only (never from /sys by hand).
 *
 * Cores, their hardware threads (PU OS indexes, the numbers cpusets use),
 * last-level-cache domains and NUMA nodes.  `--topology` swaps the machine
 * for hwloc's synthetic description ("synthetic:pack:2 l3:2 core:8 pu:1") or
 * an XML export (`lstopo node.xml`), for tests and for planning.
 *
 * The last-level cache is the deepest-level data/unified cache object found
 * above the cores (L3 on most servers; L2 on machines without an L3).  A
 * machine whose hwloc shows no cache at all has one LLC domain per package.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/log.h"
#include "core/util.h"
#include "core/topo.h"
#include "core/json.h"

static int find_llc_depth(hwloc_topology_t h)
{
    static const hwloc_obj_type_t levels[] = {
        HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L1CACHE,
    };
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        int d = hwloc_get_type_depth(h, levels[i]);
        if (d >= 0)
            return d;
    }
    return hwloc_get_type_depth(h, HWLOC_OBJ_PACKAGE);
}

static void domain_from_obj(struct cs_domain *d, int index, hwloc_obj_t o)
{
    d->index = index;
    d->cpus = hwloc_bitmap_dup(o->cpuset);
    if (o->type == HWLOC_OBJ_NUMANODE) {
        d->os_index = (int)o->os_index;
        d->size = o->attr ? o->attr->numanode.local_memory : 0;
        d->depth = 0;
    } else {
        d->os_index = (int)o->logical_index;
        d->size = (hwloc_obj_type_is_cache(o->type) && o->attr) ? o->attr->cache.size : 0;
        d->depth = hwloc_obj_type_is_cache(o->type) ? (int)o->attr->cache.depth : 0;
    }
}

struct cs_topo *cs_topo_load(const char *spec)
{
    struct cs_topo *t = calloc(1, sizeof *t);
    hwloc_topology_t h;
    int llc_depth, n;

    if (t == NULL || hwloc_topology_init(&h) < 0) {
        cs_err("cannot initialise hwloc: %s", strerror(errno));
        free(t);
        return NULL;
    }
    t->h = h;
    if (spec == NULL) {
        t->source = strdup("this machine");
    } else if (strncmp(spec, "synthetic:", 10) == 0) {
        if (hwloc_topology_set_synthetic(h, spec + 10) < 0) {
            cs_err("--topology: '%s' is not a valid hwloc synthetic description "
                   "(expected e.g. synthetic:pack:2 l3:2 core:4 pu:1)", spec + 10);
            goto fail;
        }
        t->source = strdup(spec);
    } else {
        if (hwloc_topology_set_xml(h, spec) < 0) {
            cs_err("--topology: cannot read '%s' as an hwloc XML topology: %s "
                   "(expected synthetic:DESC or a file written by `lstopo FILE.xml`)", spec, strerror(errno));
            goto fail;
        }
        t->source = strdup(spec);
    }
    if (hwloc_topology_load(h) < 0) {
        cs_err("hwloc could not load the topology of %s: %s", t->source, strerror(errno));
        goto fail;
    }

    t->all_pus = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(h));
    t->npus = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
    t->npackages = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);

    llc_depth = find_llc_depth(h);
    n = llc_depth >= 0 ? hwloc_get_nbobjs_by_depth(h, llc_depth) : 0;
    t->llcs = calloc(n > 0 ? n : 1, sizeof *t->llcs);
    for (int i = 0; i < n; i++)
        domain_from_obj(&t->llcs[i], i, hwloc_get_obj_by_depth(h, llc_depth, i));
    t->nllcs = n;
    if (n == 0) {        /* no cache and no package: the whole machine is one domain */
        domain_from_obj(&t->llcs[0], 0, hwloc_get_root_obj(h));
        t->nllcs = 1;
    }

    n = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
    t->numas = calloc(n > 0 ? n : 1, sizeof *t->numas);
    for (int i = 0; i < n; i++)
        domain_from_obj(&t->numas[i], i, hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, i));
    t->nnumas = n;

    n = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE);
    if (n <= 0) {
        cs_err("the topology of %s has no cores", t->source);
        goto fail;
    }
    t->cores = calloc(n, sizeof *t->cores);
    t->ncores = n;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t c = hwloc_get_obj_by_type(h, HWLOC_OBJ_CORE, i);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, c);
        struct cs_core *core = &t->cores[i];

        core->index = i;
        core->pus = hwloc_bitmap_dup(c->cpuset);
        core->package = pkg ? (int)pkg->logical_index : 0;
        core->llc = core->numa = -1;
        for (int k = 0; k < t->nllcs; k++)
            if (hwloc_bitmap_isincluded(c->cpuset, t->llcs[k].cpus))
                core->llc = k;
        for (int k = 0; k < t->nnumas; k++)
            if (hwloc_bitmap_intersects(c->cpuset, t->numas[k].cpus))
                core->numa = k;
    }
    return t;

fail:
    cs_topo_free(t);
    return NULL;
}

void cs_topo_free(struct cs_topo *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->cores[i].pus);
    for (int i = 0; i < t->nllcs; i++)
        hwloc_bitmap_free(t->llcs[i].cpus);
    for (int i = 0; i < t->nnumas; i++)
        hwloc_bitmap_free(t->numas[i].cpus);
    free(t->cores);
    free(t->llcs);
    free(t->numas);
    hwloc_bitmap_free(t->all_pus);
    if (t->h)
        hwloc_topology_destroy(t->h);
    free(t->source);
    free(t);
}

int cs_topo_core_of_pu(const struct cs_topo *t, int pu)
{
    for (int i = 0; i < t->ncores; i++)
        if (hwloc_bitmap_isset(t->cores[i].pus, pu))
            return i;
    return -1;
}

/*
 * CPU sets named by the topology, as hwloc-calc and likwid's domains name
 * them: SPEC is either a cpu list of OS indexes ("0-3,8") or one or more
 * TYPE:LIST terms joined by '+' ("numa:1", "core:0-3", "package:0+core:12"),
 * each the union of the cpus of those objects.  TYPE is any object type
 * hwloc's own hwloc_type_sscanf_as_depth() reads (pu, core, l3, l2cache,
 * numa, package, die, ...), or "llc", the last-level cache as the policies
 * see it; LIST holds logical indexes, as lstopo shows them (L#), or "all".
 * '+' joins terms because ',' already separates the indexes of one list.
 */
int cs_topo_cpus_parse(const struct cs_topo *t, const char *spec, hwloc_bitmap_t out,
                       char *why, size_t len)
{
    char *copy, *term, *save = NULL;
    hwloc_bitmap_t idx = NULL;
    int ret = -1;

    hwloc_bitmap_zero(out);
    if (!strchr(spec, ':')) {
        if (hwloc_bitmap_list_sscanf(out, spec) < 0 || hwloc_bitmap_iszero(out) || hwloc_bitmap_weight(out) < 0) {
            snprintf(why, len, "expected a cpu list such as 0-3,8, or TYPE:INDEXES such as numa:1 or core:0-3");
            return -1;
        }
        return 0;
    }
    if (!(copy = strdup(spec)) || !(idx = hwloc_bitmap_alloc())) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    for (term = strtok_r(copy, "+", &save); term; term = strtok_r(NULL, "+", &save)) {
        char *colon = strchr(term, ':'), *list, at[96] = "";
        hwloc_obj_type_t type;
        int depth, n, i;

        if (!colon) {
            snprintf(why, len, "'%s': expected TYPE:INDEXES (terms are joined by '+')", term);
            goto out;
        }
        if (strchr(spec, '+'))              /* name the term when there are several */
            snprintf(at, sizeof at, "'%.80s': ", term);
        *colon = '\0';
        list = colon + 1;
        if (strcasecmp(term, "llc") == 0) {
            depth = find_llc_depth(t->h);
        } else if (hwloc_type_sscanf_as_depth(term, &type, t->h, &depth) < 0) {
            snprintf(why, len, "%sunknown object type '%s' (expected pu, core, llc, l3, numa, package, ... "
                     "as hwloc names them)", at, term);
            goto out;
        }
        n = depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE
                ? 0 : hwloc_get_nbobjs_by_depth(t->h, depth);
        if (n <= 0) {
            snprintf(why, len, "%s%s has no '%s' objects", at, t->source, term);
            goto out;
        }
        if (strcmp(list, "all") == 0)
            hwloc_bitmap_set_range(idx, 0, n - 1);
        else if (!*list || hwloc_bitmap_list_sscanf(idx, list) < 0 || hwloc_bitmap_iszero(idx)
                 || hwloc_bitmap_weight(idx) < 0) {
            snprintf(why, len, "%sexpected logical indexes such as 0-3 or all after '%s:'", at, term);
            goto out;
        }
        if (hwloc_bitmap_last(idx) >= n) {
            if (n > 1)
                snprintf(why, len, "%s%s has %d of them (%s:0-%d)", at, t->source, n, term, n - 1);
            else
                snprintf(why, len, "%s%s has one (%s:0)", at, t->source, term);
            goto out;
        }
        hwloc_bitmap_foreach_begin(i, idx) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(t->h, depth, (unsigned)i);
            if (o && o->cpuset)
                hwloc_bitmap_or(out, out, o->cpuset);
        } hwloc_bitmap_foreach_end();
    }
    if (hwloc_bitmap_iszero(out)) {
        snprintf(why, len, "names no cpu");
        goto out;
    }
    ret = 0;
out:
    hwloc_bitmap_free(idx);
    free(copy);
    return ret;
}

static void print_size(FILE *f, uint64_t b)
{
    if (b >= (1ull << 30))
        fprintf(f, "%.1f GiB", b / 1073741824.0);
    else if (b >= (1ull << 20))
        fprintf(f, "%.1f MiB", b / 1048576.0);
    else if (b)
        fprintf(f, "%llu KiB", (unsigned long long)(b >> 10));
    else
        fprintf(f, "size unknown");
}

static json_t *json_domains(const struct cs_domain *d, int n, hwloc_const_bitmap_t m)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        hwloc_bitmap_t c = hwloc_bitmap_alloc();
        char *s;
        hwloc_bitmap_and(c, d[i].cpus, m);
        s = cs_bitmap_list(c);
        json_array_append_new(a, json_pack("{s:i, s:i, s:i, s:I, s:s}", "index", d[i].index, "os_index",
                                           d[i].os_index, "level", d[i].depth, "size", (json_int_t)d[i].size,
                                           "cpus", s));
        free(s);
        hwloc_bitmap_free(c);
    }
    return a;
}

void cs_topo_print(const struct cs_topo *t, hwloc_const_bitmap_t managed, FILE *f, int json)
{
    hwloc_const_bitmap_t m = managed ? managed : t->all_pus;
    char *ms = cs_bitmap_list(m);
    int nmanaged = 0;

    for (int i = 0; i < t->ncores; i++)
        if (hwloc_bitmap_intersects(t->cores[i].pus, m))
            nmanaged++;

    if (json) {
        json_t *cores = json_array();
        for (int i = 0; i < t->ncores; i++) {
            char *p = cs_bitmap_list(t->cores[i].pus);
            json_array_append_new(cores, json_pack("{s:i, s:s, s:i, s:i, s:i, s:b}", "index", i, "pus", p, "llc",
                                                   t->cores[i].llc, "numa", t->cores[i].numa, "package",
                                                   t->cores[i].package,
                                                   "managed", hwloc_bitmap_intersects(t->cores[i].pus, m)));
            free(p);
        }
        cs_json_put(f,
                    json_pack("{s:o, s:i, s:i, s:i, s:s, s:i, s:o, s:o, s:o}", "source", cs_json_text(t->source),
                              "packages", t->npackages, "cores", t->ncores, "pus", t->npus, "managed_cpus", ms,
                              "managed_cores", nmanaged, "core_list", cores, "llc_domains",
                              json_domains(t->llcs, t->nllcs, m), "numa_nodes", json_domains(t->numas, t->nnumas, m)),
                    CS_JSON_PRETTY);
        free(ms);
        return;
    }

    fprintf(f, "topology of %s: %d package(s), %d core(s), %d hardware thread(s)\n",
            t->source, t->npackages, t->ncores, t->npus);
    fprintf(f, "managed cpus: %s (%d core(s))\n", ms, nmanaged);
    for (int i = 0; i < t->nllcs; i++) {
        char *s = cs_bitmap_list(t->llcs[i].cpus);
        fprintf(f, "LLC domain %d (L%d, ", i, t->llcs[i].depth);
        print_size(f, t->llcs[i].size);
        fprintf(f, "): cpus %s\n", s);
        free(s);
    }
    for (int i = 0; i < t->nnumas; i++) {
        char *s = cs_bitmap_list(t->numas[i].cpus);
        fprintf(f, "NUMA node %d: cpus %s, ", t->numas[i].os_index, s);
        print_size(f, t->numas[i].size);
        fprintf(f, "\n");
        free(s);
    }
    for (int i = 0; i < t->ncores; i++) {
        char *s = cs_bitmap_list(t->cores[i].pus);
        fprintf(f, "core %d: pus %s, LLC %d, NUMA %d, package %d%s\n", i, s, t->cores[i].llc,
                t->cores[i].numa >= 0 ? t->numas[t->cores[i].numa].os_index : -1, t->cores[i].package,
                hwloc_bitmap_intersects(t->cores[i].pus, m) ? "" : " (not managed)");
        free(s);
    }
    free(ms);
}
