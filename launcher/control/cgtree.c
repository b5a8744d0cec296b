/*
 * cgtree.c - a cgroup tree someone else owns, walked within bounds (cgroup.h):
 * the directories below a Slurm step, found breadth first (every parent
 * before its children), each opened with O_NOFOLLOW relative to its parent,
 * at most CS_CGTREE_GROUPS of them and a given depth.  Nothing below is ever
 * recursed into: the shape of the tree is its owner's, its size and depth
 * are ours.  Files are read and written relative to the open directories
 * (writes through cgroupfs.c's cs_cg_write_fd).
 *
 * May use: core/, control/cgroup.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/cgroup.h"
#include "core/log.h"
#include "core/util.h"

void cs_cgtree_close(struct cs_cgtree *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        close(t->fd[i]);
    free(t);
}

/* The tree below dir, down to depth levels, of the subdirectories whose
 * name starts with prefix (NULL: all); NULL when dir cannot be opened. */
struct cs_cgtree *cs_cgtree_open(const char *dir, int depth, const char *prefix)
{
    struct cs_cgtree *t = calloc(1, sizeof *t);

    if (!t)
        return NULL;
    t->fd[0] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (t->fd[0] < 0) {
        free(t);
        return NULL;
    }
    t->n = 1;
    t->parent[0] = -1;
    snprintf(t->name[0], sizeof t->name[0], "%s", dir);
    for (int i = 0; i < t->n && !t->truncated; i++) {
        int dfd = dup(t->fd[i]);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        struct dirent *de;
        if (!d) {
            if (dfd >= 0)
                close(dfd);
            continue;
        }
        while ((de = readdir(d)) != NULL) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
                (prefix && strncmp(de->d_name, prefix, strlen(prefix)) != 0))
                continue;
            if (t->depth[i] >= depth || t->n == CS_CGTREE_GROUPS) {
                t->truncated = 1;
                break;
            }
            int fd = openat(t->fd[i], de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0)
                continue;               /* removed meanwhile */
            t->fd[t->n] = fd;
            t->parent[t->n] = (short)i;
            t->depth[t->n] = (short)(t->depth[i] + 1);
            snprintf(t->name[t->n], sizeof t->name[0], "%s", de->d_name);
            t->n++;
        }
        closedir(d);
    }
    return t;
}

/* The path of group i, for messages. */
const char *cs_cgtree_path(const struct cs_cgtree *t, int i, char *buf, size_t len)
{
    if (t->parent[i] < 0) {
        snprintf(buf, len, "%s", t->name[i]);
        return buf;
    }
    cs_cgtree_path(t, t->parent[i], buf, len);
    size_t n = strlen(buf);
    if (n < len)
        snprintf(buf + n, len - n, "/%s", t->name[i]);
    return buf;
}

/* Write val to file of group i (relative to its open directory). */
int cs_cgtree_write(const char *who, const struct cs_cgtree *t, int i, const char *file, const char *val)
{
    char path[PATH_MAX];
    int fd = openat(t->fd[i], file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW), saved = errno;

    if (fd < 0 || cs_cg_write_fd(NULL, fd, NULL, file, val) < 0) {
        saved = errno;
        cs_err("%s: cannot write %s to %s/%s: %s", who, val, cs_cgtree_path(t, i, path, sizeof path), file,
               strerror(saved));
        errno = saved;
        return -1;
    }
    return 0;
}

/* The contents of file in group i (malloc'd, at most 1 MiB), or NULL. */
char *cs_cgtree_read(const struct cs_cgtree *t, int i, const char *file)
{
    int fd = openat(t->fd[i], file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    size_t n = 0, cap = 16384;
    char *buf = fd >= 0 ? malloc(cap) : NULL;

    while (buf) {
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (cap - n < 4096) {
            char *p = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!p)
                break;
            buf = p;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = '\0';
    if (fd >= 0)
        close(fd);
    return buf;
}
