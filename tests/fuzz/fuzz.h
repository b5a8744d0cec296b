/*
 * fuzz.h - what the libFuzzer harnesses of tests/fuzz/ share (see README).
 *
 * Each harness is one translation unit built by tests/fuzz/fuzz.sh with
 * clang -fsanitize=fuzzer,address,undefined together with the launcher
 * sources it needs (not log.c: the cs_log below replaces it).
 */
#ifndef COSCHED_FUZZ_H
#define COSCHED_FUZZ_H

#ifndef _GNU_SOURCE              /* config.h, included first by some harnesses, sets it too */
#define _GNU_SOURCE 1
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef FUZZ_WANT_LOG
/* The parsers report through cs_log(): format every message (a bad format
 * or argument is a bug the sanitizers must see) but print none of them,
 * or the fuzzer would spend its time writing to stderr. */
int cs_verbosity = 3;
void cs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cs_log(int level, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    (void)level;
    if (getenv("FUZZ_VERBOSE"))
        fprintf(stderr, "cosched: %s\n", buf);
}
#endif

/* The input as a file for the parsers that read a path: one memfd per
 * process, rewritten for every input; "/proc/self/fd/N" names it. */
static const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        if ((fd = memfd_create("cosched-fuzz", MFD_CLOEXEC)) < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz_file");
        abort();
    }
    return path;
}

/* The input as a NUL-terminated string (a NUL inside ends it early). */
static char *fuzz_str(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
