/*
 * fuzz_store - the JSON of launcher/core/store.c (profile store entries) and
 * of the trace's strings:
 *  - the input as a store entry file, read by lookup() for a fixed key
 *    (the whole path: size and NUL checks, the JSON parser, the key and
 *    field checks); an entry that is taken is written back by write_entry()
 *    and must read back to the same values;
 *  - the input as a job name made a JSON string by cs_json_text() (the
 *    trace, the store, `cosched status`) and written by cs_json_put(), which
 *    cs_json_parse() must read back as a string: equal to the name when the
 *    name is UTF-8, else valid UTF-8 of the same or greater length.
 * store.c is compiled into this harness (lookup() and write_entry() are static).
 */
#define FUZZ_WANT_LOG
#include "fuzz.h"
#include "../../launcher/core/store.c"

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void roundtrip_entry(struct cs_store *s, struct cs_store_key *k, const struct cs_stored *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct cs_stored back = { 0 };

    write_entry(f, s, k, r);
    fclose(f);
    fuzz_file((const uint8_t *)text, len);
    if (!lookup(s, k, &back))
        abort();   /* what write_entry wrote must be an entry lookup takes */
    if (back.cls != r->cls || !same(back.ipc_standalone, r->ipc_standalone) ||
        !same(back.ipc_folded, r->ipc_folded) || !same(back.fp, r->fp) || !same(back.mpki, r->mpki) ||
        !same(back.bw_l1, r->bw_l1) || !same(back.bw_l2, r->bw_l2) || !same(back.bw_llc, r->bw_llc) ||
        back.gang_only != r->gang_only || back.cores_standalone != r->cores_standalone ||
        back.cores_folded != r->cores_folded)
        abort();
    free(text);
}

static void name_string(const uint8_t *data, size_t size)
{
    char *name = fuzz_str(data, size), *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    json_error_t err;
    json_t *v, *plain = json_string(name);

    if (cs_json_put(f, json_pack("[o]", cs_json_text(name)), 0) < 0)
        abort();   /* every name can be written */
    fclose(f);
    v = cs_json_parse(text, len, &err);
    if (!json_is_array(v) || !json_is_string(json_array_get(v, 0)))
        abort();   /* cs_json_text wrote something that is not a JSON string */
    if (plain && strcmp(json_string_value(json_array_get(v, 0)), name) != 0)
        abort();   /* a UTF-8 name did not read back equal */
    if (!plain && json_string_length(json_array_get(v, 0)) < strlen(name))
        abort();   /* a replaced byte became shorter than U+FFFD */
    json_decref(plain);
    json_decref(v);
    free(text);
    free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *args[] = { "8", "-n", NULL };
    static struct cs_store s = { .dir = "/nonexistent", .ttl = 1e300, .vendor = "GenuineIntel",
                                 .family = "6", .model = "85", .name = "Intel(R) Xeon(R)" };
    static struct cs_store_key k = { .exe = "/usr/bin/stream", .exe_id = "build-id:0123abcd", .args = args,
                                     .nargs = 2, .threads = 4 };
    struct cs_stored r = { 0 };

    k.file = (char *)fuzz_file(data, size);
    if (lookup(&s, &k, &r))
        roundtrip_entry(&s, &k, &r);
    for (int i = 0; i < s.nwarned; i++)
        free(s.warned[i]);
    free(s.warned);
    s.warned = NULL;
    s.nwarned = 0;
    name_string(data, size);
    return 0;
}
