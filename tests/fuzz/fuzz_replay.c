/*
 * fuzz_replay - counter recordings (--record-counters, read back by
 * --counters replay:FILE): the replay backend's init() in
 * launcher/counters/replay.c, under profiles/test-software.txt and a run of
 * two jobs ("plain" and "a\"b"); a recording that loads is read back for a
 * few steps of each job.
 */
#define FUZZ_WANT_LOG
#include "config.h"
#include "fuzz.h"
#include "counters/counters.h"
#include "core/job.h"
#include "core/engine_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cs_profile *p;
    static struct cs_engine e;
    static struct cs_job ja, jb, *jobs[2] = { &ja, &jb };
    struct cs_counts c;

    if (p == NULL) {
        if ((p = cs_profile_load(COSCHED_SRCDIR "/profiles/test-software.txt")) == NULL)
            abort();
        ja.id = 1;
        ja.name = "plain";
        jb.id = 2;
        jb.name = "a\"b";
        e.jobs = jobs;
        e.njobs = 2;
        e.profile = p;
    }
    if (cs_counters_replay.init(&e, fuzz_file(data, size), p) < 0)
        return 0;
    for (uint64_t k = 0; k < 4; k++) {
        ja.steps_live = jb.steps_live = k;
        cs_counters_replay.read(&e, &ja, &c);
        cs_counters_replay.read(&e, &jb, &c);
    }
    cs_counters_replay.fini(&e);
    return 0;
}
