/*
 * cli/cli.h - the commands of the cosched program (main.c dispatches): each
 * checks every input before anything starts, fills the state of a run and
 * hands it to the engine, the node engine or the simulator.  May use every
 * other folder of launcher/; nothing uses cli/.
 */
#ifndef COSCHED_CLI_H
#define COSCHED_CLI_H
#include <stdio.h>

/* One option of a command (opts.c): --name [ARG], the id getopt_long
 * returns, its help line (NULL: not listed), and a left column other than
 * "--name ARG" (NULL: that one).  Tables end with a NULL name. */
struct cs_opt {
    const char *name;
    int has_arg;
    int id;
    const char *arg;
    const char *help;
    const char *left;
};
struct option;
/* getopt_long's table for o; the caller frees it. */
struct option *cs_opt_getopt(const struct cs_opt *o);
/* "  --name ARG   help" for each listed option, the left column width wide;
 * note(id), if given, is appended to the option's line. */
void cs_opt_help(FILE *f, const struct cs_opt *o, int width, const char *(*note)(int id));
/* "usage: USAGE", "options:" and the option lines (width 26), on stdout. */
void cs_opt_usage(const char *usage, const struct cs_opt *o);

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
