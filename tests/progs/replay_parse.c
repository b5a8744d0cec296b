/*
 * replay_parse: unit test of the counter recording (counters.c) and its
 * reader, the replay backend (counters_replay.c), without running any job.
 *
 *   replay_parse PROFILE DIR
 *
 * PROFILE is profiles/test-software.txt; DIR a scratch directory.  Checks:
 *   1. a recording written by cs_counters_record() replays bit-identical
 *      doubles (0.1, 1e300, 2^53+..., NaN as null, denormals), flags and
 *      seconds, for job names that need escaping ("a\"b\\c", tab, UTF-8);
 *      the k-th read of a job is its k-th record (j->steps_live);
 *      past the end: flags 0, and no crash;
 *   2. each malformed file below is refused by init() (-1), and accepted
 *      variants (blanks between tokens, \u escapes, keys in another order)
 *      are taken.
 * Prints one line per failed check and exits 1; prints "ok N checks" and
 * exits 0 otherwise.  The messages themselves (FILE:LINE: ...) are checked by
 * tests/35-counters.bats through the CLI.
 */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters/counters.h"
#include "core/job.h"
#include "core/engine_state.h"

static int nchecks, nfailed;

#define CHECK(cond, ...)                                                                                   \
    do {                                                                                                   \
        nchecks++;                                                                                         \
        if (!(cond)) {                                                                                     \
            nfailed++;                                                                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                    \
            printf(__VA_ARGS__);                                                                           \
            printf("\n");                                                                                  \
        }                                                                                                  \
    } while (0)

static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    struct cs_profile *p;
    struct cs_engine e = { 0 };
    struct cs_job ja = { 0 }, jb = { 0 }, *jobs[2] = { &ja, &jb };
    char rec[4096], bad[4096];
    const double vals[] = { 0.1, 1e300, 9007199254740993.0, 0, 5e-324, 123456789.123456789, 3.0 };
    const int nrec = 5;

    if (argc != 3) {
        fprintf(stderr, "usage: replay_parse PROFILE DIR\n");
        return 2;
    }
    if ((p = cs_profile_load(argv[1])) == NULL)
        return 2;
    if (p->nevents != 7) {
        fprintf(stderr, "replay_parse: expected the 7 events of test-software.txt, got %d\n", p->nevents);
        return 2;
    }
    ja.id = 1;
    ja.name = "a\"b\\c\t\xc3\xa9";     /* quote, backslash, tab, e-acute */
    jb.id = 2;
    jb.name = "plain";
    e.jobs = jobs;
    e.njobs = 2;
    e.profile = p;

    /* 1. round trip */
    snprintf(rec, sizeof rec, "%s/rec.jsonl", argv[2]);
    CHECK(cs_counters_record_open(rec, p) == 0, "record_open %s", rec);
    for (int k = 0; k < nrec; k++) {
        struct cs_counts c = { .flags = CS_COUNTS_VALID | (k == 2 ? CS_COUNTS_MULTIPLEXED : 0), .n = 7,
                               .seconds = 0.1 * (k + 1) };
        for (int i = 0; i < 7; i++)
            c.v[i] = i == 3 && k == 1 ? NAN : vals[i] * (k + 1);
        e.step_seq = 2 * k;
        cs_counters_record(&e, &ja, k, &c);
        struct cs_counts z = { .flags = 0, .n = 0 };     /* a failed read: recorded as not counted */
        cs_counters_record(&e, &jb, k, &z);
    }
    cs_counters_record_close();

    CHECK(cs_counters_replay.init(&e, rec, p) == 0, "replay init of a fresh recording");
    for (int k = 0; k < nrec + 2; k++) {
        struct cs_counts c;
        ja.steps_live = jb.steps_live = k;
        CHECK(cs_counters_replay.read(&e, &ja, &c) == 0, "read a k=%d", k);
        if (k >= nrec) {
            CHECK(c.flags == 0, "past the end: flags %d, want 0", c.flags);
            continue;
        }
        CHECK(c.flags == (CS_COUNTS_VALID | (k == 2 ? CS_COUNTS_MULTIPLEXED : 0)), "k=%d flags %d", k, c.flags);
        CHECK(c.n == 7, "k=%d n %d", k, c.n);
        CHECK(same_double(c.seconds, 0.1 * (k + 1)), "k=%d seconds %.17g", k, c.seconds);
        for (int i = 0; i < 7; i++) {
            double want = i == 3 && k == 1 ? NAN : vals[i] * (k + 1);
            CHECK(same_double(c.v[i], want), "k=%d v[%d] = %.17g, want %.17g", k, i, c.v[i], want);
        }
        CHECK(cs_counters_replay.read(&e, &jb, &c) == 0 && c.flags == 0, "job b k=%d: flags %d, want 0", k, c.flags);
    }
    cs_counters_replay.fini(&e);

    /* 2. malformed files: each must be refused */
    const char *H = "{\"format\":\"cosched-counters\",\"version\":1,\"profile\":\"test-software\","
                    "\"slots\":[\"SW0\",\"SW1\",\"SW2\",\"SW3\",\"SW4\",\"SW5\",\"SW6\"]}\n";
    const char *R = "{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n";
    static const char *const refused[] = {
        "",                                                             /* empty */
        "{\"format\":\"cosched-counters\",\"version\":1}\n",            /* header: keys missing */
        "{\"format\":\"x\",\"version\":1,\"profile\":\"test-software\",\"slots\":[]}\n",
        "{\"format\":\"cosched-counters\",\"version\":1.0,\"profile\":\"test-software\",\"slots\":[]}\n",
        "{\"format\":\"cosched-counters\",\"version\":1,\"profile\":\"zen4\",\"slots\":[]}\n",
        "{\"format\":\"cosched-counters\",\"version\":1,\"profile\":\"test-software\",\"slots\":[\"SW0\"]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}x\n",
        "@H{\"job\":\"other\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H{\"job\":\"plain\",\"step\":1,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H@R@R",                                                       /* step 0 twice */
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":8,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":-1,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,-7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,\"7\"]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,07]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,.7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,1e999]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,true]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,[7]]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5}\n",
        "@H{\"job\":\"pl\\qain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7]}\n",
        "@H{\"job\":\"plain\",\"step\":0,\"seq\":0,\"flags\":1,\"seconds\":0.5,\"counts\":[1,2,3,4,5,6,7],}\n",
        "@H\n@R",                                                        /* empty line */
        "@H{'job':'plain'}\n",
    };
    for (size_t t = 0; t < sizeof refused / sizeof *refused; t++) {
        char text[2048] = "";
        for (const char *s = refused[t]; *s;)
            if (s[0] == '@' && (s[1] == 'H' || s[1] == 'R')) {
                strcat(text, s[1] == 'H' ? H : R);
                s += 2;
            } else {
                strncat(text, s, 1);
                s++;
            }
        snprintf(bad, sizeof bad, "%s/bad%zu.jsonl", argv[2], t);
        write_file(bad, text);
        int r = cs_counters_replay.init(&e, bad, p);
        CHECK(r == -1, "refused[%zu] was accepted: %s", t, text);
        if (r == 0)
            cs_counters_replay.fini(&e);
    }

    /* accepted variants */
    {
        char text[2048];
        snprintf(text, sizeof text,
                 "%s { \"counts\" : [ 1 , null ,0.5e1, 4E+0,5,6,7 ] ,\t\"seconds\":0, \"flags\":1,\"seq\":9,"
                 "\"step\":0,\"job\":\"pl\\u0061in\"}\n",
                 H);
        snprintf(bad, sizeof bad, "%s/good.jsonl", argv[2]);
        write_file(bad, text);
        CHECK(cs_counters_replay.init(&e, bad, p) == 0, "accepted variant refused: %s", text);
        struct cs_counts c;
        jb.steps_live = 0;
        CHECK(cs_counters_replay.read(&e, &jb, &c) == 0 && c.flags == 1, "variant: flags %d, want 1", c.flags);
        CHECK(c.v[0] == 1 && isnan(c.v[1]) && c.v[2] == 5 && c.v[3] == 4 && c.v[6] == 7,
              "variant: counts %g %g %g %g %g", c.v[0], c.v[1], c.v[2], c.v[3], c.v[6]);
        cs_counters_replay.fini(&e);
    }

    cs_profile_free(p);
    if (nfailed) {
        printf("%d of %d checks failed\n", nfailed, nchecks);
        return 1;
    }
    printf("ok %d checks\n", nchecks);
    return 0;
}
