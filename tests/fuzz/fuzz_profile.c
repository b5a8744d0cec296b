/*
 * fuzz_profile - counter profiles, cs_profile_load() in launcher/counters/profile.c
 * (profiles/README.md): header, EVENTSET (perf= and likwid= specs), METRICS
 * and their formulas.  A profile that loads is evaluated: every metric on
 * counts of 1, on zeros and with one event uncounted (NAN), and matched
 * against a few CPUs.
 */
#define FUZZ_WANT_LOG
#include "config.h"
#include "fuzz.h"
#include "counters/counters.h"
#include <math.h>

/* shared with fuzz_formula.c */
static void exercise(const struct cs_profile *p)
{
    double *counts = calloc((size_t)p->nevents + 1, sizeof *counts), out;

    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < p->nevents; i++)
            counts[i] = pass == 0 ? 1.0 : pass == 1 ? 0.0 : i == 0 ? NAN : 1e9 * (i + 1);
        for (int m = -1; m <= p->nmetrics; m++)
            cs_profile_eval(p, m, counts, pass == 1 ? 0.0 : 1.0, pass + 1, &out);
    }
    for (int i = 0; cs_required_metrics[i]; i++)
        cs_profile_find_metric(p, cs_required_metrics[i]);
    cs_profile_matches(p, "GenuineIntel", 6, 0x55);
    cs_profile_matches(p, "AuthenticAMD", 0x19, 0x11);
    cs_profile_matches(p, "intel", -1, -1);
    for (int i = 0; i < p->nmetrics; i++)
        cs_scope_name(p->metrics[i].scope);
    free(counts);
}

#ifndef FUZZ_FORMULA
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cs_profile *p = cs_profile_load(fuzz_file(data, size));
    if (p != NULL) {
        exercise(p);
        cs_profile_free(p);
    }
    return 0;
}
#endif
