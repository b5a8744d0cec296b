/*
 * local.c - --cosched in srun, sbatch and salloc: validate the value before
 * anything is submitted or launched, and answer --cosched=help.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

/* One line per policy a user may ask for: name, description; then exit 0. */
static void help(void)
{
    const struct cs_names *usable = cs_conf_usable(&cs_g.conf, &cs_g.installed);
    char desc[512];

    if (usable == NULL || usable->n == 0) {
        fprintf(stderr, "cosched: no policies found in %s (policydir in plugstack.conf)\n", cs_g.conf.policydir);
        exit(1);
    }
    for (int i = 0; i < usable->n; i++) {
        cs_policy_description(cs_g.conf.policydir, usable->name[i], desc, sizeof desc);
        printf("%-10s %s%s\n", usable->name[i], desc,
               strcmp(usable->name[i], cs_g.conf.default_policy) == 0 ? " (default)" : "");
    }
    fflush(stdout);
    exit(0);
}

int cs_local_option(const char *optarg)
{
    char err[768];

    if (cs_req_parse(&cs_g.req, optarg, &cs_g.conf, &cs_g.installed, err, sizeof err) < 0) {
        slurm_error("%s", err);
        return -1;
    }
    if (cs_g.req.help)
        help();
    return 0;
}
