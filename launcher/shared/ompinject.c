/* ompinject.c - see ompinject.h */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ompinject.h"
#include "envword.h"

int cs_omp_env_allows(const char *(*get)(const char *name, void *arg), void *arg)
{
    static const char *const on[] = { "on", "1", "yes", "true", "", NULL };
    static const char *const is_false[] = { "false", NULL };
    const char *v;
    if ((v = get("COSCHED_OMP", arg)) && !cs_env_word(v, on))
        return 0;
    if ((v = get("OMP_DYNAMIC", arg)) && cs_env_word(v, is_false))
        return 0;
    if ((v = get("OMP_PROC_BIND", arg)) && !cs_env_word(v, is_false))
        return 0;
    if (get("OMP_PLACES", arg) || ((v = get("KMP_AFFINITY", arg)) && !strstr(v, "none") && !strstr(v, "disabled")))
        return 0;
    return 1;
}

int cs_exe_preloadable(const char *path)
{
    ElfW(Ehdr) eh;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;

    if (fd < 0)
        return 0;
    ssize_t got = pread(fd, &eh, sizeof eh, 0);
    if (got >= 2 && memcmp(&eh, "#!", 2) == 0)
        ok = 1;
    else if (got == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
             eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
             fstat(fd, &st) == 0 && !(st.st_mode & (S_ISUID | S_ISGID)) &&
             eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum < 1024) {
        ElfW(Ehdr) self;
        int sfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        int same = sfd >= 0 && pread(sfd, &self, sizeof self, 0) == (ssize_t)sizeof self &&
                   self.e_machine == eh.e_machine;
        if (sfd >= 0)
            close(sfd);
        for (int i = 0; same && !ok && i < eh.e_phnum; i++) {
            ElfW(Phdr) ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (size_t)i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            ok = ph.p_type == PT_INTERP;
        }
    }
    close(fd);
    return ok;
}

const char *cs_exe_lookup(const char *argv0, const char *path, char *buf, size_t len)
{
    if (argv0 == NULL || *argv0 == '\0')
        return NULL;
    if (strchr(argv0, '/')) {
        if (strlen(argv0) >= len)
            return NULL;
        snprintf(buf, len, "%s", argv0);
        return access(buf, X_OK) == 0 ? buf : NULL;
    }
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int w = n == 0 ? snprintf(buf, len, "%s", argv0) : snprintf(buf, len, "%.*s/%s", (int)n, p, argv0);
        struct stat st;
        if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return buf;
        if (end == NULL)
            return NULL;
        p = end;
    }
}

const char *cs_preload_value(const char *shim, const char *old, char *buf, size_t len)
{
    int n;
    if (old == NULL || *old == '\0')
        n = snprintf(buf, len, "%s", shim);
    else if (strstr(old, shim))
        n = snprintf(buf, len, "%s", old);
    else
        n = snprintf(buf, len, "%s:%s", shim, old);
    return n >= 0 && (size_t)n < len ? buf : NULL;
}
