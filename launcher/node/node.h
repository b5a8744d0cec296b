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

/* The engine's host for Slurm steps (engine/engine.h, struct cs_host_ops):
 * e->host = &cs_node_host, e->host_arg = the node engine's state. */
struct cs_host_ops;
extern const struct cs_host_ops cs_node_host;

#endif
