/*
 * shared/envword.h - is an environment value one of some words: the one
 * check shared by the OpenMP shim (omp/cosched-omp.c, which links only libc
 * and exports only its entry points: a static function keeps it so) and
 * shared/ompinject.c (cosched and the SPANK plugin).  libc only.
 */
#ifndef COSCHED_ENVWORD_H
#define COSCHED_ENVWORD_H

#include <string.h>
#include <strings.h>

/* v, trimmed of blanks and tabs, is one of words (NULL-terminated),
 * ignoring case. */
static inline int cs_env_word(const char *v, const char *const *words)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    for (; *words; words++)
        if (strlen(*words) == n && strncasecmp(v, *words, n) == 0)
            return 1;
    return 0;
}

#endif
