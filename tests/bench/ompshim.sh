#!/bin/bash
# ompshim.sh - what the OpenMP shim (libcosched-omp.so, issue 14) costs and
# saves, for one kernel at a time (BENCHMARKS.md section 12).  Run from the
# build tree, as root, on a quiet machine:
#
#   bash tests/bench/ompshim.sh [KERNEL ARGS...]     default: both rows below
#
# For a kernel K of share/demo with T = all CPUs threads, one run each:
#   alone      K alone, the runtime's default wait policy (spinning), T threads
#   shim       `cosched run --policy gang -- K` (one job: never folded), shim on
#              (the default): the wait policy is left as the runtime's
#   passive    the same with --omp-shim off (OMP_WAIT_POLICY=passive, the old
#              default)
#   alone1     K alone with T/2 threads (the folded core count)
#   twin       K with T/2 threads pinned to the first T/2 CPUs, beside a twin
#              pinned to the others (the fair baseline for folded: the same
#              threads per core, a neighbour on the other half)
#   fold-shim  `cosched run --policy tft -- K ::: compute` (K folded onto T/2
#              cores for its whole run, beside a compute job), shim on
#   fold-pass  the same with --omp-shim off
# Times are the job's own wall time (cosched's summary, wall_s), or
# /usr/bin/time's for the runs without cosched (twin: the first one's).
# Goals: shim/alone <= 1.05 and fold-shim/twin <= 1.05.
set -eu
top=$(pwd)
[ -x "$top/cosched" ] && [ -x "$top/share/demo/barrier" ] || { echo "ompshim.sh: run it from the build tree (no ./cosched or share/demo here)" >&2; exit 2; }
export COSCHED_DATADIR=${COSCHED_DATADIR:-$top}
n=$(nproc)
half=$(( n > 1 ? n / 2 : 1 ))
cd "$top/share/demo"
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT

alone() {  # alone THREADS K ARGS...: seconds
    local t=$1; shift
    OMP_NUM_THREADS=$t /usr/bin/time -o "$tf" -f %e "$@" > /dev/null 2>&1
    cat "$tf"
}
twin() {  # twin THREADS K ARGS...: seconds of the first of two copies, each pinned to its half
    local t=$1 p; shift
    OMP_NUM_THREADS=$t taskset -c "0-$((t - 1))" /usr/bin/time -o "$tf" -f %e "$@" > /dev/null 2>&1 &
    p=$!
    OMP_NUM_THREADS=$t taskset -c "$t-$((n - 1))" "$@" > /dev/null 2>&1
    wait "$p"
    cat "$tf"
}
job_wall() {  # job_wall COSCHED-ARGS...: wall_s of job 1 in the summary
    "$top/cosched" run --quantum 1s "$@" 2>&1 >/dev/null | awk '$1 == 1 && $3 ~ /^[0-9]+$/ {print $5; exit}'
}
row() {
    local a s p a1 tw fs fp
    a=$(alone "$n" "$@")
    s=$(job_wall --policy gang -- "$@")
    p=$(job_wall --policy gang --omp-shim off -- "$@")
    a1=$(alone "$half" "$@")
    tw=$(twin "$half" "$@")
    local co=$(awk -v x="$a1" 'BEGIN {printf "%d", 2 * x + 3}')
    fs=$(job_wall --policy tft -- "$@" ::: ./compute -s "$co")
    fp=$(job_wall --policy tft --omp-shim off -- "$@" ::: ./compute -s "$co")
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f |\n' "$*" "$a" "$s" "$p" "$a1" "$tw" "$fs" "$fp" \
        "$(awk -v x="$s" -v y="$a" 'BEGIN {print x / y}')" "$(awk -v x="$fs" -v y="$a1" 'BEGIN {print x / y}')" \
        "$(awk -v x="$fs" -v y="$tw" 'BEGIN {print x / y}')"
}
echo "ompshim.sh: $(date -u '+%F %T') UTC, $(uname -r), $n cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| kernel | alone ($n thr) | shim | passive | alone ($half thr) | twin ($half thr) | folded, shim | folded, passive | shim / alone | folded shim / alone $half | folded shim / twin |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
if [ $# -gt 0 ]; then
    row "$@"
else
    row ./barrier -n 1000000
    row ./stream -n 100
fi
