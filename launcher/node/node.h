/*
 * node/node.h - the node engine (`cosched serve`): the engine run for Slurm
 * steps that register over a unix socket (shared/proto.h) instead of being
 * forked.  serve.c starts the daemon, register.c is the engine's host (the
 * socket, the protocol, registrations), status.c says what the engine does
 * (`cosched status`, --metrics), slurmtime.c gives Slurm back the time its
 * steps were held; internal.h is what they share.
 *
 * May use: core/, control/, counters/, policy/, engine/, shared/.  Used by:
 * cli/.
 */
#ifndef COSCHED_NODE_H
#define COSCHED_NODE_H


/* The engine's host for Slurm steps (engine/host.h, struct cs_host_ops):
 * e->host = &cs_node_host, e->host_arg = the node engine's state. */
struct cs_host_ops;
extern const struct cs_host_ops cs_node_host;

/* What `cosched serve` was asked (cli/serve.c parsed it; the strings and
 * vectors stay the caller's). */
struct cs_node_opts {
    const char *socket;        /* where to listen (CS_PROTO_SOCKET) */
    const char *policy;        /* until a step asks for another while idle */
    char **popts;              /* --policy-opt KEY=VALUE */
    int npopts;
    char **ppath;              /* --policy-path DIR, searched first */
    int nppath;
    double quantum;            /* s */
    double idle_exit;          /* s; 0: never */
    int detach;                /* run in the background once listening */
    const char *logfile;       /* with detach; NULL: SOCKET.log */
    const char *trace;         /* NULL: none */
    const char *counters;      /* "auto" or "none" */
    const char *metrics;       /* Prometheus text file, NULL: none */
};
/* Run the node engine (as root) until SIGTERM/SIGINT or idle exit: the exit
 * status of `cosched serve` (0; 1 when another engine holds the socket and
 * detach is not set; 2 for a setup error, after its message). */
int cs_node_serve(const struct cs_node_opts *o);

#endif
