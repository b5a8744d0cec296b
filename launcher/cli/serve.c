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
#include "node/node.h"
#include "shared/proto.h"
#include "cli/cli.h"

enum { S_SOCKET = 256, S_POLICY, S_POLICY_OPT, S_POLICY_PATH, S_QUANTUM, S_IDLE, S_DETACH, S_LOG, S_TRACE, S_COUNTERS,
       S_VERBOSE, S_QUIET, S_HELP, S_JSON, S_ALL, S_KILL_GRACE };

static const struct option serve_lo[] = {
    { "socket", required_argument, NULL, S_SOCKET },
    { "policy", required_argument, NULL, S_POLICY },
    { "policy-opt", required_argument, NULL, S_POLICY_OPT },
    { "policy-path", required_argument, NULL, S_POLICY_PATH },
    { "quantum", required_argument, NULL, S_QUANTUM },
    { "idle-exit", required_argument, NULL, S_IDLE },
    { "detach", no_argument, NULL, S_DETACH },
    { "log", required_argument, NULL, S_LOG },
    { "trace", required_argument, NULL, S_TRACE },
    { "counters", required_argument, NULL, S_COUNTERS },
    { "kill-grace", required_argument, NULL, S_KILL_GRACE },
    { "verbose", no_argument, NULL, S_VERBOSE },
    { "quiet", no_argument, NULL, S_QUIET },
    { "help", no_argument, NULL, S_HELP },
    { NULL, 0, NULL, 0 },
};

static const char serve_help[] =
    "usage: cosched serve [options]\n\n"
    "The node engine: co-schedules the Slurm steps that the cosched SPANK plugin registers.\n"
    "Runs as root until SIGTERM/SIGINT (or --idle-exit); see cosched(1) SLURM.\n\n"
    "options:\n"
    "  --socket PATH          listen here (default " CS_PROTO_SOCKET ")\n"
    "  --policy NAME          policy until a step asks for another while idle (default flca)\n"
    "  --policy-opt KEY=VALUE parameter for the policy (repeatable)\n"
    "  --policy-path DIR      root-owned directory searched first for policies (repeatable)\n"
    "  --quantum DURATION     time quantum, 10ms to 60s (default 1s)\n"
    "  --idle-exit DURATION   exit after this long with no step (default 0: never)\n"
    "  --detach               run in the background once listening (started on demand by the plugin)\n"
    "  --log FILE             messages go here with --detach (default SOCKET.log)\n"
    "  --trace FILE           one JSON line per step and per job event\n"
    "  --counters SPEC        auto (default) or none\n"
    "  --kill-grace DURATION  a step showing a pending kill signal is left running this long at most\n"
    "                         (Slurm's KillWait plus a margin; default 60s)\n"
    "  --verbose, --quiet     more / fewer messages\n";

#define BAD(...) do { cs_err(__VA_ARGS__); goto out; } while (0)

int cs_cmd_serve(int argc, char **argv)
{
    struct cs_node_opts o = { .socket = CS_PROTO_SOCKET, .policy = "flca", .counters = "auto", .quantum = 1.0 };
    int c, status = 2;

    opterr = 0;
    optind = 1;
    char hint[96];
    while ((c = getopt_long(argc, argv, "+:h", serve_lo, NULL)) != -1) {
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
            if (cs_parse_duration(optarg, &o.quantum) < 0 || o.quantum < 0.01 || o.quantum > 60)
                BAD("--quantum %s: expected a duration from 10ms to 60s (e.g. 250ms, 2s)", optarg);
            break;
        case S_IDLE:
            if (cs_parse_duration(optarg, &o.idle_exit) < 0 || o.idle_exit < 0)
                BAD("--idle-exit %s: expected a duration (e.g. 60s, 5m; 0 = never)", optarg);
            break;
        case S_DETACH: o.detach = 1; break;
        case S_LOG: o.logfile = optarg; break;
        case S_TRACE: o.trace = optarg; break;
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
        case 'h':
        case S_HELP:
            fputs(serve_help, stdout);
            status = 0;
            goto out;
        case ':': BAD("option %s needs an argument", argv[optind - 1]);
        default: BAD("unknown option '%s' (%ssee cosched serve --help)", argv[optind - 1], cs_option_hint(argv[optind - 1], serve_lo, hint, sizeof hint));
        }
    }
    if (optind < argc)
        BAD("cosched serve takes no arguments ('%s')", argv[optind]);
    status = cs_node_serve(&o);
out:
    free(o.popts);
    free(o.ppath);
    return status;
}
