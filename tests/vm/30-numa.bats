#!/usr/bin/env bats
# tests/vm/30-numa: the NUMA policies on a real two-node machine - the VM of
# tests/vm/vmrun (2 sockets x 4 CPUs, node0 = CPUs 0-3, node1 = CPUs 4-7,
# 1 GB each), pure cgroup2 with cpuset.  Skips outside that VM.
#
# Where a job's pages are is read from the kernel (/proc/PID/numa_maps,
# anonymous mappings: 96 MiB that spin -m writes at start and keeps; its
# threads then run in short bursts between sleeps, spin -d, so that the
# emulated VM stays responsive),
# where its threads may run from /proc/PID/task/*/status and the job's
# cgroup (cpuset.cpus.effective, cpuset.mems).
#
# How memory follows a job on cgroup v2: the engine writes the job's
# cpuset.mems (cgroup2.c, cg2_set_cpus) and the kernel migrates the pages:
# on the unified hierarchy a change of cpuset.mems always moves the tasks'
# pages to the new nodes (what cgroup v1 does only with
# cpuset.memory_migrate = 1; there is no memory_migrate file in v2).  cosched
# calls neither migrate_pages(2) nor move_pages(2): the cgroup write is one
# system call for the whole job, covers every task of it, and the kernel
# also confines the job's future allocations to the node.  The nodeswap test
# below fails if the pages do not follow.

load ../helpers/common
load ../helpers/jobs

setup() {
    [ "${COSCHED_VM:-}" = 1 ] || skip "runs in the test VM only (make check-vm)"
    [ "$(cat /sys/devices/system/node/online)" = 0-1 ] ||
        { echo "VM: want NUMA nodes 0-1, got $(cat /sys/devices/system/node/online)" >&2; return 1; }
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    cleanup_cosched
}

# one job with 96 MiB of pages, two threads in bursts, runs until stopped
MEMJOB="nice -n 19 $PROGS/spin -m 96 -t 2 -d 10000 -w 600"
MIN_PAGES=20000         # 96 MiB of arrays = 24576 pages of 4 KiB

# memjob NAME: MEMJOB that writes NAME.pid (its pid) once it has written all
# its pages and its threads run.  The tests wait for that before they look
# where the pages are: on a slow emulated VM a nice 19 process takes long to
# write 96 MiB (a CI run found a job with 14 MiB of pages after 60 s), and
# "not yet written" is not "not followed".
memjob() { echo "$MEMJOB -p $BATS_TEST_TMPDIR/$1.pid"; }
written() {             # written NAME...: every job NAME wrote its pages
    local n
    for n in "$@"; do [ -s "$BATS_TEST_TMPDIR/$n.pid" ] || return 1; done
}

anon_on() {             # anon_on PID NODE: anonymous pages of PID on NODE
    awk -v n="N$2=" '/anon=/ { for (i = 1; i <= NF; i++) if (index($i, n) == 1) s += substr($i, length(n) + 1) }
                     END { print s + 0 }' "/proc/$1/numa_maps"
}

# mostly_on PID NODE: at least MIN_PAGES anonymous pages, 90 % of them on NODE
mostly_on() {
    local on off other
    other=$((1 - $2))
    on=$(anon_on "$1" "$2") off=$(anon_on "$1" "$other")
    [ $((on + off)) -ge $MIN_PAGES ] && [ $((on * 100)) -ge $(((on + off) * 90)) ] && return 0
    echo "pid $1: $on anonymous pages on node $2, $off on node $other (want >= 90 % of >= $MIN_PAGES on node $2)" >&2
    return 1
}

# mem_diag PID NAME: what the kernel says about a job whose pages are not where
# they should be (printed when a wait for them gave up)
mem_diag() {
    local cg n
    cg=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup" 2>/dev/null)
    {
        echo "job $2 (pid $1): $(written "$2" && echo "has written its pages and runs its threads" || echo "has not written all its pages yet")"
        echo "pid $1: $(grep -E '^(State|VmRSS|voluntary_ctxt_switches|nonvoluntary_ctxt_switches)' "/proc/$1/status" 2>/dev/null | tr -s '\t\n' '  ')"
        echo "pid $1: wchan $(cat "/proc/$1/wchan" 2>/dev/null); cgroup $cg: mems '$(cat "$cg/cpuset.mems" 2>/dev/null)' cpus '$(cat "$cg/cpuset.cpus" 2>/dev/null)' events: $(tr '\n' ' ' < "$cg/cgroup.events" 2>/dev/null)"
        for n in /sys/devices/system/node/node[0-9]*; do
            echo "${n##*/}: $(grep -E 'MemFree|FilePages|Shmem:|AnonPages' "$n/meminfo" | awk '{ printf "%s %s kB  ", $3, $4 }')"
        done
        echo "cosched's log, last lines:"
        tail -n 15 err
    } >&2
}

# job_pid N: the leader of job N (the first pid in its cgroup) of the only cosched run
job_pid() {
    local f
    f=$(echo /sys/fs/cgroup/cosched/*/job"$1"/cgroup.procs)
    [ -r "$f" ] && head -n 1 "$f" | grep .
}

job_dir() { dirname "$(echo /sys/fs/cgroup/cosched/*/job"$1"/cgroup.procs)"; }

# on_node PID NODE: the job's cgroup confines it to NODE's CPUs (a subset)
# and every thread's Cpus_allowed_list is within them too
on_node() {
    local cg eff th
    cg=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup")
    eff=$(cat "$cg/cpuset.cpus.effective") th=$(task_cpus "$1")
    cpus_within "$eff" "$(cat "/sys/devices/system/node/node$2/cpulist")" &&
        cpus_within "$th" "$(cat "/sys/devices/system/node/node$2/cpulist")" && return 0
    echo "pid $1: $cg/cpuset.cpus.effective '$eff', threads' Cpus_allowed_list '$(echo $th)': want within node $2 ($(cat "/sys/devices/system/node/node$2/cpulist"))" >&2
    return 1
}

cpus_within() {         # cpus_within LIST... OUTER: every cpu of the lists is in OUTER
    python3 -c '
import sys
def s(l):
    out = set()
    for p in filter(None, l.replace("\n", ",").split(",")):
        a, _, b = p.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
inner = s(",".join(sys.argv[1:-1]))
sys.exit(0 if inner and inner <= s(sys.argv[-1]) else 1)' "$@"
}

stop_cosched() {
    kill -TERM "$cs"
    wait "$cs" || true
    assert_contains "$(cat err)" "control cgroup2"
}

# One move (moves=1): the job stays on the second node afterwards, so the
# check below cannot race a move back (with unlimited moves it did, once in
# a few runs: migrating the pages under emulation took most of a period).
# settle: the move comes 60 epochs after the engine saw the job's pages on
# its first node, however long the job took to write them.  Both waits are
# needed: beside a CPU-bound process (check-vm LOAD=1) the VM's job took
# longer than 10 epochs to write its pages, and the test itself took 8 s
# (quiet) to more than 15 s (loaded) to read the job's first node; each
# time a move came first, the test took the second node for the first and
# waited for a move that never came.
@test "cgroup2 cpuset.mems: memory follows a job the plan moves to the other node" {
    "$COSCHED" run --policy-path "$COSCHED_SRCDIR/tests/vm/policies" --policy nodeswap \
        --policy-opt period=60 --policy-opt moves=1 --policy-opt settle=$MIN_PAGES \
        --quantum 1s -- $(memjob m) 2> err &
    cs=$!
    wait_for 60 job_pid 1
    p=$(job_pid 1) cg=$(job_dir 1)
    wait_for 60 'grep -qx "[01]" "$cg/cpuset.mems"' || { cat err >&2; false; }
    first=$(cat "$cg/cpuset.mems")
    wait_for 300 written m || { mem_diag "$p" m; false; }
    wait_for 60 'mostly_on "$p" "$first" || ! grep -qx "$first" "$cg/cpuset.mems"'
    grep -qx "$first" "$cg/cpuset.mems" ||
        { echo "the job moved to node $(cat "$cg/cpuset.mems") before its pages were seen on node $first" >&2; mem_diag "$p" m; false; }
    on_node "$p" "$first"
    wait_for 120 'test "$(cat "$cg/cpuset.mems")" != "$first"' || { mem_diag "$p" m; false; }
    second=$(cat "$cg/cpuset.mems")
    wait_for 60 mostly_on "$p" "$second" || { mem_diag "$p" m; false; }
    on_node "$p" "$second"
    echo "job moved node $first -> $second, its pages followed: N$first=$(anon_on "$p" "$first") N$second=$(anon_on "$p" "$second")"
    stop_cosched
    no_cosched_leftovers
}

# maxlocal and nmass put threads where the memory is (they never move
# memory): job m1's memory is bound to node 1, m0's to node 0 (numactl
# --membind), whatever cores the first plan gave them.
threads_to_memory() {
    cat > j.jobs <<JOBS
name=m1 threads=2 -- numactl --membind=1 $(memjob m1)
name=m0 threads=2 -- numactl --membind=0 $(memjob m0)
JOBS
    "$COSCHED" run --policy "$1" --quantum 1s --counters none --jobs j.jobs 2> err &
    cs=$!
    wait_for 60 job_pid 1
    wait_for 60 job_pid 2
    p1=$(job_pid 1) p0=$(job_pid 2)
    wait_for 300 written m1 m0 || { mem_diag "$p1" m1; mem_diag "$p0" m0; false; }
    wait_for 60 mostly_on "$p1" 1
    wait_for 60 mostly_on "$p0" 0
    wait_for 60 on_node "$p1" 1 || { cat err >&2; false; }
    wait_for 60 on_node "$p0" 0 || { cat err >&2; false; }
    stop_cosched
    no_cosched_leftovers
}

@test "maxlocal: each job's threads go to the node its memory is on" { threads_to_memory maxlocal; }
@test "nmass: each job's threads go to the node its memory is on" { threads_to_memory nmass; }

# dinuma and dip spread the two memory-intensive (class S) jobs over the two
# nodes, cores and memory: each job's cpuset.mems is one node, the other
# job's the other, its threads run there and its pages are there.
spread_with_memory() {
    cat > j.jobs <<JOBS
name=s1 class=S threads=2 -- $(memjob s1)
name=s2 class=S threads=2 priority=1 -- $(memjob s2)
JOBS
    "$COSCHED" run --policy "$1" --quantum 1s --counters none --jobs j.jobs 2> err &
    cs=$!
    wait_for 60 job_pid 1
    wait_for 60 job_pid 2
    p1=$(job_pid 1) p2=$(job_pid 2) c1=$(job_dir 1) c2=$(job_dir 2)
    wait_for 30 'grep -qx "[01]" "$c1/cpuset.mems" && grep -qx "[01]" "$c2/cpuset.mems"' || { cat err >&2; false; }
    n1=$(cat "$c1/cpuset.mems") n2=$(cat "$c2/cpuset.mems")
    [ "$n1" != "$n2" ] || { echo "both S jobs on node $n1 (want one per node)" >&2; cat err >&2; false; }
    wait_for 300 written s1 s2 || { mem_diag "$p1" s1; mem_diag "$p2" s2; false; }
    wait_for 60 mostly_on "$p1" "$n1" || { mem_diag "$p1" s1; false; }
    wait_for 60 mostly_on "$p2" "$n2" || { mem_diag "$p2" s2; false; }
    on_node "$p1" "$n1"
    on_node "$p2" "$n2"
    stop_cosched
    no_cosched_leftovers
}

@test "dinuma: two S jobs, one per node, cores and pages" { spread_with_memory dinuma; }
@test "dip: two S jobs, one per node, cores and pages" { spread_with_memory dip; }
