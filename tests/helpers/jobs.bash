# jobs.bash - helpers about jobs under cosched control (sourced after common.bash)

HELPERS=${COSCHED_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/helpers

# all_cpus: NCPU, the cpus online, and ALL, their list as cosched prints it
# ("0-3"; "0" on one cpu)
all_cpus() {
    NCPU=$(nproc)
    ALL="0-$((NCPU - 1))"
    [ "$NCPU" -gt 1 ] || ALL=0
}

# two_pids: wait (10 s each) for the pid files a.pid and b.pid of two jobs
# just started (spin -p), then a and b are their pids
two_pids() {
    wait_for 10 test -s a.pid
    wait_for 10 test -s b.pid
    a=$(cat a.pid) b=$(cat b.pid)
}

# stat_mark FILE: append the machine's CPU times (the "cpu" line of
# /proc/stat) to FILE; before and after a run, for trace_check.py shares
# TOL FILE, which compares the jobs' CPU time with what the rest of the
# machine left them.
stat_mark() {
    grep '^cpu ' /proc/stat >> "$1"
}

# Number of cpus in a list such as 0-3,8
cpulist_count() {
    python3 -c '
import sys
n = 0
for p in filter(None, sys.argv[1].split(",")):
    a, _, b = p.partition("-")
    n += int(b or a) - int(a) + 1
print(n)' "$1"
}

# True when the job whose leader is PID is held: its v1 freezer FROZEN, its
# cgroup2 frozen, or every thread stopped (T) - whatever mechanism holds it.
job_is_held() {
    local pid=$1 fs
    fs=$(freezer_state_of "$pid")
    [ "$fs" = FROZEN ] && return 0
    [ "$(cgroup2_frozen_of "$pid")" = 1 ] && return 0
    all_threads_state "$pid" T
}

# Which mechanisms this machine offers, for per-backend tests
backend_available() {
    case $1 in
    cgroup1) [ "$(id -u)" -eq 0 ] && [ -d /sys/fs/cgroup/freezer ] && [ -d /sys/fs/cgroup/cpuset ] ;;
    cgroup2) [ "$(id -u)" -eq 0 ] && [ -n "$(cgroup2_mount)" ] ;;
    signals) return 0 ;;
    esac
}

cgroup2_mount() {
    awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo
}

job_is_free() { ! job_is_held "$1"; }

# True when FILE exists and has at least N lines
lines_at_least() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }

# OS index of the first NUMA node, from hwloc via cosched topology --json
cosched_first_numa_node() {
    "$COSCHED" topology --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["numa_nodes"][0]["os_index"])'
}
