/*
 * fuzz_report - traces read by `cosched report` (cs_trace_read() in
 * launcher/engine/trace.c, drawn by launcher/cli/report.c): the input is a
 * trace file; what reads is drawn as SVG and HTML and summed up as JSON and
 * CSV (into files under /tmp that each input overwrites).
 */
#define FUZZ_WANT_LOG
#include "fuzz.h"
#include "config.h"
#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *svg[] = { "report", (char *)fuzz_file(data, size), "-o", "/tmp/cosched-fuzz-report.svg",
                    "--summary", "/tmp/cosched-fuzz-report.json", NULL };
    char *html[] = { "report", (char *)fuzz_file(data, size), "-o", "/tmp/cosched-fuzz-report.html",
                     "--summary", "/tmp/cosched-fuzz-report.csv", NULL };
    if (cs_cmd_report(6, svg) == 0)
        cs_cmd_report(6, html);
    return 0;
}
