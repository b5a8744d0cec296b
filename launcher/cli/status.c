/*
 * status.c - `cosched status`: ask the node engine (node/serve.c) over its
 * socket which steps it co-schedules, and print its answer.  A client of
 * the socket protocol only (shared/proto.h): nothing of the engine runs
 * here.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "shared/proto.h"
#include "cli/cli.h"

enum { ST_JSON = 256, ST_SOCKET, ST_HELP };

int cs_cmd_status(int argc, char **argv)
{
    static const struct cs_opt opts[] = {
        { 0, "json", 0, ST_JSON, NULL, "one JSON document" },
        { 0, "socket", 1, ST_SOCKET, "PATH", "the engine's socket (default " CS_PROTO_SOCKET ")" },
        { 'h', "help", 0, ST_HELP, NULL, "this text" },
        { 0 },
    };
    struct cs_getopt g;
    const char *sock = CS_PROTO_SOCKET;
    int json = 0, c;
    char req[256], why[PATH_MAX + 128], *rep;

    cs_opt_start(&g, opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case ST_JSON: json = 1; break;
        case ST_SOCKET: sock = optarg; break;
        case ST_HELP:
            printf("usage: cosched status [--json] [--socket PATH]\n\n"
                   "The steps the node engine co-schedules: yours, or every step for root.\n\noptions:\n");
            cs_opt_help(stdout, opts, NULL);
            cs_opt_end(&g);
            return 0;
        case ':':
        default: cs_opt_refuse(&g, c, NULL, "status"); cs_opt_end(&g); return 2;
        }
    }
    cs_opt_end(&g);
    if (optind < argc) {
        cs_err("cosched status takes no arguments ('%s')", argv[optind]);
        return 2;
    }
    cs_req_init(req, sizeof req, "status");
    cs_req_add(req, sizeof req, "format", "%s", json ? "json" : "text");
    rep = malloc(CS_PROTO_REPLY_MAX);
    if (!rep)
        return 1;
    if (cs_proto_call(sock, req, rep, CS_PROTO_REPLY_MAX, 5000, why, sizeof why) < 0) {
        int e = errno;
        if (e == ENOENT || e == ECONNREFUSED)
            cs_err("no node engine runs here (%s): nothing is co-scheduled on this node", why);
        else
            cs_err("%s", why);
        free(rep);
        return 1;
    }
    if (strncmp(rep, "OK ", 3) != 0) {
        cs_err("the engine refused: %s", strncmp(rep, "ERR ", 4) == 0 ? rep + 4 : rep);
        free(rep);
        return 1;
    }
    char *body = strchr(rep, '\n');
    fputs(body ? body + 1 : "", stdout);
    free(rep);
    return 0;
}
