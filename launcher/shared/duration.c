/*
 * duration.c - NUMBER[UNIT] durations for every interface (shared/duration.h; libc only: the plugin compiles it too).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "shared/duration.h"

int cs_duration_parse(const char *s, double plain, double *seconds)
{
    static const struct { const char *unit; double scale; } units[] = {
        { "s", 1.0 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60.0 }, { "min", 60.0 }, { "h", 3600.0 },
        { "d", 86400.0 },
    };
    char *end;
    double v;

    if (s == NULL || *s == '\0' || !(*s == '.' || (*s >= '0' && *s <= '9')))
        return -1;   /* no sign, no space, no "inf"/"nan" */
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    if (*end == '\0') {
        *seconds = v * plain;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            *seconds = v * units[i].scale;
            return 0;
        }
    return -1;
}
