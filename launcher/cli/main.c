/*
 * main.c - `cosched COMMAND [options]`: dispatch to the subcommands.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "core/log.h"
#include "core/util.h"
#include "policy/policy.h"
#include "counters/counters.h"
#include "sim/sim.h"
#include "cli/cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    { "run", cs_cmd_run, "co-schedule jobs on this node under a policy" },
    { "classify", cs_cmd_classify, "characterize one program (class, IPC, FP, bandwidths) and store the result" },
    { "topology", cs_cmd_topology, "show the node's cores, LLC domains and NUMA nodes (hwloc)" },
    { "policies", cs_cmd_policies, "list the policies found in the policy search path" },
    { "serve", cs_cmd_serve, "the node engine: co-schedule the Slurm steps the SPANK plugin registers (root)" },
    { "status", cs_cmd_status, "which steps the node engine co-schedules, running or frozen, and why" },
    { "simulate", cs_cmd_simulate, "run policies on a simulated node in virtual time (" COSCHED_DOCDIR "/sim/README.md)" },
    { "profiles", cs_cmd_profiles, "list the counter profiles and say which one matches this CPU (--lint FILE...)" },
    { "report", cs_cmd_report, "a timeline picture (SVG, HTML) and a summary of a run from its --trace" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cosched COMMAND [options]   (cosched COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n  -V, --version  print the version\n  -h, --help     this text\n\nSee cosched(1) and cosched-policy(7).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("cosched %s (policy API %d)\n", PACKAGE_VERSION, CS_POLICY_API);
        return 0;
    }
    /* policies' cosched.fair_lp: GLPK's simplex, when built with it */
    char why[160];
    if (cs_lp_available(why, sizeof why))
        cs_policy_set_lp(cs_lp_fair);
    size_t ncmd = sizeof commands / sizeof commands[0];
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < ncmd; i++)
        names[i] = commands[i].name;
    /* `cosched help CMD` is `cosched CMD --help` */
    if (strcmp(argv[1], "help") == 0 && argc > 2) {
        for (size_t i = 0; i < ncmd; i++)
            if (strcmp(argv[2], commands[i].name) == 0) {
                char *av[] = { argv[2], "--help", NULL };
                return commands[i].fn(2, av);
            }
        const char *near = cs_closest(argv[2], names, ncmd);
        cs_err("help: unknown command '%s' (%s%s%sknown: run, classify, topology, policies, profiles, serve, status, "
               "simulate, report)", argv[2], near ? "did you mean " : "", near ? near : "", near ? "? " : "");
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < ncmd; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    /* `cosched --verbose run`: options belong to a command, after it */
    if (argv[1][0] == '-')
        for (int a = 2; a < argc; a++)
            for (size_t i = 0; i < ncmd; i++)
                if (strcmp(argv[a], commands[i].name) == 0) {
                    cs_err("'%s' is an option of a command: put it after the command (cosched %s %s ...)", argv[1],
                           commands[i].name, argv[1]);
                    return 2;
                }
    const char *near = cs_closest(argv[1], names, ncmd);
    cs_err("unknown command '%s' (%s%s%sknown: run, classify, topology, policies, profiles, serve, status, simulate, report; "
           "see cosched --help)", argv[1], near ? "did you mean " : "", near ? near : "", near ? "? " : "");
    return 2;
}
