/*
 * plugin.h - state shared by the SPANK plugin's files.
 *
 * cosched_spank.c  the slurm_spank_* hooks: parse plugstack.conf, register
 *                  --cosched, dispatch on spank_context()
 * local.c          srun, sbatch, salloc: validate --cosched, --cosched=help
 * remote.c         slurmstepd: register/deregister tasks with the engine,
 *                  start it on demand, tell the user when a step runs
 *                  without co-scheduling
 *
 * Lifecycle of a co-scheduled step on a node (slurmstepd, see cosched-spank(8)):
 *
 *   slurmstepd (root)                      task (forked, waits for slurmstepd)
 *   init, --cosched callback(s)
 *   user_init: decide, map the shared page,
 *     make the OpenMP page channel ------- fork ----> task_init_privileged
 *   task_post_fork (per task): register,                    (waits)
 *     start the engine on demand, write
 *     the verdict to the shared page, pass
 *     the step's OpenMP page (from the
 *     engine's reply) on to the channel
 *   release the tasks  -------------------------------->  task_init: read the
 *                                                          verdict, COSCHED_*
 *                                                          env, take the page,
 *                                                          one notice line
 *   task_exit (per task): deregister                       exec, run, exit
 *   exit
 */
#ifndef COSCHED_SPANK_PLUGIN_H
#define COSCHED_SPANK_PLUGIN_H

#include <slurm/spank.h>
#include <stdint.h>

#include "spank_conf.h"

struct cs_plugin {
    struct cs_conf conf;
    struct cs_names installed;   /* n == 0: policy directory unreadable */
    struct cs_req req;           /* what --cosched said (req.given) */
    int req_bad;                 /* remote: the value did not parse */
    char req_err[512];
};
extern struct cs_plugin cs_g;

/* local.c: the --cosched callback in srun/sbatch/salloc (remote == 0). */
int cs_local_option(const char *optarg);

/* remote.c: the --cosched callback in slurmstepd, and the remote hooks. */
int cs_remote_option(const char *optarg);
int cs_remote_init(spank_t sp);
int cs_remote_user_init(spank_t sp);
int cs_remote_task_post_fork(spank_t sp);
int cs_remote_task_init(spank_t sp);
int cs_remote_task_exit(spank_t sp);

#endif
