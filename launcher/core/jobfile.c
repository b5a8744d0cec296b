/*
 * jobfile.c - job files, one job per line:
 *
 *     # comment
 *     ./stream 8                                   (a bare command)
 *     name=solver threads=4 class=S priority=1 cwd=/scratch -- ./solver -n 10
 *
 * Options stand before a lone `--`; without `--` the whole line is the
 * command.  Words are split like sh does for quotes ('...', "...", \x) but
 * nothing is expanded: no variables, no globs, no ~.  A `#` starts a comment
 * only at the beginning of a word.  Every error is reported as
 * "FILE:LINE: what was expected" and loads nothing.
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "core/util.h"
#include "core/job.h"
#include "core/store.h"
#include "core/json.h"

static void free_words(char **w)
{
    if (w == NULL)
        return;
    for (char **p = w; *p; p++)
        free(*p);
    free(w);
}

char **cs_split_words(const char *s, const char **err)
{
    size_t cap = 8, n = 0, len = strlen(s);
    char **w = calloc(cap, sizeof *w);
    char *cur = malloc(len + 1);
    size_t k = 0;
    int inword = 0;

    *err = NULL;
    if (w == NULL || cur == NULL)
        goto oom;
    for (const char *p = s;; p++) {
        if (*p == '\0' || (isspace((unsigned char)*p)) || (*p == '#' && !inword)) {
            if (inword) {
                if (n + 2 > cap) {
                    char **nw = realloc(w, (cap *= 2) * sizeof *w);
                    if (nw == NULL)
                        goto oom;
                    w = nw;
                }
                cur[k] = '\0';
                if ((w[n++] = strdup(cur)) == NULL)
                    goto oom;
                w[n] = NULL;
                k = 0;
                inword = 0;
            }
            if (*p == '\0' || *p == '#')
                break;
            continue;
        }
        inword = 1;
        if (*p == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (q == NULL) {
                *err = "unterminated single quote";
                goto fail;
            }
            memcpy(cur + k, p + 1, q - p - 1);
            k += q - p - 1;
            p = q;
        } else if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                cur[k++] = *p;
            }
            if (*p != '"') {
                *err = "unterminated double quote";
                goto fail;
            }
        } else if (*p == '\\') {
            if (p[1] == '\0') {
                *err = "backslash at end of line";
                goto fail;
            }
            cur[k++] = *++p;
        } else {
            cur[k++] = *p;
        }
    }
    free(cur);
    return w;
oom:
    *err = "out of memory";
fail:
    free(cur);
    free_words(w);
    return NULL;
}

void cs_job_stepped(struct cs_job *j, int ran, double now)
{
    if (ran) {
        j->quanta_run++;
        j->last_run_end = now;
        j->waited = 0;
    } else {
        j->quanta_frozen++;
        j->waited = now - j->last_run_end;
    }
}

void cs_job_free(struct cs_job *j)
{
    if (j == NULL)
        return;
    cs_store_job_free(j);
    free(j->name);
    free_words(j->argv);
    free(j->cwd);
    free(j->metric);
    free(j->mem_bytes);
    free((char *)j->origin);
    if (j->cpus)
        hwloc_bitmap_free(j->cpus);
    if (j->step_cpus)
        hwloc_bitmap_free(j->step_cpus);
    if (j->mems)
        hwloc_bitmap_free(j->mems);
    if (j->allowed)
        hwloc_bitmap_free(j->allowed);
    json_decref(j->policy_info);
    free(j);
}

void cs_jobs_free(struct cs_job **jobs, int n)
{
    for (int i = 0; jobs && i < n; i++)
        cs_job_free(jobs[i]);
    free(jobs);
}

/* Parse one option word "key=value" into j; NULL or a message. */
static const char *job_option(struct cs_job *j, const char *word)
{
    static char msg[256];
    const char *eq = strchr(word, '=');
    long v;

    if (eq == NULL || eq == word) {
        snprintf(msg, sizeof msg, "'%s' is not an option of the form key=value "
                 "(options: name, threads, class, priority, cwd; then -- and the command)", word);
        return msg;
    }
    const char *val = eq + 1;
    size_t klen = eq - word;
#define KEY(k) (klen == strlen(k) && strncmp(word, k, klen) == 0)
    if (KEY("name")) {
        if (*val == '\0' || strlen(val) > 64 || strpbrk(val, " \t/"))
            return "name= must be 1 to 64 characters without blanks or '/'";
        free(j->name);
        j->name = strdup(val);
    } else if (KEY("threads")) {
        if (cs_parse_long(val, 1, 4096, &v) < 0)
            return "threads= must be an integer from 1 to 4096";
        j->threads = (int)v;
        j->threads_explicit = 1;
    } else if (KEY("class")) {
        if (strlen(val) != 1 || !strchr("SCNscn", val[0]))
            return "class= must be S (streaming), C (cache-sensitive) or N (no contention)";
        j->cls_hint = (char)toupper((unsigned char)val[0]);
    } else if (KEY("priority")) {
        /* the range of --cosched=POLICY:priority= and the node engine (issue 16) */
        if (cs_parse_long(val, -1000, 1000, &v) < 0)
            return "priority= must be an integer from -1000 to 1000";
        j->priority = (int)v;
    } else if (KEY("cwd")) {
        if (*val == '\0')
            return "cwd= must name a directory";
        free(j->cwd);
        j->cwd = strdup(val);
    } else {
        snprintf(msg, sizeof msg, "unknown job option '%.*s' (known: name, threads, class, priority, cwd)",
                 (int)klen, word);
        return msg;
    }
#undef KEY
    return NULL;
}

int cs_jobfile_load(const char *path, struct cs_job ***jobs, int *njobs)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, added = 0, start = *njobs;
    ssize_t len;

    if (f == NULL) {
        cs_err("--jobs %s: %s", path, strerror(errno));
        return -1;
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        const char *err;
        char **w;
        int dash = -1;
        struct cs_job *j;

        lineno++;
        if (memchr(line, '\0', len)) {
            cs_err("%s:%d: binary data (NUL byte); expected a text file with one job per line", path, lineno);
            goto fail;
        }
        w = cs_split_words(line, &err);
        if (w == NULL) {
            cs_err("%s:%d: %s", path, lineno, err);
            goto fail;
        }
        if (w[0] == NULL) {
            free_words(w);
            continue;
        }
        for (int i = 0; w[i]; i++)
            if (strcmp(w[i], "--") == 0) {
                dash = i;
                break;
            }
        j = calloc(1, sizeof *j);
        j->origin = cs_strdup_printf("%s:%d", path, lineno);
        for (int i = 0; i < dash; i++)
            if ((err = job_option(j, w[i])) != NULL) {
                cs_err("%s:%d: %s", path, lineno, err);
                cs_job_free(j);
                free_words(w);
                goto fail;
            }
        if (w[dash + 1] == NULL) {
            cs_err("%s:%d: no command after '--'; expected [key=value ...] -- command [args]", path, lineno);
            cs_job_free(j);
            free_words(w);
            goto fail;
        }
        /* the argv is the tail of w */
        int n = 0;
        while (w[dash + 1 + n])
            n++;
        j->argv = calloc(n + 1, sizeof *j->argv);
        for (int i = 0; i <= dash; i++)
            free(w[i]);
        memcpy(j->argv, w + dash + 1, n * sizeof *j->argv);
        free(w);
        *jobs = realloc(*jobs, (*njobs + 1) * sizeof **jobs);
        (*jobs)[(*njobs)++] = j;
        added++;
    }
    if (ferror(f)) {
        cs_err("--jobs %s: read error: %s", path, strerror(errno));
        goto fail;
    }
    free(line);
    fclose(f);
    if (added == 0) {
        cs_err("%s: no jobs (the file has only comments or blank lines); expected one job per line", path);
        return -1;
    }
    return added;
fail:
    free(line);
    fclose(f);
    while (*njobs > start)
        cs_job_free((*jobs)[--*njobs]);
    return -1;
}
