/*
 * profiles.c - `cosched profiles [--profile-path DIR] [--json] [--cpuid V:F:M]`
 * and `cosched profiles --lint FILE...`: list the counter profiles and say
 * which one matches this CPU (hwloc's CPUVendor, CPUFamilyNumber,
 * CPUModelNumber of the package) or why none does; --lint checks the given
 * files.  Exit status 0, 1 if a profile failed to parse, 2 for a usage
 * error.  The profiles themselves: counters/profile.c.
 */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters/counters.h"
#include "core/log.h"
#include "core/util.h"
#include "cli/cli.h"
#include "core/json.h"

static int lint_files(char **files, int nfiles)
{
    int bad = 0;

    for (int i = 0; i < nfiles; i++) {
        struct cs_profile *p = cs_profile_load(files[i]);
        int unavailable = 0;
        if (p == NULL) {
            bad++;
            continue;
        }
        for (int m = 0; m < p->nmetrics; m++)
            unavailable += !p->metrics[m].available;
        /* an event no metric uses is counted for nothing: say so, but it is not an error */
        for (int e = 0; e < p->nevents; e++) {
            int used = 0;
            used = cs_profile_slot_used(p, e);
            if (!used)
                cs_warn("%s:%d: slot %s (%s) is not used by any metric", files[i], p->events[e].line,
                        p->events[e].slot, p->events[e].name);
        }
        printf("%s: ok (%s: %d events, %d metrics, %d declared unavailable)\n", files[i], p->name, p->nevents,
               p->nmetrics, unavailable);
        cs_profile_free(p);
    }
    return bad ? 1 : 0;
}

enum { P_PATH = 256, P_JSON, P_LINT, P_CPUID, P_HELP };

static const struct cs_opt prof_opts[] = {
    { 0, "profile-path", 1, P_PATH, "DIR", "look for profiles in DIR first (repeatable)" },
    { 0, "json", 0, P_JSON, NULL, "print JSON" },
    { 0, "cpuid", 1, P_CPUID, "VENDOR:FAMILY:MODEL", "match this CPU instead of the machine's (e.g. GenuineIntel:6:0x55)" },
    { 0, "lint", 0, P_LINT, NULL, "check the FILEs given after the options; exit 1 if one is wrong" },
    { 'h', "help", 0, P_HELP, NULL, "this text" },
    { 0 },
};

static void prof_help(void)
{
    printf("usage: cosched profiles [--profile-path DIR] [--json] [--cpuid V:F:M]\n"
           "       cosched profiles --lint FILE...\n\n"
           "List the counter profiles and say which one matches this machine's CPU.\n\n");
    cs_opt_help(stdout, prof_opts, NULL);
    printf("\nSearch path: --profile-path DIRs, ~/.config/cosched/profiles, %s/profiles,\n"
           "<datadir>/profiles (here %s/profiles; $COSCHED_DATADIR sets it).\n"
           "Format: %s/profiles/README.md.\n", COSCHED_SYSCONFDIR, cs_datadir(), COSCHED_DOCDIR);
}

int cs_cmd_profiles(int argc, char **argv)
{
    struct cs_getopt g;
    char **ppath = NULL, **search = NULL;
    int nppath = 0, nsearch = 0, json = 0, lint = 0, c, status = 2, n = 0, match = -1, broken = 0;
    struct cs_cpuid cpu;
    int have_cpuid = 0;
    struct cs_profile_entry *v = NULL;
    char why[1024] = "";

    cs_opt_start(&g, prof_opts, 1);
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case P_PATH:
            ppath = realloc(ppath, (size_t)(nppath + 1) * sizeof *ppath);
            ppath[nppath++] = optarg;
            break;
        case P_JSON:
            json = 1;
            break;
        case P_LINT:
            lint = 1;
            break;
        case P_CPUID:
            if (cs_cpuid_parse(optarg, &cpu) < 0) {
                cs_err("--cpuid '%s': expected VENDOR:FAMILY:MODEL (e.g. GenuineIntel:6:0x55, AuthenticAMD:0x19:1)",
                       optarg);
                goto out;
            }
            have_cpuid = 1;
            break;
        case P_HELP:
            prof_help();
            status = 0;
            goto out;
        case ':':
        default:
            cs_opt_refuse(&g, c, NULL, "profiles");
            goto out;
        }
    }
    if (lint) {
        if (optind >= argc) {
            cs_err("--lint needs at least one FILE");
            goto out;
        }
        if (json || nppath || have_cpuid) {
            cs_err("--lint takes only files (not --json, --profile-path or --cpuid)");
            goto out;
        }
        status = lint_files(argv + optind, argc - optind);
        goto out;
    }
    if (optind < argc) {
        cs_err("cosched profiles takes no arguments ('%s'; to check files use --lint FILE...)", argv[optind]);
        goto out;
    }
    if (!have_cpuid)
        cs_cpuid_this(&cpu);
    search = cs_profile_search_path(ppath, nppath, &nsearch);
    n = cs_profile_scan((const char *const *)search, nsearch, &v);
    for (int i = 0; i < n; i++) {
        if (v[i].shadowed_by < 0 && v[i].p == NULL)
            broken++;
        if (match < 0 && cpu.known && v[i].p && cs_profile_matches(v[i].p, cpu.vendor, cpu.family, cpu.model))
            match = i;
    }
    if (match < 0) {
        if (cpu.known)
            cs_profile_why_none(&cpu, v, n, search, nsearch, why, sizeof why);
        else
            snprintf(why, sizeof why, "%s", cpu.why);
    }

    if (json) {
        json_t *sp = json_array(), *profs = json_array();
        for (int i = 0; i < nsearch; i++)
            json_array_append_new(sp, cs_json_text(search[i]));
        for (int i = 0; i < n; i++) {
            const struct cs_profile *p = v[i].p;
            json_t *o = json_pack("{s:o, s:o}", "name", cs_json_text(v[i].name), "file", cs_json_text(v[i].path));
            if (o == NULL)
                continue;
            if (v[i].shadowed_by >= 0) {
                json_object_set_new(o, "status", json_string("shadowed"));
                json_object_set_new(o, "by", cs_json_text(v[v[i].shadowed_by].path));
            } else if (p == NULL) {
                json_object_set_new(o, "status", json_string("broken"));
            } else {
                json_t *models = json_array();
                for (int m = 0; m < p->nmodels; m++)
                    json_array_append_new(models, json_pack("[i, i]", p->models[m].lo, p->models[m].hi));
                json_t *ok = json_pack("{s:s, s:o, s:s, s:i, s:o, s:b, s:i, s:i}", "status", "ok",
                                       "description", cs_json_text(p->description), "vendor",
                                       cs_profile_vendor_name(p->vendor), "family", p->family, "models",
                                       models, "test", p->test, "events", p->nevents, "metrics", p->nmetrics);
                json_object_update(o, ok);      /* copies ok's members: it is still ours to free */
                json_decref(ok);
            }
            json_array_append_new(profs, o);
        }
        cs_json_put(stdout,
                    json_pack("{s:o, s:o, s:o, s:o, s:s}", "cpu",
                              cpu.known ? json_pack("{s:o, s:i, s:i, s:s}", "vendor", cs_json_text(cpu.vendor),
                                                    "family", cpu.family, "model", cpu.model, "source",
                                                    have_cpuid ? "--cpuid" : "hwloc")
                                        : json_null(),
                              "search_path", sp, "profiles", profs, "match",
                              match >= 0 ? cs_json_text(v[match].name) : json_null(), "why",
                              match >= 0 ? "" : why),
                    CS_JSON_PRETTY);
    } else {
        char arch[200];
        for (int i = 0; i < n; i++) {
            if (v[i].shadowed_by >= 0)
                snprintf(arch, sizeof arch, "(shadowed by %s)", v[v[i].shadowed_by].path);
            else if (v[i].p == NULL)
                snprintf(arch, sizeof arch, "(broken: see the error above)");
            else
                cs_profile_arch(v[i].p, arch, sizeof arch);
            printf("%-16s %-30s %s\n", v[i].name, arch, v[i].path);
        }
        if (n == 0)
            printf("(no profiles)\n");
        if (cpu.known) {
            char fam[16];
            cs_profile_num(fam, sizeof fam, cpu.family);
            printf("this CPU: %s family %s model 0x%02x (%s)\n", cpu.vendor, fam, cpu.model,
                   have_cpuid ? "--cpuid" : "hwloc");
        } else
            printf("this CPU: unknown\n");
        if (match >= 0)
            printf("match: %s %s\n", v[match].name, v[match].path);
        else
            printf("no profile matches: %s\n", why);
    }
    status = broken ? 1 : 0;
out:
    cs_profile_entries_free(v, n);
    cs_strv_free(search, nsearch);
    free(ppath);
    cs_opt_end(&g);
    return status;
}
