/*
 * spank_conf.h - the SPANK plugin's typed configuration and the user's request.
 *
 * Pure C (libc only, no Slurm): the unit tests link spank_conf.c alone
 * (tests/progs/spank_conf).  Every function returns 0 or -1; on -1 `err`
 * holds one line for a human naming what was wrong and what was expected.
 *
 *   plugstack.conf arguments  --cs_conf_parse-->  struct cs_conf
 *   policy directory          --cs_policies_scan-->  struct cs_names (installed)
 *   cs_conf_check(conf, installed)      default/allowed name installed policies
 *   --cosched=VALUE           --cs_req_parse-->   struct cs_req
 *   cs_decide(conf, req)      -> the policy the step runs under, or none
 */
#ifndef COSCHED_SPANK_CONFIG_H
#define COSCHED_SPANK_CONFIG_H

#include <stddef.h>

#define CS_NAME_MAX 32          /* a policy name, NUL included */
#define CS_MAX_POLICIES 64
#define CS_PATH_MAX 1024
#define CS_SOCKET_MAX 108       /* sizeof sockaddr_un.sun_path */

struct cs_names {
    int n;
    char name[CS_MAX_POLICIES][CS_NAME_MAX];
};

enum cs_start { CS_START_ONDEMAND, CS_START_SYSTEMD, CS_START_NONE };

struct cs_conf {
    char default_policy[CS_NAME_MAX]; /* "" = none */
    int quantum_ms;                   /* keys quantum, quantum_ms */
    struct cs_names allowed;          /* n == 0: every installed policy */
    int optout;                       /* users may say --cosched=off */
    int enforce;                      /* steps that did not ask run under default */
    char socket[CS_SOCKET_MAX];
    int start;                        /* enum cs_start */
    char cosched[CS_PATH_MAX];        /* the cosched binary (start=ondemand) */
    int idle_exit_ms;                 /* for the on-demand engine (0: stays) */
    char policydir[CS_PATH_MAX];      /* where the installed policies are */
    int timeout_ms;                   /* budget of one step's registration (timeout, timeout_ms) */
    char omp_shim[CS_PATH_MAX];       /* libcosched-omp.so for the tasks; "" = none */
    int extend_time;                  /* the engine gives frozen time back to the job's time limit */
};

/* What the user asked with --cosched=VALUE. */
struct cs_req {
    int given;                    /* the option was seen */
    int help, off;
    char policy[CS_NAME_MAX];     /* "" = the default policy */
    int has_priority;
    long priority;
    char cls;                     /* 'S', 'C', 'N' or 0 */
    int omp_shim_off;             /* omp_shim=no: passive waiting, no shim */
};

/* Defaults: see the table in spank_conf.c and cosched-spank(8). */
void cs_conf_defaults(struct cs_conf *c);
/* Parse plugstack.conf arguments ("key=value" each) over the defaults.
 * Syntax and bounds only; cs_conf_check compares with the installed set. */
int cs_conf_parse(struct cs_conf *c, int ac, char **av, char *err, size_t errlen);
/* Cross-checks: enforce needs a default, default within allowed, and (when
 * `installed` holds at least one policy) default and allowed name installed
 * policies. */
int cs_conf_check(const struct cs_conf *c, const struct cs_names *installed, char *err, size_t errlen);
/* One line per configuration key: "key=DEFAULT  help" (for the man page and
 * the unit test that keeps both in step). */
void cs_conf_describe(char *buf, size_t len);

/* The policies a user may ask for: allowed if set, else installed. */
const struct cs_names *cs_conf_usable(const struct cs_conf *c, const struct cs_names *installed);

/* Parse --cosched=VALUE: POLICY[:key=value,...], help, off, or
 * :key=value,... (the default policy).  installed may be empty (policy
 * directory unreadable): then any policy the configuration allows passes
 * and the engine has the last word. */
int cs_req_parse(struct cs_req *r, const char *value, const struct cs_conf *c,
                 const struct cs_names *installed, char *err, size_t errlen);

/* The policy a step runs under: 1 and the name in policy (CS_NAME_MAX),
 * or 0 when the step is not co-scheduled (did not ask and enforce=no, or
 * opted out).  r may be NULL (the option was not given). */
int cs_decide(const struct cs_conf *c, const struct cs_req *r, char *policy);

/* The *.lua files of dir, sorted, as names.  -1 if dir cannot be read. */
int cs_policies_scan(const char *dir, struct cs_names *out);
/* The `description = "..."` of dir/name.lua, or "(no description)". */
void cs_policy_description(const char *dir, const char *name, char *buf, size_t len);

int cs_names_has(const struct cs_names *s, const char *name);
/* "a, b, c" (cut with "..." when it would not fit). */
void cs_names_join(const struct cs_names *s, char *buf, size_t len);

#endif
