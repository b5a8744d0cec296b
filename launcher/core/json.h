/*
 * json.h - cosched's reader of JSON documents: the profile store's parser
 * (core/store.c), also used by `cosched report` (cli/report.c) for trace lines.
 *
 *   const char *err; size_t at;
 *   struct jv *v = cs_json_parse(text, &err, &at);   // NULL: err says what, at where
 *   const struct jv *x = cs_json_get(v, "key");      // NULL unless v is an object with it
 *   cs_json_free(v);
 *
 * Nesting is limited to 8 levels; numbers are doubles; strings are UTF-8
 * (\u escapes decoded, surrogate pairs not joined).  The whole text must be
 * one value, white space around it allowed.  Writers print JSON themselves
 * (cs_json_str() in core/core.h quotes a string).
 */
#ifndef COSCHED_JSON_H
#define COSCHED_JSON_H
#include <stddef.h>

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jv {
    enum jt t;
    double num;                    /* J_NUM; J_BOOL: 0 or 1 */
    char *str;                     /* J_STR */
    int n;                         /* J_ARR, J_OBJ: items */
    char **keys;                   /* J_OBJ */
    struct jv **items;
};

struct jv *cs_json_parse(const char *text, const char **err, size_t *at);
const struct jv *cs_json_get(const struct jv *o, const char *key);
void cs_json_free(struct jv *v);
#endif
