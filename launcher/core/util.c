/*
 * util.c - the one place for number/duration parsing and small file I/O, so
 * every option and every file format rejects bad values the same way.
 */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include "core/util.h"
#include "shared/duration.h"

/* A simulated node (sim.c) makes time virtual: cs_now() then reads its clock. */
static const double *virtual_clock;

void cs_set_virtual_clock(const double *clock)
{
    virtual_clock = clock;
}

double cs_now(void)
{
    struct timespec ts;
    if (virtual_clock)
        return *virtual_clock;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cs_parse_duration(const char *s, double *out)
{
    return cs_duration_parse(s, 1.0, out);   /* a plain number is seconds */
}

int cs_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cs_write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n, len = (ssize_t)strlen(s);
    int saved;

    if (fd < 0)
        return -1;
    n = write(fd, s, len);
    saved = errno;
    close(fd);
    if (n != len) {
        errno = n < 0 ? saved : EIO;
        return -1;
    }
    return 0;
}

int cs_read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;
    int saved;

    if (fd < 0)
        return -1;
    n = read(fd, buf, len - 1);
    saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    buf[n] = '\0';
    return (int)n;
}

void cs_strv_free(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

char *cs_strdup_printf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (s == NULL)
        abort();  /* out of memory before any job is confined, or we cannot report anyway */
    return s;
}

char *cs_bitmap_list(hwloc_const_bitmap_t b)
{
    char *s = NULL;
    if (hwloc_bitmap_iszero(b))
        return strdup("");
    hwloc_bitmap_list_asprintf(&s, b);
    return s;
}

/*
 * <datadir>: $COSCHED_DATADIR; else the installed location; else, for a
 * cosched that runs from its build tree before `make install`, the source
 * tree it was built from (so `./cosched run ...` works right after `make`).
 */
int cs_from_build_tree(void)
{
    char exe[4096], *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    if (n <= 0)
        return 0;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return strcmp(exe, COSCHED_BUILDDIR) == 0;
}

const char *cs_datadir(void)
{
    const char *d = getenv("COSCHED_DATADIR");

    if (d && *d)
        return d;
    if (access(COSCHED_DATADIR "/lua/policies", R_OK) == 0)
        return COSCHED_DATADIR;
    if (cs_from_build_tree())
        return COSCHED_SRCDIR;
    return COSCHED_DATADIR;
}

/* see core/util.h */
int cs_path_trusted(const char *path, char *why, size_t len)
{
    char real[PATH_MAX];
    struct stat st;

    /* the file and every directory above it: root's, and nobody else may
     * write them (a root-owned sticky directory like /tmp is fine: others
     * cannot replace root's entries in it) */
    if (realpath(path, real) == NULL) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (stat(real, &st) < 0) {
            snprintf(why, len, "%s: %s", real, strerror(errno));
            return -1;
        }
        if (st.st_uid != 0 || ((st.st_mode & 022) && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX)))) {
            snprintf(why, len, "%s%s%s is not owned by root or is writable by others (mode %o, owner %d): the "
                     "root engine loads nothing a user could change", real, strcmp(real, path) ? ", above " : "",
                     strcmp(real, path) ? path : "", (unsigned)(st.st_mode & 07777), (int)st.st_uid);
            return -1;
        }
        char *sl = strrchr(real, '/');
        if (sl == NULL || (sl == real && real[1] == '\0'))
            return 0;
        if (sl == real)
            sl[1] = '\0';
        else
            *sl = '\0';
    }
}

/* fopen(path, "we") for the files cosched writes where its user points it
 * (trace, recordings): never through a symbolic link, which somebody else
 * may have planted in a shared directory (errno ELOOP then). */
FILE *cs_fopen_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    FILE *f;

    if (fd < 0)
        return NULL;
    if ((f = fdopen(fd, "w")) == NULL)
        close(fd);
    return f;
}

/* ------------------------------------------------------------ did you mean */

/* Edit distance with adjacent transpositions (optimal string alignment),
 * for words up to 63 characters; larger than any threshold otherwise. */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    int d[64][64];

    if (n > 63 || m > 63)
        return 99;
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t k = 0; k <= m; k++)
        d[0][k] = (int)k;
    for (size_t i = 1; i <= n; i++)
        for (size_t k = 1; k <= m; k++) {
            int c = a[i - 1] != b[k - 1], v = d[i - 1][k - 1] + c;
            if (d[i - 1][k] + 1 < v)
                v = d[i - 1][k] + 1;
            if (d[i][k - 1] + 1 < v)
                v = d[i][k - 1] + 1;
            if (i > 1 && k > 1 && a[i - 1] == b[k - 2] && a[i - 2] == b[k - 1] && d[i - 2][k - 2] + 1 < v)
                v = d[i - 2][k - 2] + 1;
            d[i][k] = v;
        }
    return d[n][m];
}

const char *cs_closest(const char *word, const char *const *cands, size_t n)
{
    size_t len = strlen(word);
    int limit = len <= 4 ? 1 : 2, best = limit + 1;
    const char *pick = NULL;

    for (size_t i = 0; i < n; i++) {
        int d = cands[i] ? edit_distance(word, cands[i]) : 99;
        if (d < best) {
            best = d;
            pick = cands[i];
        }
    }
    return pick;
}

const char *cs_option_hint(const char *arg, const struct option *opts, char *buf, size_t len)
{
    const char *names[128];
    size_t n = 0;
    const char *pick;

    buf[0] = '\0';
    if (strncmp(arg, "--", 2) != 0)
        return buf;
    for (; opts->name && n < 128; opts++)
        names[n++] = opts->name;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    if ((pick = cs_closest(word, names, n)) != NULL)
        snprintf(buf, len, "did you mean --%s? ", pick);
    return buf;
}
