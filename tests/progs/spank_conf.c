/*
 * spank_conf - drive the SPANK plugin's configuration parser (plugin/spank_conf.c)
 * without Slurm, for tests/58-spank-config.bats.
 *
 *   spank_conf conf [ARG...]           parse plugstack.conf ARGs, print the config
 *   spank_conf req VALUE [ARG...]      parse --cosched=VALUE under that config,
 *                                      print the request and the policy the step
 *                                      runs under
 *   spank_conf decide [ARG...]         the policy of a step that did not ask
 *   spank_conf keys                    the configuration table
 * An error prints "error: MESSAGE" on stderr and exits 1.
 */
#include <stdio.h>
#include <string.h>

#include "../../plugin/spank_conf.h"

static int conf(struct cs_conf *c, struct cs_names *inst, int ac, char **av)
{
    char err[1024];
    cs_conf_defaults(c);
    if (cs_conf_parse(c, ac, av, err, sizeof err) < 0 ||
        (cs_policies_scan(c->policydir, inst) < 0 ? (inst->n = 0) : 0) ||
        cs_conf_check(c, inst, err, sizeof err) < 0) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const char *starts[] = { "ondemand", "systemd", "none" };
    struct cs_conf c;
    struct cs_names inst;
    struct cs_req r;
    char buf[4096], pol[CS_NAME_MAX];

    if (argc >= 2 && !strcmp(argv[1], "keys")) {
        cs_conf_describe(buf, sizeof buf);
        fputs(buf, stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "conf")) {
        if (conf(&c, &inst, argc - 2, argv + 2) < 0)
            return 1;
        cs_names_join(&c.allowed, buf, sizeof buf);
        printf("default=%s\nquantum_ms=%d\nallowed=%s\noptout=%d\nenforce=%d\nsocket=%s\nstart=%s\n"
               "cosched=%s\nidle_exit_ms=%d\npolicydir=%s\ntimeout_ms=%d\nomp_shim=%s\n",
               c.default_policy[0] ? c.default_policy : "none", c.quantum_ms, c.allowed.n ? buf : "all",
               c.optout, c.enforce, c.socket, starts[c.start], c.cosched, c.idle_exit_ms, c.policydir, c.timeout_ms,
               c.omp_shim[0] ? c.omp_shim : "none");
        cs_names_join(&inst, buf, sizeof buf);
        printf("installed=%s\n", buf);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "req")) {
        if (conf(&c, &inst, argc - 3, argv + 3) < 0)
            return 1;
        if (cs_req_parse(&r, argv[2], &c, &inst, buf, sizeof buf) < 0) {
            fprintf(stderr, "error: %s\n", buf);
            return 1;
        }
        printf("help=%d off=%d policy=%s priority=%s%ld class=%c omp_shim=%s\n", r.help, r.off,
               r.policy[0] ? r.policy : "-", r.has_priority ? "" : "unset:", r.priority, r.cls ? r.cls : '-',
               r.omp_shim_off ? "no" : "yes");
        printf("runs=%s\n", cs_decide(&c, &r, pol) ? pol : "none");
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "decide")) {
        if (conf(&c, &inst, argc - 2, argv + 2) < 0)
            return 1;
        printf("runs=%s\n", cs_decide(&c, NULL, pol) ? pol : "none");
        return 0;
    }
    fprintf(stderr, "usage: spank_conf conf|req VALUE|decide [KEY=VALUE...] | keys\n");
    return 2;
}
