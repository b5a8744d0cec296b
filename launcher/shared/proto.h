/*
 * proto.h - the node engine's local socket protocol (cosched serve).
 *
 * launcher/shared/ holds what is compiled into both cosched and the Slurm
 * SPANK plugin (plugin/): libc only, nothing else of launcher/.  This
 * protocol is shared by the node engine (launcher/node/serve.c), `cosched
 * status` (launcher/cli/status.c) and the plugin, which compiles proto.c
 * into cosched.so.
 *
 * One request per connection, on a SOCK_STREAM unix socket:
 *
 *   client: COSCHED/1 VERB key=value key=value ...\n
 *   server: OK key=value ...\n           (register, deregister, ping)
 *           ERR message\n                (any verb, message for a human)
 *           OK json|text\n...            (status: the document, then EOF)
 *   then the server closes the connection.  A reply may carry a descriptor
 *   (register's omp_page=1): cs_proto_call_fd() receives it, cs_proto_call()
 *   closes any it did not ask for.
 *
 * Rules, enforced by cs_msg_parse() (the server never trusts a client):
 *  - a request is at most CS_PROTO_MAX bytes, newline included; the first
 *    word is the version tag CS_PROTO_TAG, a request with another tag is
 *    refused naming both versions;
 *  - the verb and keys are [a-z_]{1,31}; at most CS_PROTO_MAXKV pairs; a key
 *    appears at most once;
 *  - values are 1..1023 bytes of printable ASCII without space, '=' allowed
 *    only after the first one (option lists "a=1,b=2" are one value);
 *  - nothing else (no NUL, no control characters, no trailing garbage).
 *
 * Verbs and their keys (values are decimal unless said otherwise):
 *   ping                            -> OK version=1 pid=ENGINE_PID policy=NAME
 *   register   job step uid pid     -> OK id=COSCHED_JOB_ID policy=NAME [shares_cpus=1]
 *              (shares_cpus=1: the policy runs steps on the same cpus at once;
 *              the plugin then keeps passive OpenMP waiting, no shim)
 *              cores=LIST (the step's cores on this node, "0-3,8")
 *              [task ntasks nnodes cpus_per_task policy=NAME
 *               opts=K=V,K=V  priority=INT  class=S|C|N  name=STRING
 *               extend=0|1 (plugstack extend_time: the job's frozen time is
 *               given back to its time limit)  scontrol=PATH  slurm_conf=PATH
 *               (the scontrol beside slurmstepd and its SLURM_CONF, for that)
 *               omp_page=0|1 (1: the task gets the OpenMP shim; send the
 *               step's page)]
 *              root only (peer credentials).  Each task of a step registers;
 *              the first one makes the step a cosched job, the others join it.
 *              omp_page=1 in the reply: the reply's first byte carries one
 *              descriptor (SCM_RIGHTS) of the step's OpenMP page
 *              (shared/omppage.h: a sealed memfd named CS_OMPPAGE_NAME of
 *              CS_OMPPAGE_SIZE bytes), made by the engine when a task of the
 *              step first asks: one page per step, shared by all its tasks.
 *              Not sent when the policy runs steps on the same cpus
 *              (shares_cpus=1) or no page could be made.  The client checks
 *              what it got (a memfd of that name and size, sealed) and
 *              closes anything else.
 *   deregister job step pid        -> OK   root only
 *   status     [format=json|text]   -> "OK json" or "OK text", then the
 *              document (a user sees the steps of their own uid, root every
 *              step)
 * (cores= is informative: the engine reads a step's cores from its cgroups.)
 */
#ifndef COSCHED_PROTO_H
#define COSCHED_PROTO_H

#include <stddef.h>
#include <sys/types.h>

#define CS_PROTO_VERSION 1
#define CS_PROTO_TAG "COSCHED/1"
#define CS_PROTO_MAX 4096        /* bytes of one request, newline included */
#define CS_PROTO_MAXKV 24
#define CS_PROTO_REPLY_MAX (1 << 20)   /* status documents are cut here */
#define CS_PROTO_SOCKET "/run/cosched/engine.sock"

struct cs_msg {
    const char *verb;
    int nkv;
    const char *key[CS_PROTO_MAXKV];
    const char *val[CS_PROTO_MAXKV];
    char buf[CS_PROTO_MAX];      /* the parsed copy; pointers above point here */
};

/* Parse one request line (with or without its final newline).  0, or -1 with
 * a message for the client in err ("key 'pid': expected a number, got 'x'"
 * style messages come from the cs_msg_* getters). */
int cs_msg_parse(struct cs_msg *m, const char *line, size_t len, char *err, size_t errlen);
/* Value of key, NULL when absent. */
const char *cs_msg_get(const struct cs_msg *m, const char *key);
/* Key as an integer in [lo, hi]: 0, 1 if absent and optional, -1 with err
 * naming the key and what was expected. */
int cs_msg_long(const struct cs_msg *m, const char *key, long lo, long hi, int optional, long *out,
                char *err, size_t errlen);

/* Build a request: cs_req_init(b, len, "register"), then cs_req_add(b, len,
 * "pid", "%d", pid) per key.  -1 (b unchanged) if it would not fit or the
 * value is not a valid protocol value. */
int cs_req_init(char *b, size_t len, const char *verb);
int cs_req_add(char *b, size_t len, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Connect to the socket at path, send req (newline added), read the whole
 * reply (up to len-1 bytes, NUL-terminated) within timeout_ms in total.
 * 0 when a reply arrived (it may be "ERR ..."), -1 with why filled when the
 * engine could not be reached or did not answer (errno kept: ENOENT or
 * ECONNREFUSED mean "no engine"). */
int cs_proto_call(const char *path, const char *req, char *reply, size_t len, int timeout_ms,
                  char *why, size_t whylen);
/* The same, and *fdp the descriptor the reply carried (close-on-exec, the
 * caller's to close), -1 when none: the first that came alone in its
 * message; one that came with others or truncated, and any after the
 * first, are closed, and a call that fails leaves none open. */
int cs_proto_call_fd(const char *path, const char *req, char *reply, size_t len, int timeout_ms, int *fdp,
                     char *why, size_t whylen);

/* Descriptors over a unix socket (SCM_RIGHTS).  recv: recvmsg(sock, flags)
 * into buf; *fdp (when NULL, or already >= 0, or more than one came: none)
 * gets the one descriptor that came with these bytes, close-on-exec; every
 * other descriptor is closed.  send: len bytes of buf with descriptor fd,
 * without blocking (MSG_DONTWAIT).  Both return what recvmsg/sendmsg do. */
ssize_t cs_proto_recv_fd(int sock, void *buf, size_t len, int flags, int *fdp);
ssize_t cs_proto_send_fd(int sock, const void *buf, size_t len, int fd);

#endif
