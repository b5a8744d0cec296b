/*
 * fuzz_spank - the SPANK plugin's configuration parser (plugin/spank_conf.c):
 * the input is lines, every line but the last a plugstack.conf argument
 * ("key=value") for cs_conf_parse(), the last one a --cosched=VALUE for
 * cs_req_parse(), checked against a fixed installed set and against none;
 * then cs_conf_check() and cs_decide().  The whole input is also read as a
 * policy file by cs_policy_description() (its `description = "..."` line).
 */
#include "fuzz.h"
#include "../../plugin/spank_conf.h"
#include <sys/stat.h>

static char dir[] = "/tmp/cosched-fuzz-spank.XXXXXX";

static void rmdir_at_exit(void)
{
    char path[sizeof dir + 16];
    snprintf(path, sizeof path, "%s/x.lua", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cs_names inst, none;
    struct cs_conf c;
    struct cs_req r;
    char err[1024], pol[CS_NAME_MAX], buf[4096], *text = fuzz_str(data, size), *av[64];
    int ac = 0;

    if (inst.n == 0) {
        static const char *const names[] = { "flca", "gang", "linux", "tft", "lbb", "a-b_1" };
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            snprintf(inst.name[inst.n++], CS_NAME_MAX, "%s", names[i]);
        if (mkdtemp(dir) == NULL) {
            perror(dir);
            abort();
        }
        atexit(rmdir_at_exit);
        /* x.lua is the memfd of fuzz_file(): no file written per input */
        snprintf(buf, sizeof buf, "%s/x.lua", dir);
        if (symlink(fuzz_file(data, 0), buf) < 0) {
            perror(buf);
            abort();
        }
    }
    for (char *p = text, *nl; ac < 64; p = nl + 1) {
        av[ac++] = p;
        if ((nl = strchr(p, '\n')) == NULL)
            break;
        *nl = '\0';
    }
    cs_conf_defaults(&c);
    if (cs_conf_parse(&c, ac - 1, av, err, sizeof err) == 0) {
        cs_names_join(&c.allowed, buf, sizeof buf);
        cs_names_join(&c.allowed, buf, 7);
        cs_names_join(cs_conf_usable(&c, &inst), buf, sizeof buf);
        cs_conf_check(&c, &inst, err, sizeof err);
        cs_conf_check(&c, &none, err, sizeof err);
        if (cs_req_parse(&r, av[ac - 1], &c, &inst, err, sizeof err) == 0)
            cs_decide(&c, &r, pol);
        if (cs_req_parse(&r, av[ac - 1], &c, &none, err, sizeof err) == 0)
            cs_decide(&c, &r, pol);
        cs_decide(&c, NULL, pol);
    }
    fuzz_file(data, size);
    cs_policy_description(dir, "x", buf, sizeof buf);
    cs_policy_description(dir, "x", buf, 5);
    free(text);
    return 0;
}
