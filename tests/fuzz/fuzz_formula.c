/*
 * fuzz_formula - the formula compiler of launcher/counters/profile.c alone: the
 * input is the text after "fz " of one more metric, appended to a profile
 * whose head, events and required metrics are fixed and valid (so the
 * fuzzer does not have to find them); further lines of the input are more
 * METRICS lines.  What loads is evaluated as in fuzz_profile.
 */
#define FUZZ_FORMULA
#include "fuzz_profile.c"

static const char head[] =
    "SHORT  fuzz\n"
    "ARCH   intel 6 0x55\n"
    "SOURCE tests/fuzz/fuzz_formula.c\n"
    "EVENTSET\n"
    "FIXC0 INST_RETIRED.ANY perf=hw:instructions likwid=INSTR_RETIRED_ANY:FIXC0\n"
    "FIXC1 CPU_CLK_UNHALTED.THREAD perf=hw:cycles\n"
    "PMC0  L1D.REPLACEMENT perf=raw:event=0x51,umask=0x01\n"
    "PMC1  OFFCORE perf=raw:event=0xb7,umask=0x01,config1=0x3fb80008fff\n"
    "UNC0  CAS_RD perf=pmu:uncore_imc_*:event=0x04,umask=0x03 scope=socket\n"
    "SW0   TASK_CLOCK perf=sw:task-clock\n"
    "METRICS\n"
    "instructions [instructions] FIXC0\n"
    "cycles       [cycles] FIXC1\n"
    "ipc          [instr/cycle] FIXC0/FIXC1\n"
    "bw_l1        [GB/s] 1.0E-09*PMC0*clsize/time\n"
    "bw_l2        [GB/s] 1.0E-09*PMC1*clsize/time\n"
    "bw_llc       [GB/s] 1.0E-09*PMC1*64/time\n"
    "mem_bw       [GB/s] 1.0E-09*UNC0*clsize/time\n"
    "llc_misses   PMC1\n"
    "llc_refs     PMC0\n"
    "mpki         1000*llc_misses/instructions\n"
    "orb_full - unavailable: none\n"
    "remote_accesses - unavailable: none\n"
    "local_accesses  SW0\n"
    "fz ";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = sizeof head - 1;
    uint8_t *text = malloc(n + size + 1);
    struct cs_profile *p;

    memcpy(text, head, n);
    memcpy(text + n, data, size);
    text[n + size] = '\n';
    if ((p = cs_profile_load(fuzz_file(text, n + size + 1))) != NULL) {
        exercise(p);
        cs_profile_free(p);
    }
    free(text);
    return 0;
}
