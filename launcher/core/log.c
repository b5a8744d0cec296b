/*
 * log.c - levelled messages for the operator, always on stderr (stdout belongs
 * to machine-readable output such as `cosched topology --json`).
 * Every message starts with "cosched: " so it can be told apart from the
 * jobs' own output when both share a terminal.
 */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include "core/log.h"

int cs_verbosity = CS_LOG_INFO;
void (*cs_log_before)(void);            /* the engine's progress line: erased first */
int cs_log_copy = -1;                   /* a second destination (cosched serve --detach's log) */

void cs_log(int level, const char *fmt, ...)
{
    static const char *tag[] = { "error: ", "warning: ", "", "debug: " };
    va_list ap;
    char buf[2048];

    if (level > cs_verbosity)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (cs_log_before)
        cs_log_before();
    /* one write per message: lines from the engine and the guardian do not interleave */
    fprintf(stderr, "cosched: %s%s\n", tag[level], buf);
    fflush(stderr);
    if (cs_log_copy >= 0)
        dprintf(cs_log_copy, "cosched: %s%s\n", tag[level], buf);
}
