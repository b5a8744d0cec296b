/*
 * fuzz_proto - the engine socket's request parser, cs_msg_parse()
 * (launcher/shared/proto.c), on one request line; what it accepts is read back
 * through the getters and rebuilt with cs_req_init/cs_req_add, which must
 * give a request that parses to the same verb and pairs.
 */
#include "fuzz.h"
#include "shared/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cs_msg m, again;
    static const char *const keys[] = { "job", "step", "uid", "pid", "task", "ntasks", "nnodes",
                                        "cpus_per_task", "priority", "format", "cores", "policy" };
    char err[256], req[CS_PROTO_MAX + 64];
    long v;

    if (cs_msg_parse(&m, (const char *)data, size, err, sizeof err) < 0)
        return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        cs_msg_long(&m, keys[i], -1000, 1000, 1, &v, err, sizeof err);
        cs_msg_long(&m, keys[i], 0, 0x7fffffff, 0, &v, err, sizeof err);
    }
    if (cs_req_init(req, sizeof req, m.verb) < 0)
        abort();   /* a verb cs_msg_parse took must be a valid verb */
    for (int i = 0; i < m.nkv; i++)
        if (cs_req_add(req, sizeof req, m.key[i], "%s", m.val[i]) < 0)
            return 0;  /* the rebuilt request may be longer than the original (separators) */
    if (cs_msg_parse(&again, req, strlen(req), err, sizeof err) < 0 || strcmp(again.verb, m.verb) != 0 ||
        again.nkv != m.nkv)
        abort();
    for (int i = 0; i < m.nkv; i++)
        if (strcmp(again.key[i], m.key[i]) != 0 || strcmp(again.val[i], m.val[i]) != 0)
            abort();
    return 0;
}
