/*
 * cgleave.c - leave Slurm's cgroups (shared/cgleave.h says the rule and its
 * two callers; libc only: the plugin compiles it too).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "shared/cgleave.h"

/* Does the comma list opts (a cgroup mount's super options) hold every
 * item of the comma list ctrls (from /proc/self/cgroup)? */
static int has_all(const char *opts, const char *ctrls)
{
    char want[256], have[512], *w, *save = NULL;

    snprintf(want, sizeof want, "%s", ctrls);
    snprintf(have, sizeof have, ",%s,", opts);
    for (w = strtok_r(want, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char needle[260];
        snprintf(needle, sizeof needle, ",%s,", w);
        if (strstr(have, needle) == NULL)
            return 0;
    }
    return 1;
}

/* The mount point of the hierarchy of ctrls ("" for cgroup2) whose root is
 * a prefix of path, into mnt; 0, or -1 when none is mounted. */
static int mount_of(const char *ctrls, const char *path, char *mnt, size_t len)
{
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int ret = -1;

    while (mi && ret < 0 && fgets(line, sizeof line, mi)) {
        char *sep = strstr(line, " - "), *save = NULL, *root, *at, *fstype, *opts;
        size_t rl;
        if (sep == NULL)
            continue;
        *sep = '\0';
        strtok_r(line, " ", &save);             /* mount id, parent id, major:minor */
        strtok_r(NULL, " ", &save);
        strtok_r(NULL, " ", &save);
        root = strtok_r(NULL, " ", &save);
        at = strtok_r(NULL, " ", &save);
        save = NULL;
        fstype = strtok_r(sep + 3, " ", &save);
        strtok_r(NULL, " ", &save);             /* source */
        opts = strtok_r(NULL, " \n", &save);
        if (!root || !at || !fstype || !opts)
            continue;
        if (ctrls[0] ? strcmp(fstype, "cgroup") != 0 || !has_all(opts, ctrls) : strcmp(fstype, "cgroup2") != 0)
            continue;
        rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
            continue;                           /* this mount does not show the path */
        if (strlen(at) < len) {
            strcpy(mnt, at);
            ret = 0;
        }
    }
    if (mi)
        fclose(mi);
    return ret;
}

int cs_leave_slurm_targets(char paths[][PATH_MAX], int max)
{
    FILE *cg = fopen("/proc/self/cgroup", "re");
    char line[PATH_MAX + 256], mnt[PATH_MAX];
    int n = 0;

    while (cg && n < max && fgets(line, sizeof line, cg)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *path;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        path = c2 + 1;
        path[strcspn(path, "\n")] = '\0';
        if (!strstr(path, "slurm") && !strstr(path, "/job_"))
            continue;
        if (mount_of(c1 + 1, path, mnt, sizeof mnt) == 0 &&
            snprintf(paths[n], PATH_MAX, "%s/cgroup.procs", mnt) < PATH_MAX)
            n++;
    }
    if (cg)
        fclose(cg);
    return n;
}

int cs_leave_slurm_move(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), saved;
    ssize_t w;

    if (fd < 0)
        return -1;
    w = write(fd, "0", 1);
    saved = errno;
    close(fd);
    errno = saved;
    return w == 1 ? 0 : -1;
}
