/*
 * store.c - the profile store: characterization results kept between runs.
 *
 * One small JSON file per key in the store directory (see cosched(1) PROFILE
 * STORE): $XDG_CACHE_HOME/cosched/profiles, else ~/.cache/cosched/profiles,
 * or --store DIR.  The key is
 *
 *   exe      the resolved path of the job's command (realpath)
 *   exe_id   "build-id:HEX" (the ELF NT_GNU_BUILD_ID note of a PT_NOTE
 *            segment) when the file has one, else "fnv1a64:HEX", the 64-bit
 *            FNV-1a hash of the whole file: a rebuilt or replaced program is
 *            a new key (scripts are hashed, not their interpreter)
 *   args     the arguments after the command
 *   threads  the thread count the job runs with (a class measured on 16
 *            cores says little about the same program on 2)
 *   cpu      hwloc's CPUVendor, CPUFamilyNumber, CPUModelNumber and CPUModel
 *            of the first package (this machine's, even with --topology)
 *
 * and the file is <16 hex digits>.json, the FNV-1a hash of the key's
 * canonical text; the key is also written in the file and compared on read,
 * so a hash collision is a miss, never a wrong profile.
 *
 * Writers write a temporary file in the same directory and rename(2) it over
 * the entry, so readers see the old or the new file, never a partial one, and
 * concurrent writers of one key leave one of their files.  A file that does
 * not parse, lacks a field or has a wrong type is ignored with one warning
 * naming it and what is wrong (and replaced by the next result).  An entry
 * older than the TTL is ignored (it is replaced when a new result arrives).
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/store.h"
#include "core/engine_state.h"
#include "core/json.h"

#define ENTRY_MAX (64 * 1024)      /* a valid entry is well under 4 KiB */
#define FORMAT "cosched-profile"

struct cs_store {
    char *dir;
    double ttl;
    int reprofile;
    char vendor[64], family[16], model[16], name[160];
    char **warned;                 /* files already warned about */
    int nwarned;
};

struct cs_store_key {
    char *exe, *exe_id, **args;    /* args NULL-terminated */
    int nargs, threads;
    char *file;                    /* dir/HASH.json */
};

/* ------------------------------------------------------------- hashing */

#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t rd(const unsigned char *p, int n, int big)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
    return v;
}

/* The GNU build id of an ELF file: hex into out, 0; -1 when there is none. */
static int elf_build_id(int fd, char *out, size_t len)
{
    unsigned char eh[64], ph[64];
    if (pread(fd, eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh, ELFMAG, SELFMAG) != 0)
        return -1;
    int is64 = eh[EI_CLASS] == ELFCLASS64, big = eh[EI_DATA] == ELFDATA2MSB;
    if (!is64 && eh[EI_CLASS] != ELFCLASS32)
        return -1;
    uint64_t phoff = is64 ? rd(eh + 32, 8, big) : rd(eh + 28, 4, big);
    unsigned phentsize = (unsigned)rd(eh + (is64 ? 54 : 42), 2, big);
    unsigned phnum = (unsigned)rd(eh + (is64 ? 56 : 44), 2, big);
    if (phentsize < (is64 ? 56u : 32u) || phentsize > sizeof ph || phnum > 4096)
        return -1;
    for (unsigned i = 0; i < phnum; i++) {
        if (pread(fd, ph, phentsize, (off_t)(phoff + (uint64_t)i * phentsize)) != (ssize_t)phentsize)
            return -1;
        if (rd(ph, 4, big) != PT_NOTE)
            continue;
        uint64_t off = is64 ? rd(ph + 8, 8, big) : rd(ph + 4, 4, big);
        uint64_t size = is64 ? rd(ph + 32, 8, big) : rd(ph + 16, 4, big);
        if (size > 65536 || size < 12)
            continue;
        unsigned char *n = malloc(size);
        if (!n || pread(fd, n, size, (off_t)off) != (ssize_t)size) {
            free(n);
            continue;
        }
        for (uint64_t p = 0; p + 12 <= size;) {
            uint64_t namesz = rd(n + p, 4, big), descsz = rd(n + p + 4, 4, big), type = rd(n + p + 8, 4, big);
            uint64_t name = p + 12, desc = name + ((namesz + 3) & ~3ULL);
            if (desc + descsz > size)
                break;
            if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(n + name, "GNU", 4) == 0 && descsz > 0 &&
                descsz * 2 < len) {
                for (uint64_t k = 0; k < descsz; k++)
                    snprintf(out + 2 * k, 3, "%02x", n[desc + k]);
                free(n);
                return 0;
            }
            p = desc + ((descsz + 3) & ~3ULL);
        }
        free(n);
    }
    return -1;
}

/* "build-id:HEX" or "fnv1a64:HEX"; NULL with errno set. */
static char *exe_identity(const char *path)
{
    char id[160];
    unsigned char buf[65536];
    ssize_t n;
    uint64_t h = FNV_BASIS;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return NULL;
    if (elf_build_id(fd, id, sizeof id) == 0) {
        close(fd);
        return cs_strdup_printf("build-id:%s", id);
    }
    while ((n = read(fd, buf, sizeof buf)) > 0)
        h = fnv(h, buf, (size_t)n);
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return NULL;
    }
    return cs_strdup_printf("fnv1a64:%016llx", (unsigned long long)h);
}

/* --------------------------------------------------------------- store */

static char *default_dir(void)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/')
        return cs_strdup_printf("%s/cosched/profiles", x);
    if (home && *home)
        return cs_strdup_printf("%s/.cache/cosched/profiles", home);
    return NULL;
}

static void cpu_model(struct cs_store *s, hwloc_topology_t given)
{
    hwloc_topology_t t = given;
    const char *v[4] = { NULL, NULL, NULL, NULL };
    static const char *const names[4] = { "CPUVendor", "CPUFamilyNumber", "CPUModelNumber", "CPUModel" };

    if (!t && (hwloc_topology_init(&t) < 0 || hwloc_topology_load(t) < 0))
        t = NULL;
    if (t) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
        for (int pass = 0; pass < 2; pass++, o = hwloc_get_root_obj(t))
            for (int i = 0; o && i < 4; i++)
                if (!v[i])
                    v[i] = hwloc_obj_get_info_by_name(o, names[i]);
    }
    snprintf(s->vendor, sizeof s->vendor, "%s", v[0] ? v[0] : "unknown");
    snprintf(s->family, sizeof s->family, "%s", v[1] ? v[1] : "unknown");
    snprintf(s->model, sizeof s->model, "%s", v[2] ? v[2] : "unknown");
    snprintf(s->name, sizeof s->name, "%s", v[3] ? v[3] : "unknown");
    if (t && !given)
        hwloc_topology_destroy(t);
}

struct cs_store *cs_store_open(const char *dir, double ttl, int reprofile, hwloc_topology_t machine)
{
    struct cs_store *s;
    char *d;

    if (dir && !strcmp(dir, "none"))
        return NULL;
    d = dir ? strdup(dir) : default_dir();
    if (!d) {
        cs_info("profile store: off (neither XDG_CACHE_HOME nor HOME is set; give --store DIR)");
        return NULL;
    }
    s = calloc(1, sizeof *s);
    s->dir = d;
    s->ttl = ttl;
    s->reprofile = reprofile;
    cpu_model(s, machine);
    return s;
}

void cs_store_close(struct cs_store *s)
{
    if (!s)
        return;
    cs_strv_free(s->warned, s->nwarned);
    free(s->dir);
    free(s);
}

const char *cs_store_dir(const struct cs_store *s)
{
    return s ? s->dir : NULL;
}

/* One warning per file and run. */
static void warn_once(struct cs_store *s, const char *file, const char *what)
{
    for (int i = 0; i < s->nwarned; i++)
        if (!strcmp(s->warned[i], file))
            return;
    s->warned = realloc(s->warned, (size_t)(s->nwarned + 1) * sizeof *s->warned);
    s->warned[s->nwarned++] = strdup(file);
    /* "LINE:COL: ..." (a syntax error) is appended as FILE:LINE:COL: ... */
    cs_warn("profile store: %s:%s%s; entry ignored", file, isdigit((unsigned char)what[0]) ? "" : " ", what);
}

static void key_free(struct cs_store_key *k)
{
    if (!k)
        return;
    free(k->exe);
    free(k->exe_id);
    cs_strv_free(k->args, k->nargs);
    free(k->file);
    free(k);
}

const char *cs_store_job_file(const struct cs_job *j)
{
    return j->store_key ? j->store_key->file : NULL;
}

void cs_store_job_free(struct cs_job *j)
{
    key_free(j->store_key);
    free(j->stored);
    free(j->result);
    j->store_key = NULL;
    j->stored = j->result = NULL;
}

static uint64_t key_hash(const struct cs_store *s, const struct cs_store_key *k)
{
    char num[32];
    uint64_t h = FNV_BASIS;
    h = fnv(h, "cosched-profile 1", 18);
    h = fnv(h, k->exe, strlen(k->exe) + 1);
    h = fnv(h, k->exe_id, strlen(k->exe_id) + 1);
    snprintf(num, sizeof num, "%d/%d", k->nargs, k->threads);
    h = fnv(h, num, strlen(num) + 1);
    for (int i = 0; i < k->nargs; i++)
        h = fnv(h, k->args[i], strlen(k->args[i]) + 1);
    h = fnv(h, s->vendor, strlen(s->vendor) + 1);
    h = fnv(h, s->family, strlen(s->family) + 1);
    h = fnv(h, s->model, strlen(s->model) + 1);
    h = fnv(h, s->name, strlen(s->name) + 1);
    return h;
}

static int is_str(const json_t *v, const char *want)
{
    return json_is_string(v) && !strcmp(json_string_value(v), want);
}

/* The file's key matches ours. */
static int key_matches(const struct cs_store *s, const struct cs_store_key *k, const json_t *key)
{
    const json_t *a = json_object_get(key, "args"), *cpu = json_object_get(key, "cpu"),
                 *th = json_object_get(key, "threads");
    if (!is_str(json_object_get(key, "exe"), k->exe) || !is_str(json_object_get(key, "exe_id"), k->exe_id) ||
        !json_is_array(a) || json_array_size(a) != (size_t)k->nargs || !json_is_integer(th) ||
        json_integer_value(th) != k->threads)
        return 0;
    for (int i = 0; i < k->nargs; i++)
        if (!is_str(json_array_get(a, (size_t)i), k->args[i]))
            return 0;
    return is_str(json_object_get(cpu, "vendor"), s->vendor) && is_str(json_object_get(cpu, "family"), s->family) &&
           is_str(json_object_get(cpu, "model"), s->model) && is_str(json_object_get(cpu, "name"), s->name);
}

/* Fill r from the parsed entry; NULL, or what is wrong. */
static const char *entry_fields(const json_t *o, struct cs_stored *r)
{
    static char why[128];
    static const struct { const char *name; size_t off; int nonneg; } nums[] = {
        { "ipc_standalone", offsetof(struct cs_stored, ipc_standalone), 1 },
        { "ipc_folded", offsetof(struct cs_stored, ipc_folded), 1 },
        { "fp", offsetof(struct cs_stored, fp), 0 },
        { "mpki", offsetof(struct cs_stored, mpki), 1 },
        { "bw_l1", offsetof(struct cs_stored, bw_l1), 1 },
        { "bw_l2", offsetof(struct cs_stored, bw_l2), 1 },
        { "bw_llc", offsetof(struct cs_stored, bw_llc), 1 },
    };
    const json_t *v;

    v = json_object_get(o, "class");
    if (!v)
        return "no field 'class'";
    if (!json_is_string(v) || json_string_length(v) != 1 || !strchr("SCN", json_string_value(v)[0]))
        return "field 'class' must be \"S\", \"C\" or \"N\"";
    r->cls = json_string_value(v)[0];
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        double *d = (double *)((char *)r + nums[i].off);
        v = json_object_get(o, nums[i].name);
        *d = NAN;
        if (!v || json_is_null(v))
            continue;
        if (!json_is_number(v) || (nums[i].nonneg && json_number_value(v) < 0)) {
            snprintf(why, sizeof why, "field '%s' must be a %snumber or null", nums[i].name,
                     nums[i].nonneg ? "non-negative " : "");
            return why;
        }
        *d = json_number_value(v);
    }
    v = json_object_get(o, "gang_only");
    if (!json_is_boolean(v))
        return "field 'gang_only' must be true or false";
    r->gang_only = json_is_true(v);
    const char *cores[2] = { "cores_standalone", "cores_folded" };
    int *cv[2] = { &r->cores_standalone, &r->cores_folded };
    for (int i = 0; i < 2; i++) {
        v = json_object_get(o, cores[i]);
        *cv[i] = 0;
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000) {
            snprintf(why, sizeof why, "field '%s' must be an integer >= 1 or null", cores[i]);
            return why;
        }
        *cv[i] = (int)json_integer_value(v);
    }
    v = json_object_get(o, "created");
    if (!json_is_number(v))
        return "field 'created' (Unix time) is missing or not a number";
    r->created = json_number_value(v);
    /* a Unix time, not a number that never expires or overflows when the
     * entry is written back (an integer there; found by make fuzz) */
    if (!(r->created >= 0 && r->created <= 1e11))
        return "field 'created' (Unix time) must be a number from 0 to 1e11";
    return NULL;
}

/* Look the key up: 1 and *r filled, 0 none (absent, expired, other key,
 * corrupt - the last warned). */
static int lookup(struct cs_store *s, const struct cs_store_key *k, struct cs_stored *r)
{
    char *buf = malloc(ENTRY_MAX + 1);
    const char *what = NULL;
    json_t *o = NULL;
    json_error_t jerr;
    int fd, found = 0;
    ssize_t n = 0, m;

    fd = open(k->file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            warn_once(s, k->file, strerror(errno));
        free(buf);
        return 0;
    }
    while (n < ENTRY_MAX && (m = read(fd, buf + n, (size_t)(ENTRY_MAX - n))) > 0)
        n += m;
    close(fd);
    buf[n] = 0;
    if (n >= ENTRY_MAX) {
        what = "larger than 64 KiB, not an entry";
    } else if (n == 0) {
        what = "empty file";
    } else if (strlen(buf) != (size_t)n) {
        what = "holds a NUL byte";
    } else if (!(o = cs_json_parse(buf, (size_t)n, &jerr))) {
        static char why[JSON_ERROR_TEXT_LENGTH + 64];
        snprintf(why, sizeof why, "%d:%d: not valid JSON: %s%s", jerr.line, jerr.column, jerr.text,
                 jerr.position >= n ? " (truncated?)" : "");
        what = why;
    } else if (!json_is_object(o)) {
        what = "not a JSON object";
    } else if (!is_str(json_object_get(o, "format"), FORMAT)) {
        what = "no \"format\": \"" FORMAT "\"";
    } else if (!json_is_integer(json_object_get(o, "version")) ||
               json_integer_value(json_object_get(o, "version")) != 1) {
        what = "unknown \"version\" (this cosched reads version 1)";
    } else if (!json_is_object(json_object_get(o, "key"))) {
        what = "no \"key\" object";
    } else if (!key_matches(s, k, json_object_get(o, "key"))) {
        cs_debug("profile store: %s holds another key (hash collision); not used", k->file);
    } else if (!(what = entry_fields(o, r))) {
        double age = (double)time(NULL) - r->created;
        if (age > s->ttl)
            cs_info("profile store: %s: expired (%.0f s old, --store-ttl %.0f s); not used", k->file, age,
                    s->ttl);
        else
            found = 1;
    }
    if (what)
        warn_once(s, k->file, what);
    json_decref(o);
    free(buf);
    return found;
}

int cs_store_job(struct cs_store *s, struct cs_job *j, const char *exe)
{
    struct cs_store_key *k;
    char *real;

    if (!s)
        return 0;
    if (!(real = realpath(exe, NULL))) {
        cs_warn("profile store: job %d (%s): cannot resolve %s: %s; its results are not stored", j->id,
                j->name, exe, strerror(errno));
        return -1;
    }
    k = calloc(1, sizeof *k);
    k->exe = real;
    if (!(k->exe_id = exe_identity(real))) {
        cs_warn("profile store: job %d (%s): cannot read %s: %s; its results are not stored", j->id, j->name,
                real, strerror(errno));
        key_free(k);
        return -1;
    }
    while (j->argv[k->nargs + 1])
        k->nargs++;
    k->args = calloc((size_t)k->nargs + 1, sizeof *k->args);
    for (int i = 0; i < k->nargs; i++)
        k->args[i] = strdup(j->argv[i + 1]);
    k->threads = j->threads;
    k->file = cs_strdup_printf("%s/%016llx.json", s->dir, (unsigned long long)key_hash(s, k));
    cs_store_job_free(j);
    j->store_key = k;
    if (!s->reprofile) {
        struct cs_stored r = { 0 };
        if (lookup(s, k, &r)) {
            j->stored = malloc(sizeof r);
            *j->stored = r;
            cs_info("job %d (%s): stored profile %s: class %c", j->id, j->name, k->file, r.cls);
        }
    }
    return 0;
}

static int mkdir_p(const char *dir)
{
    char *p = strdup(dir);
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == 0) {
            char c = *q;
            *q = 0;
            if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                int saved = errno;
                free(p);
                errno = saved;
                return -1;
            }
            *q = c;
            if (!c)
                break;
        }
    }
    free(p);
    return 0;
}

/* The entry as an indented JSON document (keys in this order, reals with 17
 * digits: they read back bit-identical); 0 or -1. */
static int write_entry(FILE *f, const struct cs_store *s, const struct cs_store_key *k, const struct cs_stored *r)
{
    json_t *args = json_array(), *o;
    char cls[2] = { r->cls, 0 };
    int rc;

    for (int i = 0; i < k->nargs; i++)
        json_array_append_new(args, cs_json_text(k->args[i]));
    o = json_pack("{s:s, s:i, s:{s:o, s:o, s:o, s:i, s:{s:o, s:o, s:o, s:o}}, s:s, s:o, s:o, s:o, s:o, s:o, s:o, "
                  "s:o, s:b, s:o, s:o, s:I, s:s}",
                  "format", FORMAT, "version", 1, "key", "exe", cs_json_text(k->exe), "exe_id",
                  cs_json_text(k->exe_id), "args", args, "threads", k->threads, "cpu", "vendor",
                  cs_json_text(s->vendor), "family", cs_json_text(s->family), "model", cs_json_text(s->model),
                  "name", cs_json_text(s->name), "class", cls, "ipc_standalone", cs_json_exact(r->ipc_standalone),
                  "ipc_folded", cs_json_exact(r->ipc_folded), "fp", cs_json_exact(r->fp), "mpki",
                  cs_json_exact(r->mpki), "bw_l1", cs_json_exact(r->bw_l1), "bw_l2", cs_json_exact(r->bw_l2),
                  "bw_llc", cs_json_exact(r->bw_llc), "gang_only", r->gang_only, "cores_standalone",
                  r->cores_standalone ? json_integer(r->cores_standalone) : json_null(), "cores_folded",
                  r->cores_folded ? json_integer(r->cores_folded) : json_null(), "created",
                  (json_int_t)r->created, "cosched", PACKAGE_VERSION);
    if (o == NULL) {
        errno = ENOMEM;
        return -1;
    }
    rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (rc < 0 || fputc('\n', f) == EOF)
        return -1;
    return 0;
}

int cs_store_result(struct cs_store *s, struct cs_job *j, const struct cs_stored *r)
{
    char *tmp = NULL;
    FILE *f = NULL;
    int fd = -1;

    if (!j->result)
        j->result = malloc(sizeof *j->result);
    *j->result = *r;
    j->result->created = (double)time(NULL);
    j->result->written = 0;
    if (!s || !j->store_key)
        return 0;
    if (r->degraded || !r->cls || !strchr("SCN", r->cls)) {
        cs_info("job %d (%s): characterization degraded: not stored", j->id, j->name);
        return 0;
    }
    if (mkdir_p(s->dir) < 0) {
        cs_warn("profile store: cannot create %s: %s; result of job %d (%s) not stored", s->dir,
                strerror(errno), j->id, j->name);
        return -1;
    }
    tmp = cs_strdup_printf("%s/.tmp.%ld.XXXXXX", s->dir, (long)getpid());
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0 || fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w")))
        goto fail;
    fd = -1;
    if (write_entry(f, s, j->store_key, j->result) < 0 || fflush(f) != 0 || fsync(fileno(f)) < 0)
        goto fail;
    if (fclose(f) != 0) {
        f = NULL;
        goto fail;
    }
    f = NULL;
    if (rename(tmp, j->store_key->file) < 0)
        goto fail;
    j->result->written = 1;
    cs_info("job %d (%s): class %c stored in %s", j->id, j->name, r->cls, j->store_key->file);
    free(tmp);
    return 0;
fail:
    cs_warn("profile store: cannot write %s: %s; result of job %d (%s) not stored", j->store_key->file,
            strerror(errno), j->id, j->name);
    if (f)
        fclose(f);
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return -1;
}
