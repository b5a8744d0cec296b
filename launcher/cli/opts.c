/*
 * opts.c - a command's options as one declarative table (letter, name,
 * argument, id, help line): getopt_long's long table, its optstring of
 * short options and the --help lines are all made from it, so that they
 * cannot drift apart.  Used by every command that takes options (run,
 * classify, topology, policies, simulate, profiles, serve, status, report).
 *
 * The parser returns the table's id for both forms of an option (-p and
 * --policy), so a command's switch has one case per option.  When getopt
 * refuses something, it keeps the option as the user wrote it for the
 * message: "--frob", "-x" (also inside a cluster such as -vx), or the whole
 * word when a long option was written with one dash (-quantum, -policy),
 * with the long option meant as the hint.  Such a word is refused even when
 * getopt could read it as a letter and its argument (-policy as -p olicy,
 * -trace as -t race): no policy, duration, cpu list or output mode is
 * spelled like the rest of a long option's name, so the user meant the
 * long option.
 */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "core/util.h"
#include "cli/cli.h"

/* A table mistake is the program's, found on the first run of the command. */
static void check_table(const struct cs_opt *o)
{
    for (const struct cs_opt *a = o; a->name; a++) {
        if (a->id < 256 || (a->letter && (a->letter > 127 || strchr(":?+-", a->letter))))
            goto bad;
        for (const struct cs_opt *b = o; b < a; b++)
            if ((a->letter && a->letter == b->letter) || a->id == b->id)
                goto bad;
        continue;
bad:
        cs_err("internal error: the option table entry --%s has a bad or repeated letter or id", a->name);
        abort();
    }
}

void cs_opt_start(struct cs_getopt *g, const struct cs_opt *o, int in_order)
{
    size_t n = 0, k = 0;

    check_table(o);
    while (o[n].name)
        n++;
    memset(g, 0, sizeof *g);
    g->opts = o;
    g->lo = calloc(n + 1, sizeof *g->lo);
    if (g->lo == NULL) {
        cs_err("out of memory");
        exit(1);                    /* start-up: nothing runs yet */
    }
    if (in_order)
        g->shorts[k++] = '+';
    g->shorts[k++] = ':';           /* ':' for a missing argument, '?' for an unknown option */
    for (size_t i = 0; i < n; i++) {
        g->lo[i] = (struct option){ o[i].name, o[i].has_arg ? required_argument : no_argument, NULL, o[i].id };
        if (o[i].letter && k + 3 < sizeof g->shorts) {
            g->shorts[k++] = (char)o[i].letter;
            if (o[i].has_arg)
                g->shorts[k++] = ':';
        }
    }
    g->shorts[k] = '\0';
    opterr = 0;
    optind = 1;
}

void cs_opt_end(struct cs_getopt *g)
{
    free(g->lo);
    g->lo = NULL;
}

void cs_opt_refuse(const struct cs_getopt *g, int c, const char *who, const char *cmd)
{
    const char *sep = who ? ": " : "";

    if (!who)
        who = "";
    if (c == ':')
        cs_err("%s%soption %s needs an argument", who, sep, g->bad);
    else
        cs_err("%s%sunknown option '%s' (%ssee cosched %s --help)", who, sep, g->bad, g->hint, cmd);
}

/* "-x" where x is one letter of a cluster: not "--..." and not "-". */
static int is_cluster(const char *s)
{
    return s && s[0] == '-' && s[1] && s[1] != '-';
}

/* Is "-WORD[=...]" a long option of the table written with one dash? */
static const struct cs_opt *one_dash_long(const struct cs_getopt *g, const char *el)
{
    size_t len = strcspn(el + 1, "=");

    for (const struct cs_opt *o = g->opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, el + 1, len) == 0)
            return o;
    return NULL;
}

/* getopt refused short option `letter` (c: ':' or '?'); before: optind
 * before the call.  getopt moves optind past an element once it has read
 * its last letter, so the element holding the letter is the one before
 * optind if optind moved and that element ends with it, else optind's. */
static int refuse_short(struct cs_getopt *g, int argc, char **argv, int before, int letter, int c)
{
    const char *el = NULL;

    if (optind > before && optind - 1 < argc && is_cluster(argv[optind - 1]) &&
        argv[optind - 1][strlen(argv[optind - 1]) - 1] == letter)
        el = argv[optind - 1];
    else if (optind < argc && is_cluster(argv[optind]))
        el = argv[optind];
    snprintf(g->bad, sizeof g->bad, "-%c", letter);
    if (c == '?' && el && strlen(el) > 2) {
        /* -quantum, -jsno: a long option with one dash (-q was read, then -u refused) */
        char word[64];
        snprintf(word, sizeof word, "-%s", el);
        cs_option_hint(word, g->lo, g->hint, sizeof g->hint);
        if (g->hint[0])
            snprintf(g->bad, sizeof g->bad, "%s", el);
    }
    return c;
}

int cs_opt_next(struct cs_getopt *g, int argc, char **argv)
{
    int before = optind, c;

    optopt = 0;
    c = getopt_long(argc, argv, g->shorts, g->lo, NULL);
    g->bad[0] = g->hint[0] = '\0';
    if (c == -1)
        return -1;
    if (c == ':' || c == '?') {
        if (optopt > 0 && optopt < 256)
            return refuse_short(g, argc, argv, before, optopt, c);
        /* a long option: getopt has moved past it (and an argument it refused) */
        snprintf(g->bad, sizeof g->bad, "%s", argv[optind - 1]);
        if (c == '?')
            cs_option_hint(g->bad, g->lo, g->hint, sizeof g->hint);
        return c;
    }
    if (c >= 256)
        return c;                   /* a long option's id */
    for (const struct cs_opt *o = g->opts; o->name; o++) {
        if (o->letter != c)
            continue;
        /* -policy read as -p with "olicy" attached: the long option with one dash */
        const char *el = argv[optind - 1];
        const struct cs_opt *meant;
        if (o->has_arg && optarg != el && is_cluster(el) && (meant = one_dash_long(g, el)) != NULL) {
            snprintf(g->bad, sizeof g->bad, "%s", el);
            snprintf(g->hint, sizeof g->hint, "did you mean --%s? ", meant->name);
            return '?';
        }
        return o->id;
    }
    return '?';                     /* not reached: getopt returns only the table's letters */
}

/* "-p, --policy NAME" or "    --policy-opt KEY=VALUE" */
static int left_column(const struct cs_opt *o, char *buf, size_t len)
{
    char l[8] = "    ";

    if (o->letter)
        snprintf(l, sizeof l, "-%c, ", o->letter);
    return snprintf(buf, len, "%s--%s%s%s", l, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cs_opt_help(FILE *f, const struct cs_opt *o, const char *(*note)(int id))
{
    char left[96];
    int width = 0;

    /* the help column: after the longest left column, up to 30 characters in */
    for (const struct cs_opt *p = o; p->name; p++) {
        int w = p->help ? left_column(p, left, sizeof left) : 0;
        if (w > width)
            width = w > 30 ? 30 : w;
    }
    for (; o->name; o++) {
        if (o->help == NULL)
            continue;
        left_column(o, left, sizeof left);
        fprintf(f, "  %-*s  ", width, left);
        for (const char *h = o->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n')
                fprintf(f, "%*s", width + 4, "");
        }
        fprintf(f, "%s\n", note ? note(o->id) : "");
    }
}

void cs_opt_usage(const char *usage, const struct cs_opt *o)
{
    printf("usage: %s\n\noptions:\n", usage);
    cs_opt_help(stdout, o, NULL);
}

int cs_opt_quantum(const char *arg, double *out)
{
    if (cs_parse_duration(arg, out) == 0 && *out >= 0.010 && *out <= 60.0)
        return 0;
    cs_err("--quantum '%s': expected a duration from 10ms to 60s (e.g. 250ms, 1s)", arg);
    return -1;
}
