/*
 * fuzz_jobfile - job files (--jobs FILE), cs_jobfile_load() in
 * launcher/core/jobfile.c, and its word splitter cs_split_words() on the whole
 * input as one line.
 */
#define FUZZ_WANT_LOG
#include "config.h"
#include "fuzz.h"
#include "core/job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cs_job **jobs = NULL;
    int njobs = 0;
    const char *err;
    char *text = fuzz_str(data, size), **w;

    if (cs_jobfile_load(fuzz_file(data, size), &jobs, &njobs) > 0)
        for (int i = 0; i < njobs; i++) {
            if (jobs[i]->argv == NULL || jobs[i]->argv[0] == NULL)
                abort();   /* every job has a command */
            cs_job_free(jobs[i]);
        }
    else if (njobs != 0)
        abort();           /* a file that fails loads nothing */
    free(jobs);
    if ((w = cs_split_words(text, &err)) != NULL) {
        for (char **p = w; *p; p++)
            free(*p);
        free(w);
    }
    free(text);
    return 0;
}
