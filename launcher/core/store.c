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
#include "core/core.h"
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

/* ------------------------------------------------------- a little JSON */


struct jp { const char *s, *p; const char *err; };

static void jfree(struct jv *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++) {
        jfree(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static void ws(struct jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static char *jstring(struct jp *j)
{
    size_t cap = 32, n = 0;
    char *o = malloc(cap);
    j->p++;                        /* opening quote */
    for (;;) {
        unsigned char c = (unsigned char)*j->p++;
        if (n + 8 > cap)
            o = realloc(o, cap *= 2);
        if (c == '"')
            break;
        if (c == 0 || c < 0x20) {
            j->err = c ? "control character in a string" : "unterminated string (truncated?)";
            free(o);
            return NULL;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            continue;
        }
        c = (unsigned char)*j->p++;
        switch (c) {
        case '"': case '\\': case '/': o[n++] = (char)c; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            unsigned v = 0;
            for (int i = 0; i < 4; i++) {
                int d = *j->p++;
                if (!isxdigit(d)) {
                    j->err = "bad \\u escape";
                    free(o);
                    return NULL;
                }
                v = v * 16 + (unsigned)(isdigit(d) ? d - '0' : tolower(d) - 'a' + 10);
            }
            if (v < 0x80) {
                o[n++] = (char)v;
            } else if (v < 0x800) {
                o[n++] = (char)(0xc0 | v >> 6);
                o[n++] = (char)(0x80 | (v & 0x3f));
            } else {
                o[n++] = (char)(0xe0 | v >> 12);
                o[n++] = (char)(0x80 | ((v >> 6) & 0x3f));
                o[n++] = (char)(0x80 | (v & 0x3f));
            }
            break;
        }
        default:
            j->err = c ? "bad escape in a string" : "unterminated string (truncated?)";
            free(o);
            return NULL;
        }
    }
    o[n] = 0;
    return o;
}

static struct jv *jvalue(struct jp *j, int depth)
{
    struct jv *v = calloc(1, sizeof *v);
    ws(j);
    if (depth > 8) {
        j->err = "nested too deeply";
        goto bad;
    }
    char c = *j->p;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        v->t = c == '{' ? J_OBJ : J_ARR;
        j->p++;
        ws(j);
        if (*j->p == close) {
            j->p++;
            return v;
        }
        for (;;) {
            char *key = NULL;
            ws(j);
            if (v->t == J_OBJ) {
                if (*j->p != '"') {
                    j->err = *j->p ? "expected a \"key\"" : "unexpected end (truncated?)";
                    goto bad;
                }
                if (!(key = jstring(j)))
                    goto bad;
                ws(j);
                if (*j->p != ':') {
                    free(key);
                    j->err = *j->p ? "expected ':'" : "unexpected end (truncated?)";
                    goto bad;
                }
                j->p++;
            }
            struct jv *it = jvalue(j, depth + 1);
            if (!it) {
                free(key);
                goto bad;
            }
            v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
            if (v->t == J_OBJ)
                v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys), v->keys[v->n] = key;
            v->items[v->n++] = it;
            ws(j);
            if (*j->p == ',') {
                j->p++;
                continue;
            }
            if (*j->p == close) {
                j->p++;
                return v;
            }
            j->err = *j->p ? "expected ',' or a closing bracket" : "unexpected end (truncated?)";
            goto bad;
        }
    }
    if (c == '"') {
        v->t = J_STR;
        if (!(v->str = jstring(j)))
            goto bad;
        return v;
    }
    if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
        v->t = J_BOOL;
        v->num = c == 't';
        j->p += c == 't' ? 4 : 5;
        return v;
    }
    if (!strncmp(j->p, "null", 4)) {
        j->p += 4;
        return v;
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        v->t = J_NUM;
        v->num = strtod(j->p, &end);
        if (end == j->p || !isfinite(v->num)) {
            j->err = "bad number";
            goto bad;
        }
        j->p = end;
        return v;
    }
    j->err = c ? "unexpected character" : "unexpected end (truncated?)";
bad:
    jfree(v);
    return NULL;
}

static struct jv *jget(const struct jv *o, const char *k)
{
    if (!o || o->t != J_OBJ)
        return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], k))
            return o->items[i];
    return NULL;
}

/* json.h: the parser above for other readers (`cosched report`) */
struct jv *cs_json_parse(const char *text, const char **err, size_t *at)
{
    struct jp j = { text, text, NULL };
    struct jv *v = jvalue(&j, 0);
    if (v) {
        ws(&j);
        if (*j.p) {
            j.err = "text after the value";
            jfree(v);
            v = NULL;
        }
    }
    if (!v) {
        *err = j.err ? j.err : "not JSON";
        *at = (size_t)(j.p - text);
    }
    return v;
}

const struct jv *cs_json_get(const struct jv *o, const char *key)
{
    return jget(o, key);
}

void cs_json_free(struct jv *v)
{
    jfree(v);
}

static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
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
    for (int i = 0; i < s->nwarned; i++)
        free(s->warned[i]);
    free(s->warned);
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
    cs_warn("profile store: %s: %s; entry ignored", file, what);
}

static void key_free(struct cs_store_key *k)
{
    if (!k)
        return;
    free(k->exe);
    free(k->exe_id);
    for (int i = 0; i < k->nargs; i++)
        free(k->args[i]);
    free(k->args);
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

static int is_str(const struct jv *v, const char *want)
{
    return v && v->t == J_STR && !strcmp(v->str, want);
}

/* The file's key matches ours. */
static int key_matches(const struct cs_store *s, const struct cs_store_key *k, const struct jv *key)
{
    const struct jv *a = jget(key, "args"), *cpu = jget(key, "cpu"), *th = jget(key, "threads");
    if (!is_str(jget(key, "exe"), k->exe) || !is_str(jget(key, "exe_id"), k->exe_id) || !a ||
        a->t != J_ARR || a->n != k->nargs || !th || th->t != J_NUM || th->num != k->threads)
        return 0;
    for (int i = 0; i < k->nargs; i++)
        if (!is_str(a->items[i], k->args[i]))
            return 0;
    return is_str(jget(cpu, "vendor"), s->vendor) && is_str(jget(cpu, "family"), s->family) &&
           is_str(jget(cpu, "model"), s->model) && is_str(jget(cpu, "name"), s->name);
}

/* Fill r from the parsed entry; NULL, or what is wrong. */
static const char *entry_fields(const struct jv *o, struct cs_stored *r)
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
    const struct jv *v;

    v = jget(o, "class");
    if (!v)
        return "no field 'class'";
    if (v->t != J_STR || strlen(v->str) != 1 || !strchr("SCN", v->str[0]))
        return "field 'class' must be \"S\", \"C\" or \"N\"";
    r->cls = v->str[0];
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        double *d = (double *)((char *)r + nums[i].off);
        v = jget(o, nums[i].name);
        *d = NAN;
        if (!v || v->t == J_NULL)
            continue;
        if (v->t != J_NUM || (nums[i].nonneg && v->num < 0)) {
            snprintf(why, sizeof why, "field '%s' must be a %snumber or null", nums[i].name,
                     nums[i].nonneg ? "non-negative " : "");
            return why;
        }
        *d = v->num;
    }
    v = jget(o, "gang_only");
    if (!v || v->t != J_BOOL)
        return "field 'gang_only' must be true or false";
    r->gang_only = v->num != 0;
    const char *cores[2] = { "cores_standalone", "cores_folded" };
    int *cv[2] = { &r->cores_standalone, &r->cores_folded };
    for (int i = 0; i < 2; i++) {
        v = jget(o, cores[i]);
        *cv[i] = 0;
        if (!v || v->t == J_NULL)
            continue;
        if (v->t != J_NUM || v->num < 1 || v->num > 1e6 || v->num != floor(v->num)) {
            snprintf(why, sizeof why, "field '%s' must be an integer >= 1 or null", cores[i]);
            return why;
        }
        *cv[i] = (int)v->num;
    }
    v = jget(o, "created");
    if (!v || v->t != J_NUM)
        return "field 'created' (Unix time) is missing or not a number";
    r->created = v->num;
    return NULL;
}

/* Look the key up: 1 and *r filled, 0 none (absent, expired, other key,
 * corrupt - the last warned). */
static int lookup(struct cs_store *s, const struct cs_store_key *k, struct cs_stored *r)
{
    char *buf = malloc(ENTRY_MAX + 1);
    const char *what = NULL;
    struct jv *o = NULL;
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
    struct jp jp = { buf, buf, NULL };
    if (n >= ENTRY_MAX) {
        what = "larger than 64 KiB, not an entry";
    } else if (n == 0) {
        what = "empty file";
    } else if (strlen(buf) != (size_t)n) {
        what = "holds a NUL byte";
    } else if (!(o = jvalue(&jp, 0))) {
        static char why[128];
        snprintf(why, sizeof why, "not valid JSON at byte %ld: %s", (long)(jp.p - buf), jp.err);
        what = why;
    } else if (ws(&jp), *jp.p) {
        what = "text after the JSON object";
    } else if (o->t != J_OBJ) {
        what = "not a JSON object";
    } else if (!is_str(jget(o, "format"), FORMAT)) {
        what = "no \"format\": \"" FORMAT "\"";
    } else if (!jget(o, "version") || jget(o, "version")->t != J_NUM || jget(o, "version")->num != 1) {
        what = "unknown \"version\" (this cosched reads version 1)";
    } else if (!jget(o, "key") || jget(o, "key")->t != J_OBJ) {
        what = "no \"key\" object";
    } else if (!key_matches(s, k, jget(o, "key"))) {
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
    jfree(o);
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

static void write_entry(FILE *f, const struct cs_store *s, const struct cs_store_key *k, const struct cs_stored *r)
{
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": 1,\n  \"key\": {\n    \"exe\": ", FORMAT);
    cs_json_str(f, k->exe);
    fprintf(f, ",\n    \"exe_id\": ");
    cs_json_str(f, k->exe_id);
    fprintf(f, ",\n    \"args\": [");
    for (int i = 0; i < k->nargs; i++) {
        fputs(i ? ", " : "", f);
        cs_json_str(f, k->args[i]);
    }
    fprintf(f, "],\n    \"threads\": %d,\n    \"cpu\": { \"vendor\": ", k->threads);
    cs_json_str(f, s->vendor);
    fputs(", \"family\": ", f);
    cs_json_str(f, s->family);
    fputs(", \"model\": ", f);
    cs_json_str(f, s->model);
    fputs(", \"name\": ", f);
    cs_json_str(f, s->name);
    fprintf(f, " }\n  },\n  \"class\": \"%c\",\n", r->cls);
    const char *names[7] = { "ipc_standalone", "ipc_folded", "fp", "mpki", "bw_l1", "bw_l2", "bw_llc" };
    double vals[7] = { r->ipc_standalone, r->ipc_folded, r->fp, r->mpki, r->bw_l1, r->bw_l2, r->bw_llc };
    for (int i = 0; i < 7; i++) {
        fprintf(f, "  \"%s\": ", names[i]);
        jnum(f, vals[i]);
        fputs(",\n", f);
    }
    fprintf(f, "  \"gang_only\": %s,\n", r->gang_only ? "true" : "false");
    if (r->cores_standalone)
        fprintf(f, "  \"cores_standalone\": %d,\n", r->cores_standalone);
    else
        fputs("  \"cores_standalone\": null,\n", f);
    if (r->cores_folded)
        fprintf(f, "  \"cores_folded\": %d,\n", r->cores_folded);
    else
        fputs("  \"cores_folded\": null,\n", f);
    fprintf(f, "  \"created\": %.0f,\n  \"cosched\": \"%s\"\n}\n", r->created, PACKAGE_VERSION);
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
    write_entry(f, s, j->store_key, j->result);
    if (fflush(f) != 0 || fsync(fileno(f)) < 0)
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

void cs_job_characterized(struct cs_engine *e, struct cs_job *j, const struct cs_stored *r)
{
    if (!r->degraded)           /* a degraded result measured nothing */
        j->characterized++;
    if (e->trace == NULL)
        return;
    fprintf(e->trace, "{\"type\":\"characterized\",\"time\":%.6f,\"id\":%d,\"name\":", cs_now() - e->t0, j->id);
    cs_json_str(e->trace, j->name);
    fprintf(e->trace, ",\"class\":\"%c\",\"degraded\":%s,\"count\":%d}\n", r->cls ? r->cls : '?',
            r->degraded ? "true" : "false", j->characterized);
    fflush(e->trace);
}
