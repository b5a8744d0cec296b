/*
 * json.c - the helpers of json.h around jansson (the choice and the output
 * conventions are described there).
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/json.h"

json_t *cs_json_parse(const char *text, size_t len, json_error_t *err)
{
    return json_loadb(text, len, JSON_REJECT_DUPLICATES, err);
}

int cs_json_put(FILE *f, json_t *v, int flags)
{
    int r;

    if (v == NULL) {
        errno = EINVAL;
        return -1;
    }
    r = json_dumpf(v, f, (flags & CS_JSON_PRETTY ? JSON_INDENT(2) : JSON_COMPACT) |
                             JSON_REAL_PRECISION(flags & CS_JSON_EXACT ? 17 : 15));
    json_decref(v);
    if (r < 0 || fputc('\n', f) == EOF || fflush(f) != 0)
        return -1;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 if none. */
static size_t utf8_len(const unsigned char *s)
{
    uint32_t c;
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, c = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, c = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, c = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

json_t *cs_json_text(const char *s)
{
    json_t *v;
    char *fixed, *o;

    if (s == NULL)
        return json_null();
    if ((v = json_string(s)) != NULL)
        return v;
    /* not UTF-8: each byte that starts no valid sequence becomes U+FFFD */
    o = fixed = malloc(3 * strlen(s) + 1);
    if (fixed == NULL)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_len(p);
        if (n == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        } else {
            memcpy(o, p, n);
            o += n;
            p += n;
        }
    }
    *o = '\0';
    v = json_string(fixed);
    free(fixed);
    return v;
}

json_t *cs_json_fixed(double v, int decimals)
{
    double scale = pow(10, decimals);

    if (!isfinite(v))
        return json_null();
    if (fabs(v) * scale < 1e15)
        v = round(v * scale) / scale;
    return json_real(v == 0 ? 0.0 : v);     /* no "-0.0" */
}

/* A whole value below 2^53 as an integer: what "%g" wrote before jansson */
static json_t *number(double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *cs_json_sig(double v, int digits)
{
    char b[64];

    if (!isfinite(v))
        return json_null();
    snprintf(b, sizeof b, "%.*g", digits, v);
    return number(strtod(b, NULL));
}

json_t *cs_json_exact(double v)
{
    return isfinite(v) ? number(v) : json_null();
}

const char *cs_json_type(const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}
