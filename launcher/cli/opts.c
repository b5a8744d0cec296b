/*
 * opts.c - a command's options as one declarative table (name, argument,
 * getopt id, help line): getopt_long's table and the --help lines are both
 * made from it, so that the two cannot drift apart.  Used by every command
 * that takes options (run, classify, topology, policies, simulate,
 * profiles, serve, status, report).
 */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/core.h"
#include "cli/cli.h"

struct option *cs_opt_getopt(const struct cs_opt *o)
{
    int n = 0;

    while (o[n].name)
        n++;
    struct option *t = calloc(n + 1, sizeof *t);
    if (t == NULL) {
        cs_err("out of memory");
        exit(1);                    /* start-up: nothing runs yet */
    }
    for (int i = 0; i < n; i++)
        t[i] = (struct option){ o[i].name, o[i].has_arg ? required_argument : no_argument, NULL, o[i].id };
    return t;
}

void cs_opt_help(FILE *f, const struct cs_opt *o, int width, const char *(*note)(int id))
{
    for (; o->name; o++) {
        char left[64];
        if (o->help == NULL)
            continue;
        if (o->left)
            snprintf(left, sizeof left, "%s", o->left);
        else
            snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-*s %s%s\n", width, left, o->help, note ? note(o->id) : "");
    }
}

void cs_opt_usage(const char *usage, const struct cs_opt *o)
{
    printf("usage: %s\n\noptions:\n", usage);
    cs_opt_help(stdout, o, 26, NULL);
}
