/*
 * serve.c - `cosched serve`: the node engine's options (cosched(1) SLURM);
 * node/serve.c runs the engine with them.
 */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "control/control.h"
#include "core/log.h"
#include "core/util.h"
#include "node/node.h"
#include "shared/proto.h"
#include "cli/cli.h"

enum { S_SOCKET = 256, S_POLICY, S_POLICY_OPT, S_POLICY_PATH, S_QUANTUM, S_IDLE, S_DETACH, S_LOG, S_TRACE, S_COUNTERS,
       S_VERBOSE, S_QUIET, S_HELP, S_JSON, S_ALL, S_KILL_GRACE, S_METRICS };

static const struct cs_opt serve_opts[] = {
    { 0, "socket", 1, S_SOCKET, "PATH", "listen here (default " CS_PROTO_SOCKET ")" },
    { 'p', "policy", 1, S_POLICY, "NAME", "policy until a step asks for another while idle (default flca)" },
    { 0, "policy-opt", 1, S_POLICY_OPT, "KEY=VALUE", "parameter for the policy (repeatable)" },
    { 0, "policy-path", 1, S_POLICY_PATH, "DIR", "root-owned directory searched first for policies (repeatable)" },
    { 't', "quantum", 1, S_QUANTUM, "DURATION", "time quantum, 10ms to 60s (default 1s)" },
    { 0, "idle-exit", 1, S_IDLE, "DURATION", "exit after this long with no step (default 0: never)" },
    { 0, "detach", 0, S_DETACH, NULL, "run in the background once listening (started on demand by the plugin)" },
    { 0, "log", 1, S_LOG, "FILE", "messages go here with --detach (default SOCKET.log)" },
    { 0, "trace", 1, S_TRACE, "FILE", "one JSON line per step and per job event" },
    { 0, "counters", 1, S_COUNTERS, "SPEC", "auto (default) or none" },
    { 0, "metrics", 1, S_METRICS, "FILE", "write node metrics here every 5 s, Prometheus text format\n"
      "(node_exporter's textfile collector: DIR/cosched.prom)" },
    { 0, "kill-grace", 1, S_KILL_GRACE, "DURATION", "a step showing a pending kill signal is left running this long at most\n"
      "(Slurm's KillWait plus a margin; default 60s)" },
    { 'v', "verbose", 0, S_VERBOSE, NULL, "more messages (repeat for debug)" },
    { 'q', "quiet", 0, S_QUIET, NULL, "only warnings and errors" },
    { 'h', "help", 0, S_HELP, NULL, "this text" },
    { 0 },
};

#define BAD(...) do { cs_err(__VA_ARGS__); goto out; } while (0)

int cs_cmd_serve(int argc, char **argv)
{
    struct cs_node_opts o = { .socket = CS_PROTO_SOCKET, .policy = "flca", .counters = "auto", .quantum = 1.0 };
    struct cs_getopt g;
    int c, status = 2;

    cs_opt_start(&g, serve_opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case S_SOCKET: o.socket = optarg; break;
        case S_POLICY: o.policy = optarg; break;
        case S_POLICY_OPT:
            o.popts = realloc(o.popts, (o.npopts + 1) * sizeof *o.popts);
            o.popts[o.npopts++] = optarg;
            break;
        case S_POLICY_PATH:
            o.ppath = realloc(o.ppath, (o.nppath + 1) * sizeof *o.ppath);
            o.ppath[o.nppath++] = optarg;
            break;
        case S_QUANTUM:
            if (cs_opt_quantum(optarg, &o.quantum) < 0)
                goto out;
            break;
        case S_IDLE:
            if (cs_parse_duration(optarg, &o.idle_exit) < 0 || o.idle_exit < 0)
                BAD("--idle-exit %s: expected a duration (e.g. 60s, 5m; 0 = never)", optarg);
            break;
        case S_DETACH: o.detach = 1; break;
        case S_LOG: o.logfile = optarg; break;
        case S_TRACE: o.trace = optarg; break;
        case S_METRICS: o.metrics = optarg; break;
        case S_COUNTERS:
            if (strcmp(optarg, "auto") && strcmp(optarg, "none"))
                BAD("--counters %s: the node engine takes auto or none", optarg);
            o.counters = optarg;
            break;
        case S_KILL_GRACE: {
            double g;
            if (cs_parse_duration(optarg, &g) < 0 || g < 0 || g > 3600)
                BAD("--kill-grace %s: expected a duration from 0 to 1h (Slurm's KillWait plus a margin, e.g. 60s)",
                    optarg);
            cs_slurm_set_kill_grace(g);
            break;
        }
        case S_VERBOSE: cs_verbosity++; break;
        case S_QUIET: cs_verbosity = CS_LOG_WARN; break;
        case S_HELP:
            printf("usage: cosched serve [options]\n\n"
                   "The node engine: co-schedules the Slurm steps that the cosched SPANK plugin registers.\n"
                   "Runs as root until SIGTERM/SIGINT (or --idle-exit); see cosched(1) SLURM.\n\n"
                   "options:\n");
            cs_opt_help(stdout, serve_opts, NULL);
            status = 0;
            goto out;
        case ':':
        default: cs_opt_refuse(&g, c, NULL, "serve"); goto out;
        }
    }
    if (optind < argc)
        BAD("cosched serve takes no arguments ('%s')", argv[optind]);
    status = cs_node_serve(&o);
out:
    free(o.popts);
    free(o.ppath);
    cs_opt_end(&g);
    return status;
}
