/*
 * binds_race: a thread created while the engine grows a job's cpuset, in
 * the order the cgroup backends move a job (cgroup1.c, cgroup2.c:
 * cs_binds_look, the cpuset write, cs_binds_moved: apply, and for a growing
 * move the second look), with the thread's birth put deterministically in
 * the race window between the look and the apply.
 *
 *   binds_race DIR [--no-again]
 *
 * DIR: a cgroup v1 cpuset directory to create (its parent a cpuset cgroup
 * with two or more CPUs; removed at the end).  A child process joins it
 * on one CPU A, sets its own affinity to A (a requested mask, as LLVM's
 * OpenMP runtime and GROMACS set one), and creates a thread when told to:
 * after the look listed its threads, before the cpuset grows to A,B.
 * Linux >= 6.2 copies the requested mask to the new thread and keeps it
 * when the cpuset grows, so without the second look the new thread stays
 * on A.  Prints "grown A,B leader LIST thread LIST" (Cpus_allowed_list from
 * /proc/PID/task/TID/status: what the kernel says) and exits 0 when both
 * are A,B, 1 when not, 2 when it cannot set up.  --no-again leaves the
 * second look out (what the backends did before it).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <hwloc.h>

#include "control/cgroup.h"
#include "control/internal.h"

static int tidpipe[2];

static void *sleeper(void *arg)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);

    if (write(tidpipe[1], &tid, sizeof tid) != sizeof tid)
        _exit(2);
    for (;;)
        pause();
    return NULL;
}

static int put(const char *dir, const char *file, const char *text)
{
    char path[4096];
    FILE *f;
    int ok;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!(f = fopen(path, "w")))
        return -1;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int get(const char *dir, const char *file, char *out, size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!(f = fopen(path, "r")))
        return -1;
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* Cpus_allowed_list of a thread, as the kernel reports it */
static void allowed(pid_t pid, pid_t tid, char *out, size_t len)
{
    char path[64], line[512];
    FILE *f;

    snprintf(out, len, "?");
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/status", (long)pid, (long)tid);
    if (!(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *p = line + 18;
            p += strspn(p, " \t");
            p[strcspn(p, "\n")] = '\0';
            snprintf(out, len, "%s", p);
        }
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : NULL;
    int again = !(argc > 2 && !strcmp(argv[2], "--no-again"));
    char parent[4096], buf[256], a_list[32], ab_list[64], got_leader[256], got_thread[256];
    hwloc_bitmap_t pcpus = hwloc_bitmap_alloc(), cur = hwloc_bitmap_alloc(), now = hwloc_bitmap_alloc();
    int a, b, ready[2], cmd[2], status, ret = 2;
    struct cs_binds *binds = NULL;
    pid_t child, tid = 0, *tids = NULL;
    size_t n;
    char c;

    if (!dir || (argc > 2 && again)) {
        fprintf(stderr, "usage: binds_race DIR [--no-again]\n");
        return 2;
    }
    snprintf(parent, sizeof parent, "%s", dir);
    if (strrchr(parent, '/'))
        *strrchr(parent, '/') = '\0';
    if (get(parent, "cpuset.effective_cpus", buf, sizeof buf) < 0 && get(parent, "cpuset.cpus", buf, sizeof buf) < 0) {
        fprintf(stderr, "binds_race: %s is not a cpuset cgroup\n", parent);
        return 2;
    }
    if (hwloc_bitmap_list_sscanf(pcpus, buf) < 0 || hwloc_bitmap_weight(pcpus) < 2) {
        fprintf(stderr, "binds_race: %s has fewer than two CPUs (%s)\n", parent, buf);
        return 2;
    }
    a = hwloc_bitmap_first(pcpus);
    b = hwloc_bitmap_next(pcpus, a);
    hwloc_bitmap_only(cur, (unsigned)a);
    hwloc_bitmap_copy(now, cur);
    hwloc_bitmap_set(now, (unsigned)b);
    snprintf(a_list, sizeof a_list, "%d", a);
    snprintf(ab_list, sizeof ab_list, b == a + 1 ? "%d-%d" : "%d,%d", a, b);
    if (mkdir(dir, 0755) < 0 || get(parent, "cpuset.mems", buf, sizeof buf) < 0 || put(dir, "cpuset.mems", buf) < 0
        || put(dir, "cpuset.cpus", a_list) < 0) {
        fprintf(stderr, "binds_race: cannot make the cpuset %s: %s\n", dir, strerror(errno));
        rmdir(dir);
        return 2;
    }
    if (pipe(ready) < 0 || pipe(cmd) < 0 || pipe(tidpipe) < 0)
        return 2;
    child = fork();
    if (child == 0) {
        cpu_set_t set;
        char me[24];
        pthread_t t;
        snprintf(me, sizeof me, "%ld", (long)getpid());
        CPU_ZERO(&set);
        CPU_SET(a, &set);
        if (put(dir, "cgroup.procs", me) < 0 || sched_setaffinity(0, sizeof set, &set) < 0)
            _exit(2);
        if (write(ready[1], "r", 1) != 1 || read(cmd[0], &c, 1) != 1)
            _exit(2);
        if (pthread_create(&t, NULL, sleeper, NULL) != 0)
            _exit(2);
        for (;;)
            pause();
    }
    if (child < 0 || read(ready[0], &c, 1) != 1)
        goto out;
    /* the backends' move: look (lists the leader only) ... */
    n = cs_binds_look(&binds, dir, 0, cur, &tids);
    if (n != 1) {
        fprintf(stderr, "binds_race: the look found %zu threads, expected 1\n", n);
        goto out;
    }
    /* ... the thread is born in the window, with the leader's mask ... */
    if (write(cmd[1], "c", 1) != 1 || read(tidpipe[0], &tid, sizeof tid) != sizeof tid)
        goto out;
    /* ... the cpuset grows, apply() widens the threads the look listed */
    if (cs_cg_write_cpuset("binds_race", dir, now, NULL) < 0)
        goto out;
    if (again)
        cs_binds_moved(binds, dir, 0, tids, n, cur, now);      /* what cgroup1.c and cgroup2.c call */
    else
        cs_binds_apply(binds, tids, n, now, 1);
    allowed(child, child, got_leader, sizeof got_leader);
    allowed(child, tid, got_thread, sizeof got_thread);
    printf("grown %s leader %s thread %s\n", ab_list, got_leader, got_thread);
    ret = strcmp(got_leader, ab_list) || strcmp(got_thread, ab_list) ? 1 : 0;
out:
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    free(tids);
    cs_binds_free(binds);
    for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++)
        usleep(20000);
    hwloc_bitmap_free(pcpus);
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(now);
    return ret;
}
