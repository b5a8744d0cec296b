/*
 * cosched_spank.c - the SPANK hooks of cosched.so: parse plugstack.conf,
 * register --cosched, dispatch on spank_context() (see plugin.h and
 * cosched-spank(8)).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "plugin.h"

/* plugin_version = SLURM_VERSION_NUMBER of the spank.h built against: Slurm
 * refuses a plugin of another major.minor. */
SPANK_PLUGIN(cosched, 1);

struct cs_plugin cs_g;

static int option_cb(int val, const char *optarg, int remote)
{
    return remote ? cs_remote_option(optarg) : cs_local_option(optarg);
}

static struct spank_option cosched_option = {
    .name = "cosched",
    .arginfo = "POLICY[:key=value,...]",
    .usage = "co-schedule this step with the node's other steps under POLICY "
             "(keys: priority=INT, class=S|C|N); help lists the policies, off opts out",
    .has_arg = 1,
    .val = 0,
    .cb = option_cb,
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    char err[768];
    spank_err_t rc;

    memset(&cs_g, 0, sizeof cs_g);
    cs_conf_defaults(&cs_g.conf);
    if (cs_conf_parse(&cs_g.conf, ac, av, err, sizeof err) < 0) {
        slurm_error("cosched: plugstack.conf: %s", err);
        return -1;
    }
    if (cs_policies_scan(cs_g.conf.policydir, &cs_g.installed) < 0)
        cs_g.installed.n = 0;
    if (cs_conf_check(&cs_g.conf, &cs_g.installed, err, sizeof err) < 0) {
        slurm_error("cosched: plugstack.conf: %s", err);
        return -1;
    }
    switch (ctx) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
    case S_CTX_REMOTE:
        rc = spank_option_register(sp, &cosched_option);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("cosched: cannot register --cosched: %s", spank_strerror(rc));
            return -1;
        }
        return ctx == S_CTX_REMOTE ? cs_remote_init(sp) : 0;
    default:    /* slurmd, prolog/epilog: the configuration check above is all */
        return 0;
    }
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    return spank_context() == S_CTX_REMOTE ? cs_remote_user_init(sp) : 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
    return spank_context() == S_CTX_REMOTE ? cs_remote_task_post_fork(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    return spank_context() == S_CTX_REMOTE ? cs_remote_task_init(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    return spank_context() == S_CTX_REMOTE ? cs_remote_task_exit(sp) : 0;
}
