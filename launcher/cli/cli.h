/*
 * cli/cli.h - the commands of the cosched program (main.c dispatches): each
 * checks every input before anything starts, fills the state of a run and
 * hands it to the engine, the node engine or the simulator.  May use every
 * other folder of launcher/; nothing uses cli/.
 */
#ifndef COSCHED_CLI_H
#define COSCHED_CLI_H
#include <stdio.h>

/* One option of a command (opts.c): -l, --name [ARG], the id the parser
 * returns for either form, its help line (NULL: not listed).  Tables end
 * with a NULL name.  The table is the one source: getopt_long's long table,
 * its optstring and the --help lines are all made from it.
 *
 *     { 'p', "policy", 1, O_POLICY, "NAME", "scheduling policy ..." },
 *     {  0, "policy-opt", 1, O_POLICY_OPT, "KEY=VALUE", "..." },
 *
 * Which flags have a letter, and why these letters, is cosched(1) OPTIONS. */
struct cs_opt {
    int letter;                 /* the short option ('p' for -p); 0: none */
    const char *name;           /* the long one, without "--" */
    int has_arg;
    int id;                     /* what cs_opt_next returns: 256 or more, never a letter */
    const char *arg;            /* the argument's name in --help */
    const char *help;           /* a '\n' starts an aligned continuation line */
};

/* A command's option parser: getopt_long over the tables made from an
 * option table, with the user's words kept for the messages.
 *
 *     struct cs_getopt g;
 *     cs_opt_start(&g, run_opts, 1);
 *     while ((c = cs_opt_next(&g, argc, argv)) != -1)
 *         switch (c) {
 *         case O_POLICY: ... optarg ...
 *         case ':':
 *         default: cs_opt_refuse(&g, c, NULL, "run"); ...exit status 2
 *         }
 *     cs_opt_end(&g);          (after optind has been used)
 */
struct option;
struct cs_getopt {
    const struct cs_opt *opts;
    struct option *lo;          /* getopt_long's table */
    char shorts[160];           /* its optstring: "+:p:t:vqh" */
    char bad[64];               /* the refused option as written: "--frob", "-x", "-quantum" */
    char hint[96];              /* "did you mean --policy? " or "" */
};
/* Start parsing a command's argv (optind = 1, getopt's own messages off).
 * in_order: options end at the first plain argument (the command of a job
 * keeps its own options); 0: options may also follow plain arguments
 * (`cosched report TRACE -o FILE`). */
void cs_opt_start(struct cs_getopt *g, const struct cs_opt *o, int in_order);
/* The id of the next option, in either form, with optarg set; -1 after the
 * last option (optind: the first plain argument); ':' when an option's
 * argument is missing and '?' for an unknown option, with g->bad naming it
 * and g->hint perhaps naming the option meant (a long option written with
 * one dash, -policy, is refused as such rather than read as -p olicy). */
int cs_opt_next(struct cs_getopt *g, int argc, char **argv);
void cs_opt_end(struct cs_getopt *g);
/* The message for what cs_opt_next returned as c, ':' or '?':
 * "[WHO: ]option --x needs an argument" or
 * "[WHO: ]unknown option '--x' (HINTsee cosched CMD --help)". */
void cs_opt_refuse(const struct cs_getopt *g, int c, const char *who, const char *cmd);
/* "  -p, --policy NAME   help" for each listed option, "      --name ARG"
 * for one without a letter, in columns; note(id), if given, is appended to
 * the option's line. */
void cs_opt_help(FILE *f, const struct cs_opt *o, const char *(*note)(int id));
/* "usage: USAGE", "options:" and the option lines, on stdout. */
void cs_opt_usage(const char *usage, const struct cs_opt *o);
/* --quantum's value, the same in every command that takes one (run,
 * classify, serve, simulate): a duration from 10 ms to 60 s; 0, or -1 and
 * the message. */
int cs_opt_quantum(const char *arg, double *out);

int cs_cmd_run(int argc, char **argv);
/* `cosched classify [options] -- CMD [ARGS]`: characterize one program
 * alone (policy classify), print and store the result.  0 when a result was
 * printed, 1 when the program failed before one, 2 usage. */
int cs_cmd_classify(int argc, char **argv);
int cs_cmd_topology(int argc, char **argv);
int cs_cmd_policies(int argc, char **argv);
/* profiles.c: `cosched profiles`, the counter profiles and which one matches
 * this CPU; --lint FILE... checks profile files. */
int cs_cmd_profiles(int argc, char **argv);
/* serve.c: the node engine (`cosched serve`, node/serve.c runs it); status.c:
 * its client (`cosched status`). */
int cs_cmd_serve(int argc, char **argv);
int cs_cmd_status(int argc, char **argv);
/* simulate.c: `cosched simulate`, policies on a simulated node in virtual
 * time.  0, 1 when a run failed, 2 for a usage or model-file error. */
int cs_cmd_simulate(int argc, char **argv);
/* report.c: `cosched report TRACE`, a picture and summary of a run's trace.
 * 0, 1 when an output could not be written, 2 usage or a bad trace. */
int cs_cmd_report(int argc, char **argv);
#endif
