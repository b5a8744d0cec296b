/*
 * control.c - the facade over the control backends: pick one by name, or
 * let "auto" pick the best usable one and say which and why.
 *
 * Order of preference for "auto":
 *   1. cgroup2 with the cpuset controller: one hierarchy does everything,
 *      freezing is notified (no polling), frozen tasks stay killable;
 *   2. cgroup1 (cpuset + freezer v1): cores enforced by the kernel, which
 *      the job cannot undo;
 *   3. cgroup2 freeze with sched_setaffinity for cores: the freeze is as
 *      good as (1), the confinement is advisory;
 *   4. signals: works for anybody, with the limits in signals.c.
 * Probing creates nothing permanent (cgroup2 makes and removes a throwaway
 * directory to see that cgroup.freeze exists).
 */
#include "config.h"

#include <string.h>

#include "control/internal.h"
#include "core/log.h"

static const struct cs_control_ops *const backends[] = {
    &cs_control_cgroup1, &cs_control_cgroup2, &cs_control_signals,
};
#define NBACKENDS (sizeof backends / sizeof backends[0])
#define WHY_MAX 1024

const struct cs_control_ops *cs_control_by_name(const char *name)
{
    size_t i;

    for (i = 0; name && i < NBACKENDS; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

/* The first backend other than skip that probes usable here, or NULL. */
static const struct cs_control_ops *first_usable(const struct cs_control_ops *skip)
{
    static const struct cs_control_ops *const order[] = {
        &cs_control_cgroup2, &cs_control_cgroup1, &cs_control_signals,
    };
    char why[WHY_MAX];
    size_t i;

    for (i = 0; i < NBACKENDS; i++)
        if (order[i] != skip && order[i]->probe(why, sizeof why) == 0)
            return order[i];
    return NULL;
}

static const struct cs_control_ops *pick_auto(void)
{
    char why1[WHY_MAX], why2[WHY_MAX], whycs[WHY_MAX], whysig[WHY_MAX];
    int ok2 = cs_control_cgroup2.probe(why2, sizeof why2) == 0;

    if (ok2 && cs_cgroup2_cpuset_usable(whycs, sizeof whycs) == 0) {
        cs_info("control: cgroup2 (cgroup.freeze and the cpuset controller are usable)");
        return &cs_control_cgroup2;
    }
    if (cs_control_cgroup1.probe(why1, sizeof why1) == 0) {
        cs_info("control: cgroup1; not cgroup2: %s", ok2 ? whycs : why2);
        return &cs_control_cgroup1;
    }
    if (ok2) {
        cs_info("control: cgroup2 freezer with sched_setaffinity for cores; not cgroup2 cpuset: "
                "%s; not cgroup1: %s", whycs, why1);
        return &cs_control_cgroup2;
    }
    if (cs_control_signals.probe(whysig, sizeof whysig) == 0) {
        cs_info("control: signals (SIGSTOP/SIGCONT, sched_setaffinity); not cgroup2: %s; "
                "not cgroup1: %s", why2, why1);
        return &cs_control_signals;
    }
    cs_err("control: no backend is usable here (cgroup2: %s; cgroup1: %s; signals: %s)",
           why2, why1, whysig);
    return NULL;
}

const struct cs_control_ops *cs_control_select(const char *name)
{
    const struct cs_control_ops *ops, *alt;
    char why[WHY_MAX];

    if (!name || strcmp(name, "auto") == 0)
        return pick_auto();
    ops = cs_control_by_name(name);
    if (!ops) {
        cs_err("control: unknown backend '%s' (known: auto, cgroup1, cgroup2, signals)", name);
        return NULL;
    }
    if (ops->probe(why, sizeof why) == 0)
        return ops;
    alt = first_usable(ops);
    if (alt)
        cs_err("control: %s is not usable here: %s; %s would work (or auto)", name, why, alt->name);
    else
        cs_err("control: %s is not usable here: %s; no other backend is either", name, why);
    return NULL;
}
