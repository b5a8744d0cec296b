/*
 * node/internal.h - what the node engine's files share (node.h is its face
 * to cli/): the state of the node engine (struct cs_serve, the engine's
 * host_arg), a served step (struct served, j->served), a connection, a
 * Slurm job's time given back (struct sjob).
 *
 *   serve.c      the daemon: start-up, the socket, trusted policies, the end
 *   register.c   the engine's host (cs_node_host): connections, the protocol,
 *                registration and deregistration of a step's tasks
 *   status.c     what the engine says of itself: `cosched status`, --metrics
 *   slurmtime.c  time given back to Slurm for the steps held frozen
 */
#ifndef COSCHED_NODE_INTERNAL_H
#define COSCHED_NODE_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine/engine.h"
#include "control/control.h"
#include "shared/proto.h"

/* Connections: each user but root may hold PER_USER at once, and the last
 * ROOT_SLOTS are root's alone (the plugin's registrations always get in).
 * Replies are queued and sent as the client reads them: the scheduling loop
 * never waits for a client. */
#define MAX_CONNS 256
#define ROOT_SLOTS 32
#define PER_USER 8
#define CONN_DEADLINE 2.0            /* s to send a whole request, and to read the whole reply */
#define REFUSALS_LOGGED 20           /* refusal warnings per minute, then a count */

struct task { pid_t pid; int fd; };

struct served {                      /* per job (j->served) */
    unsigned long job, step;
    uid_t uid;
    char prog[64];                   /* name= from the plugin */
    char asked[64];                  /* the policy the step asked for */
    char opts[256];
    char user[64];                   /* looked up once, at registration (root's request) */
    int nnodes;
    struct cs_slurm_step at;         /* where the step is (j->slurm): located once, at its first task */
    struct task *t;
    int nt;
    double frozen_s;                 /* s this step was held frozen by the engine */
    int unasked;                     /* never frozen until its job's probe answers or fails (slurmtime.c) */
};

/*
 * Time given back.  Slurm moves a job's end when it suspends it (and does
 * not count the suspended time); a step frozen by the engine is invisible to
 * Slurm.  So the engine counts, per Slurm job, the time during which every
 * step of it registered here was frozen ("held"), and extends the job's
 * time limit by it through scontrol: in whole minutes rounded up, given as
 * soon as the job is held (a job can be killed as soon as its limit passes),
 * then at most once a minute per job, a minute ahead while it is held (so
 * that it is never short between two updates), never beyond its partition's
 * MaxTime; minutes count as given only once scontrol said yes (a failed run
 * is undone and tried again RETRY_AFTER s later; slurmtime.c's FAILED
 * says how often that is logged).  A job whose limit, once
 * updated, is less than ROOM_MIN minutes below that MaxTime (asked when it
 * first registers here - "the probe" - and at each update that adds
 * minutes) could not get the next update's minutes: its steps here are
 * never frozen from then on (j->nofreeze, as a step spanning nodes).  Until
 * the probe answers or fails once (PROBE_WAIT at most), its steps are not
 * frozen either (sv->unasked): a job with no room must not lose the probe's
 * latency; the answer is seen between two plan steps.
 * A comment-only update does not delay the next extension (last_extend).  A step not yet run by a
 * plan is not held.  A job's record outlives its last step here by
 * FORGET_AFTER s, so that its next step does not get the minute ahead again.
 * What Slurm says of the job is read from squeue's fields (its own id as an
 * array task or heterogeneous component, limit, partition), never from
 * scontrol's free text, where a job name can hold "TimeLimit=".
 * the seconds held go to the job's AdminComment ("cosched:held_s=...",
 * where sacct shows it) unless a site's own comment is there.  The
 * plugin's extend_time=no turns the extension off (the comment stays).
 * scontrol runs in a child of its own (never waited for in the loop).
 * An update is due when a second or more held or frozen is unsaid.  The
 * last word: when a job's last step here leaves, what is unsaid goes out at
 * once (within the minute of the update before: once a minute, sjob_due),
 * and the plugin's deregister (slurmstepd's task_exit, before Slurm hears
 * that the step ended) is answered only once that update is done, HOLD_MAX
 * at most: Slurm refuses any update of a finished job, and a job whose
 * script ends with the step ends a few milliseconds later.  When the engine
 * stops, every job's unsaid time goes out (last_words).
 */
#define GIVE_EVERY 60.0              /* s between two updates of one job */
#define RETRY_AFTER 10.0             /* s before a failed update is tried again */
#define FORGET_AFTER 600.0           /* s a job's record is kept after its last step here */
#define HOLD_MAX 0.4                 /* s a deregister waits for the last word (the plugin waits 0.5 s) */
#define ROOM_MIN 2                   /* min below MaxTime the next update may need (held + a minute ahead) */
#define PROBE_WAIT 10.0              /* s at most a step waits unfrozen for its probe (MessageTimeout) */
struct sjob {
    unsigned long job;
    int extend;                      /* 0 when any of its steps said extend=0 */
    char scontrol[PATH_MAX];         /* from its slurmstepd (trusted, root) */
    char conf[PATH_MAX];             /* SLURM_CONF of its slurmstepd; "" none */
    double held, given, frozen;      /* s all held; s given back; s frozen summed over its steps */
    double said, frozen_said;        /* held and frozen as last written to Slurm */
    double last_update;              /* 0: never */
    double last_extend;              /* the last update that added minutes (0: never) */
    double last_extra;               /* the last word sent within a minute of the update before (0: never) */
    pid_t child;                     /* the scontrol run under way (0: none) */
    double adding, said_before, frozen_said_before; /* what the run under way counts: undone if it fails */
    double seen;                     /* when a step of it was last registered here */
    int live;                        /* its steps registered now */
    int probed, probing;             /* its room below MaxTime answered; the child under way asks it */
    double probe_since;              /* when that child started */
    double probe_after;              /* a failed probe is tried again then */
    int noroom;                      /* its limit cannot take another update: never frozen here */
    int fails;                       /* updates failed in a row (warned at the first, then every 30th) */
};

#define METRICS_EVERY 5.0            /* s between two writes of the metrics file */

struct conn {
    int fd;
    uid_t uid;
    pid_t pid;
    double deadline;
    size_t len;
    char buf[CS_PROTO_MAX + 1];
    char *out;                       /* the reply being sent (writing state once set) */
    size_t olen, ooff;
    int pass_fd;                     /* a descriptor sent with the reply's first byte (-1: none) */
    unsigned long hold;              /* a job's last word to Slurm the reply waits for (0: none) */
    double hold_until;
};


struct cs_serve {
    int lfd;
    int sfd;                         /* signals (cs_engine_signalfd), polled last */
    int stopping;                    /* a signal arrived: the engine stops */
    const char *socket;
    struct conn c[MAX_CONNS];
    int nc;
    double idle_exit, idle_since;
    int next_id;
    char **search;
    int nsearch;
    char **popts;
    int npopts;
    char policy[64];
    double started;
    double refusals_since;           /* rate limit of the refusal warnings */
    int refusals_logged, refusals_quiet;
    struct sjob *sj;                 /* the Slurm jobs with steps here (time given back) */
    int nsj;
    double acct_last;                /* when held time was last counted */
    /* metrics (--metrics): counters since start */
    const char *metrics;
    double metrics_last;
    uint64_t accepted, refused[5];
    uint64_t lat_bucket[11], lat_n, prev_switches;
    double lat_sum, prev_switch_us, held_total, given_total;
    int restored;
};
/* why a registration was refused, for the metrics (their label values) */
enum { RF_REQUEST, RF_NOT_IN_STEP, RF_POLICY, RF_ENGINE, RF_NOT_ROOT };

/* The node engine's state, the engine's host_arg (engine/host.h, struct cs_host_ops). */
static inline struct cs_serve *srv(const struct cs_engine *e)
{
    return e->host_arg;
}

/* serve.c */
void node_served_job_free(struct cs_job *j);
struct cs_policy *node_load_policy(struct cs_serve *s, const char *name, char *why, size_t len);
/* register.c */
int node_flush(struct conn *c);
const char *node_nofreeze_why(const struct cs_job *j);
/* status.c */
char *node_status_doc(struct cs_engine *e, uid_t who, int text);
void node_metrics_sample(struct cs_engine *e);
void node_metrics_write(struct cs_engine *e, int up);
/* slurmtime.c */
struct sjob *node_sjob_of(struct cs_serve *s, unsigned long job, int create);
void node_sjob_note(struct cs_serve *s, unsigned long job, const struct cs_msg *m);
int node_sjob_unasked(const struct sjob *sj);
int node_hold_over(struct cs_engine *e, struct conn *c);
void node_account(struct cs_engine *e);
void node_last_words(struct cs_engine *e);

#endif
