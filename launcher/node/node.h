/*
 * node/node.h - the node engine (serve.c, `cosched serve`): the engine run
 * for Slurm steps that register over a unix socket (shared/proto.h) instead
 * of being forked.
 *
 * May use: core/, control/, counters/, policy/, engine/, shared/.  Used by:
 * cli/.
 */
#ifndef COSCHED_NODE_H
#define COSCHED_NODE_H

#include "core/core.h"

/* serve.c, called by the engine in node engine mode */
struct pollfd;
int cs_serve_pollfds(struct cs_engine *e, struct pollfd *pf, int max);   /* fds to watch, count */
int cs_serve_nfds(struct cs_engine *e);                                   /* upper bound for the above */
/* Handle what poll() reported for the fds cs_serve_pollfds() gave; 1 when
 * the set of jobs changed (the epoch ends, the policy is asked again). */
int cs_serve_ready(struct cs_engine *e, const struct pollfd *pf, int n);
/* Between steps: forget ended jobs; 1 when the engine should stop (idle). */
int cs_serve_tidy(struct cs_engine *e);

#endif
